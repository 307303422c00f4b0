// The parser's judging pass: turns what the scan found into diagnostics, and picks among them
// the error the reference loader raises.
#include "parse/checks.hpp"

#include <algorithm>
#include <unordered_map>

#include "base/text.hpp"
#include "base/utf8.hpp"
#include "section/codes.hpp"

namespace section::detail {
namespace {

constexpr char const* both_styles_message =
    "Both the new and the old syntax for identifying code sections are present in the provided "
    "C code. These two syntaxes should not be used at the same time.";

bool is_ascii_whitespace_only(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  });
}

std::string join_reasons(std::vector<std::string> const& why) {
  std::string out;
  for (std::size_t i = 0; i < why.size(); ++i) out += (i ? "; " : "") + why[i];
  return out;
}

Diagnostic near_miss_diagnostic(NearMiss const& m) {
  if (m.kind == MarkerKind::section) {
    auto d = make_diagnostic(
        "SL101",
        "line looks like a section marker but is not one, so it is read as C code: " +
            join_reasons(m.why),
        m.line);
    d.fix = FixIt{"write the marker exactly as `" + bounded_quote(m.marker, max_quoted_bytes) + "`",
                  m.line, m.marker};
    return d;
  }
  auto d =
      make_diagnostic("SL101",
                      "line looks like a legacy section marker but is not one, so it is ignored: " +
                          join_reasons(m.why),
                      m.line);
  d.fix = FixIt{"write the marker alone on its line", m.line, m.marker};
  return d;
}

Diagnostic mixed_styles(SourceRange legacy_marker, SourceRange section_marker) {
  auto d = make_diagnostic("SL103", both_styles_message, legacy_marker);
  d.notes.push_back({"a `#section` marker is here", section_marker});
  return d;
}

// Whether `text` holds nothing but `// section-lint: ...` line comments.
bool only_lint_comments(std::string_view text) {
  while (!text.empty()) {
    auto const start = first_non_python_space(text);
    if (start == std::string_view::npos) return true;
    text.remove_prefix(start);
    auto const end = std::min(text.find('\n'), text.size());
    auto line = text.substr(0, end);
    if (!line.starts_with("//")) return false;
    line.remove_prefix(2);
    auto const word = first_non_python_space(line);
    if (word == std::string_view::npos || !line.substr(word).starts_with("section-lint:"))
      return false;
    text.remove_prefix(end);
  }
  return true;
}

class FileChecks {
 public:
  FileChecks(SourceManager const& sm, ScannedFile const& file,
             std::vector<std::string> const& extra_tags, std::vector<Diagnostic>& out)
      : file_(file), parsed_(file.parsed), path_(sm.file(parsed_.file).path()),
        text_(sm.file(parsed_.file).text()), extra_tags_(extra_tags), out_(out) {}

  void run() {
    for (auto const& m : file_.near_misses) out_.push_back(near_miss_diagnostic(m));
    if (parsed_.style == MarkerStyle::none) {
      no_marker();
      return;
    }
    if (parsed_.style == MarkerStyle::mixed) mixed_in_file();
    if (parsed_.style != MarkerStyle::legacy) check_prelude();
    check_blocks();
  }

 private:
  void no_marker() {
    auto d = make_diagnostic("SL203", "No valid section marker was found in file " + path_,
                             {parsed_.file, 0, 0});
    for (auto const& m : file_.near_misses)
      d.notes.push_back({"this line looks like a marker but is not one", m.line});
    if (file_.near_misses.empty())
      d.notes.push_back(
          {"a section file is split by lines `#section <tag>`, e.g. `#section support_code`", {}});
    out_.push_back(std::move(d));
  }

  SourceRange first_marker(MarkerKind kind) const {
    auto const i = std::find(file_.block_kinds.begin(), file_.block_kinds.end(), kind) -
                   file_.block_kinds.begin();
    return parsed_.blocks[static_cast<std::size_t>(i)].marker;
  }

  void mixed_in_file() {
    out_.push_back(
        mixed_styles(first_marker(MarkerKind::legacy), first_marker(MarkerKind::section)));
  }

  void check_prelude() {
    auto const& prelude = parsed_.prelude;
    auto const text = std::string_view(text_).substr(prelude.begin, prelude.end - prelude.begin);
    auto const stray = first_non_python_space(text);
    if (stray == std::string_view::npos) return;
    auto line_end = text.find('\n', stray);
    if (line_end == std::string_view::npos) line_end = text.size();
    auto d = make_diagnostic("SL202",
                             "Stray code before first #section statement (in file " + path_ + ")",
                             {parsed_.file, prelude.begin + stray, prelude.begin + line_end});
    for (auto const& m : file_.near_misses)
      if (m.line.end <= prelude.end)
        d.notes.push_back({"this line looks like a marker but is not one", m.line});
    if (text.substr(stray).starts_with("\xEF\xBB\xBF")) {
      d.notes.push_back({"the file starts with a UTF-8 byte order mark; save it without one", {}});
    } else if (only_lint_comments(text.substr(stray))) {
      move_lint_comments(d, text.substr(stray), prelude.begin + stray);
    } else {
      d.notes.push_back({"only whitespace may come before the first `#section` line", {}});
    }
    out_.push_back(std::move(d));
  }

  // PyTensor rejects comments before the first marker too, so this stays an error; the comment
  // works anywhere, so moving it under the first marker keeps its meaning.
  void move_lint_comments(Diagnostic& d, std::string_view comments_text, std::size_t begin) {
    auto const prelude_end = parsed_.prelude.end;
    d.notes.push_back({"PyTensor refuses any text before the first `#section` line, comments "
                       "included; a `section-lint:` comment applies wherever it is in the file",
                       {}});
    auto marker_end = text_.find('\n', prelude_end);
    if (marker_end == std::string::npos) marker_end = text_.size();
    std::string comments(comments_text);
    while (!comments.empty() && (comments.back() == '\n' || comments.back() == ' '))
      comments.pop_back();
    d.fix = FixIt{"move the comment below the first `#section` line",
                  {parsed_.file, begin, marker_end},
                  text_.substr(prelude_end, marker_end - prelude_end) + "\n" + comments,
                  Applicability::safe};
  }

  void legacy_marker(Block const& b) {
    auto d = make_diagnostic(
        "SL102", "legacy section marker; write `#section " + b.tag + "` instead", b.marker);
    d.notes.push_back({"a later legacy marker of the same kind replaces this block, while "
                       "repeated `#section` blocks are concatenated",
                       {}});
    d.fix = FixIt{"replace with `#section " + b.tag + "`", b.marker, "#section " + b.tag};
    out_.push_back(std::move(d));
  }

  void unknown_tag(Block const& b) {
    auto d = make_diagnostic(
        "SL201",
        "Unknown section type (in file " + path_ + "): " + bounded_quote(b.tag, max_quoted_bytes),
        b.tag_range);
    if (auto s = suggest_tag(b.tag)) {
      d.notes.push_back({"did you mean `" + std::string(*s) + "`?", {}});
      d.fix = FixIt{"replace with `" + std::string(*s) + "`", b.tag_range, std::string(*s)};
    } else {
      d.notes.push_back({"known tags: init_code, init_code_apply, init_code_struct, "
                         "support_code, support_code_apply, support_code_struct, "
                         "cleanup_code_struct, code, code_cleanup",
                         {}});
    }
    out_.push_back(std::move(d));
  }

  struct Occurrences {
    std::size_t count = 0;
    SourceRange first, second;
  };

  void check_blocks() {
    std::unordered_map<std::string, Occurrences> seen;
    for (std::size_t i = 0; i < parsed_.blocks.size(); ++i) {
      auto const& b = parsed_.blocks[i];
      if (file_.block_kinds[i] == MarkerKind::legacy) {
        legacy_marker(b);
      } else if (!is_section_tag(b.tag, extra_tags_)) {
        unknown_tag(b);
        continue;
      }
      auto const body = std::string_view(text_).substr(b.body.begin, b.body.end - b.body.begin);
      if (is_ascii_whitespace_only(body))
        out_.push_back(make_diagnostic("SL205", "section `" + b.tag + "` is empty", b.marker));
      auto& s = seen[b.tag];
      ++s.count;
      if (s.count == 1) s.first = b.marker;
      if (s.count == 2) s.second = b.marker;
    }
    // One finding per repeated tag, not per block: files with thousands of blocks stay readable.
    for (auto const& b : parsed_.blocks) {
      auto const it = seen.find(b.tag);
      if (it == seen.end() || it->second.count < 2 || !(it->second.first == b.marker)) continue;
      auto d =
          make_diagnostic("SL206",
                          "section `" + b.tag + "` appears " + std::to_string(it->second.count) +
                              " times; its blocks are concatenated in order",
                          it->second.second);
      d.notes.push_back({"first `" + b.tag + "` block is here", it->second.first});
      out_.push_back(std::move(d));
    }
  }

  ScannedFile const& file_;
  ParsedFile const& parsed_;
  std::string const& path_;
  std::string const& text_;
  std::vector<std::string> const& extra_tags_;
  std::vector<Diagnostic>& out_;
};

bool uses(ScannedFile const& f, MarkerStyle style) {
  return f.parsed.style == style || f.parsed.style == MarkerStyle::mixed;
}

}  // namespace

void check_file(SourceManager const& sm, ScannedFile const& file,
                std::vector<std::string> const& extra_tags, std::vector<Diagnostic>& out) {
  FileChecks(sm, file, extra_tags, out).run();
}

void check_files(std::vector<ScannedFile> const& files, std::vector<Diagnostic>& diagnostics,
                 std::size_t judged_from) {
  auto const is_error = [](Diagnostic const& d) { return d.is_error(); };
  bool const any_error = std::any_of(diagnostics.begin() + static_cast<std::ptrdiff_t>(judged_from),
                                     diagnostics.end(), is_error);
  auto const first_using = [&](MarkerStyle style) {
    return std::find_if(files.begin(), files.end(),
                        [&](ScannedFile const& f) { return uses(f, style); });
  };
  auto const legacy = first_using(MarkerStyle::legacy), section = first_using(MarkerStyle::section);
  // Within one file, check_file reported it already.
  if (legacy != files.end() && section != files.end() && legacy != section)
    diagnostics.push_back(
        mixed_styles(legacy->parsed.blocks.front().marker, section->parsed.blocks.front().marker));
  bool const any_block = std::any_of(files.begin(), files.end(),
                                     [](ScannedFile const& f) { return !f.parsed.blocks.empty(); });
  if (!any_block && !any_error) {  // without blocks, no marker styles to mix either
    // sic: the reference's wording
    auto d = make_diagnostic("SL204", "No sections where defined in the C files");
    d.notes.push_back({"give at least one section file", {}});
    diagnostics.push_back(std::move(d));
  }
}

Diagnostic code_section_with_func_name(SourceRange code_marker, std::string_view func_name) {
  auto d = make_diagnostic("SL604",
                           "a `code` section cannot be combined with a function name (`" +
                               std::string(func_name) + "`): remove one of them",
                           code_marker);
  d.notes.push_back({"the reference `ExternalCOp.c_code` raises `AssertionError` for this", {}});
  return d;
}

std::optional<LoadError> reference_error(SourceManager const& sm,
                                         std::vector<ScannedFile> const& files,
                                         std::span<Diagnostic const> judged) {
  // The reference checks the marker styles of all files before it splits any of them, then
  // raises on the first problem of the first file that has one: the order the checks report in.
  auto const is_error = [](Diagnostic const& d) { return d.is_error(); };
  auto first = std::find_if(judged.begin(), judged.end(),
                            [&](Diagnostic const& d) { return is_error(d) && d.code == "SL103"; });
  if (first == judged.end()) first = std::find_if(judged.begin(), judged.end(), is_error);
  if (first == judged.end()) return std::nullopt;
  LoadError error{0, first->message, {}};
  if (first->code == "SL202") {  // the reference quotes the stray text itself; ours points at it
    auto const& file = *std::find_if(files.begin(), files.end(), [&](ScannedFile const& f) {
      return f.parsed.file == first->range.file;
    });
    auto const& text = sm.file(file.parsed.file).text();
    auto const prelude = std::string_view(text).substr(0, file.parsed.prelude.end);
    error.message += ": " + bounded_quote(prelude, max_quoted_bytes);
  }
  return error;
}

}  // namespace section::detail
