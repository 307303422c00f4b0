// A module's compile check: the build's compiler and flags with `-fsyntax-only`, nothing kept;
// its errors told in the section files as a failed build tells them.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "linker/build/compile.hpp"
#include "linker/cache/files.hpp"
#include "section/codes.hpp"

namespace section {
namespace fs = std::filesystem;

namespace {

/// Removes a check's work folder, however the check ends (an interrupt too).
struct CheckFolder {
  ModuleCache const& cache;
  WorkDir work;
  ~CheckFolder() {
    try {
      cache.discard(work);
    } catch (...) {  // a leftover `gc` collects later
    }
  }
};

bool in_any(SourceRange const& r, std::vector<FileId> const& files) {
  return r.valid() && std::find(files.begin(), files.end(), r.file) != files.end();
}

/// The check's diagnostics in the section files: one there stays; an error in the generated
/// module moves to what it means there (the first note in a section file, which
/// `explain_compile_errors` adds), the compiler's own words kept as a note; the generated
/// module's other errors are one diagnostic, its warnings none (they are not the user's).
std::vector<Diagnostic> told_in_sections(std::vector<Diagnostic> diagnostics,
                                         CompiledSources const& sources) {
  std::vector<Diagnostic> out;
  std::size_t untold = 0;
  std::string first_untold;
  for (auto& d : diagnostics) {
    if (in_any(d.range, sources.section_files)) {
      out.push_back(std::move(d));
      continue;
    }
    auto const note = std::find_if(d.notes.begin(), d.notes.end(), [&](Note const& n) {
      return in_any(n.range, sources.section_files);
    });
    if (note != d.notes.end()) {
      Diagnostic moved = make_diagnostic(compile_error, note->message, note->range);
      moved.notes.push_back({"the compiler says, in the generated module: " + d.message, {}});
      out.push_back(std::move(moved));
    } else if (d.is_error() && untold++ == 0) {
      first_untold = d.message;
    }
  }
  if (untold > 0)
    out.push_back(make_diagnostic(
        compile_error,
        "error in the generated module: " + first_untold +
            (untold > 1 ? " (" + std::to_string(untold - 1) + " more there)" : std::string()) +
            "; `section-expand` prints the module"));
  return out;
}

}  // namespace

std::vector<Diagnostic> check_module(ModuleSource const& module, PythonEnvironment const& python,
                                     ModuleCache const& cache, SourceManager& sm) {
  Toolchain const tc = find_toolchain(cache.state(), module.language);
  CheckFolder folder{cache, cache.make_work_dir("check")};
  PrivateDir const& work = folder.work.dir;
  fs::path const source = work.path() / entry_file::source;
  work.write(entry_file::source, module.text);
  auto command = module_compile(tc, python, module);
  command.insert(command.end(), {"-fsyntax-only", "-x", tc.language == Language::c ? "c" : "c++",
                                 source.string()});
  int const status = run_program(command, work.path() / entry_file::log, tc.check_limits);
  std::string const log = work.read(entry_file::log).value_or("");
  CompiledSources const sources = compiled_sources(module.text, module_file_name, sm);
  auto diagnostics = parse_compiler_output(log, sm);
  explain_compile_errors(diagnostics, sm, sources, false);
  auto out = told_in_sections(std::move(diagnostics), sources);
  bool const any_error = std::any_of(out.begin(), out.end(), [](auto& d) { return d.is_error(); });
  if (status != 0 && !any_error)  // no parsable error (a crash, a missing program): the log's end
    out.push_back(make_diagnostic(
        compile_error, "the compiler failed (status " + std::to_string(status) +
                           "): " + (log.size() > 2000 ? log.substr(log.size() - 2000) : log)));
  return out;
}

PythonEnvironment python_headers(std::string const& interpreter, ModuleCache const& cache) {
  auto const program = find_on_path(interpreter);
  if (!program) throw LinkError("`" + interpreter + "` is not an executable (nor one on PATH)");
  // Bounded in time as a build's compiler runs are; not in memory (NumPy's BLAS may reserve
  // much at import), and it is the user's chosen interpreter, not a check of hostile text.
  ProgramLimits limits = compiler_limits(read_settings_as<LinkError>());
  limits.slow_because = "";
  limits.memory = 0;
  CheckFolder folder{cache, cache.make_work_dir("python")};
  fs::path const log = folder.work.dir.path() / entry_file::log;
  // -P: a folder's own `numpy.py` or `sysconfig.py` is not imported in place of the real ones.
  int const status =
      run_program({program->string(), "-P", "-c",
                   "import sysconfig, numpy; print(sysconfig.get_paths()['include']); "
                   "print(numpy.get_include())"},
                  log, limits);
  std::string const said = folder.work.dir.read(entry_file::log).value_or("");
  std::istringstream lines(said);
  PythonEnvironment python;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) python.include_dirs.push_back(line);
  if (status != 0 || python.include_dirs.size() != 2) {
    // Its last words (Python's error), on one line.
    std::string last = said.substr(said.size() > 500 ? said.size() - 500 : 0);
    while (!last.empty() && std::isspace(static_cast<unsigned char>(last.back()))) last.pop_back();
    std::replace(last.begin(), last.end(), '\n', ' ');
    throw LinkError(
        "`" + interpreter +
        "` cannot tell where Python's and NumPy's headers are (it needs NumPy): " + last);
  }
  return python;
}

}  // namespace section
