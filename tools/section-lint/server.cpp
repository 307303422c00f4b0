// `section-lint server`: diagnostics on open and change, fix-its as quick fixes, and hover on the
// generated macros, over the Language Server Protocol (JSON-RPC with Content-Length framing).
// The linting itself is the command line's (main.cpp hands it in); this file speaks LSP.
#include "server.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <istream>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "section/chars.hpp"
#include "section/expand.hpp"
#include "section/parse.hpp"
#include "section/version.hpp"

namespace lint_server {
namespace {

using json = nlohmann::json;

// JSON-RPC and LSP error codes.
constexpr int method_not_found = -32601;
constexpr int server_not_initialized = -32002;
constexpr int invalid_request = -32600;

/// One message's body, or nothing at the end of the input.
std::optional<std::string> read_message(std::istream& in) {
  std::size_t length = 0;
  bool has_length = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (!has_length) continue;  // stray blank line between messages
      std::string body(length, '\0');
      in.read(body.data(), static_cast<std::streamsize>(length));
      if (static_cast<std::size_t>(in.gcount()) != length) return std::nullopt;
      return body;
    }
    auto const colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "content-length") {
      length = std::stoul(line.substr(colon + 1));
      has_length = true;
    }
  }
  return std::nullopt;
}

void write_message(std::ostream& out, json const& message) {
  std::string const body = message.dump(-1, ' ', false, json::error_handler_t::replace);
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// `file:///a%20b/op.c` → `/a b/op.c`; another scheme is kept whole (linted under that name).
std::string path_of(std::string const& uri) {
  std::string_view rest = uri;
  if (!rest.starts_with("file://")) return uri;
  rest.remove_prefix(7);
  std::string path;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    int hi = 0, lo = 0;
    if (rest[i] == '%' && i + 2 < rest.size() && (hi = hex_digit(rest[i + 1])) >= 0 &&
        (lo = hex_digit(rest[i + 2])) >= 0) {
      path += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

/// A byte offset of `text` as an LSP position (line, UTF-16 code units).
json position(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 0, line_start = 0;
  for (std::size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  std::size_t units = 0;
  for (std::size_t i = line_start; i < offset; ++i) {
    auto const byte = static_cast<unsigned char>(text[i]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte
    units += byte >= 0xF0 ? 2 : 1;        // outside the BMP: a surrogate pair
  }
  return {{"line", line}, {"character", units}};
}

/// An LSP position as a byte offset of `text` (clamped to the line's end).
std::size_t offset_of(std::string_view text, json const& pos) {
  auto const line = pos.value("line", std::size_t{0});
  auto const character = pos.value("character", std::size_t{0});
  std::size_t at = 0;
  for (std::size_t l = 0; l < line && at < text.size(); ++at)
    if (text[at] == '\n') ++l;
  for (std::size_t units = 0; at < text.size() && text[at] != '\n' && units < character;) {
    auto const byte = static_cast<unsigned char>(text[at]);
    units += byte >= 0xF0 ? 2 : 1;
    ++at;
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  }
  return at;
}

json lsp_range(std::string_view text, std::size_t begin, std::size_t end) {
  return {{"start", position(text, begin)}, {"end", position(text, end)}};
}

/// An open document and what the linter last found in it.
struct Document {
  std::string uri;
  std::string text;  ///< as the client sent it
  std::optional<Findings> findings;
  std::string error;  ///< settings that could not be read
};

class Server {
 public:
  Server(Linter const& lint, std::ostream& out) : lint_(lint), out_(out) {}

  /// Handles one message; false once `exit` has come.
  bool handle(json const& message) {
    std::string const method = message.value("method", "");
    bool const is_request = message.contains("id");
    json const params = message.value("params", json::object());
    if (method == "exit") return false;
    if (!initialized_ && is_request && method != "initialize") {
      reply_error(message["id"], server_not_initialized, "initialize first");
      return true;
    }
    if (shut_down_ && is_request) {
      reply_error(message["id"], invalid_request, "the server is shut down");
      return true;
    }
    if (method == "initialize") {
      initialized_ = true;
      reply(message["id"], initialize_result());
    } else if (method == "shutdown") {
      shut_down_ = true;
      reply(message["id"], nullptr);
    } else if (method == "textDocument/didOpen") {
      auto const& doc = params["textDocument"];
      open(doc.value("uri", ""), doc.value("text", ""));
    } else if (method == "textDocument/didChange") {
      auto const uri = params["textDocument"].value("uri", "");
      auto const& changes = params.value("contentChanges", json::array());
      // Full sync: each change is the whole text; the last one wins.
      if (!changes.empty() && changes.back().contains("text"))
        open(uri, changes.back()["text"].get<std::string>());
    } else if (method == "textDocument/didSave") {
      auto const uri = params["textDocument"].value("uri", "");
      if (auto it = documents_.find(uri); it != documents_.end()) open(uri, it->second.text);
    } else if (method == "textDocument/didClose") {
      auto const uri = params["textDocument"].value("uri", "");
      documents_.erase(uri);
      publish(uri, json::array());
    } else if (method == "textDocument/codeAction") {
      reply(message["id"], code_actions(params));
    } else if (method == "textDocument/hover") {
      reply(message["id"], hover(params));
    } else if (is_request) {
      reply_error(message["id"], method_not_found, "unknown method " + method);
    }  // other notifications ($/cancelRequest, initialized, ...) need nothing
    return true;
  }

  bool shut_down() const { return shut_down_; }

 private:
  static json initialize_result() {
    return {{"capabilities",
             {{"positionEncoding", "utf-16"},
              {"textDocumentSync", {{"openClose", true}, {"change", 1}, {"save", true}}},
              {"codeActionProvider", {{"codeActionKinds", {"quickfix"}}}},
              {"hoverProvider", true}}},
            {"serverInfo", {{"name", "section-lint"}, {"version", section::version}}}};
  }

  void reply(json const& id, json result) {
    write_message(out_, {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  }
  void reply_error(json const& id, int code, std::string const& text) {
    write_message(out_,
                  {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", text}}}});
  }
  void publish(std::string const& uri, json diagnostics) {
    write_message(out_, {{"jsonrpc", "2.0"},
                         {"method", "textDocument/publishDiagnostics"},
                         {"params", {{"uri", uri}, {"diagnostics", std::move(diagnostics)}}}});
  }

  void open(std::string const& uri, std::string text) {
    Document& doc = documents_[uri];
    doc.uri = uri;
    doc.text = std::move(text);
    doc.findings.reset();
    doc.error.clear();
    try {
      doc.findings.emplace(lint_(path_of(uri), doc.text));
    } catch (std::exception const& e) {
      doc.error = e.what();
    }
    publish(uri, diagnostics_of(doc));
  }

  /// The document's findings in `findings.sm`'s copy of its text (newlines as the linter read
  /// them); the findings in other files (none for one document) are left out.
  static bool in_document(Findings const& f, section::SourceRange const& r) {
    return r.valid() && r.file < f.sm.size() && f.sm.size() > 0 && r.file == 0;
  }

  json lsp_diagnostic(Document const& doc, section::Diagnostic const& d) const {
    Findings const& f = *doc.findings;
    std::string_view const text = f.sm.size() ? f.sm.file(0).text() : std::string_view(doc.text);
    auto const [begin, end] = in_document(f, d.range) ? std::pair{d.range.begin, d.range.end}
                                                      : std::pair{std::size_t{0}, std::size_t{0}};
    int const severity = d.severity == section::Severity::error     ? 1
                         : d.severity == section::Severity::warning ? 2
                                                                    : 3;
    std::string message = d.message;
    json related = json::array();
    for (auto const& note : d.notes) {
      if (in_document(f, note.range))
        related.push_back(
            {{"location",
              {{"uri", doc.uri}, {"range", lsp_range(text, note.range.begin, note.range.end)}}},
             {"message", note.message}});
      else message += "\nnote: " + note.message;
    }
    if (d.fix) message += "\nfix: " + d.fix->message;
    json out = {{"range", lsp_range(text, begin, end)},
                {"severity", severity},
                {"code", d.code},
                {"source", "section-lint"},
                {"message", message}};
    if (!related.empty()) out["relatedInformation"] = related;
    return out;
  }

  json diagnostics_of(Document const& doc) const {
    json out = json::array();
    if (!doc.error.empty()) {
      out.push_back({{"range", lsp_range("", 0, 0)},
                     {"severity", 1},
                     {"source", "section-lint"},
                     {"message", "section-lint: " + doc.error}});
      return out;
    }
    for (auto const& d : doc.findings->diagnostics) out.push_back(lsp_diagnostic(doc, d));
    return out;
  }

  /// A quick fix for each finding with a fix-it whose range meets the requested one.
  json code_actions(json const& params) const {
    json actions = json::array();
    auto const uri = params["textDocument"].value("uri", "");
    auto it = documents_.find(uri);
    if (it == documents_.end() || !it->second.findings) return actions;
    Document const& doc = it->second;
    Findings const& f = *doc.findings;
    std::string_view const text = f.sm.file(0).text();
    auto const& range = params["range"];
    std::size_t const from = offset_of(text, range["start"]);
    std::size_t const to = offset_of(text, range["end"]);
    for (auto const& d : f.diagnostics) {
      if (!d.fix || !in_document(f, d.fix->range)) continue;
      auto const at = in_document(f, d.range) ? d.range : d.fix->range;
      if (at.end < from || at.begin > to) continue;
      bool const safe = d.fix->applicability == section::Applicability::safe;
      json edit = {{"range", lsp_range(text, d.fix->range.begin, d.fix->range.end)},
                   {"newText", d.fix->replacement}};
      actions.push_back({{"title", d.code + ": " + d.fix->message + (safe ? "" : " (unsafe)")},
                         {"kind", "quickfix"},
                         {"diagnostics", {lsp_diagnostic(doc, d)}},
                         {"isPreferred", safe},
                         {"edit", {{"changes", {{uri, {edit}}}}}}});
    }
    return actions;
  }

  json hover(json const& params) const;

  Linter const& lint_;
  std::ostream& out_;
  std::map<std::string, Document> documents_;
  bool initialized_ = false;
  bool shut_down_ = false;
};

// --- hover: what a generated macro is in the section under the cursor ---------------------------

char const* family_name(section::MacroFamily family) {
  switch (family) {
    case section::MacroFamily::sub: return "a `sub` macro (the failure code, the params variable)";
    case section::MacroFamily::io: return "an input/output variable macro";
    case section::MacroFamily::apply: return "a per-apply macro (node name, dtypes, params types)";
    case section::MacroFamily::none: break;
  }
  return "";
}

/// The `#define name ...` line (with its continuation lines) of a generated method string.
std::optional<std::string> definition_in(std::string_view method, std::string_view name) {
  std::size_t at = 0;
  while ((at = method.find("#define ", at)) != std::string_view::npos) {
    auto const start = at;
    at += 8;
    if (start > 0 && method[start - 1] != '\n') continue;
    if (method.substr(at, name.size()) != name) continue;
    auto const after = at + name.size();
    if (after < method.size() && method[after] != ' ' && method[after] != '(') continue;
    auto end = start;
    while (true) {
      end = method.find('\n', end);
      if (end == std::string_view::npos) end = method.size();
      if (end > start && method[end - 1] == '\\' && end < method.size()) {
        ++end;
        continue;
      }
      break;
    }
    return std::string(method.substr(start, end - start));
  }
  return std::nullopt;
}

/// What the hover says of `name` in a section whose method defines its family, for the file's
/// configured signature: its definition there, read off the expanded method string.
std::string configured_definition(Findings const& f, section::Block const& block,
                                  section::ExpansionMethod const& method, std::string const& name) {
  std::string out;
  // Expand this file for the configured signature and read the macro off the method string.
  auto const sections = section::merge_sections(f.sm, {0});
  auto const node = section::single_node_context(f.op);
  section::ExpandOptions options;
  options.line_directives = false;
  auto const expansion = section::expand(f.sm, sections, f.op, node, options);
  std::optional<std::string> definition;
  auto const result = section::method_result(expansion, method);
  if (auto const* s = std::get_if<std::string>(&result)) definition = definition_in(*s, name);
  if (auto const* list = std::get_if<std::vector<std::string>>(&result))
    for (auto const& s : *list)
      if (!definition) definition = definition_in(s, name);
  if (!definition) definition = definition_in(expansion.macro_defines, name);
  if (definition) {
    out += "In section `" + block.tag + "` (`" + std::string(method.name) +
           "`), for the configured signature:\n\n```c\n" + *definition + "\n```";
  } else {
    out += "Section `" + block.tag + "` has this family, but the configured signature (" +
           std::to_string(f.op.inputs->size()) + " inputs, " +
           std::to_string(f.op.outputs->size()) + " outputs" + (f.op.has_params ? ", params" : "") +
           ") does **not** define `" + name + "`.";
  }
  return out;
}

json Server::hover(json const& params) const {
  auto const uri = params["textDocument"].value("uri", "");
  auto it = documents_.find(uri);
  if (it == documents_.end() || !it->second.findings) return nullptr;
  Findings const& f = *it->second.findings;
  std::string_view const text = f.sm.file(0).text();
  std::size_t const at = offset_of(text, params["position"]);
  std::size_t begin = at, end = at;
  while (begin > 0 && section::is_identifier_char(text[begin - 1])) --begin;
  while (end < text.size() && section::is_identifier_char(text[end])) ++end;
  if (begin == end) return nullptr;
  std::string const name(text.substr(begin, end - begin));
  auto const family = section::classify_generated_macro(name).family;
  if (family == section::MacroFamily::none) return nullptr;

  // The section under the cursor, as the parser splits the file.
  std::vector<section::Diagnostic> ignored;
  auto const parsed = section::parse_file(f.sm, 0, ignored);
  section::Block const* block = nullptr;
  for (auto const& b : parsed.blocks)
    if (b.body.begin <= begin && end <= b.body.end) block = &b;
  std::string value = "`" + name + "` is " + family_name(family) + " the expander generates.\n\n";
  if (!block) {
    value += "It is outside every section here.";
  } else if (auto const* method = section::expansion_method_of(block->tag); !method) {
    value += "Section `" + block->tag +
             "` is not one of the nine (an extra section its op class pastes, or a mistyped "
             "tag): which macros it sees is not known here.";
  } else if (!method->macros.defines(family)) {
    value += "**Not defined** in section `" + block->tag + "`: only " +
             section::tags_defining(family) + " have it.";
  } else if (!f.op.inputs || !f.op.outputs) {
    value += "Defined in section `" + block->tag + "` (`" + std::string(method->name) +
             "`). No signature is configured for this file, so its value is not known: give "
             "one in `[tool.section-lint.signatures.\"GLOB\"]` (inputs, outputs, params).";
  } else {
    value += configured_definition(f, *block, *method, name);
  }
  return {{"contents", {{"kind", "markdown"}, {"value", value}}},
          {"range", lsp_range(text, begin, end)}};
}

}  // namespace

int serve(Linter const& lint, std::istream& in, std::ostream& out) {
  Server server(lint, out);
  while (auto body = read_message(in)) {
    json message;
    try {
      message = json::parse(*body);
    } catch (json::exception const&) {
      write_message(out, {{"jsonrpc", "2.0"},
                          {"id", nullptr},
                          {"error", {{"code", -32700}, {"message", "parse error"}}}});
      continue;
    }
    try {
      if (!server.handle(message)) return server.shut_down() ? 0 : 1;
    } catch (std::exception const& e) {  // a malformed message: answer, keep serving
      if (message.contains("id"))
        write_message(out, {{"jsonrpc", "2.0"},
                            {"id", message["id"]},
                            {"error", {{"code", -32603}, {"message", e.what()}}}});
    }
  }
  return 1;
}

}  // namespace lint_server
