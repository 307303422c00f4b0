// section-lint's options, as ruff's where ruff has the same (file selection, output, fixes).
#include "options.hpp"

namespace lint_cli {
namespace {

/// The op the files are linted as (its signature, language, gradient, sections).
void add_op_options(CLI::App& app, Options& o) {
  app.add_option("--inputs", o.inputs, "The op's input types, e.g. float64[:],float64[:]");
  app.add_option("--outputs", o.outputs, "The op's output types, e.g. float64[:]");
  app.add_option("--params", o.params, "The op's params fields, e.g. k:int64");
  app.add_option("--func-name", o.func_name, "The op's main function, e.g. APPLY_SPECIFIC(f)");
  app.add_option("--language", o.language,
                 "What the files are written in: c++ (the default) or c (an op declared "
                 "`language = \"c\"`; reports C++-only constructs, SL208, and struct sections, "
                 "SL209)")
      ->check(CLI::IsMember({"c++", "c"}));
  app.add_flag("--differentiated", o.differentiated,
               "The op's gradient is derived from its C code (libsection does so for an op "
               "without a gradient of its own): report values hidden from derivatives, SL306 "
               "and SL307");
  app.add_flag("--compile", o.compile,
               "Also compile each op's files for its signature with the compiler's -fsyntax-only "
               "(as a build would, nothing built): its errors at your lines, as compile-error");
  app.add_option("--python", o.python,
                 "The Python whose headers (and NumPy's) --compile uses; default: the "
                 ".libsection-editor folder editor-setup made, else python3 on PATH");
  app.add_option("--extra-sections", o.extra_sections,
                 "Section tags an op's base class adds to the nine, e.g. kernels (comma-separated, "
                 "or the option repeated)")
      ->allow_extra_args(false)
      ->delimiter(',');
}

}  // namespace

void add_options(CLI::App& app, Options& o, CommandLine& line) {
  app.add_option(
      "paths", o.paths,
      "Files and folders to lint (folders: every *.c and *.h below them that is not excluded "
      "or ignored by git; files named here are always linted); - reads stdin");
  app.add_option("--output-format", o.format,
                 "full (default), concise, json, sarif, github, gitlab (Code Quality) or junit")
      ->check(CLI::IsMember({"full", "concise", "json", "sarif", "github", "gitlab", "junit"}));
  // One value per occurrence (so paths after it stay paths), comma-separated, repeatable.
  app.add_option("--select", o.select, "Report only these codes or code prefixes (SL3, SL401)")
      ->allow_extra_args(false)
      ->delimiter(',');
  app.add_option("--ignore", o.ignore, "Do not report these codes or code prefixes")
      ->allow_extra_args(false)
      ->delimiter(',');
  app.add_option(
         "--extend-select", o.extend_select,
         "Report these codes or prefixes besides those selected (in settings or by --select)")
      ->allow_extra_args(false)
      ->delimiter(',');
  app.add_flag("--exit-zero", o.exit_zero, "Exit with 0 even when there are findings");
  app.add_flag("--fix", o.fix, "Apply the fixes marked safe, then report what is left");
  app.add_flag("--unsafe-fixes", o.unsafe_fixes,
               "Apply (with --fix or --diff) and count the fixes marked unsafe too: they guess at "
               "what was meant");
  app.add_flag("--diff", o.diff,
               "Print the fixes as a unified diff instead of applying them; "
               "exit 1 when there are any");
  app.add_option("--color", o.color,
                 "auto (a terminal; FORCE_COLOR or CLICOLOR_FORCE force colour, NO_COLOR turns it "
                 "off), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  // File selection, as ruff's options of the same names.
  line.exclude_option =
      app.add_option("--exclude", line.exclude,
                     "Leave out files and folders matching these globs when walking folders "
                     "(replaces the settings' `exclude` and the default list: .git, venv, build, "
                     "dist, node_modules, ...)")
          ->allow_extra_args(false)
          ->delimiter(',');
  app.add_option("--extend-exclude", o.selection.extend_exclude,
                 "Leave out these globs besides those excluded already")
      ->allow_extra_args(false)
      ->delimiter(',');
  app.add_flag("--respect-gitignore", line.respect_gitignore,
               "Leave out files ignored by git (.gitignore, .git/info/exclude): the default");
  app.add_flag("--no-respect-gitignore", line.no_respect_gitignore,
               "Lint files that git ignores too (files named on the command line always are)");
  app.add_option("--stdin-filename", o.stdin_filename,
                 "The name of the file read from `-` (for messages and settings)");
  app.add_flag("--statistics", o.statistics, "Print the number of findings per rule instead");
  app.add_flag("-q,--quiet", o.quiet, "Print the findings and nothing else");
  app.add_flag("--marked-only", o.marked_only,
               "Skip files without a section marker (plain C files), as the pre-commit hook does");
  app.add_flag("--watch", o.watch,
               "Lint again whenever a file (or a settings file) changes, printing the files whose "
               "findings changed; Ctrl-C stops");
  app.add_flag("--isolated", o.isolated,
               "Ignore settings files (.section-lint.toml, section-lint.toml, "
               "[tool.section-lint] in pyproject.toml)");
  app.add_option("--explain", o.explain,
                 "Print the documentation of a code (SL, SE, compile-error...) and exit");
  app.add_flag("--list-rules", o.list_rules, "List every rule and exit");
  add_op_options(app, o);
  line.server = app.add_subcommand("server", "Run as a language server (LSP) over stdio")
                    ->fallthrough();  // the options above still apply (settings, --isolated...)
}

}  // namespace lint_cli
