// Rendering diagnostics: clang-style text, one-line concise form, JSON records.
#include "section/render.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "base/text.hpp"
#include "base/utf8.hpp"

namespace section {

char const* to_string(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warning: return "warning";
    case Severity::error: return "error";
  }
  return "error";
}

char const* to_string(Applicability a) { return a == Applicability::safe ? "safe" : "unsafe"; }

bool has_errors(std::vector<Diagnostic> const& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](Diagnostic const& d) { return d.is_error(); });
}

// The one place the documentation's address is written: the README's rule sections (each rule's
// code, lower-cased, is its anchor). Absolute, so JSON and SARIF links work outside the repository.
constexpr char documentation_base[] =
    "https://github.com/libsection/libsection/blob/main/README.md#";

std::string documentation_url(std::string const& code) {
  std::string anchor = code;
  std::transform(anchor.begin(), anchor.end(), anchor.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return documentation_base + anchor;
}

namespace {

// Control bytes would garble a terminal and invalid UTF-8 would make the text unusable from
// Python; both become one-byte placeholders, so columns still line up. Tabs stay so the caret
// line can copy them.
std::string printable(std::string_view line) {
  std::string out(line);
  for (std::size_t from = 0; auto bad = find_invalid_utf8(std::string_view(out).substr(from));) {
    out[from + bad->offset] = '?';
    from += bad->offset + 1;
  }
  for (auto& c : out) {
    auto const u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) c = ' ';
  }
  return out;
}

// gcc's default GCC_COLORS: bold locations, bold red errors, bold magenta warnings, bold cyan
// notes, a bold green caret and green fix-it text.
std::string paint(std::string const& text, char const* sgr, bool color) {
  return color ? std::string("\033[") + sgr + "m" + text + "\033[m" : text;
}

char const* severity_color(Severity s) {
  return s == Severity::error ? "01;31" : s == Severity::warning ? "01;35" : "01;36";
}

// At most this many bytes of a source line are shown, centred on the caret; a line of
// megabytes would otherwise be copied (twice, with the caret line) into every message.
constexpr std::size_t excerpt_width = 200;

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The source line of `r` with a gutter, and a caret line marking the range on that line. Long
// lines show a window around the caret, cut at character boundaries and marked with "…".
void append_excerpt(std::string& out, SourceRange const& r, SourceManager const& sm,
                    std::string const* replacement, bool color) {
  auto const& file = sm.file(r.file);
  auto const lc = file.line_column(r.begin);
  auto const whole = file.line_text(r.begin);
  auto const line_no = std::to_string(lc.line);
  std::string const gutter(line_no.size() + 1, ' ');

  auto const col = std::min(lc.column - 1, whole.size());
  std::size_t first = 0, last = whole.size();
  if (whole.size() > excerpt_width) {
    first = col > excerpt_width / 2 ? col - excerpt_width / 2 : 0;
    last = std::min(whole.size(), first + excerpt_width);
    first = last - std::min(last, excerpt_width);
    while (first > 0 && is_continuation(whole[first])) --first;
    while (last < whole.size() && is_continuation(whole[last])) ++last;
  }
  auto const line = whole.substr(first, last - first);
  std::string const before = first > 0 ? "…" : "", after = last < whole.size() ? "…" : "";
  out += ' ' + line_no + " | " + before + printable(line) + after + '\n';

  std::string lead = first > 0 ? " " : "";  // under the "…"
  for (std::size_t i = first; i < col && i < last; ++i) lead += whole[i] == '\t' ? '\t' : ' ';
  auto const line_end = file.line_start(lc.line) + whole.size();
  auto const span =
      std::max<std::size_t>(1, std::min(r.end, line_end) - std::min(r.begin, line_end));
  auto const shown_span = std::max<std::size_t>(1, std::min(span, last > col ? last - col : 1));
  out +=
      gutter + " | " + lead + paint('^' + std::string(shown_span - 1, '~'), "01;32", color) + '\n';
  if (replacement && !replacement->empty())  // a deletion shows no replacement line
    out += gutter + " | " + lead +
           paint(printable(bounded_quote(*replacement, excerpt_width)), "32", color) + '\n';
}

}  // namespace

std::string render_concise(Diagnostic const& d, SourceManager const& sm, bool color) {
  char const* sgr = severity_color(d.severity);
  return paint(location_text(d.range, sm) + ":", "01", color) + " " +
         paint(std::string(to_string(d.severity)) + ":", sgr, color) + " " + d.message + " " +
         paint("[" + d.code + "]", sgr, color);
}

std::string render_text(Diagnostic const& d, SourceManager const& sm, bool color) {
  std::string out = render_concise(d, sm, color) + '\n';
  if (d.range.valid()) {
    bool const fix_here = d.fix && d.fix->range == d.range;
    append_excerpt(out, d.range, sm, fix_here ? &d.fix->replacement : nullptr, color);
  }
  // Notes and fixes without a place of their own read as part of the diagnostic above them.
  auto const note = paint("note:", "01;36", color), fix = paint("fix:", "01;32", color);
  for (auto const& n : d.notes) {
    if (!n.range.valid()) {
      out += note + " " + n.message + '\n';
      continue;
    }
    out +=
        paint(location_text(n.range, sm) + ":", "01", color) + " " + note + " " + n.message + '\n';
    append_excerpt(out, n.range, sm, nullptr, color);
  }
  if (d.fix) {
    if (!d.fix->range.valid() || d.fix->range == d.range) {
      out += fix + " " + d.fix->message + '\n';
    } else {
      out += paint(location_text(d.fix->range, sm) + ":", "01", color) + " " + fix + " " +
             d.fix->message + '\n';
      append_excerpt(out, d.fix->range, sm, &d.fix->replacement, color);
    }
  }
  return out;
}

std::string render_text(std::vector<Diagnostic> const& ds, SourceManager const& sm, bool color) {
  std::string out;
  for (auto const& d : ds) out += render_text(d, sm, color);
  return out;
}

namespace {

nlohmann::json position(SourceRange const& r, std::size_t offset, SourceManager const& sm) {
  if (!r.valid()) return nullptr;
  auto const lc = sm.line_column(r.file, offset);
  return {{"row", lc.line}, {"column", lc.column}};
}

}  // namespace

std::string render_json(std::vector<Diagnostic> const& ds, SourceManager const& sm) {
  auto records = nlohmann::json::array();
  for (auto const& d : ds) {
    nlohmann::json fix = nullptr;
    if (d.fix) {
      fix = {{"message", d.fix->message},
             {"applicability", to_string(d.fix->applicability)},
             {"edits",
              {{{"content", d.fix->replacement},
                {"location", position(d.fix->range, d.fix->range.begin, sm)},
                {"end_location", position(d.fix->range, d.fix->range.end, sm)}}}}};
    }
    auto notes = nlohmann::json::array();
    for (auto const& n : d.notes) {
      notes.push_back({{"message", n.message},
                       {"filename", n.range.valid() ? nlohmann::json(sm.file(n.range.file).path())
                                                    : nlohmann::json(nullptr)},
                       {"location", position(n.range, n.range.begin, sm)}});
    }
    records.push_back({{"code", d.code},
                       {"severity", to_string(d.severity)},
                       {"message", d.message},
                       {"filename", d.range.valid() ? nlohmann::json(sm.file(d.range.file).path())
                                                    : nlohmann::json(nullptr)},
                       {"location", position(d.range, d.range.begin, sm)},
                       {"end_location", position(d.range, d.range.end, sm)},
                       {"fix", fix},
                       {"notes", notes},
                       {"url", documentation_url(d.code)}});
  }
  // Invalid UTF-8 in a message (quoted from a bad file) must not make the renderer throw.
  return records.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace section
