// Python bindings of the linker core: graphs of Python-defined types and ops, `link` and
// `prepare`, `build_sections`, and the logging of the core's notices. Python-defined types and
// ops are in python_ops.cpp, loading in loader.cpp, the `CompiledOp` type in compiled_op.cpp.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <dlfcn.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "batched_op.hpp"
#include "bindings.hpp"
#include "compiled_op.hpp"
#include "link_errors.hpp"
#include "loaded.hpp"
#include "loader.hpp"
#include "python_ops.hpp"
#include "section/linker.hpp"
#include "section/log.hpp"

namespace py = pybind11;

namespace section::python {
namespace {

void check_link_arguments(Graph const& graph, std::vector<py::object> const& constants,
                          std::optional<std::vector<py::object>> const& storage) {
  if (constants.size() != graph.constants().size())
    throw py::value_error("the graph has " + std::to_string(graph.constants().size()) +
                          " constants, " + std::to_string(constants.size()) + " values given");
  std::size_t const n_io = graph.inputs().size() + graph.outputs().size();
  if (!storage) return;
  if (storage->size() != n_io)
    throw py::value_error("the graph has " + std::to_string(n_io) + " inputs and outputs, " +
                          std::to_string(storage->size()) + " storage cells given");
  for (auto const& cell : *storage)
    if (!PyList_CheckExact(cell.ptr()) || PyList_GET_SIZE(cell.ptr()) != 1)
      throw py::type_error("storage cells must be one-element lists");
}

/// `graph`'s module; a `LinkError` from an op is raised in its Python form.
std::shared_ptr<ModuleSource const> generate(Graph const& graph, SourceManager const& sm) {
  try {
    return std::make_shared<ModuleSource const>(generate_module(graph));
  } catch (LinkError const& e) {
    raise_python(e, sm);
  }
}

/// What each output of `graph` must be when a call hands it back: NumPy array types are checked
/// (an op's C code may allocate any array); others (scalars, types written in Python) are not.
std::vector<DeclaredOutput> declared_outputs(Graph const& graph) {
  std::vector<DeclaredOutput> declared;
  for (std::size_t variable : graph.outputs()) {
    CType const& type = *graph.variables()[variable].type;
    auto const dtype = type.dtype();
    auto const ndim = type.array_ndim();
    declared.push_back(dtype && ndim ? DeclaredOutput{dtype->typenum, *ndim, type.describe()}
                                     : DeclaredOutput{});
  }
  return declared;
}

/// Builds (or finds) and loads `module`, generated for `graph`, and instantiates it with the
/// values of the graph's constants (unless `instantiate` is false: then it returns None). The
/// caller has checked the arguments.
py::object link_module(Graph const& graph, ModuleSource const& module,
                       std::vector<py::object> const& constants, SourceManager& sm,
                       std::string const& display_name,
                       std::optional<std::vector<py::object>> const& storage = std::nullopt,
                       bool instantiate = true) {
  LoadedModule loaded = load_module(module, sm);
  if (!instantiate) return py::none();
  // On a PyTensor VM's cells (storage), PyTensor checks what the node returns.
  return new_compiled_op(*loaded.library, graph.inputs().size(), graph.outputs().size(), constants,
                         storage, std::move(loaded.info), display_name,
                         storage ? std::vector<DeclaredOutput>{} : declared_outputs(graph));
}

/// Generates, builds (or finds) and loads the module for `graph`, and instantiates it with the
/// values of the graph's constants.
py::object link(Graph const& graph, std::vector<py::object> const& constants, SourceManager& sm,
                std::string const& display_name,
                std::optional<std::vector<py::object>> const& storage = std::nullopt) {
  check_link_arguments(graph, constants, storage);
  return link_module(graph, *generate(graph, sm), constants, sm, display_name, storage);
}

std::string signature_text(std::string const& name, std::vector<CTypePtr> const& inputs,
                           std::vector<CTypePtr> const& outputs) {
  std::string s = name + "(";
  for (std::size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i]->describe();
  s += ") -> ";
  for (std::size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : "") + outputs[i]->describe();
  return s;
}

/// A graph under construction from Python, with the Python objects its types and ops wrap. Its
/// module is generated once, when `source`, `prepare` or `link` first needs it, and again only
/// after the graph changes.
class PyGraph {
 public:
  Graph const& graph() const { return graph_; }
  Graph& edit() {
    module_.reset();
    return graph_;
  }
  /// Shared: a build that released the GIL keeps its module while another thread edits.
  std::shared_ptr<ModuleSource const> module(SourceManager const& sm) {
    if (!module_) module_ = generate(graph_, sm);
    return module_;
  }

 private:
  Graph graph_;
  std::shared_ptr<ModuleSource const> module_;
};

/// The core's notices become records of the `libsection` logger, so handlers, `caplog` and
/// notebooks see them and levels silence them; nothing of the core's reaches fd 2 directly.
void log_to_python(LogRecord const& record) {
  if (!Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;  // builds run with the GIL released
  try {
    int const level = record.level == LogLevel::debug     ? 10
                      : record.level == LogLevel::warning ? 30
                                                          : 20;
    py::dict extra;
    if (record.seconds >= 0) extra["seconds"] = record.seconds;
    py::module_::import("logging")
        .attr("getLogger")("libsection")
        .attr("log")(level, record.message, py::arg("extra") = extra);
  } catch (py::error_already_set& e) {
    // A KeyboardInterrupt (or SystemExit) raised in a handler stops the build: left pending,
    // the interrupt check sees it. A handler's own failure must not stop it: reported as
    // unraisable, as logging reports a failing handler.
    if (e.matches(PyExc_Exception)) e.discard_as_unraisable("libsection logging");
    else e.restore();
  }
}

/// The build's interrupt check: a signal Python has not handled yet (SIGINT runs its handler
/// here, raising KeyboardInterrupt), or an exception left pending by a callback. The exception
/// stays set on this thread, for the caller to raise once the build is unwound.
bool python_interrupted() {
  if (build_cancelled()) return true;  // the caller was interrupted while this thread built
  if (!Py_IsInitialized()) return false;
  py::gil_scoped_acquire gil;
  return PyErr_Occurred() != nullptr || PyErr_CheckSignals() != 0;
}

/// An op the linker core generates the code of (a drop-in node's), for `Graph.add_apply`.
struct NodeOp {
  COpPtr op;
};

/// The ops of drop-in nodes (and of their derivatives), for `Graph.add_apply`.
void bind_node_ops(py::module_& m) {
  py::class_<NodeOp>(m, "NodeOp",
                     "An op whose code the linker core generates, for `Graph.add_apply`.");
  m.def(
      "dropin_node_op",
      [](LoadedSections const& loaded, OpDescription description, ExpandOptions options,
         std::vector<std::string> compile_args, py::object python,
         std::vector<std::string> const& overridden) {
        BuildFlags flags;
        flags.compile_args = std::move(compile_args);
        SectionOp section(std::move(description), loaded.sources, loaded.set, std::move(options),
                          std::move(flags));
        return NodeOp{dropin_op(std::move(section), std::move(python), overridden)};
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
         std::vector<std::string> const& overridden, py::list output_types,
         std::vector<bool> differentiated, std::vector<bool> cotangents, int width,
         std::string const& mode) {
        BuildFlags flags;
        flags.compile_args = std::move(compile_args);
        SectionOp section(std::move(description), loaded.sources, loaded.set, std::move(options),
                          std::move(flags));
        DerivativeSpec spec;
        if (mode != "pullback" && mode != "pushforward")
          throw py::value_error("mode must be 'pullback' or 'pushforward', not '" + mode + "'");
        spec.mode =
            mode == "pullback" ? DerivativeSpec::Mode::pullback : DerivativeSpec::Mode::pushforward;
        for (auto t : output_types) spec.outputs.push_back(to_type(t));
        spec.differentiated = std::move(differentiated);
        spec.cotangents = std::move(cotangents);
        spec.width = width;
        COpPtr const forward = dropin_op(section, std::move(python), overridden);
        try {
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
          [](PyGraph& g, py::object op, std::vector<std::size_t> inputs, py::list output_types,
             std::optional<std::size_t> params) {
            std::vector<CTypePtr> types;
            for (auto t : output_types) types.push_back(to_type(t));
            COpPtr code =
                py::isinstance<NodeOp>(op) ? op.cast<NodeOp const&>().op : to_op(std::move(op));
            return g.edit().add_apply(std::move(code), std::move(inputs), std::move(types), params);
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
        check_link_arguments(g.graph(), constants, storage);
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

  m.def(
      "prepare_together",
      [](std::vector<PyGraph*> const& graphs) {
        SourceManager sm;
        std::vector<std::shared_ptr<ModuleSource const>> modules;
        std::vector<ModuleSource const*> sources;
        for (auto* g : graphs) {
          try {
            modules.push_back(g->module(sm));
          } catch (std::exception const&) {  // reported by the graph's own `link`
            continue;
          }
          sources.push_back(modules.back().get());
        }
        build_together(sources, sm);
      },
      py::arg("graphs"),
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
    std::vector<std::string> c_lib_dirs, std::vector<std::string> c_compile_args,
    bool release_gil) {
  if (!loaded.set.ok())
    raise_python(LinkError(loaded.set.error->message, loaded.set.diagnostics), *loaded.sources);
  OpDescription spec;
  spec.name = name;
  spec.func_name = func_name;
  spec.num_inputs = num_inputs;
  spec.num_outputs = num_outputs;
  spec.check_input = check_input;
  spec.language = parse_language(language, name);
  spec.release_gil = release_gil;
  spec.inputs = parse_type_strings(inputs, "inputs");
  spec.outputs = parse_type_strings(outputs, "outputs");
  std::vector<CTypePtr> const in = ctypes_for(*spec.inputs), out = ctypes_for(*spec.outputs);
  std::vector<std::pair<std::string, std::string>> field_types;
  py::dict values;
  for (auto const& [field, type, value] : params) {
    field_types.emplace_back(field, type);
    values[py::str(field)] = value;
  }
  auto const params_type = make_params_type(parse_param_strings(field_types));
  std::vector<py::object> constants;
  if (params_type) {
    spec.has_params = true;
    spec.params = params_type->spec();
    constants.push_back(values);
  }
  BuildFlags flags{std::move(c_headers), std::move(c_header_dirs), std::move(c_libraries),
                   std::move(c_lib_dirs), std::move(c_compile_args)};
  auto op = std::make_shared<SectionOp>(spec, loaded.sources, loaded.set, ExpandOptions{}, flags);
  Graph graph = single_op_graph(op, in, out, params_type);
  return link(graph, constants, *loaded.sources, signature_text(name, in, out));
}

/// A library not generated from ops (the JAX handler), built and loaded as modules are.
auto load_support_library(std::string const& name, std::string const& code,
                          std::vector<std::string> const& header_dirs,
                          std::vector<std::string> const& symbols, std::string const& language) {
  // A library that is not generated from ops (the JAX handler): built, cached, verified
  // and loaded as modules are, so it gets the cache's trust checks and its key.
  ModuleSource module;
  module.language = parse_language(language, name);
  bool const c = module.language == Language::c;
  module.text = std::string(module_prelude) + (c ? c_module_prelude : "") +
                "#define LIBSECTION_MODULE_ABI " + std::to_string(module_abi_version) + "\n" + code;
  module.name = name;
  module.header_dirs = header_dirs;
  module.op_names = {name};
  SourceManager sm;
  LoadedModule const loaded = load_module(module, sm);
  py::dict addresses;
  for (auto const& symbol : symbols) {
    void* address = ::dlsym(loaded.library->handle, symbol.c_str());
    if (!address) raise_python(LinkError(name + " has no symbol " + symbol), sm);
    addresses[py::str(symbol)] = reinterpret_cast<std::uintptr_t>(address);
  }
  return py::make_tuple(addresses, loaded.info);
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

  m.def("load_support_library", &load_support_library, py::arg("name"), py::arg("code"),
        py::arg("header_dirs"), py::arg("symbols"), py::arg("language") = "c++",
        "Builds (or finds in the cache) and loads a support library from C++ ``code`` (C with "
        "``language=\"c\"``; after Python's and NumPy's headers; it defines the module entry "
        "points, with ``LIBSECTION_MODULE_ABI`` for the ABI version); returns "
        "``({symbol: address}, info)``.");
}

}  // namespace

void bind_linker(py::module_& m) {
  set_log_sink(log_to_python);
  set_interrupt_check(python_interrupted);
  // Back to stderr before the interpreter goes, in case a thread still builds.
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    set_log_sink({});
    set_interrupt_check(nullptr);
  }));
  add_compiled_op_type(m);
  add_batched_op_type(m);
  add_link_errors(m);

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
