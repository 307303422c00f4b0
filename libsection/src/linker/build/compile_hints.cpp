// What a failed compile's errors mean in the user's files: a did-you-mean for a misspelled
// generated macro, and errors in the generated module told as what they say about the op.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "base/text.hpp"
#include "expand/line_directives.hpp"
#include "expand/macros.hpp"
#include "linker/build/compile.hpp"
#include "parse/c_tokens.hpp"
#include "section/chars.hpp"
#include "section/expand.hpp"
#include "section/names.hpp"

namespace section {
namespace {

/// The texts a compiler message quotes: gcc's ‘x’ (or 'x' in the C locale), clang's 'x'.
std::vector<std::string_view> quoted_texts(std::string_view message) {
  static constexpr std::pair<std::string_view, std::string_view> quotes[] = {{"\u2018", "\u2019"},
                                                                             {"'", "'"}};
  std::vector<std::string_view> out;
  for (auto const& [open, close] : quotes) {
    for (std::size_t at = message.find(open); at != std::string_view::npos;) {
      std::size_t const begin = at + open.size();
      std::size_t const end = message.find(close, begin);
      if (end == std::string_view::npos) break;
      out.push_back(message.substr(begin, end - begin));
      at = message.find(open, end + close.size());
    }
  }
  return out;
}

/// `m` and the 64 hex digits of a module's name (`ModuleSource::name`), starting at `at`.
bool module_name_at(std::string_view text, std::size_t at) {
  if (at + 65 > text.size() || text[at] != 'm') return false;
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(at) + 1,
                     text.begin() + static_cast<std::ptrdiff_t>(at) + 65,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// A compiler message in the names the user wrote: `f_node_m<hash>_0` (what `APPLY_SPECIFIC(f)`
/// becomes, the node names of generate/module.cpp) reads `APPLY_SPECIFIC(f)`, and gcc's guess of a
/// generated name (`; did you mean ‘op_instance_m<hash>’?`) goes.
std::string readable(std::string_view message) {
  std::string out;
  constexpr std::string_view node = "_node_";
  std::size_t copied = 0;
  for (std::size_t at = message.find(node); at != std::string_view::npos;
       at = message.find(node, at + 1)) {
    std::size_t const hash = at + node.size();
    if (!module_name_at(message, hash) || hash + 65 >= message.size() || message[hash + 65] != '_')
      continue;
    std::size_t end = hash + 66;
    while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end]))) ++end;
    std::size_t begin = at;
    while (begin > copied && is_identifier_char(message[begin - 1])) --begin;
    if (begin == at || end == hash + 66) continue;
    out.append(message.substr(copied, begin - copied));
    out += "APPLY_SPECIFIC(" + std::string(message.substr(begin, at - begin)) + ")";
    copied = end;
  }
  out.append(message.substr(copied));
  if (auto const guess = out.find("; did you mean "); guess != std::string::npos) {
    for (std::size_t m = out.find('m', guess); m != std::string::npos; m = out.find('m', m + 1)) {
      if (module_name_at(out, m)) {
        out.erase(guess);
        break;
      }
    }
  }
  return out;
}

bool says_undeclared(std::string_view message) {
  return message.find("not declared") != std::string_view::npos ||
         message.find("undeclared") != std::string_view::npos;
}

/// The note of a name one typo away from a generated macro, at the name.
Note typo_note(std::string_view name, std::string const& intended, SourceRange range) {
  return {"`" + std::string(name) + "` is not a macro libsection defines; did you mean `" +
              intended + "`?",
          range};
}

/// The function a compiler note quotes in `initializing argument N of ‘double f(double)’`.
std::optional<std::string> argument_function(std::string_view note) {
  if (note.find("initializing argument") == std::string_view::npos) return std::nullopt;
  auto const quoted = quoted_texts(note);
  if (quoted.empty()) return std::nullopt;
  std::string_view const signature = quoted.back();
  std::size_t const open = signature.find('(');
  if (open == std::string_view::npos) return std::nullopt;
  std::size_t begin = open;
  while (begin > 0 && is_identifier_char(signature[begin - 1])) --begin;
  return std::string(signature.substr(begin, open - begin));
}

/// The first element macro `line` names (`DTYPE_INPUT_0`, `DTYPE_OUTPUT_1`), if any.
std::optional<std::string> element_macro_on(std::string_view line) {
  for (std::size_t at = line.find("DTYPE_"); at != std::string_view::npos;
       at = line.find("DTYPE_", at + 1)) {
    if (at > 0 && is_identifier_char(line[at - 1])) continue;
    std::size_t end = at;
    while (end < line.size() && is_identifier_char(line[end])) ++end;
    std::string_view const name = line.substr(at, end - at);
    for (std::string_view const kind : {"DTYPE_INPUT_", "DTYPE_OUTPUT_"}) {
      std::string_view const index = name.substr(std::min(kind.size(), name.size()));
      if (name.starts_with(kind) && !index.empty() &&
          std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::string(name);
    }
  }
  return std::nullopt;
}

/// What an error means where libsection compiles an op's C code on dual numbers (a derived
/// gradient's module) or as C++ (C code's implicit `void*` conversions): a note at the error.
/// `line`: the error's line, whose element macro names the type to write.
std::optional<Note> cxx_meaning(Diagnostic const& d, std::string_view line,
                                std::function<bool(SourceRange)> const& in_sections) {
  std::string_view const m = d.message;
  if (m.find("invalid conversion from") != std::string_view::npos &&
      m.find("void*") != std::string_view::npos)
    return Note{"C++ converts `void*` to another pointer type only with a cast, which C does "
                "implicitly: write the cast, `(DTYPE_INPUT_0*)PyArray_DATA(x)`; an op's module "
                "is C++ unless the op is declared C, and the module of its derived gradient "
                "always is",
                d.range};
  bool const number = m.find("libsection_dual_") != std::string_view::npos ||
                      m.find("libsection::dual<") != std::string_view::npos ||
                      m.find("libsection_active_") != std::string_view::npos ||
                      m.find("libsection::active<") != std::string_view::npos;
  if (!number) return std::nullopt;
  std::string text =
      "libsection derives this op's gradient by running its C code on dual numbers (a value "
      "and its derivatives) and on taped numbers (a value and its place on a tape): here a "
      "value of a float input or output is one, and such a number does not become a plain "
      "`double`, which would drop its derivatives";
  for (auto const& note : d.notes) {
    auto const function = argument_function(note.message);
    if (!function) continue;
    if (in_sections(note.range))
      return Note{text + ". `" + *function +
                      "` takes a plain number: declare its parameter (and what it returns) with "
                      "the DTYPE macro of that input or output, `DTYPE_INPUT_0 x`, in "
                      "support_code_apply (or make it a template)",
                  d.range};
    return Note{text + ". `" + *function +
                    "` has no derivative rule in libsection (its numbers have the C math "
                    "functions exp, log, pow, sqrt, sin, lgamma, erf, fabs, ... and their npy_ "
                    "names): compute it from those, or give the op a pullback of its own",
                d.range};
  }
  if (auto const macro = element_macro_on(line))
    return Note{text +
                    ": declare what holds it with the DTYPE macro of that input or output: "
                    "write `" +
                    *macro + "` in place of `double`, and write no `(double)` cast of it",
                d.range};
  return Note{text + ": declare what holds it with the DTYPE macro of that input or output "
                     "(`DTYPE_OUTPUT_0 total = 0;`, not `double total`), and write no `(double)` "
                     "cast of it",
              d.range};
}

/// `message` with libsection's number types (`libsection::dual<double, 8>`,
/// `libsection_active_float64`) and the namespaces of the op's compiles on them (`lsd_dual_3::`,
/// `lsd_taped_3::`) spelled alike: an error of the op's code, said once per compile, reads the
/// same.
std::string number_types_made_one(std::string_view message) {
  static constexpr std::string_view templates[] = {"libsection::dual<", "libsection::active<"};
  static constexpr std::string_view names[] = {"libsection_dual_", "libsection_active_",
                                               "lsd_dual_", "lsd_taped_"};
  std::string out;
  for (std::size_t at = 0; at < message.size();) {
    std::string_view const rest = message.substr(at);
    auto const is_prefix = [&](std::string_view p) { return rest.starts_with(p); };
    bool const word_start = at == 0 || !is_identifier_char(message[at - 1]);
    if (word_start && std::any_of(std::begin(templates), std::end(templates), is_prefix)) {
      int depth = 0;  // to the `>` closing the template's arguments
      for (at = message.find('<', at); at < message.size(); ++at) {
        if (message[at] == '<') ++depth;
        if (message[at] == '>' && --depth == 0) break;
      }
      ++at;
      out += "libsection::number";
    } else if (word_start && std::any_of(std::begin(names), std::end(names), is_prefix)) {
      while (at < message.size() && is_identifier_char(message[at])) ++at;
      out += "libsection_number";
    } else {
      out += message[at++];
    }
  }
  return out;
}

/// `diagnostics` without the repeats of an earlier one: the same place, severity and message
/// once the number types are made one. A derived gradient's module compiles the op's code
/// once on dual numbers and once on taped numbers, and the compiler says each error of it twice.
void drop_repeats(std::vector<Diagnostic>& diagnostics) {
  std::set<std::tuple<FileId, std::size_t, Severity, std::string>> seen;
  std::erase_if(diagnostics, [&](Diagnostic const& d) {
    return !seen.emplace(d.range.file, d.range.begin, d.severity, number_types_made_one(d.message))
                .second;
  });
}

/// What an error in the generated module says about the user's files, and the likely typo.
struct Meaning {
  Note told;
  std::optional<Note> typo;
};

class Explainer {
 public:
  Explainer(SourceManager const& sm, CompiledSources const& sources) : sm_(sm), sources_(sources) {}

  bool in_sections(SourceRange const& r) const {
    return r.valid() && std::find(sources_.section_files.begin(), sources_.section_files.end(),
                                  r.file) != sources_.section_files.end();
  }
  bool in_generated(SourceRange const& r) const {
    return r.valid() && r.file == sources_.generated;
  }

  /// The names one typo away from a generated macro that an error in a section file quotes,
  /// then those on its line.
  std::vector<Note> typo_notes(Diagnostic const& d) const {
    std::vector<Note> out;
    auto const& file = sm_.file(d.range.file);
    std::string_view const text = file.text();
    std::string_view const line = file.line_text(d.range.begin);
    std::size_t const line_begin = static_cast<std::size_t>(line.data() - text.data());
    auto const tokens = c_scan::tokenize(text, line_begin, line_begin + line.size()).tokens;
    auto const add = [&](std::string_view name, SourceRange range) {
      auto const intended = intended_generated_macro(name);
      if (!intended) return;
      for (auto const& h : out)
        if (h.range == range) return;
      out.push_back(typo_note(name, *intended, range));
    };
    auto const on_line = [&](std::string_view name) {
      for (auto const& t : tokens)
        if (text.substr(t.begin, t.end - t.begin) == name)
          return SourceRange{d.range.file, t.begin, t.end};
      return d.range;
    };
    for (auto name : quoted_texts(d.message))
      if (is_c_identifier(name)) add(name, on_line(name));
    for (auto const& t : tokens)
      if (t.kind == c_scan::TokenKind::identifier)
        add(text.substr(t.begin, t.end - t.begin), {d.range.file, t.begin, t.end});
    return out;
  }

  /// What an error in the generated module means in the section files, where that can be
  /// told: at the compiler's own note there, or about the op's main function when the error is
  /// on the line calling it.
  std::optional<Meaning> meaning(Diagnostic const& d) const {
    std::string const message = readable(d.message);
    auto const note = std::find_if(d.notes.begin(), d.notes.end(),
                                   [&](Note const& n) { return in_sections(n.range); });
    auto const main = detail::called_main_function(sm_.file(d.range.file).line_text(d.range.begin));
    if (!main) {
      if (note == d.notes.end()) return std::nullopt;
      return Meaning{{"the generated module fails on this: " + message, note->range}, std::nullopt};
    }
    std::string const called = bounded_quote(*main, 200);  // a name may be megabytes long
    std::optional<Note> typo = macro_typo_before(*main);
    SourceRange const where = typo                    ? typo->range
                              : note != d.notes.end() ? note->range
                                                      : file_mentioning(*main);
    if (says_undeclared(d.message)) {
      std::string told = "func_name names the op's main function `" + called +
                         "`, but no section file declares it";
      if (auto const guess = message.find("; did you mean "); guess != std::string::npos)
        told += message.substr(guess);  // the compiler's guess, in the names the user wrote
      return Meaning{{told, where}, typo};
    }
    return Meaning{{"the generated call of the op's main function `" + called +
                        "` (func_name) does not match its declaration: " + message,
                    where},
                   typo};
  }

 private:
  /// `APPLY_SPECIFC(f)` in a section file for `func` = `APPLY_SPECIFIC(f)`: the name of the
  /// macro misspelled right before `(f)`.
  std::optional<Note> macro_typo_before(std::string_view func) const {
    std::size_t const open = func.find('(');
    if (open == std::string_view::npos || !func.ends_with(")")) return std::nullopt;
    std::string_view const macro = func.substr(0, open);
    std::string_view const inner = func.substr(open + 1, func.size() - open - 2);
    for (FileId id : sources_.section_files) {
      std::string_view const text = sm_.file(id).text();
      auto const& tokens = tokens_of(id);
      auto const spelling = [&](std::size_t i) {
        return text.substr(tokens[i].begin, tokens[i].end - tokens[i].begin);
      };
      for (std::size_t i = 0; i + 3 < tokens.size(); ++i) {
        if (spelling(i + 1) != "(" || spelling(i + 2) != inner || spelling(i + 3) != ")") continue;
        auto const intended = intended_generated_macro(spelling(i));
        if (intended && *intended == macro)
          return typo_note(spelling(i), *intended, {id, tokens[i].begin, tokens[i].end});
      }
    }
    return std::nullopt;
  }

  /// The first use of the function's own name (`f` of `APPLY_SPECIFIC(f)`) in the section
  /// files; else the one section file's start; else nowhere.
  SourceRange file_mentioning(std::string_view func) const {
    std::string_view name = func;
    if (auto const open = name.find('('); open != std::string_view::npos && name.ends_with(")"))
      name = name.substr(open + 1, name.size() - open - 2);
    if (auto const scope = name.rfind("::"); scope != std::string_view::npos)
      name = name.substr(scope + 2);
    for (FileId id : sources_.section_files) {
      std::string_view const text = sm_.file(id).text();
      for (auto const& t : tokens_of(id))
        if (text.substr(t.begin, t.end - t.begin) == name) return {id, t.begin, t.end};
    }
    auto const& files = sources_.section_files;
    return files.size() == 1 ? SourceRange{files[0], 0, 0} : SourceRange{};
  }

  /// A section file's tokens, read once however many errors ask.
  std::vector<c_scan::Token> const& tokens_of(FileId id) const {
    auto [it, added] = tokens_.try_emplace(id);
    if (added) {
      std::string_view const text = sm_.file(id).text();
      it->second = c_scan::tokenize(text, 0, text.size()).tokens;
    }
    return it->second;
  }

  SourceManager const& sm_;
  CompiledSources const& sources_;
  mutable std::map<FileId, std::vector<c_scan::Token>> tokens_;
};

}  // namespace

CompiledSources compiled_sources(std::string const& module_text, std::string const& module_path,
                                 SourceManager& sm) {
  CompiledSources sources;
  sources.generated = sm.add(module_path, module_text);
  std::string_view const text = module_text;
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t const end = std::min(text.find('\n', begin), text.size());
    auto const path = detail::line_directive_path(text.substr(begin, end - begin));
    begin = end + 1;
    if (!path || *path == module_file_name) continue;
    FileId const file = file_named(*path, sm);
    auto& files = sources.section_files;
    if (file != no_file && std::find(files.begin(), files.end(), file) == files.end())
      files.push_back(file);
  }
  return sources;
}

namespace {

/// The message `explain_compile_errors` builds, error by error: at most `max_shown` errors told
/// with what they mean, each typo told once, the generated module's other errors summed up.
class Telling {
 public:
  Telling(SourceManager const& sm, CompiledSources const& sources, bool show_generated)
      : sm_(sm), explainer_(sm, sources), show_generated_(show_generated) {}

  void error(Diagnostic& d) {
    bool const generated = explainer_.in_generated(d.range);
    auto meaning = generated ? explainer_.meaning(d) : std::nullopt;
    if (generated && !meaning && !show_generated_) {
      if (untold_++ == 0) first_untold_ = readable(d.message);
      return;
    }
    bool const show = shown_ < max_shown;
    shown_ += show ? 1 : 0;
    if (show && (!generated || show_generated_)) tell(d.range, "error", d.message);
    if (meaning) {
      if (show)
        tell(meaning->told.range, show_generated_ ? "note" : "error", meaning->told.message);
      d.notes.push_back(std::move(meaning->told));
      if (meaning->typo) add_typo(d, *meaning->typo, show);
    } else if (explainer_.in_sections(d.range)) {
      for (auto const& typo : explainer_.typo_notes(d)) add_typo(d, typo, show);
    }
    auto const in_sections = [&](SourceRange r) { return explainer_.in_sections(r); };
    if (auto cxx =
            in_sections(d.range) ? cxx_meaning(d, line_of(d.range), in_sections) : std::nullopt) {
      if (show) tell(cxx->range, "note", cxx->message);
      d.notes.push_back(std::move(*cxx));
    }
  }

  std::string message() && {
    if (untold_ > 0) {
      out_ += "\nerror in the generated module: " + first_untold_ + " (";
      if (untold_ > 1)
        out_ += std::to_string(untold_ - 1) + (untold_ == 2 ? " more error" : " more errors") +
                " there; ";
      out_ += "LIBSECTION_SHOW_GENERATED=1 lists them with their lines)";
    }
    return std::move(out_);
  }

 private:
  static constexpr int max_shown = 10;

  std::string_view line_of(SourceRange const& r) const {
    return sm_.file(r.file).line_text(r.begin);
  }

  void tell(SourceRange const& r, char const* kind, std::string const& message) {
    out_ += "\n" + location_text(r, sm_) + ": " + kind + ": " + message;
  }

  void add_typo(Diagnostic& d, Note const& typo, bool show) {
    d.notes.push_back(typo);
    if (show && told_typos_.emplace(typo.range.file, typo.range.begin, typo.message).second)
      tell(typo.range, "note", typo.message);
  }

  SourceManager const& sm_;
  Explainer const explainer_;
  bool const show_generated_;
  std::string out_;
  std::set<std::tuple<FileId, std::size_t, std::string>> told_typos_;  // each typo told once
  int shown_ = 0;
  std::size_t untold_ = 0;  // errors in the generated module left to the summary
  std::string first_untold_;
};

}  // namespace

std::string explain_compile_errors(std::vector<Diagnostic>& diagnostics, SourceManager const& sm,
                                   CompiledSources const& sources, bool show_generated) {
  drop_repeats(diagnostics);
  Telling telling(sm, sources, show_generated);
  for (auto& d : diagnostics)
    if (d.is_error()) telling.error(d);
  return std::move(telling).message();
}

}  // namespace section
