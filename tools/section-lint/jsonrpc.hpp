// JSON-RPC over a byte stream, for `section-lint server`: Content-Length framing read from
// untrusted input, limits that keep a hostile message from being parsed at all, and `Fields`,
// which reads a message's params and names a missing or mistyped field in the error it raises.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lint_server {

using json = nlohmann::json;

// JSON-RPC and LSP error codes.
constexpr int parse_error = -32700;
constexpr int invalid_request = -32600;
constexpr int method_not_found = -32601;
constexpr int invalid_params = -32602;
constexpr int internal_error = -32603;
constexpr int server_not_initialized = -32002;

/// A message's body may hold a whole document (a section file is at most 64 MiB by default).
constexpr std::size_t max_message_bytes = std::size_t{256} << 20;
/// LSP's messages nest a dozen levels; a deeper one is refused before it is parsed, so nothing
/// recursive (copying, printing) ever walks it.
constexpr std::size_t max_nesting = 128;
/// Header lines are short (`Content-Length: 123`); a longer one is not a header.
constexpr std::size_t max_header_line = 1024;

/// A printable excerpt of untrusted text, for a message.
inline std::string excerpt(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 64)) {
    auto const byte = static_cast<unsigned char>(c);
    out += byte >= 0x20 && byte < 0x7F ? c : '?';
  }
  return text.size() > 64 ? out + "..." : out;
}

/// Reads Content-Length framed messages from a stream that may hold anything. A header block
/// that is not framing (a line without a colon, a Content-Length that is not a number, none at
/// all, an overlong line) is reported, and reading resumes at the next `Content-Length:` in the
/// stream, wherever it starts (a client's body may run into the next header without a newline).
class MessageReader {
 public:
  /// One message: its body, or why its framing was refused (`problem` not empty).
  struct Frame {
    std::string body;
    std::string problem;
  };

  explicit MessageReader(std::istream& in) : in_(in) {}

  /// The next message, or nothing at the end of the input.
  std::optional<Frame> next() {
    if (resync_ && !skip_to_next_header()) return std::nullopt;
    resync_ = false;
    std::optional<std::size_t> length;
    bool any_header = false;
    for (std::string line;;) {
      auto const read = read_line(line);
      if (read == Line::end) return std::nullopt;
      if (read == Line::too_long)
        return refuse("a header line over " + std::to_string(max_header_line) + " bytes");
      if (line.empty()) {
        if (!any_header) continue;  // stray blank lines between messages
        break;
      }
      any_header = true;
      auto const colon = line.find(':');
      if (colon == std::string::npos)
        return refuse("header line `" + excerpt(line) + "` is not `Name: value`");
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name != "content-length") continue;  // Content-Type and others need nothing
      auto const value = trimmed(std::string_view(line).substr(colon + 1));
      auto const bytes = byte_count(value);
      if (!bytes) return refuse("Content-Length `" + excerpt(value) + "` is not a number of bytes");
      if (length && *length != *bytes) return refuse("two different Content-Length headers");
      length = bytes;
    }
    if (!length) return refuse("a header block without Content-Length");
    if (*length > max_message_bytes) {
      if (!discard(*length)) return std::nullopt;
      return Frame{{},
                   "a message of " + std::to_string(*length) + " bytes, over the limit of " +
                       std::to_string(max_message_bytes)};
    }
    // Read as it comes, not allocated by the header's word: a stream may end long before.
    Frame frame;
    char chunk[65536];
    while (frame.body.size() < *length) {
      auto const n = std::min(*length - frame.body.size(), sizeof chunk);
      in_.read(chunk, static_cast<std::streamsize>(n));
      frame.body.append(chunk, static_cast<std::size_t>(in_.gcount()));
      if (static_cast<std::size_t>(in_.gcount()) != n) return std::nullopt;
    }
    return frame;
  }

 private:
  enum class Line { ok, too_long, end };

  Frame refuse(std::string problem) {
    resync_ = true;
    return Frame{{}, std::move(problem)};
  }

  /// One line without its `\r\n` or `\n`, at most `max_header_line` bytes.
  Line read_line(std::string& line) {
    line = std::move(pending_);
    pending_.clear();
    for (int c; (c = in_.get()) != std::char_traits<char>::eof();) {
      if (c == '\n') {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return Line::ok;
      }
      if (line.size() >= max_header_line) return Line::too_long;
      line += static_cast<char>(c);
    }
    return Line::end;
  }

  /// Skips to the next `Content-Length:` (any case), which becomes the start of the next line.
  bool skip_to_next_header() {
    static constexpr std::string_view token = "content-length:";  // its `c` occurs once
    std::size_t matched = 0;
    for (int c; (c = in_.get()) != std::char_traits<char>::eof();) {
      char const lower = static_cast<char>(std::tolower(c));
      matched = lower == token[matched] ? matched + 1 : lower == token[0] ? 1 : 0;
      if (matched == token.size()) {
        pending_ = "Content-Length:";
        return true;
      }
    }
    return false;
  }

  bool discard(std::size_t bytes) {
    char chunk[65536];
    while (bytes > 0) {
      auto const n = std::min(bytes, sizeof chunk);
      in_.read(chunk, static_cast<std::streamsize>(n));
      if (static_cast<std::size_t>(in_.gcount()) != n) return false;
      bytes -= n;
    }
    return true;
  }

  static std::string_view trimmed(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
  }

  /// Decimal digits as a count, or nothing (empty, a sign, other characters, over 2^63).
  static std::optional<std::size_t> byte_count(std::string_view text) {
    if (text.empty() || text.size() > 18) return std::nullopt;
    std::size_t n = 0;
    for (char c : text) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + static_cast<std::size_t>(c - '0');
    }
    return n;
  }

  std::istream& in_;
  std::string pending_;  // the start of the next line, found while skipping
  bool resync_ = false;  // the last header block was refused: skip to the next one first
};

/// Whether `body`, read as JSON, nests arrays and objects deeper than `limit` (brackets inside
/// strings do not count). Linear, and no recursion.
inline bool nested_deeper_than(std::string_view body, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

inline void write_message(std::ostream& out, json const& message) {
  std::string const body = message.dump(-1, ' ', false, json::error_handler_t::replace);
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
}

/// A message the server cannot act on: a request gets this JSON-RPC error, a notification (which
/// has no answer) a `window/logMessage` saying it.
class MessageError : public std::runtime_error {
 public:
  MessageError(int code, std::string const& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/// An LSP position: a line and a character (UTF-16 code units) in it, both from 0.
struct Position {
  std::size_t line = 0;
  std::size_t character = 0;
};

/// A JSON object of a message, read field by field: a missing or mistyped field raises an
/// `invalid_params` MessageError naming it by its path (`params.position.line`).
class Fields {
 public:
  Fields(json const& value, std::string path) : value_(value), path_(std::move(path)) {
    if (!value_.is_object()) wrong_type(path_, "an object", value_);
  }

  Fields object(std::string_view name) const { return Fields(field(name), path_of(name)); }

  std::string string(std::string_view name) const {
    json const& v = field(name);
    if (!v.is_string()) wrong_type(path_of(name), "a string", v);
    return v.get<std::string>();
  }

  /// A non-negative integer (LSP's `uinteger`).
  std::size_t count(std::string_view name) const {
    json const& v = field(name);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      wrong_type(path_of(name), "a non-negative integer", v);
    return v.get<std::size_t>();
  }

  json const& array(std::string_view name) const {
    json const& v = field(name);
    if (!v.is_array()) wrong_type(path_of(name), "an array", v);
    return v;
  }

  /// Element `i` of the array field `name` as an object.
  Fields element(std::string_view name, std::size_t i) const {
    return Fields(array(name)[i], path_of(name) + "[" + std::to_string(i) + "]");
  }

  bool has(std::string_view name) const { return value_.contains(name); }

  /// The field `name` as it came, or null when it is missing (for optional parts read leniently).
  json const* find(std::string_view name) const {
    auto const it = value_.find(name);
    return it == value_.end() ? nullptr : &*it;
  }

  Position position(std::string_view name) const {
    Fields const p = object(name);
    return {p.count("line"), p.count("character")};
  }

 private:
  json const& field(std::string_view name) const {
    auto const it = value_.find(name);
    if (it == value_.end()) throw MessageError(invalid_params, path_of(name) + ": missing");
    return *it;
  }
  std::string path_of(std::string_view name) const { return path_ + "." + std::string(name); }
  [[noreturn]] static void wrong_type(std::string const& path, char const* want, json const& got) {
    throw MessageError(invalid_params,
                       path + ": expected " + want + ", got " + std::string(got.type_name()));
  }

  json const& value_;
  std::string path_;
};

}  // namespace lint_server
