// A graph built from Python, linked: its module generated, built (or found) and loaded, and a
// `CompiledOp` instance of it made with the values of its constants.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loaded.hpp"
#include "section/linker.hpp"

namespace section::python {

/// A graph under construction from Python, with the Python objects its types and ops wrap. Its
/// module is generated once, when `module` is first asked for, and again only after the graph
/// changes.
class PyGraph {
 public:
  Graph const& graph() const { return graph_; }
  Graph& edit() {
    module_.reset();
    return graph_;
  }
  /// Shared: a build that released the GIL keeps its module while another thread edits.
  std::shared_ptr<ModuleSource const> module(SourceManager const& sm);

 private:
  Graph graph_;
  std::shared_ptr<ModuleSource const> module_;
};

/// Builds (or finds) and loads `module`, generated for `graph`, and instantiates it with the
/// values of the graph's constants (`storage`: a PyTensor VM's cells to run in place on); with
/// `instantiate` false, only builds and loads (returns None; the values are not looked at).
/// Raises `ValueError` for values that do not fit the graph, and the Python form of a
/// `LinkError`.
pybind11::object link_module(Graph const& graph, ModuleSource const& module,
                             std::vector<pybind11::object> const& constants, SourceManager& sm,
                             std::string const& display_name,
                             std::optional<std::vector<pybind11::object>> const& storage,
                             bool instantiate = true);

/// Generates `graph`'s module, then `link_module`.
pybind11::object link(Graph const& graph, std::vector<pybind11::object> const& constants,
                      SourceManager& sm, std::string const& display_name);

/// `link_module` of `graph`'s module (generated once), as `_core.link` does.
pybind11::object link_graph(PyGraph& graph, std::vector<pybind11::object> const& constants,
                            std::string const& name,
                            std::optional<std::vector<pybind11::object>> const& storage);

/// Builds (or finds) and loads `graph`'s module without instantiating it (`link_module`).
void prepare_graph(PyGraph& graph, std::string const& name);

/// A new instance of the module of cache entry `key` (`load_cached_module`), with `constants`
/// its params, or None when the cache has no such entry.
pybind11::object link_cached(std::string const& key, std::string const& name, std::size_t n_inputs,
                             std::size_t n_outputs, std::vector<pybind11::object> const& constants);

/// The op of the sections `loaded`, for the `inputs` and `outputs` type strings, linked: its
/// description from the arguments (PyTensor's `ExternalCOp`'s, `language` "c++" or "c",
/// `release_gil` false to keep the GIL while its code runs),
/// `params` its params fields `(name, type string, value)`, the `c_*` lists what it adds to
/// its build (`section_op_graph`). Raises the Python form of the `LinkError` of sections that
/// failed to load, of bad type strings or of the build.
pybind11::object build_sections(
    LoadedSections& loaded, std::vector<std::string> const& inputs,
    std::vector<std::string> const& outputs, std::optional<std::string> func_name,
    std::vector<std::tuple<std::string, std::string, pybind11::object>> const& params,
    std::string const& name, std::optional<int> num_inputs, std::optional<int> num_outputs,
    bool check_input, std::string const& language, std::vector<std::string> c_headers,
    std::vector<std::string> c_header_dirs, std::vector<std::string> c_libraries,
    std::vector<std::string> c_lib_dirs, std::vector<std::string> c_compile_args, bool release_gil);

/// Builds (or finds) the modules of `graphs` in the cache, those not in it compiled together
/// where they can share a library; a graph whose code cannot be generated is left for its
/// `link` to report.
void prepare_together(std::vector<PyGraph*> const& graphs);

/// The core's notices become records of the `libsection` logger, and its builds stop at a
/// Python interrupt (until the interpreter exits).
void connect_core_to_python();

}  // namespace section::python
