// Splitting section files into blocks (with near-miss detection) and merging them into sections.
#include "section/parse.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_map>

#include "parser/marker_grammar.hpp"
#include "read.hpp"

namespace section {

namespace {

// The reference quotes user text in full; beyond this, a message quotes the start only.
constexpr std::size_t max_quoted_bytes = 1000;

constexpr char const* both_styles_message =
    "Both the new and the old syntax for identifying code sections are present in the provided "
    "C code. These two syntaxes should not be used at the same time.";

bool is_tag_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view view(parser::ast::text const& t) {
  return {t.begin(), static_cast<std::size_t>(t.end() - t.begin())};
}

// Optimal-string-alignment distance, small strings only (tags).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t const cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// Python's str.isspace() for one code point: what `split[0].strip()` removes.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

// Offset of the first code point in `s` that Python would not strip, or npos. `s` is valid UTF-8.
std::size_t first_non_space(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto const c = static_cast<unsigned char>(s[i]);
    char32_t cp;
    std::size_t len;
    if (c < 0x80) { cp = c; len = 1; }
    else if (c < 0xE0) { cp = c & 0x1F; len = 2; }
    else if (c < 0xF0) { cp = c & 0x0F; len = 3; }
    else { cp = c & 0x07; len = 4; }
    if (i + len > s.size()) return i;  // cannot happen for validated text; treat as non-space
    for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if (!is_python_space(cp)) return i;
    i += len;
  }
  return std::string_view::npos;
}

bool is_ascii_whitespace_only(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  });
}

enum class MarkerKind { section, legacy };

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
    else if (gap != " ") why.push_back("the tag must follow `#section` after exactly one space, not a tab or several blanks");
    if (!std::all_of(tag.begin(), tag.end(), is_tag_char))
      why.push_back("the tag `" + detail::bounded_quote(tag, max_quoted_bytes) +
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

std::string join_reasons(std::vector<std::string> const& why) {
  std::string out;
  for (std::size_t i = 0; i < why.size(); ++i) out += (i ? "; " : "") + why[i];
  return out;
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
  FileScanner(SourceManager const& sm, FileId file, std::vector<Diagnostic>& diagnostics,
              std::vector<std::string> const& extra_tags)
      : file_(file), path_(sm.file(file).path()), text_(sm.file(file).text()),
        diagnostics_(diagnostics), extra_tags_(extra_tags) {}

  ParsedFile run() {
    scan_lines();
    ParsedFile out;
    out.file = file_;
    bool const has_section = std::any_of(markers_.begin(), markers_.end(),
                                         [](Marker const& m) { return m.kind == MarkerKind::section; });
    bool const has_legacy = std::any_of(markers_.begin(), markers_.end(),
                                        [](Marker const& m) { return m.kind == MarkerKind::legacy; });
    out.style = has_section && has_legacy ? MarkerStyle::mixed
                : has_section             ? MarkerStyle::section
                : has_legacy              ? MarkerStyle::legacy
                                          : MarkerStyle::none;
    auto const prelude_end = markers_.empty() ? text_.size() : markers_.front().line.begin;
    out.prelude = {file_, 0, prelude_end};
    out.blocks.reserve(markers_.size());
    for (std::size_t i = 0; i < markers_.size(); ++i) {
      auto& m = markers_[i];  // its tag moves to the block; report() needs only kind and line
      auto const body_end = i + 1 < markers_.size() ? markers_[i + 1].line.begin : text_.size();
      out.blocks.push_back({std::move(m.tag), m.line, m.tag_range, {file_, m.line.end, body_end}, m.line_no});
    }
    report(out);
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
    auto const* p = static_cast<char const*>(std::memchr(text.data() + from, c, text.size() - from));
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
      std::size_t j = i + 1;
      while (j < end && is_blank(text_[j])) ++j;
      if (end - j < 7 || strncasecmp(text_.data() + j, "section", 7) != 0) return;
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
    auto const why = section_marker_problems(m);
    if (why.empty()) {
      markers_.push_back({MarkerKind::section, std::string(view(m.tag)), {file_, begin, end},
                          range_of(m.tag), line_no});
      return;
    }
    Diagnostic d;
    d.code = "SL101";
    d.severity = Severity::warning;
    d.message = "line looks like a section marker but is not one, so it is read as C code: " +
                join_reasons(why);
    d.range = {file_, begin, end};
    d.fix = FixIt{"write the marker exactly as `" +
                      detail::bounded_quote(canonical_marker(view(m.tag)), max_quoted_bytes) + "`",
                  {file_, begin, end}, canonical_marker(view(m.tag))};
    near_misses_.push_back(d.range);
    diagnostics_.push_back(std::move(d));
  }

  void on_legacy_marker(parser::ast::legacy_marker const& m, std::size_t begin, std::size_t end,
                        std::size_t line_no) {
    auto const trailing = view(m.trailing);
    bool const trailing_blank = std::all_of(trailing.begin(), trailing.end(), is_blank);
    if (!trailing_blank) return;  // a longer identifier such as PYTENSOR_APPLY_CODE_SECTION_X
    std::string const tag = view(m.kind) == "APPLY" ? "support_code_apply" : "support_code";
    std::string const exact = std::string(view(m.prefix)) + std::string(view(m.kind)) + "_CODE_SECTION";
    if (m.indent.empty() && trailing.empty()) {
      SourceRange const whole{file_, begin, end};
      markers_.push_back({MarkerKind::legacy, tag, whole, whole, line_no});
      return;
    }
    Diagnostic d;
    d.code = "SL101";
    d.severity = Severity::warning;
    d.message = "line looks like a legacy section marker but is not one, so it is ignored: " +
                std::string(m.indent.empty() ? "there are blanks after it" : "it is indented");
    d.range = {file_, begin, end};
    d.fix = FixIt{"write the marker alone on its line", d.range, exact};
    near_misses_.push_back(d.range);
    diagnostics_.push_back(std::move(d));
  }

  void report(ParsedFile const& out) {
    if (out.style == MarkerStyle::none) {
      Diagnostic d;
      d.code = "SL203";
      d.message = "No valid section marker was found in file " + path_;
      d.range = {file_, 0, 0};
      for (auto const& r : near_misses_)
        d.notes.push_back({"this line looks like a marker but is not one", r});
      if (near_misses_.empty())
        d.notes.push_back({"a section file is split by lines `#section <tag>`, e.g. `#section support_code`", {}});
      diagnostics_.push_back(std::move(d));
      return;
    }
    if (out.style == MarkerStyle::mixed) {
      auto const legacy = std::find_if(markers_.begin(), markers_.end(),
                                       [](Marker const& m) { return m.kind == MarkerKind::legacy; });
      auto const modern = std::find_if(markers_.begin(), markers_.end(),
                                       [](Marker const& m) { return m.kind == MarkerKind::section; });
      Diagnostic d;
      d.code = "SL103";
      d.message = both_styles_message;
      d.range = legacy->line;
      d.notes.push_back({"a `#section` marker is here", modern->line});
      diagnostics_.push_back(std::move(d));
    }
    if (out.style != MarkerStyle::legacy) check_prelude(out.prelude);

    struct Occurrences {
      std::size_t count = 0;
      SourceRange first, second;
    };
    std::unordered_map<std::string, Occurrences> seen;
    for (std::size_t i = 0; i < out.blocks.size(); ++i) {
      auto const& b = out.blocks[i];
      if (markers_[i].kind == MarkerKind::legacy) {
        Diagnostic d;
        d.code = "SL102";
        d.severity = Severity::warning;
        d.message = "legacy section marker; write `#section " + b.tag + "` instead";
        d.range = b.marker;
        d.notes.push_back({"a later legacy marker of the same kind replaces this block, while "
                           "repeated `#section` blocks are concatenated", {}});
        d.fix = FixIt{"replace with `#section " + b.tag + "`", b.marker, "#section " + b.tag};
        diagnostics_.push_back(std::move(d));
      } else if (!is_section_tag(b.tag, extra_tags_)) {
        Diagnostic d;
        d.code = "SL201";
        d.message = "Unknown section type (in file " + path_ + "): " +
                    detail::bounded_quote(b.tag, max_quoted_bytes);
        d.range = b.tag_range;
        if (auto s = suggest_tag(b.tag)) {
          d.notes.push_back({"did you mean `" + std::string(*s) + "`?", {}});
          d.fix = FixIt{"replace with `" + std::string(*s) + "`", b.tag_range, std::string(*s)};
        } else {
          d.notes.push_back({"known tags: init_code, init_code_apply, init_code_struct, "
                             "support_code, support_code_apply, support_code_struct, "
                             "cleanup_code_struct, code, code_cleanup", {}});
        }
        diagnostics_.push_back(std::move(d));
        continue;
      }
      auto const body = std::string_view(text_).substr(b.body.begin, b.body.end - b.body.begin);
      if (is_ascii_whitespace_only(body)) {
        Diagnostic d;
        d.code = "SL205";
        d.severity = Severity::info;
        d.message = "section `" + b.tag + "` is empty";
        d.range = b.marker;
        diagnostics_.push_back(std::move(d));
      }
      ++seen[b.tag].count;
      if (seen[b.tag].count == 1) seen[b.tag].first = b.marker;
      if (seen[b.tag].count == 2) seen[b.tag].second = b.marker;
    }
    // One finding per repeated tag, not per block: files with thousands of blocks stay readable.
    for (auto const& b : out.blocks) {
      auto const it = seen.find(b.tag);
      if (it == seen.end() || it->second.count < 2 || !(it->second.first == b.marker)) continue;
      Diagnostic d;
      d.code = "SL206";
      d.severity = Severity::info;
      d.message = "section `" + b.tag + "` appears " + std::to_string(it->second.count) +
                  " times; its blocks are concatenated in order";
      d.range = it->second.second;
      d.notes.push_back({"first `" + b.tag + "` block is here", it->second.first});
      diagnostics_.push_back(std::move(d));
    }
  }

  // Whether `text` holds nothing but `// section-lint: ...` line comments.
  static bool only_lint_comments(std::string_view text) {
    while (!text.empty()) {
      auto const start = first_non_space(text);
      if (start == std::string_view::npos) return true;
      text.remove_prefix(start);
      auto const end = std::min(text.find('\n'), text.size());
      auto line = text.substr(0, end);
      if (!line.starts_with("//")) return false;
      line.remove_prefix(2);
      auto const word = first_non_space(line);
      if (word == std::string_view::npos || !line.substr(word).starts_with("section-lint:")) return false;
      text.remove_prefix(end);
    }
    return true;
  }

  void check_prelude(SourceRange const& prelude) {
    auto const text = std::string_view(text_).substr(prelude.begin, prelude.end - prelude.begin);
    auto const stray = first_non_space(text);
    if (stray == std::string_view::npos) return;
    auto line_end = text.find('\n', stray);
    if (line_end == std::string_view::npos) line_end = text.size();
    Diagnostic d;
    d.code = "SL202";
    d.message = "Stray code before first #section statement (in file " + path_ + ")";
    d.range = {file_, prelude.begin + stray, prelude.begin + line_end};
    for (auto const& r : near_misses_)
      if (r.end <= prelude.end) d.notes.push_back({"this line looks like a marker but is not one", r});
    if (text.substr(stray).starts_with("\xEF\xBB\xBF")) {
      d.notes.push_back({"the file starts with a UTF-8 byte order mark; save it without one", {}});
    } else if (only_lint_comments(text.substr(stray))) {
      // PyTensor rejects comments here too, so this stays an error; the comment works anywhere,
      // so moving it under the first marker keeps its meaning.
      d.notes.push_back({"PyTensor refuses any text before the first `#section` line, comments "
                         "included; a `section-lint:` comment applies wherever it is in the file", {}});
      auto marker_end = text_.find('\n', prelude.end);
      if (marker_end == std::string::npos) marker_end = text_.size();
      std::string comments(text.substr(stray));
      while (!comments.empty() && (comments.back() == '\n' || comments.back() == ' ')) comments.pop_back();
      d.fix = FixIt{"move the comment below the first `#section` line",
                    {file_, prelude.begin + stray, marker_end},
                    text_.substr(prelude.end, marker_end - prelude.end) + "\n" + comments,
                    Applicability::safe};
    } else {
      d.notes.push_back({"only whitespace may come before the first `#section` line", {}});
    }
    diagnostics_.push_back(std::move(d));
  }

  FileId file_;
  std::string const& path_;
  std::string const& text_;
  std::vector<Diagnostic>& diagnostics_;
  std::vector<std::string> const& extra_tags_;
  std::vector<Marker> markers_;
  std::vector<SourceRange> near_misses_;
};

}  // namespace

bool is_section_tag(std::string_view tag, std::vector<std::string> const& extra_tags) {
  return std::find(section_tags.begin(), section_tags.end(), tag) != section_tags.end() ||
         std::find(extra_tags.begin(), extra_tags.end(), tag) != extra_tags.end();
}

std::optional<std::string_view> suggest_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > 64) return std::nullopt;
  std::string lower(tag);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::optional<std::string_view> best;
  std::size_t best_distance = 0;
  for (auto known : section_tags) {
    auto const d = edit_distance(lower, known);
    if (!best || d < best_distance) best = known, best_distance = d;
  }
  std::size_t const allowed = std::max<std::size_t>(1, std::min<std::size_t>(3, tag.size() / 3));
  if (best_distance <= allowed) return best;
  return std::nullopt;
}

ParsedFile parse_file(SourceManager const& sm, FileId file, std::vector<Diagnostic>& diagnostics,
                      std::vector<std::string> const& extra_tags) {
  return FileScanner(sm, file, diagnostics, extra_tags).run();
}

Section const* SectionSet::find(std::string_view tag) const {
  auto const it = std::find_if(sections.begin(), sections.end(),
                               [&](Section const& s) { return s.tag == tag; });
  return it == sections.end() ? nullptr : &*it;
}

namespace {

std::string_view body_text(SourceManager const& sm, Block const& b) {
  return std::string_view(sm.file(b.body.file).text()).substr(b.body.begin, b.body.end - b.body.begin);
}

Section& section_for(SectionSet& set, std::string const& tag) {
  for (auto& s : set.sections)
    if (s.tag == tag) return s;
  set.sections.push_back({tag, {}, {}});
  return set.sections.back();
}

}  // namespace

SectionSet merge_sections(SourceManager const& sm, std::vector<FileId> const& files,
                          std::vector<Diagnostic> diagnostics,
                          std::vector<std::string> const& extra_tags) {
  SectionSet set;
  set.files = files;
  set.diagnostics = std::move(diagnostics);
  std::vector<ParsedFile> parsed;
  for (auto id : files) parsed.push_back(parse_file(sm, id, set.diagnostics, extra_tags));

  auto fail = [&](std::string message) {
    if (!set.error) set.error = LoadError{0, std::move(message), {}};
  };

  // The reference checks marker styles across all files before splitting any of them.
  auto const legacy_file = std::find_if(parsed.begin(), parsed.end(), [](ParsedFile const& p) {
    return p.style == MarkerStyle::legacy || p.style == MarkerStyle::mixed;
  });
  auto const section_file = std::find_if(parsed.begin(), parsed.end(), [](ParsedFile const& p) {
    return p.style == MarkerStyle::section || p.style == MarkerStyle::mixed;
  });
  if (legacy_file != parsed.end() && section_file != parsed.end()) {
    fail(both_styles_message);
    if (legacy_file != section_file) {  // within one file, parse_file reported it already
      Diagnostic d;
      d.code = "SL103";
      d.message = both_styles_message;
      d.range = legacy_file->blocks.front().marker;
      d.notes.push_back({"a `#section` marker is here", section_file->blocks.front().marker});
      set.diagnostics.push_back(std::move(d));
    }
  }

  // Each section's text is allocated once at its final size: growing it block by block would
  // touch (and page-fault) about twice the memory on large files.
  std::unordered_map<std::string, std::size_t> section_sizes;
  for (auto const& p : parsed)
    if (p.style == MarkerStyle::section || p.style == MarkerStyle::mixed)
      for (auto const& b : p.blocks) section_sizes[b.tag] += b.body.end - b.body.begin;

  for (auto const& p : parsed) {
    auto const& path = sm.file(p.file).path();
    if (p.style == MarkerStyle::legacy) {
      for (auto const& b : p.blocks) {  // legacy markers assign: a later block replaces
        auto& s = section_for(set, b.tag);
        s.text.assign(body_text(sm, b));
        s.blocks.assign(1, b);
      }
    } else if (p.style == MarkerStyle::section || p.style == MarkerStyle::mixed) {
      auto const& text = sm.file(p.file).text();
      auto const prelude = std::string_view(text).substr(0, p.prelude.end);
      if (first_non_space(prelude) != std::string_view::npos)
        fail("Stray code before first #section statement (in file " + path + "): " +
             detail::bounded_quote(prelude, max_quoted_bytes));
      for (auto const& b : p.blocks) {
        if (!is_section_tag(b.tag, extra_tags)) {
          fail("Unknown section type (in file " + path + "): " +
               detail::bounded_quote(b.tag, max_quoted_bytes));
          continue;
        }
        auto& s = section_for(set, b.tag);
        if (s.text.empty()) s.text.reserve(section_sizes[b.tag]);
        s.text.append(body_text(sm, b));
        s.blocks.push_back(b);
      }
    } else {
      fail("No valid section marker was found in file " + path);
    }
  }

  if (set.sections.empty() && !set.error) {
    fail("No sections where defined in the C files");  // sic: the reference's wording
    Diagnostic d;
    d.code = "SL204";
    d.message = "No sections where defined in the C files";
    d.notes.push_back({"give at least one section file", {}});
    set.diagnostics.push_back(std::move(d));
  }
  return set;
}

SectionSet load_sections(SourceManager& sm, std::vector<SourceSpec> const& files,
                         std::vector<std::string> const& extra_tags) {
  std::vector<Diagnostic> diagnostics;
  std::vector<FileId> ids;
  std::optional<LoadError> read_error;
  for (auto const& spec : files) {
    auto const& shown = spec.display_path.empty() ? spec.path : spec.display_path;
    int os_errno = 0;
    auto const before = diagnostics.size();
    if (auto id = detail::read_source(sm, spec.path, shown, diagnostics, &os_errno)) {
      ids.push_back(*id);
    } else if (!read_error) {  // the reference reads every file before parsing any
      read_error = LoadError{os_errno, diagnostics.size() > before ? diagnostics[before].message : "",
                             spec.path};
    }
  }
  if (read_error && ids.empty()) {  // nothing to merge: "no sections" would only add noise
    SectionSet set;
    set.diagnostics = std::move(diagnostics);
    set.error = read_error;
    return set;
  }
  auto set = merge_sections(sm, ids, std::move(diagnostics), extra_tags);
  if (read_error) set.error = read_error;
  return set;
}

}  // namespace section
