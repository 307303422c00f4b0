// A graph built from Python, linked: its module generated, built (or found) and loaded, and a
// `CompiledOp` instance of it made with the values of its constants.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

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

/// Builds (or finds) the modules of `graphs` in the cache, those not in it compiled together
/// where they can share a library; a graph whose code cannot be generated is left for its
/// `link` to report.
void prepare_together(std::vector<PyGraph*> const& graphs);

/// The core's notices become records of the `libsection` logger, and its builds stop at a
/// Python interrupt (until the interpreter exits).
void connect_core_to_python();

}  // namespace section::python
