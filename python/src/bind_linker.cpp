// Python bindings of the linker core: graphs of Python-defined types and ops, `link` and
// `prepare`, the ops of drop-in nodes and their derivatives, `build_sections`, support
// libraries, batch plans. Each binding is a call of the library or of its room in python/src,
// with its docstring: linking in linking.cpp, Python-defined types and ops (and the drop-in
// node's op) in python_ops.cpp, loading in loader.cpp, the `CompiledOp` type in
// compiled_op.cpp, `Batched` in batched_op.cpp.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batched_op.hpp"
#include "bindings.hpp"
#include "compiled_op.hpp"
#include "link_errors.hpp"
#include "linking.hpp"
#include "loader.hpp"
#include "python_ops.hpp"
#include "section/linker.hpp"
#include "section/linker/generate/batch_plan.hpp"

namespace py = pybind11;

namespace section::python {
namespace {

/// The ops of drop-in nodes (and of their derivatives), for `Graph.add_apply`.
void bind_node_ops(py::module_& m) {
  py::class_<NodeOp>(m, "NodeOp",
                     "An op whose code the linker core generates, for `Graph.add_apply`.");
  m.def("dropin_node_op", &dropin_node_op, py::arg("loaded"), py::arg("description"),
        py::arg("options"), py::arg("compile_args"), py::arg("python"), py::arg("overridden"),
        R"doc(A drop-in node's op: the sections of ``loaded`` expanded by the linker core, as
``build()``'s are, with ``compile_args`` added. Only the ``overridden`` methods (``c_code``,
``c_support_code_apply``, ...) are asked of ``python``, an object with the node's ``c_*``
methods minus their ``node`` argument.)doc");
  m.def("derivative_node_op", &derivative_node_op, py::arg("loaded"), py::arg("description"),
        py::arg("options"), py::arg("compile_args"), py::arg("python"), py::arg("overridden"),
        py::arg("output_types"), py::arg("differentiated"), py::arg("cotangents"), py::arg("width"),
        py::arg("mode"),
        R"doc(The derivative op of a drop-in node (``dropin_node_op``'s arguments first): its C code
run on dual numbers (forward mode) and on taped numbers (reverse mode). ``mode``
``"pullback"``: inputs are the node's, then the cotangent of each output ``cotangents`` marks,
then the value of each of those outputs (checked against each pass's); outputs the gradient of
each input ``differentiated`` marks, by forward passes of ``width`` of them or one taped pass,
as each call picks (``"pullback:forward"``, ``"pullback:reverse"``: a module of that mode
only). ``"pushforward"`` (``width`` 1): inputs are the node's, then the
tangent of each differentiated input, then the value of each float output (checked against
the pass's); outputs the tangent of each float output.
``output_types`` are the node's output types. Raises ``LinkError`` at the line of a cast that
would read dual numbers as plain floats.)doc");
  m.def("derivative_refusals", &derivative_refusals_record, py::arg("loaded"),
        py::arg("description"), py::arg("options"), py::arg("differentiated"),
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
            return g.edit().add_apply(to_op(std::move(op)), std::move(inputs),
                                      to_types(output_types), params);
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
  m.def("link", &link_graph, py::arg("graph"), py::arg("constants") = std::vector<py::object>{},
        py::arg("name") = "module", py::arg("storage") = py::none(),
        R"doc(Builds (or finds in the cache) and loads the graph's module; returns a CompiledOp.
``storage``: one-element lists to use as the input and output cells (a PyTensor VM's
storage), for an instance run in place with ``run_in_place`` or through ``cthunk()``.)doc");

  m.def("prepare", &prepare_graph, py::arg("graph"), py::arg("name") = "module",
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
        py::arg("c_compile_args") = std::vector<std::string>{}, py::arg("release_gil") = true,
        "Builds the op of loaded section files for the given input/output type strings; "
        "``language=\"c\"`` compiles it as C. The ``c_*`` lists are what the op adds to its "
        "module's build, as PyTensor's methods of those names give them; "
        "``release_gil=False`` keeps the GIL while its code runs.");

  m.def("load_support_library", &load_support_code, py::arg("name"), py::arg("code"),
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

  m.def("link_cached", &link_cached, py::arg("key"), py::arg("name"), py::arg("n_inputs"),
        py::arg("n_outputs"), py::arg("constants"),
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

  m.def(
      "tape_bytes",
      [](bool reset) {
        TapeBytes const t = tape_bytes(reset);
        return py::make_tuple(t.last, t.peak);
      },
      py::arg("reset") = false,
      "(last, peak): the bytes the tape of this process's last reverse-mode derived gradient "
      "took (its entries and adjoints), and the most any took since the last ``reset=True``, "
      "which starts that count again after reading it.");
  m.def(
      "recordings_swept", [](bool reset) { return recordings_swept(reset); },
      py::arg("reset") = false,
      "How many times a derived gradient of this process swept the tape its function's value "
      "recorded (a ``TapedValues`` node) in place of a taped pass of its own; ``reset=True`` "
      "starts the count again after reading it.");
  m.def(
      "recordings_held",
      [] {
        RecordingsHeld const held = recordings_held();
        return py::make_tuple(held.count, held.bytes);
      },
      "(count, bytes): the recordings (a value's taped pass, kept for its pullback) the "
      "runtime holds now (at most 16, and 512 MiB in all; the oldest is freed first).");
}

}  // namespace section::python
