// section-lint: the driver. Reads and parses files, runs every rule family, then applies rule
// selection and suppression comments, file by file.
#include <algorithm>
#include <cctype>
#include <deque>
#include <filesystem>
#include <unordered_map>

#include "lint/checks.hpp"
#include "parse/c_language.hpp"
#include "parse/hidden_values.hpp"
#include "parse/read.hpp"

namespace section {

namespace lint_detail {

FileView make_file_view(SourceManager const& sm, ParsedFile const& parsed) {
  std::string_view const text = sm.file(parsed.file).text();
  FileView view{parsed.file, text, {}, tokenize(text, parsed.prelude.begin, parsed.prelude.end)};
  view.blocks.reserve(parsed.blocks.size());
  for (auto const& block : parsed.blocks)
    view.blocks.push_back({block, tokenize(text, block.body.begin, block.body.end)});
  return view;
}

}  // namespace lint_detail

namespace {

using namespace lint_detail;

/// One path given to the linter: what reading it reported, and the file if it could be read.
struct Input {
  std::vector<Diagnostic> diagnostics;
  std::optional<FileId> file;
};

std::vector<Diagnostic> lint_inputs(SourceManager const& sm, std::vector<Input> inputs,
                                    LintOptions const& options) {
  std::deque<ParsedFile> parsed;  // a deque: views keep references to its blocks
  std::vector<FileView> views;
  std::vector<std::optional<std::size_t>> view_of_input(inputs.size());
  std::unordered_map<FileId, std::size_t> input_of_file;

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto& input = inputs[i];
    if (!input.file) continue;
    parsed.push_back(parse_file(sm, *input.file, input.diagnostics, options.extra_sections));
    views.push_back(make_file_view(sm, parsed.back()));
    auto const& view = views.back();
    check_structure(view, input.diagnostics);
    check_macro_scope(view, input.diagnostics);
    check_macro_typos(view, input.diagnostics);
    check_io_arity(view, options.op, input.diagnostics);
    check_apply_specific(view, input.diagnostics);
    check_control_flow(view, input.diagnostics);
    // The file's own `section-lint: language[...]` comment wins over the op's declaration.
    if (declared_language(view).value_or(options.op.language) == Language::c)
      detail::check_c_language(sm, parsed.back().blocks, input.diagnostics);
    if (options.op.differentiated)
      for (auto const& found : detail::find_hidden_values(sm, parsed.back().blocks))
        input.diagnostics.push_back(detail::hidden_value_diagnostic(found));
    view_of_input[i] = views.size() - 1;
    input_of_file[*input.file] = i;
  }

  std::vector<Diagnostic> across_files;
  check_signature(views, options.op, across_files);
  std::vector<Diagnostic> unplaced;
  for (auto& d : across_files) {
    auto const it = d.range.valid() ? input_of_file.find(d.range.file) : input_of_file.end();
    (it == input_of_file.end() ? unplaced : inputs[it->second].diagnostics).push_back(std::move(d));
  }

  auto const not_selected = [&](Diagnostic const& d) { return !options.selection.enabled(d.code); };
  std::vector<Diagnostic> out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto& ds = inputs[i].diagnostics;
    std::erase_if(ds, not_selected);
    if (view_of_input[i]) apply_suppressions(sm, views[*view_of_input[i]], options.selection, ds);
    std::stable_sort(ds.begin(), ds.end(), [](Diagnostic const& a, Diagnostic const& b) {
      return (a.range.valid() ? a.range.begin : 0) < (b.range.valid() ? b.range.begin : 0);
    });
    out.insert(out.end(), std::make_move_iterator(ds.begin()), std::make_move_iterator(ds.end()));
  }
  std::erase_if(unplaced, not_selected);
  out.insert(out.end(), std::make_move_iterator(unplaced.begin()),
             std::make_move_iterator(unplaced.end()));
  return out;
}

bool is_section_source(std::filesystem::path const& p) {
  auto const ext = p.extension();
  return ext == ".c" || ext == ".h";
}

}  // namespace

std::vector<Diagnostic> lint_text(SourceManager& sm, std::string text,
                                  std::string const& display_path, LintOptions const& options) {
  std::vector<Input> inputs(1);
  inputs[0].file = add_source(sm, std::move(text), display_path, inputs[0].diagnostics);
  return lint_inputs(sm, std::move(inputs), options);
}

namespace {

Diagnostic unreadable_folder(std::filesystem::path const& dir, std::error_code const& ec) {
  std::string what = ec.message();
  if (!what.empty()) what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  return make_diagnostic(detail::unreadable_file,
                         "cannot read folder '" + dir.generic_string() + "': " + what);
}

// Every *.c/*.h below `dir`, hidden folders and what `skip` names left out. A folder that
// cannot be listed is reported (or kept, for its reading to report it), not skipped: a lint run
// that silently looked at fewer files would pass wrongly.
void walk_folder(std::filesystem::path const& dir, std::vector<std::string>& found,
                 std::vector<Diagnostic>* problems, SkipPath const& skip) {
  namespace fs = std::filesystem;
  std::vector<fs::path> pending{dir};
  while (!pending.empty()) {
    fs::path const current = std::move(pending.back());
    pending.pop_back();
    std::error_code ec;
    fs::directory_iterator it(current, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      auto const& path = it->path();
      std::error_code type_ec;
      bool const is_folder = it->symlink_status(type_ec).type() == fs::file_type::directory;
      if (is_folder && path.filename().string().starts_with(".")) continue;  // .git, .venv
      if (!is_folder && !is_section_source(path)) continue;
      if (skip && skip(path, is_folder)) continue;
      if (is_folder) pending.push_back(path);
      else if (it->is_regular_file(type_ec)) found.push_back(path.generic_string());
    }
    if (!ec) continue;
    if (problems) problems->push_back(unreadable_folder(current, ec));
    else found.push_back(current.generic_string());
  }
}

}  // namespace

std::vector<std::string> collect_lint_paths(std::vector<std::string> const& paths,
                                            std::vector<Diagnostic>* problems,
                                            SkipPath const& skip) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (auto const& path : paths) {
    std::error_code ec;
    // A NUL byte would cut the path short here; reading it as a file reports it.
    if (path.find('\0') != std::string::npos || !fs::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    walk_folder(path, found, problems, skip);
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::vector<Diagnostic> lint_files(SourceManager& sm, std::vector<std::string> const& paths,
                                   LintOptions const& options) {
  std::vector<Diagnostic> unreadable;
  auto const files = collect_lint_paths(paths, &unreadable);
  auto const not_selected = [&](Diagnostic const& d) { return !options.selection.enabled(d.code); };
  std::erase_if(unreadable, not_selected);
  if (files.empty()) {  // the parser's own verdict on an op without files (SL204)
    if (!unreadable.empty()) return unreadable;  // no files because none could be listed
    auto ds = merge_sections(sm, {}).diagnostics;
    std::erase_if(ds, not_selected);
    return ds;
  }
  std::vector<Input> inputs(files.size());
  for (std::size_t i = 0; i < files.size(); ++i)
    inputs[i].file = read_source(sm, files[i], files[i], inputs[i].diagnostics);
  auto out = lint_inputs(sm, std::move(inputs), options);
  out.insert(out.end(), std::make_move_iterator(unreadable.begin()),
             std::make_move_iterator(unreadable.end()));
  return out;
}

}  // namespace section
