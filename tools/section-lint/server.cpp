// `section-lint server`: diagnostics on open and change (pushed, or pulled by clients that pull),
// each linking its rule's documentation; fix-its as quick fixes, a fix-all source action and an
// "ignore on this line" action; hover on the generated macros; settings files watched (through
// the client) and open documents linted again when they change. Over the Language Server
// Protocol (JSON-RPC with Content-Length framing). The linting itself is the command line's
// (main.cpp hands it in); this file speaks LSP.
//
// The input is any byte stream: a header block that is not Content-Length framing is answered
// and skipped, a body over `max_message_bytes` or nested deeper than `max_nesting` is answered
// and dropped unread, and every field a method reads goes through `Fields`, which answers a
// missing or mistyped one with a JSON-RPC error naming it. A method is one entry of the tables
// in `Server` (`requests`, `notifications`): a new one reads its params through `Fields`.
#include "server.hpp"

#include "compile_worker.hpp"
#include "config.hpp"
#include "hover.hpp"
#include "jsonrpc.hpp"
#include "lsp_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <istream>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include "section/chars.hpp"
#include "section/expand.hpp"
#include "section/parse.hpp"
#include "section/render.hpp"
#include "section/version.hpp"

namespace lint_server {
namespace {

/// Whether the client's capabilities announce the feature at `path` (nested field names): its
/// last field is `true`, or (with `object_counts`, for features announced by an object) an object.
bool announces(json const* capabilities, std::initializer_list<std::string_view> path,
               bool object_counts = false) {
  json const* at = capabilities;
  for (auto const name : path) {
    if (at == nullptr || !at->is_object()) return false;
    auto const it = at->find(name);
    at = it == at->end() ? nullptr : &*it;
  }
  if (at == nullptr) return false;
  return at->is_boolean() ? at->get<bool>() : object_counts && at->is_object();
}

/// What the client said it supports, where the server's answers depend on it.
struct ClientSupport {
  bool related_information = false;  ///< notes as `relatedInformation`, not folded in the text
  bool pull_diagnostics = false;     ///< it asks (`textDocument/diagnostic`): nothing is pushed
  bool diagnostic_refresh = false;   ///< `workspace/diagnostic/refresh` makes it ask again
  bool watch_registration = false;   ///< it watches files the server registers

  explicit ClientSupport(json const* c = nullptr)
      : related_information(
            announces(c, {"textDocument", "publishDiagnostics", "relatedInformation"})),
        pull_diagnostics(announces(c, {"textDocument", "diagnostic"}, true)),
        diagnostic_refresh(announces(c, {"workspace", "diagnostics", "refreshSupport"})),
        watch_registration(
            announces(c, {"workspace", "didChangeWatchedFiles", "dynamicRegistration"})) {}
};

/// The settings files whose changes change what the linter finds (config.hpp's names).
json settings_watchers() {
  json watchers = json::array();
  for (char const* name : lint_config::settings_file_names)
    watchers.push_back({{"globPattern", std::string("**/") + name}});
  return watchers;
}

constexpr char fix_all_kind[] = "source.fixAll.section-lint";

/// The code action kinds a request asks for (`context.only`); none: every kind.
std::optional<std::vector<std::string>> requested_kinds(Fields const& params) {
  json const* context = params.find("context");
  if (context == nullptr) return std::nullopt;
  Fields const fields(*context, "params.context");
  if (!fields.has("only")) return std::nullopt;
  json const& only = fields.array("only");
  std::vector<std::string> kinds;
  for (std::size_t i = 0; i < only.size(); ++i) {
    if (!only[i].is_string())
      throw MessageError(invalid_params, "params.context.only[" + std::to_string(i) +
                                             "]: expected a string, got " +
                                             std::string(only[i].type_name()));
    kinds.push_back(only[i].get<std::string>());
  }
  return kinds;
}

/// Whether actions of `kind` are asked for: LSP's kinds are hierarchical, `source.fixAll` asks
/// for `source.fixAll.section-lint` too.
bool asked_for(std::optional<std::vector<std::string>> const& kinds, std::string_view kind) {
  if (!kinds) return true;
  return std::any_of(kinds->begin(), kinds->end(), [&](std::string const& want) {
    return kind == want || (kind.starts_with(want) && kind[want.size()] == '.');
  });
}

/// Whether `line` is a `#section` line (which takes no comment: the tag is the rest of it).
bool is_section_line(std::string_view line) {
  auto const at = line.find_first_not_of(" \t");
  if (at == std::string_view::npos || line[at] != '#') return false;
  line.remove_prefix(at + 1);
  auto const word = line.find_first_not_of(" \t");
  return word != std::string_view::npos && line.substr(word).starts_with("section");
}

/// The edit that hides findings of `code` starting on the line of `offset` with the project's
/// suppression comment: the code added to the line's `section-lint: ignore[...]` list if it has
/// one, else `// section-lint: ignore[CODE]` at its end (as `/* ... */` before a backslash that
/// continues the line, which must stay last). None on a `#section` line.
std::optional<std::pair<std::size_t, std::string>> ignore_edit(std::string_view text,
                                                               std::size_t offset,
                                                               std::string const& code) {
  offset = std::min(offset, text.size());
  std::size_t const begin = offset == 0 ? 0 : text.rfind('\n', offset - 1) + 1;  // npos + 1 == 0
  std::size_t const end = std::min(text.find('\n', offset), text.size());
  std::string_view const line = text.substr(begin, end - begin);
  if (is_section_line(line)) return std::nullopt;
  if (auto const at = line.find("section-lint: ignore["); at != std::string_view::npos)
    if (auto const close = line.find(']', at); close != std::string_view::npos)
      return std::pair{begin + close, ", " + code};
  std::string const directive = "section-lint: ignore[" + code + "]";
  if (line.ends_with('\\')) return std::pair{end - 1, "/* " + directive + " */ "};
  return std::pair{end, "  // " + directive};
}

/// An open document and what the linter last found in it.
struct Document {
  std::string uri;
  std::string text;  ///< as the client sent it
  std::optional<Findings> findings;
  std::string error;                 ///< settings that could not be read
  std::optional<Compiled> compiled;  ///< the last compile check's, on open and save
};

/// The document's text as the linter read it (newlines normalised), which its findings'
/// offsets refer to.
std::string_view linted_text(Document const& doc) {
  if (doc.findings && doc.findings->sm.size() > 0) return doc.findings->sm.file(0).text();
  return doc.text;
}

class Server {
 public:
  Server(Linter const& lint, CompileChecker const& check, std::ostream& out)
      : lint_(lint), out_(out) {
    if (check)
      worker_.emplace(
          check, [this](std::string const& uri, Compiled c) { compiled(uri, c); },
          std::chrono::milliseconds(300));
  }

  /// Held while a message is handled, and while a compile check's result is published.
  std::unique_lock<std::mutex> hold() { return std::unique_lock<std::mutex>(mutex_); }

  /// Handles one message (any JSON value); false once `exit` has come.
  bool handle(json const& message) {
    if (!message.is_object()) {
      reply_error(nullptr, invalid_request,
                  "a message must be a JSON object, got " + std::string(message.type_name()));
      return true;
    }
    json id = nullptr;
    auto const id_field = message.find("id");
    bool const is_request = id_field != message.end();
    if (is_request) {
      if (!id_field->is_string() && !id_field->is_number_integer() && !id_field->is_null()) {
        reply_error(
            nullptr, invalid_request,
            "id: expected an integer or a string, got " + std::string(id_field->type_name()));
        return true;
      }
      id = *id_field;
    }
    auto const method_field = message.find("method");
    if (method_field == message.end()) {
      // A response to a request of ours (the server sends none): nothing to do.
      if (is_request && (message.contains("result") || message.contains("error"))) return true;
      reply_error(id, invalid_request, "method: missing");
      return true;
    }
    if (!method_field->is_string()) {
      reply_error(id, invalid_request,
                  "method: expected a string, got " + std::string(method_field->type_name()));
      return true;
    }
    std::string const method = method_field->get<std::string>();
    if (method == "exit") return false;
    try {
      dispatch(method, id, is_request, message);
    } catch (MessageError const& e) {
      fail(method, id, is_request, e.code(), e.what());
    } catch (std::exception const& e) {  // a bug of ours: answered, and the server goes on
      fail(method, id, is_request, internal_error, e.what());
    }
    return true;
  }

  bool shut_down() const { return shut_down_; }

  /// Answers a message whose framing or JSON was refused before it could be read.
  void refuse(int code, std::string const& why) { reply_error(nullptr, code, why); }

 private:
  using Request = json (Server::*)(Fields const& params);
  using Notification = void (Server::*)(Fields const& params);

  // The methods served: a request is answered with what its function returns; a notification
  // is answered with nothing. Other notifications ($/cancelRequest, initialized, ...) need
  // nothing; other requests are answered with `method_not_found`.
  static std::map<std::string_view, Request> const& requests() {
    static std::map<std::string_view, Request> const table = {
        {"initialize", &Server::initialize},
        {"shutdown", &Server::shutdown},
        {"textDocument/codeAction", &Server::code_actions},
        {"textDocument/diagnostic", &Server::pull_diagnostics},
        {"textDocument/hover", &Server::hover},
    };
    return table;
  }
  static std::map<std::string_view, Notification> const& notifications() {
    static std::map<std::string_view, Notification> const table = {
        {"textDocument/didOpen", &Server::did_open},
        {"textDocument/didChange", &Server::did_change},
        {"textDocument/didSave", &Server::did_save},
        {"textDocument/didClose", &Server::did_close},
        {"initialized", &Server::register_watchers},
        {"workspace/didChangeWatchedFiles", &Server::settings_changed},
    };
    return table;
  }

  void dispatch(std::string const& method, json const& id, bool is_request, json const& message) {
    if (!initialized_ && is_request && method != "initialize")
      throw MessageError(server_not_initialized, "initialize first");
    if (shut_down_ && is_request) throw MessageError(invalid_request, "the server is shut down");
    static json const no_params = json::object();
    auto const params_field = message.find("params");
    // `"params": null` is what some clients send for none (shutdown, exit).
    bool const none = params_field == message.end() || params_field->is_null();
    json const& params = none ? no_params : *params_field;
    if (is_request) {
      auto const it = requests().find(method);
      if (it == requests().end())
        throw MessageError(method_not_found, "unknown method " + excerpt(method));
      reply(id, (this->*it->second)(Fields(params, "params")));
    } else if (auto const it = notifications().find(method); it != notifications().end()) {
      (this->*it->second)(Fields(params, "params"));
    }
  }

  /// A request's error answer; for a notification, a message the client shows or logs.
  void fail(std::string const& method, json const& id, bool is_request, int code,
            std::string const& why) {
    if (is_request) return reply_error(id, code, why);
    write_message(out_, {{"jsonrpc", "2.0"},
                         {"method", "window/logMessage"},
                         {"params",
                          {{"type", 1},  // an error
                           {"message", "section-lint: " + excerpt(method) + ": " + why}}}});
  }

  // --- the methods ----------------------------------------------------------------------------

  json initialize(Fields const& params) {
    initialized_ = true;
    client_ = ClientSupport(params.find("capabilities"));
    if (params.has("initializationOptions") && !params.find("initializationOptions")->is_null())
      read_options(params.object("initializationOptions"));
    return {{"capabilities",
             {{"positionEncoding", "utf-16"},
              {"textDocumentSync", {{"openClose", true}, {"change", 1}, {"save", true}}},
              {"codeActionProvider",
               {{"codeActionKinds", {"quickfix", "source.fixAll", fix_all_kind}}}},
              {"diagnosticProvider",
               {{"identifier", "section-lint"},
                {"interFileDependencies", false},
                {"workspaceDiagnostics", false}}},
              {"hoverProvider", true}}},
            {"serverInfo", {{"name", "section-lint"}, {"version", section::version}}}};
  }

  json shutdown(Fields const&) {
    shut_down_ = true;
    return nullptr;
  }

  void did_open(Fields const& params) {
    Fields const doc = params.object("textDocument");
    std::string const uri = doc.string("uri");
    open(uri, doc.string("text"));
    compile(documents_[uri]);
  }

  void did_change(Fields const& params) {
    std::string uri = params.object("textDocument").string("uri");
    // Full sync (the capability the server announces): each change is the whole text; the last
    // one wins.
    auto const& changes = params.array("contentChanges");
    if (changes.empty()) return;
    Fields const last = params.element("contentChanges", changes.size() - 1);
    if (last.has("range"))
      throw MessageError(invalid_params,
                         "params.contentChanges[" + std::to_string(changes.size() - 1) +
                             "].range: the server takes whole documents (its textDocumentSync "
                             "is full): send the text alone");
    open(std::move(uri), last.string("text"));
  }

  void did_save(Fields const& params) {
    std::string const uri = params.object("textDocument").string("uri");
    if (auto it = documents_.find(uri); it != documents_.end()) {
      open(uri, it->second.text);
      compile(it->second);
    }
  }

  void did_close(Fields const& params) {
    std::string const uri = params.object("textDocument").string("uri");
    documents_.erase(uri);
    if (worker_) worker_->forget(uri);
    if (!client_.pull_diagnostics) publish(uri, json::array());
  }

  /// ruff's way: the client watches the settings files for the server, when it can.
  void register_watchers(Fields const&) {
    if (!client_.watch_registration) return;
    json registration = {{"id", "section-lint-settings"},
                         {"method", "workspace/didChangeWatchedFiles"},
                         {"registerOptions", {{"watchers", settings_watchers()}}}};
    send_request("client/registerCapability", {{"registrations", {registration}}});
  }

  /// A settings file changed: every open document is linted again (the linter reads settings
  /// anew each time) and its diagnostics pushed, or the client told to pull them again.
  void settings_changed(Fields const&) {
    for (auto& [uri, doc] : documents_) {
      open(uri, doc.text);
      compile(doc);
    }
    if (client_.pull_diagnostics && client_.diagnostic_refresh)
      send_request("workspace/diagnostic/refresh", nullptr);
  }

  /// The document's diagnostics as a full report (pull diagnostics); none for a document that
  /// is not open.
  json pull_diagnostics(Fields const& params) {
    std::string const uri = params.object("textDocument").string("uri");
    auto const it = documents_.find(uri);
    json items = it == documents_.end() ? json::array() : diagnostics_of(it->second);
    return {{"kind", "full"}, {"items", std::move(items)}};
  }

  /// The actions the request's kinds ask for: quick fixes and "ignore on this line" for the
  /// findings in the requested range, and one action applying every fix of the document.
  json code_actions(Fields const& params) {
    std::string const uri = params.object("textDocument").string("uri");
    Fields const range = params.object("range");
    Position const start = range.position("start"), end = range.position("end");
    auto const kinds = requested_kinds(params);
    json actions = json::array();
    auto it = documents_.find(uri);
    if (it == documents_.end() || !it->second.findings) return actions;
    Document const& doc = it->second;
    std::string_view const text = linted_text(doc);
    std::size_t const from = offset_of(text, start);
    std::size_t const to = offset_of(text, end);
    if (asked_for(kinds, "quickfix")) {
      quick_fixes(doc, from, to, actions);
      ignore_actions(doc, from, to, actions);
    }
    if (asked_for(kinds, fix_all_kind)) fix_all(doc, actions);
    return actions;
  }

  /// A quick fix for each finding with a fix-it whose range meets `from`..`to`.
  void quick_fixes(Document const& doc, std::size_t from, std::size_t to, json& actions) const {
    Findings const& f = *doc.findings;
    std::string_view const text = linted_text(doc);
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
                         {"edit", {{"changes", {{doc.uri, {edit}}}}}}});
    }
  }

  /// For each rule with a finding starting in `from`..`to`, once a line: the suppression comment
  /// that hides it (`// section-lint: ignore[CODE]`). Not for a malformed suppression (SL903):
  /// the comment it is on already holds a directive, which would hide the new one; nor on a
  /// `#section` line.
  void ignore_actions(Document const& doc, std::size_t from, std::size_t to, json& actions) const {
    Findings const& f = *doc.findings;
    std::string_view const text = linted_text(doc);
    std::set<std::pair<std::size_t, std::string>> offered;  // (line, code)
    for (auto const& d : f.diagnostics) {
      if (d.code.empty() || d.code == "SL903" || !in_document(f, d.range)) continue;
      if (d.range.end < from || d.range.begin > to) continue;
      auto const insert = ignore_edit(text, d.range.begin, d.code);
      if (!insert || !offered.emplace(position(text, d.range.begin)["line"], d.code).second)
        continue;
      json edit = {{"range", lsp_range(text, insert->first, insert->first)},
                   {"newText", insert->second}};
      actions.push_back({{"title", "Ignore " + d.code + " on this line"},
                         {"kind", "quickfix"},
                         {"diagnostics", {lsp_diagnostic(doc, d)}},
                         {"edit", {{"changes", {{doc.uri, {edit}}}}}}});
    }
  }

  /// One action applying what `section-lint --fix` applies to the document (ruff's
  /// `source.fixAll.ruff`); none when there is nothing to fix.
  void fix_all(Document const& doc, json& actions) const {
    std::string_view const text = linted_text(doc);
    json edits = json::array();
    for (auto const& fix : doc.findings->fix_all)
      edits.push_back({{"range", lsp_range(text, fix.range.begin, fix.range.end)},
                       {"newText", fix.replacement}});
    if (edits.empty()) return;
    actions.push_back({{"title", "section-lint: fix all auto-fixable problems"},
                       {"kind", fix_all_kind},
                       {"edit", {{"changes", {{doc.uri, std::move(edits)}}}}}});
  }

  json hover(Fields const& params);

  // --- answers ----------------------------------------------------------------------------------

  void reply(json const& id, json result) {
    write_message(out_, {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  }
  void reply_error(json const& id, int code, std::string const& text) {
    write_message(out_,
                  {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", text}}}});
  }
  /// A request of the server's; the client's answer is read and let go (`handle`).
  void send_request(std::string const& method, json params) {
    json message = {{"jsonrpc", "2.0"}, {"id", next_request_id_++}, {"method", method}};
    if (!params.is_null()) message["params"] = std::move(params);
    write_message(out_, message);
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
    if (!client_.pull_diagnostics) publish(uri, diagnostics_of(doc));
  }

  /// The client's settings: `python` (the interpreter whose headers the compile check uses) and
  /// `compileOnSave` (false: no compile check).
  void read_options(Fields const& options) {
    if (options.has("python")) python_ = options.string("python");
    if (json const* on = options.find("compileOnSave")) {
      if (!on->is_boolean())
        throw MessageError(invalid_params,
                           "params.initializationOptions.compileOnSave: expected true or false");
      compile_on_save_ = on->get<bool>();
    }
  }

  /// Asks the worker for the document's compile check, when its settings give a signature; else
  /// says once how to turn it on.
  void compile(Document const& doc) {
    if (!worker_ || !compile_on_save_) return;
    if (doc.findings && doc.findings->op.inputs && doc.findings->op.outputs) {
      if (python_.empty()) tell_untrusted_python(doc.findings->untrusted_python);
      return worker_->request(doc.uri, path_of(doc.uri), doc.text, python_);
    }
    if (told_how_to_compile_ || !doc.error.empty()) return;
    told_how_to_compile_ = true;
    write_message(out_, {{"jsonrpc", "2.0"},
                         {"method", "window/logMessage"},
                         {"params",
                          {{"type", 3},  // information
                           {"message", "section-lint: no compile errors for " + path_of(doc.uri) +
                                           ": its op's signature is not configured (give "
                                           "inputs and outputs in a `signatures` entry of "
                                           "section-lint.toml or [tool.section-lint])"}}}});
  }

  /// Says once that a settings file's `python` is not run, and where to set it instead.
  void tell_untrusted_python(std::string const& settings_file) {
    if (settings_file.empty() || told_untrusted_python_) return;
    told_untrusted_python_ = true;
    write_message(
        out_, {{"jsonrpc", "2.0"},
               {"method", "window/showMessage"},
               {"params",
                {{"type", 2},  // a warning
                 {"message", "section-lint: the `python` setting of " + settings_file +
                                 " is not used: the language server runs no program a folder "
                                 "names. Give the interpreter in your editor's settings "
                                 "(initializationOptions {\"python\": \"...\"}) or as "
                                 "`section-lint server --python PATH`; until then the compile "
                                 "check takes the headers of .libsection-editor/ (editor-setup) "
                                 "or of python3 on PATH"}}}});
  }

  /// A compile check's result (on the worker's thread): kept beside the linter's findings and
  /// pushed with them, or the client asked to pull again.
  void compiled(std::string const& uri, Compiled& result) {
    auto const held = hold();
    auto const it = documents_.find(uri);
    if (it == documents_.end()) return;
    it->second.compiled = std::move(result);
    if (!client_.pull_diagnostics) publish(uri, diagnostics_of(it->second));
    else if (client_.diagnostic_refresh) send_request("workspace/diagnostic/refresh", nullptr);
  }

  /// A compiler's diagnostic as LSP's, at its place in the text compiled (a place of one column
  /// at most covers the word there); notes folded into the message.
  static json compiler_diagnostic(Compiled const& c, section::Diagnostic const& d) {
    bool const inside = d.range.valid() && d.range.file == 0 && c.sm.size() > 0;
    std::string_view const text = inside ? std::string_view(c.sm.file(0).text()) : "";
    std::size_t const begin = inside ? d.range.begin : 0;
    std::size_t end = inside ? d.range.end : 0;
    std::size_t word = begin;
    while (end <= begin + 1 && word < text.size() && section::is_identifier_char(text[word]))
      ++word;
    end = std::max(end, word);
    std::string message = d.message;
    for (auto const& note : d.notes) message += "\nnote: " + note.message;
    return {{"range", lsp_range(text, begin, end)},
            {"severity", d.is_error() ? 1 : 2},
            {"code", d.code},
            {"codeDescription", {{"href", section::documentation_url(d.code)}}},
            {"source", "section-lint (compiler)"},
            {"message", message}};
  }

  /// Whether a range is in the document (its findings in other files, none for one document,
  /// are left out).
  static bool in_document(Findings const& f, section::SourceRange const& r) {
    return r.valid() && f.sm.size() > 0 && r.file == 0;
  }

  /// A finding as an LSP diagnostic, linking its rule's documentation. Its notes (and what its
  /// fix does) are `relatedInformation` at their own location (the finding's, for a note without
  /// one); for a client that does not announce those, only the notes in the document are, the
  /// rest is folded into the message.
  json lsp_diagnostic(Document const& doc, section::Diagnostic const& d) const {
    Findings const& f = *doc.findings;
    std::string_view const text = linted_text(doc);
    // Plain variables, not a structured binding: C++17 lets no lambda capture one (clang).
    bool const inside = in_document(f, d.range);
    std::size_t const begin = inside ? d.range.begin : 0;
    std::size_t const end = inside ? d.range.end : 0;
    int const severity = d.severity == section::Severity::error     ? 1
                         : d.severity == section::Severity::warning ? 2
                                                                    : 3;
    std::string message = d.message;
    json related = json::array();
    auto const relate = [&](section::SourceRange const& r, std::string const& what) {
      json const location = related_location(doc, r, lsp_range(text, begin, end));
      if (!location.is_null()) related.push_back({{"location", location}, {"message", what}});
      else message += "\n" + what;
    };
    for (auto const& note : d.notes) relate(note.range, "note: " + note.message);
    if (d.fix && client_.related_information) relate(d.fix->range, "fix: " + d.fix->message);
    else if (d.fix) message += "\nfix: " + d.fix->message;
    json out = {{"range", lsp_range(text, begin, end)},
                {"severity", severity},
                {"code", d.code},
                {"source", "section-lint"},
                {"message", message}};
    if (!d.code.empty()) out["codeDescription"] = {{"href", section::documentation_url(d.code)}};
    if (!related.empty()) out["relatedInformation"] = related;
    return out;
  }

  /// Where a note about a finding of `doc` is shown in `relatedInformation`: its range in the
  /// document (or another file the linter read), else the finding's own range; null when the
  /// client does not take `relatedInformation` and the note is not in the document.
  json related_location(Document const& doc, section::SourceRange const& r,
                        json const& finding) const {
    Findings const& f = *doc.findings;
    if (in_document(f, r))
      return {{"uri", doc.uri}, {"range", lsp_range(linted_text(doc), r.begin, r.end)}};
    if (!client_.related_information) return nullptr;
    if (r.valid() && r.file < f.sm.size()) {
      auto const& file = f.sm.file(r.file);
      return {{"uri", uri_of(std::string(file.path()))},
              {"range", lsp_range(file.text(), r.begin, r.end)}};
    }
    return {{"uri", doc.uri}, {"range", finding}};
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
    if (doc.compiled)
      for (auto const& d : doc.compiled->diagnostics)
        out.push_back(compiler_diagnostic(*doc.compiled, d));
    return out;
  }

  Linter const& lint_;
  std::ostream& out_;
  std::map<std::string, Document> documents_;
  ClientSupport client_;
  std::int64_t next_request_id_ = 1;
  bool initialized_ = false;
  bool shut_down_ = false;
  std::string python_;           ///< the client's `python` setting
  bool compile_on_save_ = true;  ///< the client's `compileOnSave`
  bool told_how_to_compile_ = false;
  bool told_untrusted_python_ = false;
  std::mutex mutex_;
  std::optional<CompileWorker> worker_;  ///< last: ends first, while the rest is there
};

json Server::hover(Fields const& params) {
  std::string const uri = params.object("textDocument").string("uri");
  Position const position = params.position("position");
  auto it = documents_.find(uri);
  if (it == documents_.end() || !it->second.findings) return nullptr;
  std::string_view const text = linted_text(it->second);
  return macro_hover(*it->second.findings, text, offset_of(text, position));
}

}  // namespace

int serve(Linter const& lint, CompileChecker const& check, std::istream& in, std::ostream& out) {
  Server server(lint, check, out);
  MessageReader reader(in);
  while (auto frame = reader.next()) {
    auto const held = server.hold();  // a compile check's result goes out between messages
    if (!frame->problem.empty()) {
      server.refuse(parse_error, "bad message header: " + frame->problem + " (skipped)");
      continue;
    }
    if (nested_deeper_than(frame->body, max_nesting)) {
      server.refuse(invalid_request,
                    "a message nested deeper than " + std::to_string(max_nesting) + " levels");
      continue;
    }
    json message;
    try {
      message = json::parse(frame->body);
    } catch (json::exception const& e) {
      server.refuse(parse_error, std::string("parse error: ") + e.what());
      continue;
    }
    if (!server.handle(message)) return server.shut_down() ? 0 : 1;
  }
  return 1;
}

}  // namespace lint_server
