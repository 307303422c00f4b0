// Generating the C++ source of a module for one or more applies, laid out as PyTensor's CLinker
// lays it out: the C struct with storage cells, nested blocks, `__label_N` cleanup labels and a
// `__failure` code; and laying out the modules of several graphs as one.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "section/ctype.hpp"
#include "section/linker/generate/graph.hpp"
#include "section/op.hpp"

namespace section {

/// Bumped whenever the layout of generated modules or their exported functions change.
inline constexpr int module_abi_version = 7;

/// Stands for the suffix of a graph's own symbols until its module is laid out: nothing in a
/// module of one graph, `_<k>` for graph k of a module of several (`generate_together`).
inline constexpr char const* member_placeholder = "<<<<MEMBER_PLACEHOLDER>>>>";

/// What the namespace of each graph's C++ code in a module of several starts with (the graph's
/// number follows).
inline constexpr char const* graph_namespace_prefix = "libsection_graph_";

/// The symbols' suffix of graph `graph` in a library of `graphs` graphs (see `ModuleSource`).
std::string graph_suffix(int graph, int graphs);

/// What a module of several graphs (`generate_together`) takes from the module of one of them:
/// its include lines and support code (shared by the graphs, duplicates dropped, as PyTensor's
/// CLinker drops them), and the rest of its text, named, with `member_placeholder` where its
/// symbols take their suffix.
struct ModuleMember {
  std::vector<std::string> includes;
  std::vector<std::string> support;
  std::string body;
};

/// A generated module. Its exported C functions (all `extern "C"`):
///   `int libsection_abi_version(void)`
///   `PyObject* libsection_module_init(const void* runtime)`  (the `libsection_runtime` table;
///       returns a borrowed `Py_None`, or NULL with an exception)
/// and for each of its graphs, their names ending in the graph's suffix (`graph_suffix`):
///   `PyObject* libsection_init(void)`  (the graph's init code, run once per process before its
///       first instance; returns a borrowed `Py_None`, or NULL with an exception)
///   `void* libsection_instance_new(PyObject** storage)`  (cells: inputs, outputs, constants)
///   `int libsection_instance_run(void*)`  (0, or a failure code with an exception set)
///   `int libsection_instance_run_batch(void*, PyObject* const* inputs, PyObject** outputs,
///       const long long* plan, const char* const* labels)`  (the graph once per row of a batch
///       of inputs with leading batch dimensions, in one C loop: batch.c, which says what `plan`
///       and `labels` hold; only when every input and output can take a row: an array or a
///       scalar whose glue is the runtime's)
///   `void libsection_instance_free(void*)`
/// Each storage cell is a one-element list, as in PyTensor's CLinker.
struct ModuleSource {
  std::string text;
  std::string name;  ///< `m<sha256>` of the text before naming, substituted for the placeholders
  std::vector<std::string> header_dirs;
  std::vector<std::string> libraries;
  std::vector<std::string> lib_dirs;
  std::vector<std::string> compile_args;
  std::vector<std::string> op_names;
  std::vector<std::string> input_types, output_types;  ///< `describe()` of each, for messages
  /// What the text is compiled as: C only when every op of the graph is declared C and the
  /// text is C (it then starts with `module_prelude` and `c_module_prelude`); part of the key.
  Language language = Language::cxx;
  /// How many graphs the module holds: 1, or more for `generate_together`'s.
  int graphs = 1;
  /// A module nothing outside needs a symbol of but its entry points (`whole_program_text`, no
  /// library linked, no LTO, no flag including a file): GCC compiles it with `-fwhole-program`,
  /// so the op's functions are compiled once, where they are called, and not a second time on
  /// their own. Part of the key.
  bool whole_program = false;
  /// A module of one graph: what `generate_together` takes of it.
  ModuleMember member;
};

/// What every module starts with (also the precompiled header): Python, NumPy's C API, and the
/// glue every variable of a type shares, written once per module instead of once per variable.
/// The text of `src/linker/generate/prelude.h`, embedded when the library is built.
extern char const* const module_prelude;

/// The runtime's C++ source (valid C too): the prelude, the functions of `libsection_runtime`,
/// `libsection_abi_version` and `libsection_runtime_table`. The Python package compiles it into
/// `libsection/_runtime.so` (python/CMakeLists.txt); its loader loads it once per process, and
/// every module's `libsection_module_init` gets the table.
std::string runtime_source();

/// What a module compiled as C has after `module_prelude`: `bool`, `true` and `false`, which
/// PyTensor's C code uses (C++ has them built in; C before C23 from this header).
inline constexpr char const* c_module_prelude = "#include <stdbool.h>\n";

/// The name `#line` directives give the module's own source (its path is only known when it is
/// compiled, and must not change the text); compile errors there are mapped to the kept file.
inline constexpr char const* module_file_name = "<libsection-module>";

/// Stands for the module's name until it is known; `APPLY_SPECIFIC` suffixes use it.
inline constexpr char const* hash_placeholder = "<<<<HASH_PLACEHOLDER>>>>";

/// Writes the module of `graph`: its text and what its ops and types ask for, the compile flags
/// the build decides from them not yet added (`generate_module`, section/linker.hpp, does
/// both). Throws `LinkError` (from an op) or `std::invalid_argument` (bad graph).
ModuleSource write_module(Graph const& graph);

/// Whether the modules of two graphs can share one library: the same language, flags, header
/// and library directories and libraries.
bool can_share_library(ModuleSource const& a, ModuleSource const& b);

/// One module holding the graphs of `members` (modules of one graph each, which
/// `can_share_library`), graph k with the symbols' suffix `_k`: one compile and one link for
/// all of them. Their support code is shared, duplicates dropped. Throws
/// `std::invalid_argument` for fewer than two members or members that cannot share.
ModuleSource generate_together(std::vector<ModuleSource const*> const& members);

/// The module of a support library: C++ (or C) `code` that is not generated from ops (the JAX
/// handler), after the prelude (Python's and NumPy's headers) and the export macros
/// (`LIBSECTION_EXPORT`), with `LIBSECTION_MODULE_ABI` defined; built, cached and verified as a
/// module is. It exports `libsection_abi_version` and `libsection_module_init` (which gets the
/// runtime's table) and its own entry points, no instance.
ModuleSource support_library_module(std::string const& name, std::string const& code,
                                    Language language, std::vector<std::string> header_dirs);

}  // namespace section
