// Internal: compiling generated modules: finding the compiler, running it without a shell, and
// turning its errors into diagnostics in the user's files (through the `#line` directives).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "linker/build/flags.hpp"
#include "section/diagnostic.hpp"
#include "section/linker/build/build.hpp"
#include "section/linker/cache/cache.hpp"
#include "section/linker/cache/manifest.hpp"
#include "section/linker/generate/module.hpp"
#include "section/settings.hpp"
#include "section/source.hpp"

namespace section {

/// What a program `run_program` runs may take: wall-clock seconds (0: no limit; the setting that
/// gives them, and what may make a program run that long, are told when they run out) and the
/// bytes each of its processes may allocate (RLIMIT_DATA: heap and private mappings; 0: no
/// limit).
struct ProgramLimits {
  double seconds = 0;
  char const* seconds_setting = "";
  char const* slow_because = "";
  std::uintmax_t memory = 0;
  std::string memory_text() const;  ///< `4 GiB`
};

/// The compiler and how it is run.
struct Toolchain {
  std::vector<std::string> launcher;  ///< `LIBSECTION_COMPILER_LAUNCHER`, e.g. `ccache`
  std::vector<std::string> compiler;  ///< resolved compiler path, then arguments from `CXX`/`CC`
  std::string identity;               ///< path and first line of `--version`
  std::vector<std::string> flags;     ///< compile flags common to every module
  /// Link flags common to every module: `-fuse-ld=gold` (or `lld` for clang) when the faster
  /// linker is installed, or as `LIBSECTION_LINKER` (`bfd`, `gold`, `lld`) asks.
  std::vector<std::string> link_flags;
  bool debug = false;              ///< `LIBSECTION_DEBUG=1`: `-O0 -g` for gdb
  bool precompiled_header = true;  ///< `LIBSECTION_PCH=0`: none
  /// `LIBSECTION_SHOW_GENERATED=1`: a failed compile's message lists the errors in the
  /// generated module's own lines as the compiler wrote them
  bool show_generated = false;
  Language language = Language::cxx;  ///< what it compiles: C++ (`$CXX`) or C (`$CC`)
  ProgramLimits limits;               ///< each compiler run of a build
  ProgramLimits check_limits;         ///< a compile check's compiler run
};

/// Finds the compiler: `CXX` (split on blanks, no shell; a leading `ccache`/`sccache`/`distcc`
/// becomes the launcher), else `c++`, `g++`, `clang++` on `PATH`. Its `--version` is asked
/// once per compiler binary and remembered in `state` (keyed by path, size and mtime), so
/// later processes spawn nothing. `LIBSECTION_CXXFLAGS` adds flags; with `-march=native` the
/// identity also names this CPU. The linker is gold (lld for clang) when installed, unless
/// `LIBSECTION_LINKER` names another. Throws `LinkError`.
/// For C (modules of ops declared C): `CC` (default `cc`, else `gcc`, `clang`), `-std=gnu11`
/// and `LIBSECTION_CFLAGS` in place of the C++ ones.
Toolchain find_toolchain(PrivateDir const& state, Language language = Language::cxx);

/// `program` if it names a file with a slash and is executable, else the first executable of
/// that name in the absolute folders of `PATH` (a relative one, `.` or empty, is skipped);
/// nothing when there is none.
std::optional<std::filesystem::path> find_on_path(std::string const& program);

/// Clang has no precompiled headers of GCC's kind, no -fwhole-program, and links with lld.
bool is_clang(std::string const& identity);

/// The compiler, its flags, `extra_args` and the Python include directories: what every compile
/// of the toolchain starts with.
std::vector<std::string> base_compile(Toolchain const& tc, PythonEnvironment const& python,
                                      std::vector<std::string> const& extra_args);

/// `base_compile` with the module's own arguments and header folders: what compiles its text,
/// before the precompiled header, the language and the files.
std::vector<std::string> module_compile(Toolchain const& tc, PythonEnvironment const& python,
                                        ModuleSource const& module);

/// A precompiled header ready to `-include`, with its lock held so `gc` leaves it alone while
/// a module compiles with it.
struct PrecompiledHeader {
  std::filesystem::path header;
  FileLock in_use;
};

/// The versions every cache key includes, so that a cache shared by two libsection versions
/// never mixes their entries or headers: the generated modules' ABI and the manifest's format.
/// Only tests name other versions.
struct CacheFormat {
  int module_abi = module_abi_version;
  int manifest = manifest_format;
};

/// The key of the precompiled header set in `pch/`: the cache format, the compiler, its flags,
/// the language (a C header is its own), the module's `header_flags` and the Python it compiles
/// for.
std::string precompiled_header_key(Toolchain const& tc, PythonEnvironment const& python,
                                   CacheFormat const& format = {},
                                   std::vector<std::string> const& header_args = {});

/// One-time setup: a precompiled header for the module prelude (Python + NumPy, about 85 % of a
/// module's compile time), built once per compiler, flags and Python in the cache's `pch/`
/// (inside its size cap), and used whenever it builds. GCC only; not
/// with a launcher (ccache and distcc need extra configuration for precompiled headers);
/// `LIBSECTION_PCH=0` turns it off. A setup that fails for a passing reason (a full disk, an
/// I/O error, a signal) is not remembered. Returns the header to `-include`, or nothing.
/// `header_args` are the module's flags GCC requires a header to be built with
/// (`header_flags`): a header built without them is refused, and GCC then reads the headers'
/// text.
std::optional<PrecompiledHeader> precompiled_header(
    Toolchain const& tc, PythonEnvironment const& python, ModuleCache const& cache,
    std::vector<std::string> const& header_args = {});

/// The compile (`-c`) and link (`-shared`) commands for `source` → `object` → `library`, in
/// the module's language (`-x c` or `-x c++`); throws `LinkError` when `tc` is for the other.
struct CompileCommands {
  std::vector<std::string> compile;
  std::vector<std::string> link;
};
CompileCommands compile_commands(Toolchain const& tc, PythonEnvironment const& python,
                                 ModuleSource const& module, std::filesystem::path const& source,
                                 std::filesystem::path const& object,
                                 std::filesystem::path const& library,
                                 std::optional<std::filesystem::path> const& pch = std::nullopt);

/// The limits of a build's compiler runs, or of a compile check's (`check`), as the settings
/// give them (LIBSECTION_COMPILE_TIMEOUT or LIBSECTION_CHECK_TIMEOUT, LIBSECTION_COMPILE_MEMORY).
ProgramLimits compiler_limits(Settings const& settings, bool check = false);

/// A program stopped by its limits: the message says which and the setting that gives it.
class ProgramStopped : public LinkError {
 public:
  using LinkError::LinkError;
};

/// Runs `argv` (no shell), appending its stdout and stderr to `log`, within `limits`. Returns
/// the exit status (128 + signal when killed); throws `LinkError` when the program cannot be
/// started, `ProgramStopped` when it ran out of time (its process group is killed) or failed
/// saying it ran out of the memory it may allocate.
int run_program(std::vector<std::string> const& argv, std::filesystem::path const& log,
                ProgramLimits const& limits = {});

/// The file of `sm` named `path` (the last one added), else the regular file at `path` read
/// from disk into `sm`; `no_file` when there is none.
FileId file_named(std::string const& path, SourceManager& sm);

/// Parses gcc/clang output (`file:line:col: error: message`). Locations in files held by `sm`
/// (matched by path) become ranges there; others are added to `sm` from disk when readable.
std::vector<Diagnostic> parse_compiler_output(std::string const& log, SourceManager& sm);

/// The files a compiler's dependency output (`-MMD -MF`: Make's `target: file file \`) names,
/// unescaped (`\ `, `\#`, `$$`), the target left out.
std::vector<std::string> dependency_file_paths(std::string_view text);

/// Where a failed compile's messages point: the module's own text, or the section files its
/// `#line` directives name.
struct CompiledSources {
  FileId generated = no_file;
  std::vector<FileId> section_files;
};

/// Adds `module_text` to `sm` as `module_path`, and finds the files its `#line` directives name
/// (`file_named`; one that cannot be read is left out).
CompiledSources compiled_sources(std::string const& module_text, std::string const& module_path,
                                 SourceManager& sm);

/// The lines of a failed compile's message, one per error (at most 10), each starting with a
/// newline; empty when no error was parsed. What libsection knows about an error is added to its
/// diagnostic as notes and told in the message: a name one typo away from a generated macro
/// on an error in a section file (`APPLY_SPECIFC`: did you mean `APPLY_SPECIFIC`?), and for an
/// error in the generated module, what it says about the user's files (the op's main function
/// is not declared, or its call does not match it), at the likely typo or the compiler's note
/// there. Other errors in the generated module are summed up in one line, unless
/// `show_generated` asks for them as the compiler wrote them. A diagnostic repeating an earlier
/// one at its place, its message apart only in libsection's number types (a derived gradient's
/// module compiles the op's code on dual and on taped numbers), is dropped from `diagnostics`.
std::string explain_compile_errors(std::vector<Diagnostic>& diagnostics, SourceManager const& sm,
                                   CompiledSources const& sources, bool show_generated);

/// The argv of a command as one line a user can paste into a shell.
std::string shell_quote(std::vector<std::string> const& argv);

/// The cache key: hash of the cache format, the module text and its language, the compiler's
/// identity and flags, the Python ABI, NumPy's version and C API, and libsection's version.
std::string module_cache_key(ModuleSource const& module, Toolchain const& tc,
                             PythonEnvironment const& python, CacheFormat const& format = {});

}  // namespace section
