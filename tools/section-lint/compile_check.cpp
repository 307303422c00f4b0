// The compile check of one op's section files, and where it finds Python's and NumPy's headers.
#include "compile_check.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "section/codes.hpp"
#include "section/linker.hpp"
#include "section/parse.hpp"
#include "section/read.hpp"

namespace lint_compile {
namespace {

namespace fs = std::filesystem;

/// Python's or NumPy's headers not found; the message says what to set.
class NoHeaders : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr char const* how_to_set =
    ": set `python` (`--python`, the language server's initializationOptions, or for the "
    "command line `python = \"...\"` in section-lint.toml or [tool.section-lint]) to an "
    "interpreter with NumPy, or run `python -m libsection editor-setup` in the op's folder";

/// The links editor-setup keeps in `.libsection-editor/` (`python`, `numpy`), in the folder
/// `dir` or the nearest folder above it that has them.
std::optional<section::PythonEnvironment> editor_headers(fs::path dir) {
  std::error_code ec;
  dir = fs::absolute(dir, ec).lexically_normal();
  for (;;) {
    fs::path const headers = dir / ".libsection-editor";
    if (fs::is_directory(headers / "python", ec) && fs::is_directory(headers / "numpy", ec))
      return section::PythonEnvironment{
          {(headers / "python").string(), (headers / "numpy").string()}, "", ""};
    if (dir.empty() || dir == dir.root_path()) return std::nullopt;
    dir = dir.parent_path();
  }
}

/// What `interpreter` says, asked once per process (a Python with NumPy starts in ~0.2 s).
section::PythonEnvironment asked(std::string const& interpreter,
                                 section::ModuleCache const& cache) {
  static std::mutex lock;
  static std::map<std::string, section::PythonEnvironment> known;
  std::lock_guard<std::mutex> const held(lock);
  if (auto it = known.find(interpreter); it != known.end()) return it->second;
  try {
    return known[interpreter] = section::python_headers(interpreter, cache);
  } catch (section::LinkError const& e) {
    throw NoHeaders(e.what() + std::string(how_to_set));
  }
}

/// The headers the check compiles with, each folder checked for its main header.
section::PythonEnvironment headers_for(Request const& request, section::ModuleCache const& cache) {
  section::PythonEnvironment python;
  std::string from;
  fs::path const first = request.files.empty() ? fs::path(".") : fs::path(request.files[0].first);
  if (!request.python.empty()) {
    python = asked(request.python, cache);
    from = "the `python` setting, " + request.python;
  } else if (auto editor = editor_headers(first.has_parent_path() ? first.parent_path() : ".")) {
    python = *editor;
    from = "the .libsection-editor folder editor-setup made";
  } else {
    python = asked("python3", cache);
    from = "`python3` on PATH";
  }
  char const* const wanted[] = {"Python.h", "numpy/arrayobject.h"};
  for (std::size_t i = 0; i < 2; ++i) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::path(python.include_dirs[i]) / wanted[i], ec))
      throw NoHeaders(std::string("no ") + wanted[i] + " in " + python.include_dirs[i] + " (from " +
                      from + ")" + how_to_set);
  }
  return python;
}

section::Diagnostic cannot_check(std::string const& why) {
  return section::make_diagnostic(section::compile_check, "not compile-checked: " + why);
}

}  // namespace

std::vector<section::Diagnostic> compile_check(Request const& request, section::SourceManager& sm) {
  try {
    section::ModuleCache const cache;
    auto const python = headers_for(request, cache);
    auto files = std::make_shared<section::SourceManager>();
    std::vector<section::Diagnostic> reported_by_the_linter;
    std::vector<section::FileId> ids;
    for (auto const& [path, text] : request.files)
      if (auto id = section::add_source(*files, text, path, reported_by_the_linter))
        ids.push_back(*id);
    auto sections = section::merge_sections(*files, ids, {}, request.extra_sections);
    if (!sections.ok()) return {};  // the linter says why the files do not load
    return section::check_op_compiles(request.op, request.params, files, std::move(sections),
                                      python, cache, sm);
  } catch (std::exception const& e) {  // no headers, no compiler, no module, no cache
    return {cannot_check(e.what())};
  }
}

}  // namespace lint_compile
