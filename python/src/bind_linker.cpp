// Python bindings of the linker core: graphs of Python-defined types and ops, `link` and
// `prepare`, the ops of drop-in nodes and their derivatives, `build_sections`, support
// libraries. Each binding is a call of the library or of its room in python/src: linking in
// linking.cpp, Python-defined types and ops in python_ops.cpp, loading in loader.cpp, the
// `CompiledOp` type in compiled_op.cpp, `Batched` in batched_op.cpp.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "batched_op.hpp"
#include "bindings.hpp"
#include "compiled_op.hpp"
#include "diagnostic_record.hpp"
#include "link_errors.hpp"
#include "linking.hpp"
#include "loaded.hpp"
#include "loader.hpp"
#include "python_ops.hpp"
#include "section/linker.hpp"
#include "section/linker/generate/batch_plan.hpp"

namespace py = pybind11;

namespace section::python {
namespace {

/// An op the linker core generates the code of (a drop-in node's), for `Graph.add_apply`.
struct NodeOp {
  COpPtr op;
};

/// The section op of a drop-in node: its parsed sections, described, with `compile_args`.
SectionOp dropin_section_op(LoadedSections const& loaded, OpDescription description,
                            ExpandOptions options, std::vector<std::string> compile_args) {
  BuildFlags flags;
  flags.compile_args = std::move(compile_args);
  return SectionOp(std::move(description), loaded.sources, loaded.set, std::move(options),
                   std::move(flags));
}

/// A `DerivativeRefusal` as Python reads it: its message and its diagnostics.
py::dict refusal_record(DerivativeRefusal const& refusal, SourceManager const& sm) {
  py::dict out;
  out["message"] = refusal.message;
  out["diagnostics"] = py::cast(make_records(refusal.diagnostics, sm));
  return out;
}

/// The ops of drop-in nodes (and of their derivatives), for `Graph.add_apply`.
void bind_node_ops(py::module_& m) {
  py::class_<NodeOp>(m, "NodeOp",
                     "An op whose code the linker core generates, for `Graph.add_apply`.");
  m.def(
      "dropin_node_op",
      [](LoadedSections const& loaded, OpDescription description, ExpandOptions options,
         std::vector<std::string> compile_args, py::object python,
         std::vector<std::string> const& overridden) {
        return NodeOp{dropin_op(dropin_section_op(loaded, std::move(description),
                                                  std::move(options), std::move(compile_args)),
                                std::move(python), overridden)};
      },
      py::arg("loaded"), py::arg("description"), py::arg("options"), py::arg("compile_args"),
      py::arg("python"), py::arg("overridden"),
      R"doc(A drop-in node's op: the sections of ``loaded`` expanded by the linker core, as
``build()``'s are, with ``compile_args`` added. Only the ``overridden`` methods (``c_code``,
``c_support_code_apply``, ...) are asked of ``python``, an object with the node's ``c_*``
methods minus their ``node`` argument.)doc");
  m.def(
      "derivative_node_op",
      [](LoadedSections const& loaded, OpDescription description, ExpandOptions options,
         std::vector<std::string> compile_args, py::object python,
         std::vector<std::string> const& overridden, std::vector<py::object> const& output_types,
         std::vector<bool> differentiated, std::vector<bool> cotangents, int width,
         std::string const& mode) {
        SectionOp const section = dropin_section_op(loaded, std::move(description),
                                                    std::move(options), std::move(compile_args));
        try {
          DerivativeSpec spec =
              derivative_spec(mode, to_types(output_types), std::move(differentiated),
                              std::move(cotangents), width);
          COpPtr const forward = dropin_op(section, std::move(python), overridden);
          return NodeOp{derivative_op(section, forward, std::move(spec))};
        } catch (LinkError const& e) {
          raise_python(e, *loaded.sources);
        } catch (std::invalid_argument const& e) {
          throw py::value_error(e.what());
        }
      },
      py::arg("loaded"), py::arg("description"), py::arg("options"), py::arg("compile_args"),
      py::arg("python"), py::arg("overridden"), py::arg("output_types"), py::arg("differentiated"),
      py::arg("cotangents"), py::arg("width"), py::arg("mode"),
      R"doc(The derivative op of a drop-in node (``dropin_node_op``'s arguments first): its C code
run on dual numbers. ``mode`` ``"pullback"``: inputs are the node's, then the cotangent of each
output ``cotangents`` marks, then the value of each of those outputs (checked against each
pass's); outputs the gradient of each input ``differentiated`` marks, ``width`` of them per
pass. ``"pushforward"`` (``width`` 1): inputs are the node's, then the
tangent of each differentiated input, then the value of each float output (checked against
the pass's); outputs the tangent of each float output.
``output_types`` are the node's output types. Raises ``LinkError`` at the line of a cast that
would read dual numbers as plain floats.)doc");
  m.def(
      "derivative_refusals",
      [](LoadedSections const& loaded, OpDescription description, ExpandOptions options,
         std::vector<bool> const& differentiated, std::vector<bool> const& dual_outputs) {
        SectionOp const section =
            dropin_section_op(loaded, std::move(description), std::move(options), {});
        auto const refusals = derivative_refusals(section, differentiated, dual_outputs);
        py::dict inputs;
        for (auto const& [input, refusal] : refusals.inputs)
          inputs[py::int_(input)] = refusal_record(refusal, *loaded.sources);
        py::dict out;
        out["all"] =
            refusals.all ? py::object(refusal_record(*refusals.all, *loaded.sources)) : py::none();
        out["every"] = refusals.every;
        out["inputs"] = inputs;
        return out;
      },
      py::arg("loaded"), py::arg("description"), py::arg("options"), py::arg("differentiated"),
      py::arg("dual_outputs"),
      R"doc(What the files of a drop-in op refuse of its derivatives for the inputs
``differentiated`` marks, the outputs ``dual_outputs`` marks holding dual numbers: casts that
read an array's data as plain ``double`` (SL306). ``{"all": refusal or None, "every": bool,
"inputs": {i: refusal}}``, each refusal ``{"message", "diagnostics"}``: ``all``, every cast,
when any; ``every``, whether one concerns every input (of an output's data, or of an array the
files do not name), which refuses the derivative whole; ``inputs`` the casts of each input's
data, which refuse that input's derivative only.)doc");
}

/// `Graph`, whose applies take Python ops or `NodeOp`s.
void bind_graph_type(py::module_& m) {
  py::class_<PyGraph>(m, "Graph", R"doc(
A graph of applies for one compiled module. Types are type strings (`"float64[:]"`) or Python
objects with the CType methods (`c_declare(name, sub)`, `c_extract`, ...); ops are Python
objects with `c_code(name, inputs, outputs, sub)` and optionally the other `c_*` methods.)doc")
      .def(py::init<>())
      .def(
          "add_input",
          [](PyGraph& g, py::object type, std::string label) {
            return g.edit().add_input(to_type(type), std::move(label));
          },
          py::arg("type"), py::arg("label") = "")
      .def(
          "add_constant",
          [](PyGraph& g, py::object type, std::string label) {
            return g.edit().add_constant(to_type(type), std::move(label));
          },
          py::arg("type"), py::arg("label") = "")
      .def(
          "add_apply",
          [](PyGraph& g, py::object op, std::vector<std::size_t> inputs,
             std::vector<py::object> const& output_types, std::optional<std::size_t> params) {
            COpPtr code =
                py::isinstance<NodeOp>(op) ? op.cast<NodeOp const&>().op : to_op(std::move(op));
            return g.edit().add_apply(std::move(code), std::move(inputs), to_types(output_types),
                                      params);
          },
          py::arg("op"), py::arg("inputs"), py::arg("output_types"), py::arg("params") = py::none(),
          "Adds an apply; returns its output variables.")
      .def("add_output", [](PyGraph& g, std::size_t v) { g.edit().add_output(v); })
      .def(
          "source", [](PyGraph& g) { return g.module(SourceManager())->text; },
          "The generated C++ source of the module.");
}

/// What is done with a `Graph`: `link`, `prepare` and `prepare_together`.
void bind_graph_builds(py::module_& m) {
  m.def(
      "link",
      [](PyGraph& g, std::vector<py::object> const& constants, std::string const& name,
         std::optional<std::vector<py::object>> const& storage) {
        SourceManager sm;
        return link_module(g.graph(), *g.module(sm), constants, sm, name, storage);
      },
      py::arg("graph"), py::arg("constants") = std::vector<py::object>{},
      py::arg("name") = "module", py::arg("storage") = py::none(),
      R"doc(Builds (or finds in the cache) and loads the graph's module; returns a CompiledOp.
``storage``: one-element lists to use as the input and output cells (a PyTensor VM's
storage), for an instance run in place with ``run_in_place`` or through ``cthunk()``.)doc");

  m.def(
      "prepare",
      [](PyGraph& g, std::string const& name) {
        SourceManager sm;
        link_module(g.graph(), *g.module(sm), {}, sm, name, std::nullopt, false);
      },
      py::arg("graph"), py::arg("name") = "module",
      "Builds (or finds in the cache) and loads the graph's module without instantiating it, so "
      "a later `link` of the same graph only instantiates. Releases the GIL while compiling: "
      "threads prepare several graphs at once.");

  m.def("prepare_together", &prepare_together, py::arg("graphs"),
        R"doc(Builds (or finds in the cache) the modules of several graphs, those not in the cache
compiled together where they can share a library: one compile and one link for all. Each graph
keeps its own cache entry, so a later `link` of any of them finds it. Raises the first graph's
compile error once all are done; a graph whose code cannot be generated is left for its `link`
to report. Releases the GIL while compiling.)doc");
}

/// The op of loaded section files, built for the given type strings.
py::object build_sections(
    LoadedSections& loaded, std::vector<std::string> const& inputs,
    std::vector<std::string> const& outputs, std::optional<std::string> func_name,
    std::vector<std::tuple<std::string, std::string, py::object>> const& params,
    std::string const& name, std::optional<int> num_inputs, std::optional<int> num_outputs,
    bool check_input, std::string const& language, std::vector<std::string> c_headers,
    std::vector<std::string> c_header_dirs, std::vector<std::string> c_libraries,
    std::vector<std::string> c_lib_dirs, std::vector<std::string> c_compile_args) {
  if (!loaded.set.ok())
    raise_python(LinkError(loaded.set.error->message, loaded.set.diagnostics), *loaded.sources);
  OpDescription op;
  op.name = name;
  op.func_name = func_name;
  op.num_inputs = num_inputs;
  op.num_outputs = num_outputs;
  op.check_input = check_input;
  op.language = parse_language(language, name);
  op.inputs = parse_type_strings(inputs, "inputs");
  op.outputs = parse_type_strings(outputs, "outputs");
  std::string const shown = signature_text(name, ctypes_for(*op.inputs), ctypes_for(*op.outputs));
  std::vector<std::pair<std::string, std::string>> field_types;
  py::dict values;
  for (auto const& [field, type, value] : params) {
    field_types.emplace_back(field, type);
    values[py::str(field)] = value;
  }
  BuildFlags flags{std::move(c_headers), std::move(c_header_dirs), std::move(c_libraries),
                   std::move(c_lib_dirs), std::move(c_compile_args)};
  auto const built = section_op_graph(std::move(op), parse_param_strings(field_types),
                                      loaded.sources, loaded.set, std::move(flags));
  std::vector<py::object> constants;
  if (built.params) constants.push_back(values);
  return link(built.graph, constants, *loaded.sources, shown);
}

/// A library not generated from ops (the JAX handler), built and loaded as modules are.
py::tuple load_support(std::string const& name, std::string const& code,
                       std::vector<std::string> header_dirs,
                       std::vector<std::string> const& symbols, std::string const& language) {
  SourceManager sm;
  auto loaded = load_support_library(
      support_library_module(name, code, parse_language(language, name), std::move(header_dirs)),
      sm, symbols);
  return py::make_tuple(loaded.symbols, loaded.info);
}

/// What is built from section files alone (`build_sections`) or from C++ code
/// (`load_support_library`).
void bind_builds(py::module_& m) {
  m.def("build_sections", &build_sections, py::arg("loaded"), py::arg("inputs"), py::arg("outputs"),
        py::arg("func_name") = py::none(),
        py::arg("params") = std::vector<std::tuple<std::string, std::string, py::object>>{},
        py::arg("name") = "SectionOp", py::arg("num_inputs") = py::none(),
        py::arg("num_outputs") = py::none(), py::arg("check_input") = true,
        py::arg("language") = "c++", py::arg("c_headers") = std::vector<std::string>{},
        py::arg("c_header_dirs") = std::vector<std::string>{},
        py::arg("c_libraries") = std::vector<std::string>{},
        py::arg("c_lib_dirs") = std::vector<std::string>{},
        py::arg("c_compile_args") = std::vector<std::string>{},
        "Builds the op of loaded section files for the given input/output type strings; "
        "``language=\"c\"`` compiles it as C. The ``c_*`` lists are what the op adds to its "
        "module's build, as PyTensor's methods of those names give them.");

  m.def("load_support_library", &load_support, py::arg("name"), py::arg("code"),
        py::arg("header_dirs"), py::arg("symbols"), py::arg("language") = "c++",
        "Builds (or finds in the cache) and loads a support library from C++ ``code`` (C with "
        "``language=\"c\"``; after Python's and NumPy's headers and the export macros, "
        "``LIBSECTION_EXPORT``; it defines ``libsection_abi_version``, returning "
        "``LIBSECTION_MODULE_ABI``, and ``libsection_module_init``, which gets the runtime's "
        "table); returns ``({symbol: address}, info)``.");
}

/// `BatchPlan` and the gufunc signatures it reads.
void bind_batch_plans(py::module_& m) {
  py::class_<BatchPlan>(m, "BatchPlan", R"doc(
How an op runs a batch (the plan ``Batched`` runs and the runtime's batch loop reads): its
core dimensions from a gufunc signature, which batch dimensions of each input may broadcast at
run time, and whether the op takes the whole batch itself.)doc")
      .def(py::init<std::string, std::string const&, bool,
                    std::optional<std::vector<std::uint64_t>>>(),
           py::arg("op_name"), py::arg("signature"), py::arg("whole") = false,
           py::arg("masks") = py::none(),
           R"doc(The plan of ``signature`` (``"(n),(n)->(n)"``) for the op ``op_name``. ``whole``:
the op takes the whole batch (``vmap_method = "broadcast_all"``). ``masks``: per input, the
batch dimensions (bit d for dimension d) that may broadcast at run time (PyTensor's rule);
None for NumPy's (any length-1 dimension).)doc")
      .def_static("of_ranks", &BatchPlan::of_ranks, py::arg("op_name"), py::arg("in_ndims"),
                  py::arg("out_ndims"), py::arg("whole") = false,
                  "The plan of a batch already broadcast (JAX's): inputs and outputs of "
                  "``in_ndims`` and ``out_ndims`` core dimensions, each named apart.")
      .def_property_readonly("op_name", &BatchPlan::op_name)
      .def_property_readonly("signature", &BatchPlan::signature)
      .def_property_readonly("whole", &BatchPlan::whole);
  m.def(
      "parse_gufunc_signature",
      [](std::string const& signature) {
        GufuncSignature const parsed = parse_gufunc_signature(signature);
        auto side = [](std::vector<std::vector<std::string>> const& arguments) {
          py::list out;
          for (auto const& dims : arguments) out.append(py::tuple(py::cast(dims)));
          return py::tuple(out);
        };
        return py::make_tuple(side(parsed.inputs), side(parsed.outputs));
      },
      py::arg("signature"),
      R"doc(``"(m,n),(n)->(m)"`` as ``((("m", "n"), ("n",)), (("m",),))``: each input's and
output's core dimensions, names or fixed lengths (``"3"``). ``ValueError`` for anything
else.)doc");
}

}  // namespace

void bind_linker(py::module_& m) {
  connect_core_to_python();
  add_compiled_op_type(m);
  add_batched_op_type(m);
  add_link_errors(m);

  bind_batch_plans(m);
  bind_node_ops(m);
  bind_graph_type(m);
  bind_graph_builds(m);
  bind_builds(m);

  m.def(
      "link_cached",
      [](std::string const& key, std::string const& name, std::size_t n_inputs,
         std::size_t n_outputs, std::vector<py::object> const& constants) -> py::object {
        auto loaded = load_cached_module(key, name, n_inputs, n_outputs);
        if (!loaded) return py::none();
        return new_compiled_op(*loaded->library, n_inputs, n_outputs, constants, std::nullopt,
                               std::move(loaded->info), name);
      },
      py::arg("key"), py::arg("name"), py::arg("n_inputs"), py::arg("n_outputs"),
      py::arg("constants"),
      R"doc(A new instance of the module of cache entry ``key`` (a CompiledOp), or None when the
cache has no such entry: for a caller that has only the key (a JAX computation exported from
another process). The entry must be the module of the one op ``name`` with ``n_inputs`` inputs
and ``n_outputs`` outputs, built for this Python; ``constants`` are its params (a module
without params ignores them).)doc");

  py::class_<BuildGroup, std::shared_ptr<BuildGroup>>(
      m, "BuildGroup",
      "The builds threads run for one caller, stopped together when it is interrupted (a "
      "signal reaches only the main thread). A thread's builds inside ``with group:`` belong "
      "to it; ``group.cancel()`` stops each of them, under way or started later (its compiler "
      "killed, KeyboardInterrupt raised in its thread). Other threads' builds go on.")
      .def(py::init<>())
      .def(
          "cancel", [](BuildGroup& g) { g.cancelled.store(true); }, "Stops the group's builds.")
      .def_property_readonly(
          "cancelled", [](BuildGroup const& g) { return g.cancelled.load(); },
          "Whether ``cancel()`` was called.")
      .def(
          "__enter__",
          [](std::shared_ptr<BuildGroup> g) {
            enter_build_group(g);
            return g;
          },
          "The calling thread's builds belong to the group until the ``with`` block ends.")
      .def(
          "__exit__", [](BuildGroup const&, py::args const&) { leave_build_group(); },
          "The calling thread's builds no longer belong to the group.");

  m.def(
      "native_entry",
      [](py::handle op) { return is_batched_op(op) ? batched_native_entry(op) : native_entry(op); },
      py::arg("op"),
      "(entry address, op address, inputs, outputs, address of the entry taking preset "
      "output arrays): how compiled code (Numba, the JAX handler) calls a "
      "CompiledOp or a Batched natively; see python/libsection/_numba.py.");

  m.def(
      "cache_dir", [] { return ModuleCache::default_root().string(); },
      "The module cache directory this process uses.");
}

}  // namespace section::python
