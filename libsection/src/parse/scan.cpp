// The parser's first pass: find marker lines (jumping between `#` and `_CODE_SECTION`),
// near misses and the blocks they delimit.
#include "parse/scan.hpp"

#include <strings.h>
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "base/text.hpp"
#include "parse/x3/marker_grammar.hpp"
#include "section/chars.hpp"

namespace section::detail {
namespace {

bool is_tag_char(char c) { return is_identifier_char(c); }

bool is_blank(char c) { return c == ' ' || c == '\t'; }

/// What follows a marker-looking line's `#`: blanks, then `section` in any case (a marker, or a
/// near miss the checks report).
bool names_section(std::string_view after_hash) {
  std::size_t j = 0;
  while (j < after_hash.size() && is_blank(after_hash[j])) ++j;
  return after_hash.size() - j >= 7 && strncasecmp(after_hash.data() + j, "section", 7) == 0;
}

std::string_view view(parser::ast::text const& t) {
  return {t.begin(), static_cast<std::size_t>(t.end() - t.begin())};
}

struct Marker {
  MarkerKind kind;
  std::string tag;
  SourceRange line;
  SourceRange tag_range;
  std::size_t line_no;
};

// What makes a marker-looking line not a marker, in the order a user would fix them.
std::vector<std::string> section_marker_problems(parser::ast::section_marker const& m) {
  std::vector<std::string> why;
  if (!m.indent.empty()) why.push_back("it is indented; a marker must start in column 1");
  if (!m.gap_after_hash.empty()) why.push_back("there is a blank between `#` and `section`");
  if (view(m.keyword) != "section") why.push_back("`section` must be lower-case");
  auto const gap = view(m.gap_before_tag);
  auto const tag = view(m.tag);
  if (tag.empty()) {
    why.push_back("it has no tag");
  } else {
    if (gap.empty()) why.push_back("there is no space between `#section` and the tag");
    else if (gap != " ")
      why.push_back(
          "the tag must follow `#section` after exactly one space, not a tab or several blanks");
    if (!std::all_of(tag.begin(), tag.end(), is_tag_char))
      why.push_back("the tag `" + bounded_quote(tag, max_quoted_bytes) +
                    "` may only contain letters, digits and underscores");
  }
  auto const trailing = view(m.trailing);
  if (!trailing.empty()) {
    why.push_back(std::all_of(trailing.begin(), trailing.end(), is_blank)
                      ? "there are blanks after the tag"
                      : "there is text after the tag");
  }
  return why;
}

// The canonical spelling of a near-miss marker: `#section <tag>` with the tag's valid prefix,
// corrected to a known tag when one is close.
std::string canonical_marker(std::string_view tag) {
  std::string clean;
  for (char c : tag) {
    if (!is_tag_char(c)) break;
    clean += c;
  }
  if (!is_section_tag(clean))
    if (auto s = suggest_tag(clean)) clean = std::string(*s);
  return "#section " + clean;
}

class FileScanner {
 public:
  FileScanner(SourceManager const& sm, FileId file) : file_(file), text_(sm.file(file).text()) {}

  ScannedFile run() {
    scan_lines();
    ScannedFile out;
    out.near_misses = std::move(near_misses_);
    auto& parsed = out.parsed;
    parsed.file = file_;
    auto const has = [&](MarkerKind kind) {
      return std::any_of(markers_.begin(), markers_.end(),
                         [&](Marker const& m) { return m.kind == kind; });
    };
    bool const has_section = has(MarkerKind::section), has_legacy = has(MarkerKind::legacy);
    parsed.style = has_section && has_legacy ? MarkerStyle::mixed
                   : has_section             ? MarkerStyle::section
                   : has_legacy              ? MarkerStyle::legacy
                                             : MarkerStyle::none;
    auto const prelude_end = markers_.empty() ? text_.size() : markers_.front().line.begin;
    parsed.prelude = {file_, 0, prelude_end};
    parsed.blocks.reserve(markers_.size());
    out.block_kinds.reserve(markers_.size());
    for (std::size_t i = 0; i < markers_.size(); ++i) {
      auto& m = markers_[i];  // its tag moves to the block
      auto const body_end = i + 1 < markers_.size() ? markers_[i + 1].line.begin : text_.size();
      parsed.blocks.push_back(
          {std::move(m.tag), m.line, m.tag_range, {file_, m.line.end, body_end}, m.line_no});
      out.block_kinds.push_back(m.kind);
    }
    return out;
  }

 private:
  // Markers and near misses start, after blanks, with `#` or with a legacy prefix, and legacy
  // markers contain `_CODE_SECTION`. Rather than visit every line, jump between occurrences of
  // `#` and of `_CODE_SECTION` (memchr/memmem run at memory speed) and inspect only their lines.
  void scan_lines() {
    std::string_view const text(text_);
    std::size_t hash = find_char(text, '#', 0);
    std::size_t legacy = find_legacy(text, 0);
    std::size_t counted_to = 0, line_no = 1;  // newlines counted up to `counted_to`
    std::size_t next_free = 0;                // lines before this were inspected already
    while (hash != std::string_view::npos || legacy != std::string_view::npos) {
      std::size_t const at = std::min(hash, legacy);
      if (at == hash) hash = find_char(text, '#', hash + 1);
      if (at == legacy) legacy = find_legacy(text, legacy + 1);
      auto const begin = text.rfind('\n', at) + 1;  // npos + 1 == 0 on the first line
      if (begin < next_free) continue;
      auto end = find_char(text, '\n', at);
      if (end == std::string_view::npos) end = text.size();
      line_no += count_newlines(text.substr(counted_to, begin - counted_to));
      counted_to = begin;
      inspect_line(begin, end, line_no);
      next_free = end + 1;
    }
  }

  // Eight bytes at a time: std::count is a byte loop at -O2, and the gaps between markers are
  // most of the file.
  static std::size_t count_newlines(std::string_view s) {
    constexpr std::uint64_t ones = 0x0101010101010101ULL, low7 = 0x7F7F7F7F7F7F7F7FULL;
    std::size_t n = 0, i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      std::uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      std::uint64_t const x = word ^ (ones * '\n');  // zero bytes where word had '\n'
      std::uint64_t const zero_bytes = ~(((x & low7) + low7) | x | low7);
      n += static_cast<std::size_t>(((zero_bytes >> 7) * ones) >> 56);  // sums the 0/1 bytes
    }
    for (; i < s.size(); ++i) n += s[i] == '\n';
    return n;
  }

  static std::size_t find_char(std::string_view text, char c, std::size_t from) {
    if (from >= text.size()) return std::string_view::npos;
    auto const* p =
        static_cast<char const*>(std::memchr(text.data() + from, c, text.size() - from));
    return p ? static_cast<std::size_t>(p - text.data()) : std::string_view::npos;
  }

  // memmem, not string_view::find: the latter stops at every `_`, which C code is full of.
  static std::size_t find_legacy(std::string_view text, std::size_t from) {
    static constexpr std::string_view needle = "_CODE_SECTION";
    if (from >= text.size()) return std::string_view::npos;
    auto const* p = static_cast<char const*>(
        ::memmem(text.data() + from, text.size() - from, needle.data(), needle.size()));
    return p ? static_cast<std::size_t>(p - text.data()) : std::string_view::npos;
  }

  // Cheap first-character test on every line; only marker-looking lines reach the grammar.
  void inspect_line(std::size_t begin, std::size_t end, std::size_t line_no) {
    std::size_t i = begin;
    while (i < end && is_blank(text_[i])) ++i;
    if (i == end) return;
    char const c = text_[i];
    std::string_view const line(text_.data() + begin, end - begin);
    if (c == '#') {
      if (!names_section(std::string_view(text_).substr(i + 1, end - i - 1))) return;
      if (auto m = parser::parse_section_marker(line)) on_section_marker(*m, begin, end, line_no);
    } else if (c == 'T' || c == 'A' || c == 'P') {
      if (auto m = parser::parse_legacy_marker(line)) on_legacy_marker(*m, begin, end, line_no);
    }
  }

  SourceRange range_of(parser::ast::text const& t) const {
    auto const b = static_cast<std::size_t>(t.begin() - text_.data());
    return {file_, b, b + t.size()};
  }

  void on_section_marker(parser::ast::section_marker const& m, std::size_t begin, std::size_t end,
                         std::size_t line_no) {
    auto why = section_marker_problems(m);
    if (why.empty()) {
      markers_.push_back({MarkerKind::section,
                          std::string(view(m.tag)),
                          {file_, begin, end},
                          range_of(m.tag),
                          line_no});
      return;
    }
    near_misses_.push_back(
        {MarkerKind::section, {file_, begin, end}, std::move(why), canonical_marker(view(m.tag))});
  }

  void on_legacy_marker(parser::ast::legacy_marker const& m, std::size_t begin, std::size_t end,
                        std::size_t line_no) {
    auto const trailing = view(m.trailing);
    bool const trailing_blank = std::all_of(trailing.begin(), trailing.end(), is_blank);
    if (!trailing_blank) return;  // a longer identifier such as PYTENSOR_APPLY_CODE_SECTION_X
    std::string const tag = view(m.kind) == "APPLY" ? "support_code_apply" : "support_code";
    std::string const exact =
        std::string(view(m.prefix)) + std::string(view(m.kind)) + "_CODE_SECTION";
    if (m.indent.empty() && trailing.empty()) {
      SourceRange const whole{file_, begin, end};
      markers_.push_back({MarkerKind::legacy, tag, whole, whole, line_no});
      return;
    }
    std::string why = m.indent.empty() ? "there are blanks after it" : "it is indented";
    near_misses_.push_back({MarkerKind::legacy, {file_, begin, end}, {std::move(why)}, exact});
  }

  FileId file_;
  std::string const& text_;
  std::vector<Marker> markers_;
  std::vector<NearMiss> near_misses_;
};

}  // namespace

ScannedFile scan_file(SourceManager const& sm, FileId file) { return FileScanner(sm, file).run(); }

}  // namespace section::detail

namespace section {

bool looks_like_marker(std::string_view line) {
  std::size_t const i = line.find_first_not_of(" \t");
  if (i != std::string_view::npos && line[i] == '#' && detail::names_section(line.substr(i + 1)))
    return true;
  return line.find("_CODE_SECTION") != std::string_view::npos;
}

}  // namespace section
