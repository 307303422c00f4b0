// libFuzzer target: any bytes as one or two section files through reading checks, the split,
// the merge and every renderer. Must never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "section/parse.hpp"
#include "section/render.hpp"

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

  // Blocks must tile their file: each body within the text, bodies in order.
  for (auto const& s : set.sections)
    for (auto const& b : s.blocks)
      if (b.body.begin > b.body.end || b.body.end > sm.file(b.body.file).text().size())
        __builtin_trap();
  (void)section::render_text(set.diagnostics, sm);
  (void)section::render_json(set.diagnostics, sm);
  return 0;
}
