// section-lint: finds mistakes in `#section` C files before the compiler does.
// Exit codes: 0 clean (info findings only), 1 warnings or errors found, 2 usage or internal error.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>

#include "section/lint.hpp"
#include "section/names.hpp"
#include "section/render.hpp"
#include "section/signature.hpp"
#include "section/version.hpp"

namespace {

constexpr int exit_clean = 0;
constexpr int exit_findings = 1;
constexpr int exit_usage = 2;

struct Options {
  std::vector<std::string> paths;
  std::string format = "full";
  std::vector<std::string> select;
  std::vector<std::string> ignore;
  bool exit_zero = false;
  bool list_rules = false;
  std::string explain;
  std::string inputs;
  std::string outputs;
  std::string params;
  std::string func_name;
  std::vector<std::string> extra_sections;
};

void list_rules() {
  for (auto const& rule : section::lint_rules()) {
    std::printf("%s  %-30s %-8s %s\n", std::string(rule.code).c_str(),
                std::string(rule.name).c_str(), section::to_string(rule.severity),
                std::string(rule.summary).c_str());
  }
}

/// The signature options as the SL6xx checks need them: arities and whether there are params.
section::LintSignature read_signature(Options const& o, CLI::App const& app) {
  section::LintSignature s;
  if (app.count("--inputs")) s.inputs = section::parse_type_list(o.inputs, "input").size();
  if (app.count("--outputs")) s.outputs = section::parse_type_list(o.outputs, "output").size();
  if (app.count("--params")) s.has_params = !section::parse_params(o.params).empty();
  if (app.count("--func-name")) {
    section::check_func_name(o.func_name);
    s.func_name = o.func_name;
  }
  return s;
}

std::string render(std::string const& format, std::vector<section::Diagnostic> const& ds,
                   section::SourceManager const& sm) {
  if (format == "json") return section::render_json(ds, sm) + "\n";
  if (format == "sarif") return section::render_sarif(ds, sm);
  if (format == "github") return section::render_github(ds, sm);
  std::string out;
  if (format == "concise") {
    for (auto const& d : ds) out += section::render_concise(d, sm) + "\n";
  } else {
    out = section::render_text(ds, sm);
  }
  out += "Found " + std::to_string(ds.size()) + (ds.size() == 1 ? " diagnostic\n" : " diagnostics\n");
  return out;
}

int run(Options const& o, CLI::App const& app) {
  if (o.list_rules) {
    list_rules();
    return exit_clean;
  }
  if (!o.explain.empty()) {
    std::string code = o.explain;
    std::transform(code.begin(), code.end(), code.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    auto const* rule = section::find_lint_rule(code);
    if (!rule) {
      std::cerr << "section-lint: unknown rule code `" << o.explain
                << "` (see `section-lint --list-rules`)\n";
      return exit_usage;
    }
    std::cout << section::explain_lint_rule(*rule);
    return exit_clean;
  }
  if (o.paths.empty()) {
    std::cerr << "section-lint: give at least one file or folder to lint (see --help)\n";
    return exit_usage;
  }
  section::LintOptions options;
  try {
    options.selection = section::RuleSelection(o.select, o.ignore);
    options.signature = read_signature(o, app);
    for (auto const& tag : o.extra_sections)
      if (tag.empty() || tag.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                               "0123456789_") != std::string::npos)
        throw std::invalid_argument("--extra-sections: `" + tag +
                                    "` is not a section tag (letters, digits and underscores)");
    options.extra_sections = o.extra_sections;
  } catch (std::invalid_argument const& e) {  // a bad prefix or a signature_error
    std::cerr << "section-lint: " << e.what() << '\n';
    return exit_usage;
  }
  section::SourceManager sm;
  auto const diagnostics = section::lint_files(sm, o.paths, options);
  std::cout << render(o.format, diagnostics, sm);
  bool const failing = std::any_of(diagnostics.begin(), diagnostics.end(),
                                   [](auto const& d) { return d.severity != section::Severity::info; });
  return failing && !o.exit_zero ? exit_findings : exit_clean;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Finds mistakes in #section C files (PyTensor-family ExternalCOp sources) before "
               "the compiler does.\nExit status: 0 clean (info findings do not count), 1 "
               "findings, 2 usage or internal error.",
               "section-lint"};
  Options o;
  app.add_option("paths", o.paths, "Files and folders to lint (folders: every *.c and *.h below them)");
  app.add_option("--output-format", o.format, "full (default), concise, json, sarif or github")
      ->check(CLI::IsMember({"full", "concise", "json", "sarif", "github"}));
  // One value per occurrence (so paths after it stay paths), comma-separated, repeatable.
  app.add_option("--select", o.select, "Report only these codes or code prefixes (SL3, SL401)")
      ->allow_extra_args(false)->delimiter(',');
  app.add_option("--ignore", o.ignore, "Do not report these codes or code prefixes")
      ->allow_extra_args(false)->delimiter(',');
  app.add_flag("--exit-zero", o.exit_zero, "Exit with 0 even when there are findings");
  app.add_option("--explain", o.explain, "Print the documentation of a rule and exit");
  app.add_flag("--list-rules", o.list_rules, "List every rule and exit");
  app.add_option("--inputs", o.inputs, "The op's input types, e.g. float64[:],float64[:]");
  app.add_option("--outputs", o.outputs, "The op's output types, e.g. float64[:]");
  app.add_option("--params", o.params, "The op's params fields, e.g. k:int64");
  app.add_option("--func-name", o.func_name, "The op's main function, e.g. APPLY_SPECIFIC(f)");
  app.add_option("--extra-sections", o.extra_sections,
                 "Section tags an op's base class adds to the nine, e.g. kernels (comma-separated, "
                 "or the option repeated)")
      ->allow_extra_args(false)->delimiter(',');
  app.set_version_flag("--version", std::string("section-lint ") + section::version);
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    // CLI11's own exit codes run from 100 up; the linter promises 0 (help, version) or 2.
    return app.exit(e) == 0 ? exit_clean : exit_usage;
  }
  try {
    return run(o, app);
  } catch (std::exception const& e) {
    std::cerr << "section-lint: internal error: " << e.what() << '\n';
    return exit_usage;
  }
}
