// Reading an op's code for the GIL (gil_uses.hpp): every text tokenized (each macro's body a
// stream of its own), each token given its context (file scope, a struct's members, a
// function's body, an initializer), then two passes: what the texts define (functions, types,
// macros), and every call and use of the API judged against it.
#include "parse/gil_uses.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "parse/c_tokens.hpp"
#include "parse/declarations.hpp"
#include "parse/gil_names.hpp"

namespace section::c_scan {
namespace {

enum class Context : std::uint8_t { file, members, function, initializer };

constexpr std::size_t none = static_cast<std::size_t>(-1);

/// One token stream: a text's code, or the body of one of its macros.
struct Unit {
  std::size_t text = 0;
  std::string_view source;  // the whole text: token offsets are into it
  std::vector<Token> tokens;
  std::vector<std::uint32_t> match;
  std::vector<Context> context;  // per token
  std::string_view macro;        // a macro's body: the macro's name
  std::vector<std::string_view> params;
};

bool one_of(std::string_view s, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), s) != words.end();
}

// Words after which a name and `(` are a call, not a declaration.
bool statement_word(std::string_view s) {
  return one_of(s, {"return", "else", "do", "case", "throw", "new", "delete", "co_return",
                    "co_yield", "co_await", "not", "and", "or", "goto"});
}

// Words followed by `(` that call nothing.
bool not_a_callee(std::string_view s) {
  return one_of(s, {"if", "while", "for", "switch", "catch", "return", "defined", "_Generic",
                    "operator", "explicit", "__extension__", "APPLY_SPECIFIC"});
}

// Words whose parenthesised operand is never run (or is no expression at all).
bool unevaluated_word(std::string_view s) {
  return one_of(s, {"sizeof",         "alignof",       "_Alignof",    "decltype",   "typeof",
                    "__typeof__",     "__typeof",      "typeid",      "noexcept",   "static_assert",
                    "_Static_assert", "__attribute__", "__attribute", "__declspec", "alignas",
                    "_Alignas",       "asm",           "__asm__",     "__asm",      "volatile",
                    "__volatile__",   "requires"});
}

bool builtin_type_word(std::string_view s) {
  return one_of(
      s, {"int",    "char",     "short",    "long",    "float",    "double",   "bool",   "void",
          "signed", "unsigned", "_Bool",    "auto",    "const",    "struct",   "union",  "enum",
          "class",  "typename", "_Complex", "wchar_t", "char16_t", "char32_t", "char8_t"});
}

class GilScanner {
 public:
  GilScanner(std::span<GilText const> texts, std::span<std::string const> headers);
  GilUses run() &&;

 private:
  // ---- reading a unit
  std::string_view spell(Unit const& u, std::size_t i) const {
    return i < u.tokens.size()
               ? u.source.substr(u.tokens[i].begin, u.tokens[i].end - u.tokens[i].begin)
               : std::string_view{};
  }
  bool is(Unit const& u, std::size_t i, std::string_view s) const { return spell(u, i) == s; }
  bool ident(Unit const& u, std::size_t i) const {
    return i < u.tokens.size() && u.tokens[i].kind == TokenKind::identifier;
  }
  std::size_t closing(Unit const& u, std::size_t open) const {
    return std::min<std::size_t>(u.match[open], u.tokens.size() - 1);
  }
  std::string compact(Unit const& u, std::size_t first, std::size_t last) const;
  void add_text(std::size_t k, GilText const& t);
  void set_contexts(Unit& u, Context start) const;
  Context brace_kind(Unit const& u, std::size_t open, Context outer) const;
  Context head_kind(Unit const& u, std::size_t start, std::size_t open) const;
  bool ends_function_head(Unit const& u, std::size_t last) const;
  std::size_t template_open(Unit const& u, std::size_t close) const;
  // ---- what the texts define
  void collect(Unit const& u);
  void collect_head(Unit const& u, std::size_t i);
  std::size_t after_head(Unit const& u, std::size_t k) const;
  void collect_typedef(Unit const& u, std::size_t i);
  void collect_template(Unit const& u, std::size_t open);
  bool type_name(std::string_view s) const;
  bool known_callee(Unit const& u, std::string_view name) const;
  std::string_view resolved(std::string_view name) const;
  // ---- judging
  void scan(Unit const& u);
  void call_at(Unit const& u, std::size_t i);
  bool declares(Unit const& u, std::size_t i) const;
  void plain_call(Unit const& u, std::size_t i, std::size_t begin, std::size_t paren);
  void member_call(Unit const& u, std::size_t i);
  void qualified_call(Unit const& u, std::size_t i, std::size_t paren);
  void named_without_call(Unit const& u, std::size_t i);
  void paren_after(Unit const& u, std::size_t i);
  void paren_after_template(Unit const& u, std::size_t i);
  void paren_after_group(Unit const& u, std::size_t i);
  bool cast_group(Unit const& u, std::size_t open) const;
  void keep(Unit const& u, std::size_t i, std::string why);
  void keep_at(std::size_t text, std::size_t at, std::string why);
  void check_macro_uses();
  void check_headers();
  void set_macro_contexts();

  std::vector<Unit> units_;
  std::vector<std::pair<std::size_t, std::size_t>> include_at_;  // (text, offset)
  std::vector<std::string> includes_;
  std::span<std::string const> headers_;
  std::vector<bool> library_;  // per text: libsection's own, whose calls keep nothing
  std::set<std::string, std::less<>> functions_, declared_, types_, macros_, object_macros_;
  // An object-like macro's body when it is one name (`DTYPE_INPUT_0` is `npy_float64`), else
  // empty: a call of the macro is a call of that name.
  std::map<std::string, std::string, std::less<>> aliases_;
  std::set<std::string_view> wrapped_macros_;
  std::size_t wrapped_until_ = 0;  // in the unit being scanned: calls before it run with the GIL
  GilUses out_;
};

GilScanner::GilScanner(std::span<GilText const> texts, std::span<std::string const> headers)
    : headers_(headers) {
  for (std::size_t k = 0; k < texts.size(); ++k) {
    add_text(k, texts[k]);
    library_.push_back(texts[k].library);
  }
}

std::string GilScanner::compact(Unit const& u, std::size_t first, std::size_t last) const {
  std::string out;
  for (std::size_t k = first; k <= last && k < u.tokens.size(); ++k) out += spell(u, k);
  return out;
}

// The text's code, then one unit per macro body (a function-like macro's parameters apart).
void GilScanner::add_text(std::size_t k, GilText const& t) {
  TokenizedBody body = tokenize(t.text, 0, t.text.size());
  Unit code{k, t.text, std::move(body.tokens), {}, {}, {}, {}};
  Context const start = t.scope == GilText::Scope::file      ? Context::file
                        : t.scope == GilText::Scope::members ? Context::members
                                                             : Context::function;
  set_contexts(code, start);
  units_.push_back(std::move(code));
  for (auto const& d : body.directives) {
    if (d.name == "include") {
      std::string_view rest = t.text.substr(d.begin, d.end - d.begin);
      auto const at = rest.find("include") + 7;
      auto const first = rest.find_first_not_of(" \t", at);
      auto const last = rest.find_last_not_of(" \t\r");
      if (first != std::string_view::npos && last >= first)
        includes_.emplace_back(rest.substr(first, last - first + 1));
      else includes_.emplace_back();
      include_at_.emplace_back(k, d.begin);
    }
    if (d.name != "define" || !d.macro) continue;
    std::size_t begin = d.macro->end;
    Unit m{k, t.text, {}, {}, {}, t.text.substr(d.macro->begin, d.macro->end - d.macro->begin), {}};
    bool const function_like = begin < d.end && t.text[begin] == '(';
    if (function_like) {
      auto const close = t.text.find(')', begin);
      if (close == std::string_view::npos || close >= d.end) continue;
      for (auto const& p : tokenize(t.text, begin + 1, close).tokens)
        if (p.kind == TokenKind::identifier)
          m.params.push_back(t.text.substr(p.begin, p.end - p.begin));
      begin = close + 1;
    }
    m.tokens = tokenize(t.text, begin, d.end).tokens;
    macros_.emplace(m.macro);  // its contexts are its uses' (`run`)
    if (!function_like) {
      object_macros_.emplace(m.macro);
      bool const one_name = m.tokens.size() == 1 && m.tokens[0].kind == TokenKind::identifier;
      aliases_[std::string(m.macro)] = one_name ? std::string(spell(m, 0)) : std::string();
    }
    units_.push_back(std::move(m));
  }
}

void GilScanner::set_contexts(Unit& u, Context start) const {
  u.match = match_brackets(u.source, u.tokens);
  u.context.resize(u.tokens.size());
  std::vector<Context> stack{start};
  for (std::size_t i = 0; i < u.tokens.size(); ++i) {
    u.context[i] = stack.back();
    if (is(u, i, "{")) {
      Context const outer = stack.back();
      stack.push_back(outer == Context::function ? outer : brace_kind(u, i, outer));
    } else if (is(u, i, "}") && stack.size() > 1) {
      stack.pop_back();
    }
  }
}

/// Whether the tokens ending at `last` end a function's (or a lambda's) head: `)`, possibly
/// followed by qualifiers (`const`, `noexcept`, `override`, ...).
bool GilScanner::ends_function_head(Unit const& u, std::size_t last) const {
  std::size_t k = last;
  while (k != none && k < u.tokens.size()) {
    auto const s = spell(u, k);
    if (s == ")") {
      std::size_t const open = u.match[k];
      if (open >= u.tokens.size()) return false;
      if (open > 0 && one_of(spell(u, open - 1), {"noexcept", "throw"})) {
        k = open >= 2 ? open - 2 : none;
        continue;
      }
      return !(open > 0 && one_of(spell(u, open - 1), {"__attribute__", "alignas", "__declspec"}));
    }
    if (s == "]") return true;  // a lambda without parameters: `[&] {`
    if (!one_of(s, {"const", "noexcept", "override", "final", "mutable", "volatile", "&"}))
      return false;
    k = k == 0 ? none : k - 1;
  }
  return false;
}

/// What the block opening at `open` is, in a context that is not a function's body.
Context GilScanner::brace_kind(Unit const& u, std::size_t open, Context outer) const {
  if (open == 0) return Context::initializer;
  if (ends_function_head(u, open - 1)) return Context::function;
  if (is(u, open - 1, "}") && outer == Context::members) return Context::function;  // `: a{1} {`
  std::size_t start = open;  // the head: back to the last `;`, `{` or `}`
  while (start > 0) {
    auto const s = spell(u, start - 1);
    if (s == ";" || s == "{" || s == "}") break;
    --start;
    if ((s == ")" || s == "]") && u.match[start] < start) start = u.match[start];
  }
  return head_kind(u, start, open);
}

/// What the block after the head `[start, open)` is: a namespace's (file scope), a type's
/// members, a function's body (a trailing return type), or an initializer.
Context GilScanner::head_kind(Unit const& u, std::size_t start, std::size_t open) const {
  bool trailing_return = false, assigns = false, tag = false;
  for (std::size_t k = start; k < open; ++k) {
    auto const s = spell(u, k);
    bool const extern_c =
        s == "extern" && k + 1 < open && u.tokens[k + 1].kind == TokenKind::literal;
    if (s == "namespace" || extern_c) return Context::file;
    if (s == "enum") return Context::initializer;
    trailing_return |= s == "->" && k > 0 && is(u, k - 1, ")");
    assigns |= s == "=";
    tag |= one_of(s, {"struct", "class", "union"});
  }
  if (trailing_return) return Context::function;
  return tag && !assigns ? Context::members : Context::initializer;
}

/// The `<` matching the `>` at `close`, when the two enclose template arguments; `none` when
/// the `>` is a comparison.
std::size_t GilScanner::template_open(Unit const& u, std::size_t close) const {
  int depth = 0;
  for (std::size_t j = close + 1, steps = 0; j-- > 0 && steps < 256; ++steps) {
    auto const s = spell(u, j);
    if (s == ">") ++depth;
    else if (s == "<" && --depth == 0) return j;
    else if ((s == ")" || s == "]") && u.match[j] < j) j = u.match[j];
    else if (one_of(s, {";", "{", "}", "(", "[", "=", "?", ":", "return", "&", "|"})) return none;
  }
  return none;
}

// ---- what the texts define ------------------------------------------------------------------

void GilScanner::collect(Unit const& u) {
  for (std::size_t i = 0; i < u.tokens.size(); ++i) {
    if (!ident(u, i)) continue;
    auto const s = spell(u, i);
    if (one_of(s, {"struct", "class", "union", "enum", "namespace"})) {
      std::size_t const n = one_of(spell(u, i + 1), {"class", "struct"}) ? i + 2 : i + 1;
      if (ident(u, n)) types_.emplace(spell(u, n));
    } else if (s == "typedef") {
      collect_typedef(u, i);
    } else if (s == "using" && ident(u, i + 1) && is(u, i + 2, "=")) {
      types_.emplace(spell(u, i + 1));
    } else if (s == "template" && is(u, i + 1, "<")) {
      collect_template(u, i + 1);
    } else if (is(u, i + 1, "(") && u.context[i] != Context::function) {
      collect_head(u, i);
    } else if (is(u, i + 1, "=") && is(u, i + 2, "[")) {
      functions_.emplace(s);  // a lambda, by its variable
    }
  }
}

/// `name(...)` at file or member scope: a function's definition (its body follows) or its
/// declaration (`;` follows) when a type precedes it.
void GilScanner::collect_head(Unit const& u, std::size_t i) {
  auto const word = spell(u, i);
  if (i == 0 || (word != "APPLY_SPECIFIC" &&
                 (not_a_callee(word) || unevaluated_word(word) || builtin_type_word(word))))
    return;
  auto const before = spell(u, i - 1);
  bool const typed =
      ident(u, i - 1) ? !statement_word(before) : one_of(before, {"*", "&", ">", "::", "~"});
  if (!typed) return;
  std::string name(word);
  std::size_t params = i + 1;
  if (name == "APPLY_SPECIFIC") {
    std::size_t const close = closing(u, i + 1);
    if (!is(u, close + 1, "(")) return;
    name = compact(u, i, close);
    params = close + 1;
  }
  std::size_t const k = after_head(u, closing(u, params) + 1);
  if (is(u, k, "{")) functions_.insert(name);
  else if (is(u, k, ";") || is(u, k, "=")) declared_.insert(name);
}

/// The token after a function head's qualifiers (`const`, `noexcept(...)`, ...) and trailing
/// return type, from `k`, the one after its parameter list.
std::size_t GilScanner::after_head(Unit const& u, std::size_t k) const {
  while (k < u.tokens.size() &&
         one_of(spell(u, k), {"const", "noexcept", "override", "final", "volatile", "&"}))
    k = is(u, k + 1, "(") ? closing(u, k + 1) + 1 : k + 1;
  if (is(u, k, "->"))  // a trailing return type: a few names (bounded: hostile text is linear)
    for (std::size_t n = 0; n < 64 && k < u.tokens.size() && !is(u, k, "{") && !is(u, k, ";"); ++n)
      ++k;
  return k;
}

void GilScanner::collect_typedef(Unit const& u, std::size_t i) {
  std::string_view name;
  std::size_t const last = std::min(u.tokens.size(), i + 256);  // hostile text stays linear
  for (std::size_t k = i + 1; k < last && !is(u, k, ";"); ++k) {
    if (is(u, k, "(") && is(u, k + 1, "*")) {  // `typedef int (*name)(int);`
      for (std::size_t j = k + 1; j < closing(u, k); ++j)
        if (ident(u, j)) name = spell(u, j);
      break;
    }
    if (is(u, k, "{") || is(u, k, "(") || is(u, k, "[")) k = closing(u, k);
    else if (ident(u, k)) name = spell(u, k);
  }
  if (!name.empty()) types_.emplace(name);
}

void GilScanner::collect_template(Unit const& u, std::size_t open) {
  int depth = 0;
  std::size_t const last = std::min(u.tokens.size(), open + 256);  // hostile text stays linear
  for (std::size_t k = open; k < last; ++k) {
    auto const s = spell(u, k);
    if (s == "{" || s == ";") return;
    if (s == "<") ++depth;
    else if (s == ">" && --depth == 0) return;
    else if (one_of(s, {"class", "typename"}) && ident(u, k + 1)) types_.emplace(spell(u, k + 1));
  }
}

bool GilScanner::type_name(std::string_view s) const {
  return builtin_type_word(s) || types_.count(s) || object_macros_.count(s) || is_library_type(s) ||
         is_api_value(s) || python_name_use(s) == NameUse::gil_free;
}

/// A name whose call the linker can see through: defined by the texts, a macro of theirs whose
/// body is read apart (not a parameter of the macro being read), a type (a cast or a
/// constructor), or the standard library's.
bool GilScanner::known_callee(Unit const& u, std::string_view name) const {
  if (std::find(u.params.begin(), u.params.end(), name) != u.params.end()) return false;
  if (object_macros_.count(name)) return false;  // called as what it expands to (`alias`)
  if (functions_.count(name) || macros_.count(name) || type_name(name)) return true;
  return !declared_.count(name) && is_library_function(name);
}

/// What a call of `name` calls once macros that stand for one name are expanded; empty when a
/// macro stands for more (or for itself).
std::string_view GilScanner::resolved(std::string_view name) const {
  for (int depth = 0; depth < 8; ++depth) {
    auto const alias = aliases_.find(name);
    if (alias == aliases_.end()) return name;
    if (alias->second.empty()) return {};
    name = alias->second;
  }
  return {};
}

// ---- judging --------------------------------------------------------------------------------

void GilScanner::keep(Unit const& u, std::size_t i, std::string why) {
  if (library_[u.text]) return;  // its unknown calls are its own (an X-macro's parameter)
  keep_at(u.text, i < u.tokens.size() ? u.tokens[i].begin : u.source.size(), std::move(why));
}

// The first reason in the order of the texts (a header of the module's, `no_text`, last).
void GilScanner::keep_at(std::size_t text, std::size_t at, std::string why) {
  auto& first = out_.keep;
  if (!first || text < first->text || (text == first->text && at < first->at))
    first = GilKeep{text, at, std::move(why)};
}

void GilScanner::check_headers() {
  auto const why = [](std::string const& header) {
    return "includes `" + header + "`, whose code the linker cannot see";
  };
  for (std::size_t k = 0; k < includes_.size(); ++k)
    if (!is_library_header(includes_[k]))
      keep_at(include_at_[k].first, include_at_[k].second, why(includes_[k]));
  for (auto const& h : headers_)
    if (!h.empty() && !is_library_header(h)) keep_at(GilKeep::no_text, 0, why(h));
}

void GilScanner::scan(Unit const& u) {
  wrapped_until_ = 0;
  for (std::size_t i = 0; i < u.tokens.size(); ++i) {
    auto const s = spell(u, i);
    if (ident(u, i)) {
      if (unevaluated_word(s) && is(u, i + 1, "(")) {
        i = closing(u, i + 1);
        continue;
      }
      if (python_name_use(s) == NameUse::manages_gil) {
        keep(u, i, "takes or releases the GIL itself (`" + std::string(s) + "`)");
        continue;
      }
      if (is(u, i + 1, "(")) call_at(u, i);
      else if (!is(u, i + 1, "<")) named_without_call(u, i);
    } else if (s == "(" && i > 0) {
      paren_after(u, i);
    }
  }
}

void GilScanner::call_at(Unit const& u, std::size_t i) {
  if (u.tokens[i].begin < wrapped_until_) return;  // runs with the GIL, inside another call
  auto const name = spell(u, i);
  if (not_a_callee(name) || statement_word(name) || builtin_type_word(name)) return;
  auto const before = i > 0 ? spell(u, i - 1) : std::string_view{};
  if (before == "operator") return;  // `operator op(` in a macro's body
  if (before == "." || before == "->") return member_call(u, i);
  if (before == "::") return qualified_call(u, i, i + 1);
  if (declares(u, i)) return;
  plain_call(u, i, u.tokens[i].begin, i + 1);
}

/// Whether `name(` at `i` declares rather than calls: a function's head at file or member
/// scope, or `T x(args)` with `T` a type (a declaration with a constructor's arguments).
bool GilScanner::declares(Unit const& u, std::size_t i) const {
  if (i == 0) return false;
  auto const before = spell(u, i - 1);
  if (u.context[i] == Context::members && one_of(before, {":", ","}))
    return true;  // a constructor's initializer of a member or a base: `: v(a), d() {`
  if (u.context[i] == Context::file || u.context[i] == Context::members)
    return ident(u, i - 1) ? !statement_word(before) : one_of(before, {"*", "&", ">", "~"});
  if (ident(u, i - 1)) return !statement_word(before) && type_name(before);
  if (before != ">") return false;
  std::size_t const open = template_open(u, i - 1);
  return open != none && open > 0 && ident(u, open - 1) &&
         (type_name(spell(u, open - 1)) || is(u, open - 2, "::"));
}

void GilScanner::plain_call(Unit const& u, std::size_t i, std::size_t begin, std::size_t paren) {
  std::string_view const written = spell(u, i);
  std::string_view const name = resolved(written);
  auto const use = python_name_use(name);
  if (use == NameUse::gil_free) return;
  if (use == NameUse::needs_gil) {
    if (u.context[i] != Context::function) {
      keep(u, i,
           "calls `" + std::string(written) +
               "` outside a function's body (an initializer or a default argument), where "
               "the GIL cannot be taken back around it");
      return;
    }
    std::size_t const end = u.tokens[closing(u, paren)].end;
    out_.calls.push_back({u.text, begin, end});
    wrapped_until_ = end;
    if (!u.macro.empty()) wrapped_macros_.insert(u.macro);
    return;
  }
  if (!name.empty() && known_callee(u, name)) return;
  if (name.empty())
    keep(u, i,
         "calls the macro `" + std::string(written) +
             "`, whose expansion the linker cannot classify");
  else
    keep(u, i,
         "calls `" + std::string(written) +
             "`, which its code does not define (a library's function may call Python)");
}

void GilScanner::member_call(Unit const& u, std::size_t i) {
  auto const name = spell(u, i);
  if (functions_.count(name) || is_library_member(name)) return;
  keep(u, i,
       "calls the member `" + std::string(name) +
           "`, which its code does not define (a function pointer, or a library's)");
}

/// `A::B::f(`: the standard library's, the texts' own class or namespace, or `::f(`.
void GilScanner::qualified_call(Unit const& u, std::size_t i, std::size_t paren) {
  std::size_t root = i - 1;  // the first `::`, after the first name (`std`, `A`)
  std::size_t first_name = none;
  while (root > 0) {
    std::size_t name = root - 1;
    if (is(u, name, ">")) {  // `numeric_limits<R>::`
      std::size_t const open = template_open(u, name);
      if (open == none || open == 0) break;
      name = open - 1;
    }
    if (!ident(u, name)) break;
    first_name = name;
    if (name == 0 || !is(u, name - 1, "::")) break;
    root = name - 1;
  }
  if (first_name == none) return plain_call(u, i, u.tokens[root].begin, paren);  // `::f(`
  root = first_name + 1;
  auto const first = spell(u, first_name);
  auto const name = spell(u, i);
  if (first == "std") return;
  if (types_.count(first) && (functions_.count(name) || types_.count(name))) return;
  keep(u, i, "calls `" + compact(u, first_name, i) + "`, which its code does not define");
}

/// A name of the API, or a function the texts only declare, named without a call: its address
/// may be called later, anywhere, without the GIL.
void GilScanner::named_without_call(Unit const& u, std::size_t i) {
  auto const name = spell(u, i);
  if (i > 0 && (is(u, i - 1, ".") || is(u, i - 1, "->"))) return;
  bool const type = ident(u, i + 1) || is(u, i + 1, "*");  // `PyType_Slot slots[]`, `PyFoo* p`
  bool const api = python_name_use(name) == NameUse::needs_gil && !is_api_value(name) && !type;
  bool const foreign = declared_.count(name) && !functions_.count(name);
  if (api || foreign)
    keep(u, i,
         "names `" + std::string(name) +
             "` without calling it (it may be called later, without the GIL)");
}

// `(` after `)`, `]`, `}` or `>`: a call of what an expression gives, a template's, or none.
void GilScanner::paren_after(Unit const& u, std::size_t i) {
  if (u.tokens[i].begin < wrapped_until_) return;
  auto const before = spell(u, i - 1);
  std::size_t const open = u.match[i - 1];
  if (before == ">") return paren_after_template(u, i);
  if (open >= i - 1) return;  // not a closing bracket, or an unmatched one
  if (before == ")") return paren_after_group(u, i);
  if (before == "]") {
    bool const subscript =
        open > 0 && (ident(u, open - 1) || is(u, open - 1, ")") || is(u, open - 1, "]"));
    if (subscript)  // otherwise a lambda's parameters
      keep(u, i, "calls through an array of function pointers, which the linker cannot follow");
  } else if (before == "}") {
    bool const temporary =
        open > 0 && ident(u, open - 1) && !one_of(spell(u, open - 1), {"else", "do", "try"});
    if (temporary) keep(u, i, "calls an object made in place (`T{...}(...)`)");
  }
}

/// `name<...>(`: a template's call (or a cast, or a type's constructor), or a comparison.
void GilScanner::paren_after_template(Unit const& u, std::size_t i) {
  std::size_t const angle = template_open(u, i - 1);
  if (angle == none || angle == 0 || !ident(u, angle - 1)) return;  // a comparison
  std::size_t const callee = angle - 1;
  auto const name = spell(u, callee);
  if (one_of(name, {"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"})) return;
  auto const prior = callee > 0 ? spell(u, callee - 1) : std::string_view{};
  bool const member =
      prior == "." || prior == "->" ||
      (prior == "template" && callee >= 2 && one_of(spell(u, callee - 2), {".", "->"}));
  if (member) return member_call(u, callee);
  if (prior == "::") return qualified_call(u, callee, i);
  if (!known_callee(u, name)) plain_call(u, callee, u.tokens[callee].begin, i);
}

/// `(...)(` : `APPLY_SPECIFIC(f)(`, a cast's operand, a declaration's, or a call through an
/// expression (a function pointer).
void GilScanner::paren_after_group(Unit const& u, std::size_t i) {
  std::size_t const open = u.match[i - 1];
  auto const head = open > 0 ? spell(u, open - 1) : std::string_view{};
  if (head == "APPLY_SPECIFIC") {
    if (u.context[i] != Context::function && u.context[i] != Context::initializer) return;
    std::string const name = compact(u, open - 1, i - 1);
    if (functions_.count(name) || macros_.count(name)) return;
    keep(u, open - 1, "calls `" + name + "`, which its code does not define");
    return;
  }
  if (open > 0 && ident(u, open - 1)) {
    if (not_a_callee(head) || unevaluated_word(head) || type_name(head)) return;
    if (u.context[i] == Context::function || u.context[i] == Context::initializer)
      keep(u, open - 1, "calls what `" + std::string(head) + "(...)` returns");
    return;
  }
  if (cast_group(u, open)) return;
  if (u.context[i] == Context::function || u.context[i] == Context::initializer)
    keep(u, open,
         "calls through a function pointer or an expression, which the linker cannot "
         "follow");
}

/// Whether the group opening at `open` is a cast: only types and their punctuation inside.
bool GilScanner::cast_group(Unit const& u, std::size_t open) const {
  std::size_t const close = closing(u, open);
  if (close == open + 1) return false;
  // `(T*)(x)`: a pointer type, whatever `T` is (no expression ends with `*` or `&`).
  if ((is(u, close - 1, "*") || is(u, close - 1, "&")) && ident(u, open + 1)) return true;
  for (std::size_t k = open + 1; k < close; ++k) {
    auto const s = spell(u, k);
    if (ident(u, k) ? !(type_name(s) ||
                        one_of(s, {"volatile", "restrict", "__restrict", "__restrict__", "std"}))
                    : !one_of(s, {"*", "&", "::", "<", ">", ","}))
      return false;
  }
  return true;
}

void GilScanner::check_macro_uses() {
  for (auto const& u : units_) {
    if (!u.macro.empty()) continue;
    for (std::size_t i = 0; i < u.tokens.size(); ++i)
      if (u.context[i] != Context::function && wrapped_macros_.count(spell(u, i)))
        keep(u, i,
             "its macro `" + std::string(spell(u, i)) +
                 "` calls Python's API and is used outside a function's body");
  }
}

/// Where each macro's body stands: where its uses are, when they are all outside functions (a
/// macro that writes definitions); in a function's body otherwise. One pass over the texts.
void GilScanner::set_macro_contexts() {
  std::map<std::string_view, Context> where;
  for (auto const& u : units_) {
    if (!u.macro.empty()) continue;
    for (std::size_t i = 0; i < u.tokens.size(); ++i) {
      auto const name = spell(u, i);
      if (!ident(u, i) || !macros_.count(name)) continue;
      auto const [it, first] = where.emplace(name, u.context[i]);
      if (!first && it->second != u.context[i]) it->second = Context::function;
    }
  }
  for (auto& u : units_) {
    if (u.macro.empty()) continue;
    auto const it = where.find(u.macro);
    set_contexts(u, it == where.end() ? Context::function : it->second);
  }
}

GilUses GilScanner::run() && {
  set_macro_contexts();
  for (auto const& u : units_) collect(u);
  for (auto const& u : units_) scan(u);
  check_macro_uses();
  check_headers();
  std::sort(out_.calls.begin(), out_.calls.end(), [](GilCall const& a, GilCall const& b) {
    return a.text != b.text ? a.text < b.text : a.begin < b.begin;
  });
  return std::move(out_);
}

}  // namespace

GilUses find_gil_uses(std::span<GilText const> texts, std::span<std::string const> headers) {
  return GilScanner(texts, headers).run();
}

}  // namespace section::c_scan
