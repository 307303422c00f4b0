// Every `LIBSECTION_*` environment variable libsection reads, read and checked in one place:
// a bad value is refused with the variable's name before any file or directory is touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace section {

/// A `LIBSECTION_*` variable with a value libsection cannot use; the message names it.
class SettingsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The values of the variables, defaults where unset or empty.
struct Settings {
  std::optional<std::filesystem::path> cache_dir;            ///< LIBSECTION_CACHE_DIR
  std::uintmax_t cache_max_bytes = std::uintmax_t{1} << 30;  ///< LIBSECTION_CACHE_MAX_BYTES
  double lock_timeout = 300;                                 ///< LIBSECTION_LOCK_TIMEOUT (s)
  std::size_t max_file_bytes = std::size_t{64} << 20;        ///< LIBSECTION_MAX_FILE_BYTES
  bool debug = false;                                        ///< LIBSECTION_DEBUG=1
  std::vector<std::string> cxxflags;                         ///< LIBSECTION_CXXFLAGS
  std::vector<std::string> cflags;                           ///< LIBSECTION_CFLAGS
  std::string linker;                          ///< LIBSECTION_LINKER: "" (choose), bfd, ...
  std::vector<std::string> compiler_launcher;  ///< LIBSECTION_COMPILER_LAUNCHER
  bool precompiled_header = true;              ///< LIBSECTION_PCH=0 turns it off
  bool show_generated = false;                 ///< LIBSECTION_SHOW_GENERATED=1
  /// Each compiler run of a build: stopped after this many seconds (0: never), its data
  /// segment (RLIMIT_DATA) bounded to this many bytes (0: no bound).
  double compile_timeout = 600;                             ///< LIBSECTION_COMPILE_TIMEOUT (s)
  double check_timeout = 60;                                ///< LIBSECTION_CHECK_TIMEOUT (s)
  std::uintmax_t compile_memory = std::uintmax_t{4} << 30;  ///< LIBSECTION_COMPILE_MEMORY
  /// LIBSECTION_DERIVATIVE_MODE: `auto`, `forward` or `reverse`, and LIBSECTION_TAPE_MAX_BYTES:
  /// checked here; a derivative module reads them again at each call (generate/driver.h).
  std::string derivative_mode = "auto";
  std::uintmax_t tape_max_bytes = std::uintmax_t{1} << 30;
  bool release_gil = true;  ///< LIBSECTION_RELEASE_GIL=0 turns it off
  // LIBSECTION_PROGRESS is checked with the others but read by Python's progress line.
};

/// Reads every variable from the environment and checks it; throws `SettingsError` naming the
/// first one with a bad value.
Settings read_settings();

/// `read_settings`, a bad setting thrown as the caller's own error type, `Error(message)`.
template <class Error>
Settings read_settings_as() {
  try {
    return read_settings();
  } catch (SettingsError const& e) {
    throw Error(e.what());
  }
}

/// LIBSECTION_MAX_FILE_BYTES alone, for readers of section files, which need no other.
std::size_t max_file_bytes_setting();

/// One variable: its name, what it means and what values it takes (for `--help` and the README).
struct SettingVariable {
  std::string_view name;
  std::string_view meaning;
};

/// Every variable `read_settings` reads, in the README's order.
std::span<SettingVariable const> setting_variables();

/// Parses a size: a whole number of bytes with an optional K, M or G suffix (powers of 1024).
/// `what` names the value's origin in the `SettingsError`.
std::uintmax_t parse_size(std::string const& text, std::string const& what);

/// Words of `text` split at blanks (nothing for NULL).
std::vector<std::string> split_blanks(char const* text);

/// What makes `argument` unusable as one argument of the compiler's command (a flag of
/// `LIBSECTION_CXXFLAGS`, an op's `c_compile_args`, a folder or library it names), or nothing:
/// empty, over `max_compiler_argument` bytes, or holding a control character (a NUL byte would
/// cut it short, a newline split the command kept with a failed build). The one check of
/// every such argument, whoever gives it.
std::optional<std::string> compiler_argument_problem(std::string_view argument);
inline constexpr std::size_t max_compiler_argument = 4096;

}  // namespace section
