// A graph built from Python, linked into a `CompiledOp`; the core's notices and interrupts in
// Python.
#include "linking.hpp"

#include <pybind11/stl.h>

#include <utility>

#include "compiled_op.hpp"
#include "link_errors.hpp"
#include "loader.hpp"
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

}  // namespace

std::shared_ptr<ModuleSource const> PyGraph::module(SourceManager const& sm) {
  if (!module_) module_ = generate(graph_, sm);
  return module_;
}

py::object link_module(Graph const& graph, ModuleSource const& module,
                       std::vector<py::object> const& constants, SourceManager& sm,
                       std::string const& display_name,
                       std::optional<std::vector<py::object>> const& storage, bool instantiate) {
  if (instantiate) check_link_arguments(graph, constants, storage);
  LoadedModule loaded = load_module(module, sm);
  if (!instantiate) return py::none();
  // On a PyTensor VM's cells (storage), PyTensor checks what the node returns.
  return new_compiled_op(*loaded.library, graph.inputs().size(), graph.outputs().size(), constants,
                         storage, std::move(loaded.info), display_name,
                         storage ? std::vector<DeclaredOutput>{} : declared_outputs(graph));
}

py::object link(Graph const& graph, std::vector<py::object> const& constants, SourceManager& sm,
                std::string const& display_name) {
  check_link_arguments(graph, constants, std::nullopt);  // before the module is generated
  return link_module(graph, *generate(graph, sm), constants, sm, display_name, std::nullopt);
}

py::object link_graph(PyGraph& graph, std::vector<py::object> const& constants,
                      std::string const& name,
                      std::optional<std::vector<py::object>> const& storage) {
  SourceManager sm;
  return link_module(graph.graph(), *graph.module(sm), constants, sm, name, storage);
}

void prepare_graph(PyGraph& graph, std::string const& name) {
  SourceManager sm;
  link_module(graph.graph(), *graph.module(sm), {}, sm, name, std::nullopt, false);
}

py::object link_cached(std::string const& key, std::string const& name, std::size_t n_inputs,
                       std::size_t n_outputs, std::vector<py::object> const& constants) {
  auto loaded = load_cached_module(key, name, n_inputs, n_outputs);
  if (!loaded) return py::none();
  return new_compiled_op(*loaded->library, n_inputs, n_outputs, constants, std::nullopt,
                         std::move(loaded->info), name);
}

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
  OpDescription op;
  op.name = name;
  op.func_name = std::move(func_name);
  op.num_inputs = num_inputs;
  op.num_outputs = num_outputs;
  op.check_input = check_input;
  op.language = parse_language(language, name);
  op.release_gil = release_gil;
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

void prepare_together(std::vector<PyGraph*> const& graphs) {
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
}

void connect_core_to_python() {
  set_log_sink(log_to_python);
  set_interrupt_check(python_interrupted);
  // Back to stderr before the interpreter goes, in case a thread still builds.
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    set_log_sink({});
    set_interrupt_check(nullptr);
  }));
}

}  // namespace section::python
