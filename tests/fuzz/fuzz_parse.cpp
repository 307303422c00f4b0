// libFuzzer target: any bytes as one or two section files through every stage that reads them:
// reading checks, the split and merge, the linter (with and without a signature), the expander,
// and every renderer. Must never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "section/expand.hpp"
#include "section/lint.hpp"
#include "section/op.hpp"
#include "section/parse.hpp"
#include "section/render.hpp"
#include "section/signature.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string const input(reinterpret_cast<char const*>(data), size);
  // A form feed splits the input into two files, so cross-file rules are reached too.
  auto const split = input.find('\f');
  std::vector<std::string> texts{input.substr(0, split)};
  if (split != std::string::npos) texts.push_back(input.substr(split + 1));

  section::SourceManager sm;
  std::vector<section::Diagnostic> diagnostics;
  std::vector<section::FileId> files;
  for (std::size_t i = 0; i < texts.size(); ++i)
    if (auto id = section::add_source(sm, texts[i], "f" + std::to_string(i) + ".c", diagnostics))
      files.push_back(*id);
  auto const set = section::merge_sections(sm, files, std::move(diagnostics));

  // Blocks must lie within their file.
  for (auto const& s : set.sections)
    for (auto const& b : s.blocks)
      if (b.body.begin > b.body.end || b.body.end > sm.file(b.body.file).text().size())
        __builtin_trap();
  (void)section::render_text(set.diagnostics, sm);
  (void)section::render_json(set.diagnostics, sm);

  if (set.ok()) {
    auto const f64 = section::parse_type("float64[:]");
    section::OpDescription op;
    op.inputs = std::vector<section::TypeSpec>{f64, f64};
    op.outputs = std::vector<section::TypeSpec>{f64};
    auto const node = section::single_node_context(op);
    (void)section::expand(sm, set, op, node);
    op.func_name = "APPLY_SPECIFIC(f)";
    op.num_inputs = 3;
    op.language = section::Language::c;  // the C checks (SL208, SL209) too
    (void)section::expand(sm, set, op, node, {.line_directives = false, .newline_fix = false});
  }

  section::LintOptions options;
  auto lint = section::lint_text(sm, texts[0], "lint.c", options);
  options.op.inputs = std::vector<section::TypeSpec>(2);
  options.op.outputs = std::vector<section::TypeSpec>(1);
  options.op.has_params = true;
  options.op.func_name = "APPLY_SPECIFIC(f)";
  options.op.language = section::Language::c;
  auto more = section::lint_text(sm, texts[0], "lint_signature.c", options);
  lint.insert(lint.end(), more.begin(), more.end());
  (void)section::render_sarif(lint, sm);
  (void)section::render_github(lint, sm);
  (void)section::render_text(lint, sm);
  return 0;
}
