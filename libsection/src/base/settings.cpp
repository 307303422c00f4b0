// The `LIBSECTION_*` environment variables: read and checked here only.
#include "section/settings.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace section {
namespace {

constexpr std::array variables = {
    SettingVariable{"LIBSECTION_CACHE_DIR",
                    "the compile cache's root (default: $XDG_CACHE_HOME/libsection, else "
                    "~/.cache/libsection)"},
    SettingVariable{"LIBSECTION_CACHE_MAX_BYTES",
                    "the cache's size cap, bytes with an optional K, M or G suffix (default 1G)"},
    SettingVariable{"LIBSECTION_LOCK_TIMEOUT",
                    "seconds to wait for another process building the same module (default "
                    "300; 0: never wait)"},
    SettingVariable{"LIBSECTION_MAX_FILE_BYTES",
                    "the largest section file read, in bytes (default 67108864, 64 MiB)"},
    SettingVariable{"LIBSECTION_DEBUG", "1: build modules for gdb (-O0 -g); 0 or unset: -O3"},
    SettingVariable{"LIBSECTION_CXXFLAGS",
                    "flags added to every module's compile (e.g. -march=native)"},
    SettingVariable{"LIBSECTION_CFLAGS",
                    "flags added to the compile of every module compiled as C (an op declared "
                    "language = \"c\")"},
    SettingVariable{"LIBSECTION_COMPILE_TIMEOUT",
                    "seconds a compiler run of a build may take before it is stopped (default "
                    "600; 0: no limit)"},
    SettingVariable{"LIBSECTION_CHECK_TIMEOUT",
                    "seconds a compile check (section-lint --compile, its server on save) may "
                    "take before it is stopped (default 60; 0: no limit)"},
    SettingVariable{"LIBSECTION_COMPILE_MEMORY",
                    "the memory each compiler process may allocate (RLIMIT_DATA), bytes with "
                    "an optional K, M or G suffix (default 4G; 0: no limit)"},
    SettingVariable{"LIBSECTION_LINKER",
                    "bfd, gold, lld or default (default: lld for clang, else gold when "
                    "installed)"},
    SettingVariable{"LIBSECTION_COMPILER_LAUNCHER",
                    "a program to run the compiler through (ccache, sccache)"},
    SettingVariable{"LIBSECTION_PCH", "0: no precompiled header; 1 or unset: one per toolchain"},
    SettingVariable{"LIBSECTION_PROGRESS",
                    "0: no progress line for compiles over a second; 1 or unset: on a terminal "
                    "or in a notebook"},
    SettingVariable{"LIBSECTION_DERIVATIVE_MODE",
                    "how a gradient derived from an op's C code is computed: auto (the default: "
                    "forward passes for few differentiated scalars, reverse mode for many), "
                    "forward or reverse"},
    SettingVariable{"LIBSECTION_TAPE_MAX_BYTES",
                    "the most memory a reverse-mode derived gradient's tape takes per call, "
                    "bytes with an optional K, M or G suffix (default 1G); past it, forward "
                    "passes"},
    SettingVariable{"LIBSECTION_SHOW_GENERATED",
                    "1: a compile error also lists the compiler's messages about the generated "
                    "module's own lines; 0 or unset: those are told in terms of your files"},
    SettingVariable{"LIBSECTION_RELEASE_GIL",
                    "0: every op's code runs with the GIL held, as written; 1 or unset: without "
                    "it where the linker sees that is safe (README, \"Threads\")"},
};

/// The variable's value; nullptr when unset or empty (both mean the default).
char const* value_of(char const* name) {
  char const* text = std::getenv(name);
  return text && *text ? text : nullptr;
}

[[noreturn]] void refuse(std::string const& message) { throw SettingsError(message); }

/// The words of a variable naming compiler arguments, each checked as any compiler argument.
std::vector<std::string> compiler_words(char const* name);
void read_compiler_settings(Settings& s);
void read_derivative_settings(Settings& s);

/// A 0 or 1 switch that is set: whether it is 1.
bool zero_or_one(char const* name, char const* text, std::string const& meaning) {
  std::string const s = text;
  if (s != "0" && s != "1") refuse(std::string(name) + " is `" + s + "`: give " + meaning);
  return s == "1";
}

double seconds(char const* name, char const* text, char const* zero = "never wait") {
  std::string const s = text;
  std::size_t const dot = s.find('.');
  auto all_digits = [](std::string const& part) {
    return !part.empty() && part.size() <= 9 &&
           std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!all_digits(s.substr(0, dot)) || (dot != std::string::npos && !all_digits(s.substr(dot + 1))))
    refuse(std::string(name) + "=`" + s + "` is not a number of seconds (e.g. 60, 0.5; 0: " + zero +
           ")");
  return std::strtod(text, nullptr);
}

std::size_t positive_bytes(char const* name, char const* text) {
  std::string const s = text;
  bool const digits = !s.empty() && s.size() <= 19 &&
                      std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  unsigned long long const value = digits ? std::strtoull(text, nullptr, 10) : 0;
  if (value == 0) refuse(std::string(name) + "=" + s + " is not a positive number of bytes");
  return static_cast<std::size_t>(value);
}

}  // namespace

std::vector<std::string> split_blanks(char const* text) {
  std::vector<std::string> words;
  std::istringstream in(text ? text : "");
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::optional<std::string> compiler_argument_problem(std::string_view argument) {
  if (argument.empty()) return "is empty";
  if (argument.size() > max_compiler_argument)
    return "is over " + std::to_string(max_compiler_argument) + " bytes";
  for (std::size_t i = 0; i < argument.size(); ++i) {
    auto const byte = static_cast<unsigned char>(argument[i]);
    if (byte < 0x20 || byte == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", byte);
      return std::string("holds a control character (byte ") + hex + " at offset " +
             std::to_string(i) + ")";
    }
  }
  return std::nullopt;
}

std::uintmax_t parse_size(std::string const& text, std::string const& what) {
  auto fail = [&](char const* why) -> std::uintmax_t {
    refuse(what + "=`" + text + "` " + why +
           ": give a whole number of bytes with an optional K, M or G suffix (powers of "
           "1024), e.g. 1048576, 500M, 2G");
  };
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return fail("is not a size");
  std::string const suffix = text.substr(digits);
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (!suffix.empty()) return fail("is not a size");
  std::uintmax_t value = 0;
  std::uintmax_t const max = UINTMAX_MAX >> shift;
  for (std::size_t i = 0; i < digits; ++i) {
    unsigned const d = static_cast<unsigned>(text[i] - '0');
    if (value > (max - d) / 10) return fail("is too large");
    value = value * 10 + d;
  }
  return value << shift;
}

std::size_t max_file_bytes_setting() {
  char const* limit = value_of("LIBSECTION_MAX_FILE_BYTES");
  return limit ? positive_bytes("LIBSECTION_MAX_FILE_BYTES", limit) : Settings{}.max_file_bytes;
}

Settings read_settings() {
  Settings s;
  if (char const* dir = value_of("LIBSECTION_CACHE_DIR")) s.cache_dir = dir;
  if (char const* size = value_of("LIBSECTION_CACHE_MAX_BYTES"))
    s.cache_max_bytes = parse_size(size, "LIBSECTION_CACHE_MAX_BYTES");
  if (char const* timeout = value_of("LIBSECTION_LOCK_TIMEOUT"))
    s.lock_timeout = seconds("LIBSECTION_LOCK_TIMEOUT", timeout);
  s.max_file_bytes = max_file_bytes_setting();
  char const* debug = value_of("LIBSECTION_DEBUG");
  s.debug = debug && zero_or_one("LIBSECTION_DEBUG", debug, "1 (build for gdb: -O0 -g) or 0");
  read_compiler_settings(s);
  if (char const* progress = value_of("LIBSECTION_PROGRESS"))
    zero_or_one("LIBSECTION_PROGRESS", progress, "0 (no progress line) or 1");
  read_derivative_settings(s);
  char const* show = value_of("LIBSECTION_SHOW_GENERATED");
  s.show_generated = show && zero_or_one("LIBSECTION_SHOW_GENERATED", show,
                                         "1 (show errors in the generated module) or 0");
  char const* release = value_of("LIBSECTION_RELEASE_GIL");
  s.release_gil = !release || zero_or_one("LIBSECTION_RELEASE_GIL", release,
                                          "1 (ops' code runs without the GIL where safe) or 0");
  return s;
}

std::span<SettingVariable const> setting_variables() { return variables; }

namespace {

/// How a module is compiled: the compiler's flags, linker, limits and launcher.
void read_compiler_settings(Settings& s) {
  s.cxxflags = compiler_words("LIBSECTION_CXXFLAGS");
  s.cflags = compiler_words("LIBSECTION_CFLAGS");
  if (char const* linker = value_of("LIBSECTION_LINKER")) {
    s.linker = linker;
    if (s.linker != "bfd" && s.linker != "gold" && s.linker != "lld" && s.linker != "default")
      refuse("LIBSECTION_LINKER is `" + s.linker + "`: give bfd, gold, lld or default");
  }
  if (char const* limit = value_of("LIBSECTION_COMPILE_TIMEOUT"))
    s.compile_timeout = seconds("LIBSECTION_COMPILE_TIMEOUT", limit, "no limit");
  if (char const* limit = value_of("LIBSECTION_CHECK_TIMEOUT"))
    s.check_timeout = seconds("LIBSECTION_CHECK_TIMEOUT", limit, "no limit");
  if (char const* limit = value_of("LIBSECTION_COMPILE_MEMORY"))
    s.compile_memory = parse_size(limit, "LIBSECTION_COMPILE_MEMORY");
  s.compiler_launcher = compiler_words("LIBSECTION_COMPILER_LAUNCHER");
  char const* pch = value_of("LIBSECTION_PCH");
  s.precompiled_header =
      !pch || zero_or_one("LIBSECTION_PCH", pch, "0 (no precompiled header) or 1");
}

/// How a gradient derived from an op's C code is computed.
void read_derivative_settings(Settings& s) {
  // Read again by each derivative module at each call (generate/driver.h), by the same rules.
  if (char const* mode = value_of("LIBSECTION_DERIVATIVE_MODE")) {
    s.derivative_mode = mode;
    if (s.derivative_mode != "auto" && s.derivative_mode != "forward" &&
        s.derivative_mode != "reverse")
      refuse("LIBSECTION_DERIVATIVE_MODE is `" + s.derivative_mode +
             "`: give auto, forward or reverse");
  }
  if (char const* tape = value_of("LIBSECTION_TAPE_MAX_BYTES")) {
    s.tape_max_bytes = parse_size(tape, "LIBSECTION_TAPE_MAX_BYTES");
    if (s.tape_max_bytes == 0) refuse("LIBSECTION_TAPE_MAX_BYTES=0: give a positive size");
  }
}

std::vector<std::string> compiler_words(char const* name) {
  auto words = split_blanks(value_of(name));
  for (auto const& word : words) {
    auto const problem = compiler_argument_problem(word);
    if (!problem) continue;
    std::string shown = word.substr(0, 60);
    for (char& c : shown)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    refuse(std::string(name) + ": the word `" + shown + "` " + *problem);
  }
  return words;
}

}  // namespace

}  // namespace section
