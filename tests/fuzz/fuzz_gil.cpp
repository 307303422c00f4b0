// libFuzzer target: any bytes as an op's texts read for the GIL (parse/gil_uses), as the module
// writer reads an op's code before it wraps the calls the scan lists. A form feed splits the
// input into texts, read at file scope, among a struct's members and as statements in turn.
// Must never crash, hang or read out of bounds; every call listed lies inside its text, in
// order (one may hold another: its arguments spanning a `#define` line whose body has one).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "parse/gil_uses.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  using section::c_scan::GilText;
  std::string const input(reinterpret_cast<char const*>(data), size);
  std::vector<std::string> pieces;
  for (std::size_t at = 0;;) {
    auto const split = input.find('\f', at);
    pieces.push_back(input.substr(at, split == std::string::npos ? split : split - at));
    if (split == std::string::npos) break;
    at = split + 1;
  }
  GilText::Scope const scopes[] = {GilText::Scope::file, GilText::Scope::members,
                                   GilText::Scope::statements};
  std::vector<GilText> texts;
  for (std::size_t k = 0; k < pieces.size(); ++k) texts.push_back({pieces[k], scopes[k % 3]});
  std::vector<std::string> const headers = {pieces.back(), "<math.h>"};
  auto const uses = section::c_scan::find_gil_uses(texts, headers);
  std::size_t text = 0, begin = 0;
  for (auto const& c : uses.calls) {
    if (c.text >= texts.size() || c.begin >= c.end || c.end > pieces[c.text].size())
      __builtin_trap();
    if (c.text < text || (c.text == text && c.begin < begin)) __builtin_trap();  // in order
    text = c.text;
    begin = c.begin;
  }
  if (uses.keep && uses.keep->text != uses.keep->no_text &&
      (uses.keep->text >= texts.size() || uses.keep->at > pieces[uses.keep->text].size()))
    __builtin_trap();
  return 0;
}
