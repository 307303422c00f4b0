// section-lint: finds mistakes in `#section` C files before the compiler does.
// Exit codes: 0 clean (info findings only), 1 warnings or errors found, 2 usage or internal error.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "compile_check.hpp"
#include "config.hpp"
#include "files.hpp"
#include "options.hpp"
#include "replace.hpp"
#include "server.hpp"
#include "watch.hpp"

#include "section/codes.hpp"
#include "section/lint.hpp"
#include "section/names.hpp"
#include "section/parse.hpp"
#include "section/read.hpp"
#include "section/render.hpp"
#include "section/signature.hpp"
#include "section/version.hpp"

namespace {

constexpr int exit_clean = 0;
constexpr int exit_findings = 1;
constexpr int exit_usage = 2;

namespace fs = std::filesystem;
using lint_cli::add_options;
using lint_cli::CommandLine;
using lint_cli::Options;

void list_rules() {
  for (auto const& rule : section::lint_rules()) {
    std::printf("%s  %-30s %-8s %s\n", std::string(rule.code).c_str(),
                std::string(rule.name).c_str(), section::to_string(rule.severity),
                std::string(rule.summary).c_str());
  }
}

/// The op as the SL6xx checks need it (its types, whether there are params): each part from the
/// command line when given there, else from the settings' `signatures` entry for the files.
section::OpDescription read_signature(Options const& o, CLI::App const& app,
                                      lint_config::Config const& config,
                                      lint_config::Config::Signature const* configured,
                                      std::vector<section::NamedType>* params_out = nullptr) {
  auto pick = [&](char const* option, std::string const& given,
                  std::optional<std::string> lint_config::Config::Signature::*field) {
    if (app.count(option)) return std::optional<std::string>(given);
    return configured ? configured->*field : std::nullopt;
  };
  auto const inputs = pick("--inputs", o.inputs, &lint_config::Config::Signature::inputs);
  auto const outputs = pick("--outputs", o.outputs, &lint_config::Config::Signature::outputs);
  auto const params = pick("--params", o.params, &lint_config::Config::Signature::params);
  auto const func_name =
      pick("--func-name", o.func_name, &lint_config::Config::Signature::func_name);
  auto const language = pick("--language", o.language, &lint_config::Config::Signature::language);
  auto const differentiated = pick("--differentiated", o.differentiated ? "true" : "false",
                                   &lint_config::Config::Signature::differentiated);
  section::OpDescription s;
  s.differentiated = differentiated == "true";
  try {
    if (language) s.language = section::parse_language(*language, "section-lint");
    if (inputs) s.inputs = section::parse_type_list(*inputs, "input");
    if (outputs) s.outputs = section::parse_type_list(*outputs, "output");
    if (params) {
      auto fields = section::parse_params(*params);
      s.has_params = !fields.empty();
      if (params_out) *params_out = std::move(fields);
    }
    if (func_name) {
      section::check_func_name(*func_name);
      s.func_name = *func_name;
    }
  } catch (std::invalid_argument const& e) {
    if (!configured) throw;
    throw std::invalid_argument(config.file.string() + ": signatures: " + e.what());
  }
  return s;
}

/// Whether `--fix` applies a fix-it: safe ones always, unsafe ones with `--unsafe-fixes`.
bool applies(Options const& o, section::FixIt const& fix) {
  return fix.applicability == section::Applicability::safe || o.unsafe_fixes;
}

/// ruff's summary under the findings: how many there are (or `All checks passed!`), then how
/// many `--fix` would fix and how many unsafe fixes it leaves out unless `--unsafe-fixes`.
std::string summary(Options const& o, std::vector<section::Diagnostic> const& ds) {
  if (ds.empty()) return "All checks passed!\n";
  std::string out =
      "Found " + std::to_string(ds.size()) + (ds.size() == 1 ? " diagnostic\n" : " diagnostics\n");
  std::size_t fixable = 0, hidden = 0;
  for (auto const& d : ds)
    if (d.fix && d.fix->range.valid()) ++(applies(o, *d.fix) ? fixable : hidden);
  auto const hidden_fixes = [&] {
    return std::to_string(hidden) + (hidden == 1 ? " hidden fix" : " hidden fixes") +
           " can be enabled with the `--unsafe-fixes` option";
  };
  if (fixable && hidden)
    out += "[*] " + std::to_string(fixable) + " fixable with the `--fix` option (" +
           hidden_fixes() + ").\n";
  else if (fixable) out += "[*] " + std::to_string(fixable) + " fixable with the `--fix` option.\n";
  else if (hidden) out += "No fixes available (" + hidden_fixes() + ").\n";
  return out;
}

std::string render(Options const& o, std::vector<section::Diagnostic> const& ds,
                   section::SourceManager const& sm, bool color) {
  if (o.format == "json") return section::render_json(ds, sm) + "\n";
  if (o.format == "sarif") return section::render_sarif(ds, sm);
  if (o.format == "github") return section::render_github(ds, sm);
  if (o.format == "gitlab") {
    char const* project = std::getenv("CI_PROJECT_DIR");  // set by GitLab's runner
    return section::render_gitlab(ds, sm, project ? project : "");
  }
  if (o.format == "junit") return section::render_junit(ds, sm);
  std::string out;
  if (o.format == "concise") {
    for (auto const& d : ds) out += section::render_concise(d, sm, color) + "\n";
  } else {
    out = section::render_text(ds, sm, color);
  }
  if (!o.quiet) out += summary(o, ds);
  return out;
}

// ruff's `--statistics`: one line per code, most frequent first; `[*]` marks a fix `--fix` applies.
std::string statistics(Options const& o, std::vector<section::Diagnostic> const& ds) {
  std::map<std::string, std::pair<std::size_t, bool>> counts;
  for (auto const& d : ds) {
    auto& [n, fixable] = counts[d.code];
    ++n;
    fixable = fixable || (d.fix && applies(o, *d.fix));
  }
  std::vector<std::pair<std::string, std::pair<std::size_t, bool>>> rows(counts.begin(),
                                                                         counts.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](auto const& a, auto const& b) { return a.second.first > b.second.first; });
  std::string out;
  for (auto const& [code, count] : rows) {
    auto const* rule = section::find_lint_rule(code);
    char line[160];
    std::snprintf(line, sizeof line, "%5zu\t%s\t%s%s\n", count.first, code.c_str(),
                  count.second ? "[*] " : "", rule ? std::string(rule->name).c_str() : "");
    out += line;
  }
  return out;
}

// Colour as ruff chooses it: `--color always`/`never` first; then FORCE_COLOR (not empty)
// forces it (ruff's own rule); then the `colored` crate's: CLICOLOR_FORCE (other than `0`)
// forces it, NO_COLOR turns it off, CLICOLOR=0 turns it off; else colour for a terminal only.
// Unlike ruff, an empty FORCE_COLOR or NO_COLOR counts as unset (force-color.org,
// no-color.org).
bool use_color(std::string const& choice) {
  if (choice == "always") return true;
  if (choice == "never") return false;
  auto const env = [](char const* name) -> std::optional<std::string_view> {
    char const* value = std::getenv(name);
    return value ? std::optional<std::string_view>(value) : std::nullopt;
  };
  if (auto const force = env("FORCE_COLOR"); force && !force->empty()) return true;
  if (auto const force = env("CLICOLOR_FORCE"); force && *force != "0") return true;
  if (auto const no = env("NO_COLOR"); no && !no->empty()) return false;
  if (auto const cli = env("CLICOLOR"); cli && *cli == "0") return false;
  return ::isatty(STDOUT_FILENO);
}

/// One file's text with the fix-its of `ds` that `--fix` applies (overlapping fixes: the first
/// wins; the rest wait for the next run, as in ruff).
/// The fixes `--fix` applies to `file` (of `size` bytes): in order, none overlapping another.
std::vector<section::FixIt const*> fixes_to_apply(Options const& o, section::FileId file,
                                                  std::size_t size,
                                                  std::vector<section::Diagnostic> const& ds) {
  std::vector<section::FixIt const*> fixes;
  for (auto const& d : ds)
    if (d.fix && applies(o, *d.fix) && d.fix->range.valid() && d.fix->range.file == file)
      fixes.push_back(&*d.fix);
  std::sort(fixes.begin(), fixes.end(),
            [](auto* a, auto* b) { return a->range.begin < b->range.begin; });
  std::vector<section::FixIt const*> kept;
  std::size_t at = 0;
  for (auto const* f : fixes) {
    if (f->range.begin < at || f->range.end > size) continue;
    kept.push_back(f);
    at = f->range.end;
  }
  return kept;
}

std::string apply_fixes(Options const& o, std::string text, section::FileId file,
                        std::vector<section::Diagnostic> const& ds, std::size_t* applied) {
  std::string out;
  std::size_t at = 0;
  for (auto const* f : fixes_to_apply(o, file, text.size(), ds)) {
    out.append(text, at, f->range.begin - at);
    out += f->replacement;
    at = f->range.end;
    ++*applied;
  }
  out.append(text, at, std::string::npos);
  return out;
}

/// The linter's options for files under one settings file: the command line's `--select`
/// replaces the file's `select`; ignores and extensions add up.
section::LintOptions options_for(Options const& o, CLI::App const& app,
                                 lint_config::Config const& config,
                                 lint_config::Config::Signature const* configured) {
  auto select = !o.select.empty() ? o.select : config.select.value_or(std::vector<std::string>{});
  std::vector<std::string> extend = config.extend_select;
  extend.insert(extend.end(), o.extend_select.begin(), o.extend_select.end());
  if (!extend.empty()) {
    if (select.empty()) select.push_back("SL");  // nothing selected means every rule
    select.insert(select.end(), extend.begin(), extend.end());
  }
  auto ignore = config.ignore;
  ignore.insert(ignore.end(), o.ignore.begin(), o.ignore.end());
  section::LintOptions options;
  try {
    options.selection = section::RuleSelection(select, ignore);
    for (auto const& [glob, codes] : config.per_file_ignores)
      section::RuleSelection({}, codes);  // names a code prefix that matches no rule
  } catch (std::invalid_argument const& e) {
    if (config.file.empty()) throw;
    throw std::invalid_argument(config.file.string() + ": " + e.what());
  }
  options.op = read_signature(o, app, config, configured);
  auto extra = config.extra_sections;
  extra.insert(extra.end(), o.extra_sections.begin(), o.extra_sections.end());
  for (auto const& tag : extra)
    if (tag.empty() || tag.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789_") != std::string::npos)
      throw std::invalid_argument("extra-sections: `" + tag +
                                  "` is not a section tag (letters, digits and underscores)");
  options.extra_sections = extra;
  return options;
}

/// What one run found: the diagnostics, and the files' texts (kept for --fix and --diff).
struct Linted {
  section::SourceManager sm;
  std::vector<section::Diagnostic> diagnostics;
  std::vector<section::FileId> stdin_files;
};

/// The settings for the files of folder `dir` (none with `--isolated`).
lint_config::Config const& config_in(Options const& o, lint_config::ConfigFinder& finder,
                                     fs::path const& dir) {
  static lint_config::Config const none;
  return o.isolated ? none : finder.for_directory(dir);
}

/// The settings for the file `path`.
lint_config::Config const& config_for(Options const& o, lint_config::ConfigFinder& finder,
                                      std::string const& path) {
  return config_in(
      o, finder,
      fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::current_path());
}

/// `lint_files::collect` with the settings `o` reads.
std::vector<std::string> collect(Options const& o, std::vector<std::string> const& paths,
                                 lint_config::ConfigFinder& finder) {
  return lint_files::collect(
      paths,
      o.selection, [&](fs::path const& dir) -> auto const& { return config_in(o, finder, dir); });
}

/// `--compile` (and the server on save): the op's `files`, as `sm` holds them, compile-checked for
/// the signature the settings give them; the diagnostics in `sm`'s files.
std::vector<section::Diagnostic> compile_checked(Options const& o, CLI::App const& app,
                                                 lint_config::Config const& config,
                                                 std::vector<std::string> const& files,
                                                 section::SourceManager& sm) {
  lint_compile::Request request;
  auto const* configured = files.empty() ? nullptr : config.signature_for(files.front());
  request.op = read_signature(o, app, config, configured, &request.params);
  if (!request.op.inputs || !request.op.outputs)
    return {section::make_diagnostic(section::compile_check,
                                     "not compile-checked: no signature for " +
                                         (files.empty() ? std::string("-") : files.front()) +
                                         ": give --inputs and --outputs, or a `signatures` entry "
                                         "in section-lint.toml or [tool.section-lint]")};
  for (auto const& path : files)
    for (section::FileId id = sm.size(); id-- > 0;)
      if (sm.file(id).path() == path) {
        request.files.emplace_back(path, sm.file(id).text());
        break;
      }
  request.extra_sections = config.extra_sections;
  request.extra_sections.insert(request.extra_sections.end(), o.extra_sections.begin(),
                                o.extra_sections.end());
  request.python = !o.python.empty() ? o.python : config.python.value_or("");
  return lint_compile::compile_check(request, sm);
}

/// Lints `files` (and stdin's text when given) with the settings that apply to each file.
void lint_all(Options const& o, CLI::App const& app, std::vector<std::string> const& files,
              std::optional<std::string> const& stdin_text, lint_config::ConfigFinder& finder,
              Linted& out) {
  // The files of one op (same settings file, same `signatures` entry) are linted together: the
  // signature checks look across an op's files. Per-file ignores are applied after.
  using Key = std::pair<lint_config::Config const*, lint_config::Config::Signature const*>;
  std::vector<std::pair<Key, std::vector<std::string>>> groups;
  for (auto const& file : files) {
    auto const* config = &config_for(o, finder, file);
    Key const key{config, config->signature_for(file)};
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](auto const& g) { return g.first == key; });
    if (it == groups.end()) groups.push_back({key, {file}});
    else it->second.push_back(file);
  }
  auto keep = [&](lint_config::Config const& config, std::vector<section::Diagnostic> ds) {
    for (auto& d : ds) {
      if (d.range.valid() && config.ignored_for(out.sm.file(d.range.file).path(), d.code)) continue;
      out.diagnostics.push_back(std::move(d));
    }
  };
  for (auto const& [key, group] : groups) {
    keep(*key.first,
         section::lint_files(out.sm, group, options_for(o, app, *key.first, key.second)));
    if (o.compile) keep(*key.first, compile_checked(o, app, *key.first, group, out.sm));
  }
  if (stdin_text) {
    std::string const name = o.stdin_filename.empty() ? "-" : o.stdin_filename;
    auto const& config = config_for(o, finder, o.stdin_filename.empty() ? "./-" : o.stdin_filename);
    auto const first = out.sm.size();
    keep(config, section::lint_text(out.sm, *stdin_text, name,
                                    options_for(o, app, config, config.signature_for(name))));
    for (auto id = first; id < out.sm.size(); ++id)
      out.stdin_files.push_back(static_cast<section::FileId>(id));
    if (o.compile) keep(config, compile_checked(o, app, config, {name}, out.sm));
  }
}

/// Whether a file has a line that looks like a section marker (`section::looks_like_marker`:
/// malformed ones too); a file that cannot be read counts, so that linting it reports why.
bool has_marker(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return true;
  for (std::string line; std::getline(in, line);)
    if (section::looks_like_marker(line)) return true;
  return false;
}

/// The files to lint: files as given, folders expanded to the files ruff's rules select
/// (files.hpp); with `--marked-only` only those with a section marker, so that plain C files
/// beside section files are left alone (pre-commit passes every staged `.c` file).
std::vector<std::string> lint_targets(Options const& o, std::vector<std::string> const& paths,
                                      lint_config::ConfigFinder& finder) {
  auto files = collect(o, paths, finder);
  if (o.marked_only) std::erase_if(files, [](std::string const& f) { return !has_marker(f); });
  return files;
}

/// One `--watch` run: each file's findings rendered apart, so the loop prints only what changed.
lint_watch::Report watch_report(Options const& o, CLI::App const& app,
                                std::vector<std::string> const& paths) {
  lint_watch::Report report;
  lint_config::ConfigFinder finder;  // anew each run: settings files may have changed
  Linted linted;
  std::vector<std::string> targets;
  try {
    targets = lint_targets(o, paths, finder);
    lint_all(o, app, targets, std::nullopt, finder, linted);
  } catch (std::invalid_argument const& e) {
    report.error = e.what();
    return report;
  } catch (lint_config::ConfigError const& e) {
    report.error = e.what();
    return report;
  }
  std::map<std::string, std::vector<section::Diagnostic>> by_file;
  for (auto const& file : targets) by_file[file];
  for (auto& d : linted.diagnostics)  // findings of no file (an op without files) under ""
    by_file[d.range.valid() ? linted.sm.file(d.range.file).path() : std::string()].push_back(d);
  bool const color = use_color(o.color);
  for (auto const& [file, ds] : by_file) {
    std::string& text = report.findings[file];
    if (o.format == "concise")
      for (auto const& d : ds) text += section::render_concise(d, linted.sm, color) + "\n";
    else if (!ds.empty()) text = section::render_text(ds, linted.sm, color);
  }
  report.diagnostics = linted.diagnostics.size();
  return report;
}

/// What `--watch` polls: the files it lints, and every settings file that could apply to them
/// (.section-lint.toml, section-lint.toml, pyproject.toml in their folders and above), existing
/// or not yet.
std::vector<std::string> watched_files(Options const& o, std::vector<std::string> const& paths) {
  lint_config::ConfigFinder finder;
  std::vector<std::string> files;
  try {
    files = collect(o, paths, finder);
  } catch (lint_config::ConfigError const&) {  // reported by the run; keep polling the settings
    files = section::collect_lint_paths(paths);
  }
  if (o.isolated) return files;
  std::set<fs::path> folders;
  for (auto const& file : files) {
    std::error_code ec;
    for (auto dir = fs::absolute(fs::path(file), ec).parent_path(); folders.insert(dir).second;
         dir = dir.parent_path())
      if (dir == dir.root_path()) break;
  }
  for (auto const& dir : folders)
    for (char const* name : lint_config::settings_file_names)
      files.push_back((dir / name).string());
  return files;
}

bool watch_usable(Options const& o) {
  if (o.fix || o.diff || o.statistics || !o.stdin_filename.empty() ||
      std::count(o.paths.begin(), o.paths.end(), "-") > 0 ||
      (o.format != "full" && o.format != "concise")) {
    std::cerr << "section-lint: --watch prints findings as text (--output-format full or concise) "
                 "and takes no --fix, --diff, --statistics or stdin\n";
    return false;
  }
  return true;
}

int watch_mode(Options const& o, CLI::App const& app, std::vector<std::string> const& paths) {
  lint_watch::watch([&] { return watch_report(o, app, paths); },
                    [&] { return watched_files(o, paths); }, std::chrono::milliseconds(300),
                    o.quiet);
  return exit_clean;  // stopped on request
}

/// `--explain CODE`: the documentation of any code (the linter's, the expander's, the
/// compiler's), or a usage error for an unknown code. SL and SE codes are matched in any case.
int explain(std::string const& given) {
  std::string upper = given;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  auto const* code = section::find_diagnostic_code(given);
  if (!code) code = section::find_diagnostic_code(upper);
  if (!code) {
    std::cerr << "section-lint: unknown code `" << given
              << "` (see `section-lint --list-rules`, and README.md's \"Diagnostic codes\")\n";
    return exit_usage;
  }
  std::cout << section::explain_code(*code);
  return exit_clean;
}

/// Whether the command line names something to lint, in a way `--watch` can show.
bool has_lint_targets(Options const& o) {
  if (o.paths.empty()) {
    std::cerr << "section-lint: give at least one file or folder to lint (see --help)\n";
    return false;
  }
  return !o.watch || watch_usable(o);
}

/// The command line's paths sorted out: `-` read from stdin, missing ones warned about.
struct Inputs {
  std::vector<std::string> paths;
  std::optional<std::string> stdin_text;
  bool missing = false;  // a usage error, as in ruff: warned about, the rest still linted
};

Inputs read_inputs(Options const& o, lint_config::ConfigFinder& finder) {
  Inputs in;
  for (auto const& path : o.paths) {
    std::error_code ec;
    if (path == "-") {
      in.stdin_text = std::string(std::istreambuf_iterator<char>(std::cin), {});
    } else if (!fs::exists(fs::symlink_status(path, ec)) && !fs::is_symlink(path, ec)) {
      std::cerr << "section-lint: warning: " << path << ": no such file or folder\n";
      in.missing = true;
    } else {
      in.paths.push_back(path);
    }
  }
  if (!o.watch) in.paths = lint_targets(o, in.paths, finder);  // --watch: again at each change
  return in;
}

bool any_failing(std::vector<section::Diagnostic> const& ds) {
  return std::any_of(ds.begin(), ds.end(),
                     [](auto const& d) { return d.severity != section::Severity::info; });
}

/// 2 when a path was missing, else 1 for findings above info unless `--exit-zero`.
int exit_status(Options const& o, Inputs const& in, std::vector<section::Diagnostic> const& ds) {
  if (in.missing) return exit_usage;
  return any_failing(ds) && !o.exit_zero ? exit_findings : exit_clean;
}

std::string findings_count(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " finding\n" : " findings\n");
}

/// What `--fix` or `--diff` did with the safe fixes.
struct FixOutcome {
  std::size_t applied = 0;
  bool changed = false;
};

/// Applies the safe fixes: rewrites the files (stdin's fixed text goes to stdout), or with
/// `--diff` prints them as a diff.
FixOutcome write_fixes(Options const& o, Linted const& linted) {
  FixOutcome outcome;
  for (section::FileId id = 0; id < linted.sm.size(); ++id) {
    auto const& file = linted.sm.file(id);
    std::size_t applied = 0;
    auto const fixed = apply_fixes(o, file.text(), id, linted.diagnostics, &applied);
    bool const from_stdin =
        std::count(linted.stdin_files.begin(), linted.stdin_files.end(), id) > 0;
    if (fixed == file.text() && !(from_stdin && o.fix && !o.diff)) continue;
    if (o.diff) {
      std::cout << lint_replace::unified_diff(file.path(), file.text(), fixed);
    } else if (from_stdin) {
      std::cout << fixed;  // ruff's `--fix -`: the fixed text on stdout
    } else if (auto const why = lint_replace::replace_if_unchanged(file.path(), file.text(), fixed);
               !why.empty()) {
      // Edited meanwhile (or gone): the user's text wins; the next run fixes what is left.
      std::cerr << "section-lint: " << file.path() << ": not fixed: " << why << '\n';
      continue;
    }
    outcome.applied += applied;
    outcome.changed = outcome.changed || fixed != file.text();
  }
  return outcome;
}

/// `--fix` and `--diff`: the fixes written, then what is left reported (or the diff's status).
int fix_mode(Options const& o, CLI::App const& app, Inputs const& in,
             lint_config::ConfigFinder& finder, Linted const& linted) {
  auto const outcome = write_fixes(o, linted);
  if (o.diff) {
    if (!o.quiet) std::cerr << "Would fix " << findings_count(outcome.applied);
    return in.missing ? exit_usage : outcome.changed ? exit_findings : exit_clean;
  }
  if (in.stdin_text) return in.missing ? exit_usage : exit_clean;
  // What is left after fixing, as a fresh run sees it.
  Linted again;
  lint_all(o, app, in.paths, std::nullopt, finder, again);
  std::cout << render(o, again.diagnostics, again.sm, use_color(o.color));
  if (!o.quiet && (o.format == "full" || o.format == "concise"))
    std::cout << "Fixed " << findings_count(outcome.applied);
  return exit_status(o, in, again.diagnostics);
}

int usage_error(char const* what) {
  std::cerr << "section-lint: " << what << '\n';
  return exit_usage;
}

/// Rejects bad op options (`--inputs`, `--params`, ...) and rule codes before any file is read,
/// by throwing std::invalid_argument.
void check_op_and_rule_options(Options const& o, CLI::App const& app) {
  read_signature(o, app, {}, nullptr);
  section::RuleSelection(o.select, o.ignore);
}

/// The findings printed (or counted per rule with `--statistics`); the exit status.
int report(Options const& o, Inputs const& in, Linted const& linted) {
  if (o.statistics) std::cout << statistics(o, linted.diagnostics);
  else std::cout << render(o, linted.diagnostics, linted.sm, use_color(o.color));
  return exit_status(o, in, linted.diagnostics);
}

/// `section-lint server`: each open document linted as `--stdin-filename PATH -` lints it
/// (settings, signature and suppressions of that path), served over LSP on stdin and stdout.
int server_mode(Options const& o, CLI::App const& app) {
  check_op_and_rule_options(o, app);
  auto lint = [&](std::string const& path, std::string const& text) {
    Options each = o;
    each.stdin_filename = path;
    each.compile = false;              // the server compiles on save, on its worker
    lint_config::ConfigFinder finder;  // anew each time: settings files may have changed
    Linted linted;
    lint_all(each, app, {}, text, finder, linted);
    lint_server::Findings found;
    if (linted.sm.size() > 0)
      for (auto const* fix :
           fixes_to_apply(each, 0, linted.sm.file(0).text().size(), linted.diagnostics))
        found.fix_all.push_back(*fix);
    found.sm = std::move(linted.sm);
    found.diagnostics = std::move(linted.diagnostics);
    auto const& config = config_for(each, finder, path);
    found.op = read_signature(each, app, config, config.signature_for(path));
    if (config.python && o.python.empty()) found.untrusted_python = config.file.string();
    return found;
  };
  auto check = [&](std::string const& path, std::string const& text, std::string const& python) {
    Options each = o;
    if (!python.empty() && o.python.empty()) each.python = python;
    lint_config::ConfigFinder finder;
    // The interpreter comes from the client or the command line only, never from the folder.
    lint_config::Config config = config_for(each, finder, path);
    config.python.reset();
    lint_server::Compiled compiled;
    std::vector<section::Diagnostic> read_again;  // the linter reported these
    section::add_source(compiled.sm, text, path, read_again);
    compiled.diagnostics = compile_checked(each, app, config, {path}, compiled.sm);
    return compiled;
  };
  return lint_server::serve(lint, check, std::cin, std::cout);
}

int run(Options const& o, CLI::App const& app) {
  if (o.list_rules) {
    list_rules();
    return exit_clean;
  }
  if (!o.explain.empty()) return explain(o.explain);
  if (!has_lint_targets(o)) return exit_usage;
  lint_config::ConfigFinder finder;
  Inputs in;
  Linted linted;
  try {
    in = read_inputs(o, finder);
    check_op_and_rule_options(o, app);
    if (o.watch) return watch_mode(o, app, in.paths);
    lint_all(o, app, in.paths, in.stdin_text, finder, linted);
  } catch (std::invalid_argument const& e) {  // a bad prefix or a signature_error
    return usage_error(e.what());
  } catch (lint_config::ConfigError const& e) {
    return usage_error(e.what());
  }
  if (o.fix || o.diff) return fix_mode(o, app, in, finder, linted);
  return report(o, in, linted);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Finds mistakes in #section C files (PyTensor-family ExternalCOp sources) before "
               "the compiler does.\nExit status: 0 clean (info findings do not count), 1 "
               "findings, 2 usage or internal error.",
               "section-lint"};
  Options o;
  CommandLine line;
  add_options(app, o, line);
  app.set_version_flag("--version", std::string("section-lint ") + section::version);
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    // CLI11's own exit codes run from 100 up; the linter promises 0 (help, version) or 2.
    return app.exit(e) == 0 ? exit_clean : exit_usage;
  }
  if (line.exclude_option->count()) o.selection.exclude = line.exclude;
  if (line.respect_gitignore || line.no_respect_gitignore)
    o.selection.respect_gitignore = !line.no_respect_gitignore;
  try {
    if (*line.server) return server_mode(o, app);
    return run(o, app);
  } catch (std::exception const& e) {
    std::cerr << "section-lint: internal error: " << e.what() << '\n';
    return exit_usage;
  }
}
