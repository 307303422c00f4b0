// section-lint: the driver. Reads and parses files, runs every rule family, then applies rule
// selection and suppression comments, file by file.
#include <algorithm>
#include <deque>
#include <filesystem>
#include <unordered_map>

#include "lint/checks.hpp"

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
    check_macro_scope(view, options.signature, input.diagnostics);
    check_apply_specific(view, input.diagnostics);
    check_control_flow(view, input.diagnostics);
    view_of_input[i] = views.size() - 1;
    input_of_file[*input.file] = i;
  }

  std::vector<Diagnostic> across_files;
  check_signature(views, options.signature, across_files);
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

std::vector<std::string> collect_lint_paths(std::vector<std::string> const& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (auto const& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      auto const name = it->path().filename().string();
      if (it->is_directory(ec)) {
        if (name.starts_with(".")) it.disable_recursion_pending();  // .git, .venv, ...
      } else if (is_section_source(it->path()) && it->is_regular_file(ec)) {
        found.push_back(it->path().generic_string());
      }
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::vector<Diagnostic> lint_files(SourceManager& sm, std::vector<std::string> const& paths,
                                   LintOptions const& options) {
  auto const files = collect_lint_paths(paths);
  if (files.empty()) {  // the parser's own verdict on an op without files (SL204)
    auto ds = merge_sections(sm, {}).diagnostics;
    std::erase_if(ds, [&](Diagnostic const& d) { return !options.selection.enabled(d.code); });
    return ds;
  }
  std::vector<Input> inputs(files.size());
  for (std::size_t i = 0; i < files.size(); ++i)
    inputs[i].file = read_source(sm, files[i], files[i], inputs[i].diagnostics);
  return lint_inputs(sm, std::move(inputs), options);
}

}  // namespace section
