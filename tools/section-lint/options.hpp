// section-lint's command line: its options, and the values they are read into.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "files.hpp"

namespace lint_cli {

/// What the command line asks for.
struct Options {
  std::vector<std::string> paths;
  std::string format = "full";
  std::vector<std::string> select;
  std::vector<std::string> ignore;
  std::vector<std::string> extend_select;
  bool fix = false;
  bool unsafe_fixes = false;
  bool diff = false;
  std::string color = "auto";
  std::string stdin_filename;
  bool statistics = false;
  bool quiet = false;
  bool watch = false;
  bool marked_only = false;
  bool isolated = false;
  bool exit_zero = false;
  bool list_rules = false;
  std::string explain;
  std::string inputs;
  std::string outputs;
  std::string params;
  std::string func_name;
  std::string language = "c++";
  bool differentiated = false;
  bool compile = false;  ///< `--compile`: the compiler's errors too
  std::string python;    ///< `--python`: the interpreter whose headers `--compile` uses
  std::vector<std::string> extra_sections;
  lint_files::Selection selection;  // --exclude, --extend-exclude, --[no-]respect-gitignore
};

/// What the command line gives that is settled after parsing: `--exclude` replaces the
/// settings' list only when given, `--[no-]respect-gitignore` only when either is.
struct CommandLine {
  std::vector<std::string> exclude;
  CLI::Option* exclude_option = nullptr;
  bool respect_gitignore = false, no_respect_gitignore = false;
  CLI::App* server = nullptr;  ///< the `server` subcommand
};

/// Adds section-lint's options and its `server` subcommand to `app`, read into `o` and `line`.
void add_options(CLI::App& app, Options& o, CommandLine& line);

}  // namespace lint_cli
