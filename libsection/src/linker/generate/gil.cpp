// An op's code run without the GIL (gil.hpp): what may run while the op's code runs (its code
// and cleanup, its support code, its struct's members) read for the GIL, then rewritten.
#include "linker/generate/gil.hpp"

#include <algorithm>
#include <charconv>
#include <mutex>
#include <set>
#include <vector>

#include "expand/line_directives.hpp"
#include "parse/gil_uses.hpp"
#include "section/log.hpp"
#include "section/settings.hpp"

namespace section {
namespace {

using c_scan::GilText;

/// One of the op's texts, by the method that gave it (for messages).
struct OpText {
  std::string* text;
  char const* method;
  GilText::Scope scope;
  bool library = false;
};

std::vector<OpText> op_texts(OpCode& code) {
  std::vector<OpText> out;
  for (auto& s : code.library_code) out.push_back({&s, "libsection", GilText::Scope::file, true});
  for (auto& s : code.support_code) out.push_back({&s, "c_support_code", GilText::Scope::file});
  out.push_back({&code.support_code_apply, "c_support_code_apply", GilText::Scope::file});
  out.push_back({&code.support_code_struct, "c_support_code_struct", GilText::Scope::members});
  out.push_back({&code.code, "c_code", GilText::Scope::statements});
  out.push_back({&code.code_cleanup, "c_code_cleanup", GilText::Scope::statements});
  return out;
}

/// `file:line` of offset `at` of `text`, from its last `#line` directive before it; else the
/// method's text and the line in it.
std::string where(std::string_view text, std::size_t at, char const* method) {
  std::string file = std::string("<") + method + ">";
  std::size_t line = 1;  // the number of the line starting at `begin`
  for (std::size_t begin = 0; begin <= text.size();) {
    std::size_t const end = std::min(text.find('\n', begin), text.size());
    if (at <= end) break;
    std::string_view const this_line = text.substr(begin, end - begin);
    auto const path = detail::line_directive_path(this_line);
    std::size_t directive_line = 0;  // 0: not a `#line N "path"` (or N out of range)
    if (path) {
      std::string_view const number = this_line.substr(this_line.find("#line") + 6);
      auto const read =
          std::from_chars(number.data(), number.data() + number.size(), directive_line);
      if (read.ec != std::errc{}) directive_line = 0;
    }
    if (directive_line) {
      file = *path;
      line = directive_line;
    } else {
      ++line;
    }
    begin = end + 1;
  }
  return file + ":" + std::to_string(line);
}

/// Logs `message` at DEBUG the first time this process sees it.
void debug_once(std::string message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (said.size() > 4096 || !said.insert(message).second) return;
  }
  log_record(LogLevel::debug, std::move(message));
}

/// `text` with each of `calls` wrapped in LIBSECTION_WITH_GIL. A call may hold another (its
/// arguments spanning a `#define` line whose body has one), so the insertions are made from
/// the last position back, each shifting only what follows it.
std::string wrapped(std::string text, std::vector<WrappedCall> const& calls) {
  struct Insert {
    std::size_t at;
    bool closes;
  };
  std::vector<Insert> inserts;
  for (auto const& [begin, end] : calls) {
    inserts.push_back({begin, false});
    inserts.push_back({end, true});
  }
  // From the last position back; at one position, a call's `)` ends up before the next call's
  // opening (it is inserted after it).
  std::sort(inserts.begin(), inserts.end(), [](Insert const& a, Insert const& b) {
    return a.at != b.at ? a.at > b.at : !a.closes && b.closes;
  });
  for (auto const& i : inserts) text.insert(i.at, i.closes ? ")" : "LIBSECTION_WITH_GIL(");
  return text;
}

}  // namespace

ReleasedCode release_gil(OpCode& code, std::string const& op_name, bool op_allows) {
  ReleasedCode out;
  std::size_t const shared = code.library_code.size() + code.support_code.size();
  out.support_calls.resize(shared);
  if (!op_allows || !read_settings_as<LinkError>().release_gil) return out;
  std::vector<OpText> const texts = op_texts(code);
  std::vector<GilText> read;
  for (auto const& t : texts) read.push_back({*t.text, t.scope, t.library});
  c_scan::GilUses const uses = c_scan::find_gil_uses(read, code.headers);
  if (uses.keep) {
    auto const& keep = *uses.keep;
    std::string const at = keep.text < texts.size()
                               ? where(*texts[keep.text].text, keep.at, texts[keep.text].method)
                               : std::string("c_headers");
    debug_once(op_name + " keeps the GIL while its code runs: " + at + ": " + keep.why +
               " (release_gil = False on the op says so without this note)");
    return out;
  }
  std::vector<std::vector<WrappedCall>> calls(texts.size());
  for (auto const& c : uses.calls) calls[c.text].emplace_back(c.begin, c.end);
  // The module-wide texts come first (op_texts: library_code, then support_code): the module
  // wraps them; the apply's own are wrapped here.
  for (std::size_t k = 0; k < texts.size(); ++k) {
    if (k < shared) out.support_calls[k] = std::move(calls[k]);
    else *texts[k].text = wrapped(std::move(*texts[k].text), calls[k]);
  }
  out.released = true;
  return out;
}

void SharedSupport::add(std::string const& text, std::vector<WrappedCall> const& calls) {
  if (text.empty()) return;  // left out, as PyTensor leaves it out
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](Entry const& e) { return e.text == text; });
  if (it == entries_.end()) it = entries_.insert(entries_.end(), Entry{text, {}});
  it->calls.insert(calls.begin(), calls.end());
}

std::vector<std::string> SharedSupport::texts() const {
  std::vector<std::string> out;
  for (auto const& e : entries_)
    out.push_back(wrapped(e.text, std::vector<WrappedCall>(e.calls.begin(), e.calls.end())));
  return out;
}

std::string nogil_plan(int id) { return "int __nogil_plan_" + std::to_string(id) + " = 0;\n"; }

std::string nogil_region(int id) {
  return "LIBSECTION_NOGIL_REGION(__nogil_plan_" + std::to_string(id) + ")\n";
}

}  // namespace section
