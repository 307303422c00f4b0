// The code table: every code a stage emits is in it, every entry is documented, and emitters take
// their severity from it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "section/codes.hpp"
#include "section/expand.hpp"
#include "section/lint.hpp"
#include "section/parse.hpp"
#include "section/signature.hpp"

using namespace section;
namespace fs = std::filesystem;

namespace {

fs::path const source_dir = LIBSECTION_SOURCE_DIR;

std::string read_text(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Every code written as a string literal in the library's sources, with where it was seen.
std::map<std::string, std::string> codes_in_sources() {
  std::regex const literal(R"re("(S[LE][0-9]{3}|compile-error|compile-warning)")re");
  std::map<std::string, std::string> found;
  for (auto const& e : fs::recursive_directory_iterator(source_dir / "libsection" / "src")) {
    if (!e.is_regular_file()) continue;
    auto const text = read_text(e.path());
    for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it)
      found.emplace((*it)[1].str(), e.path().filename().string());
  }
  return found;
}

/// Whether a diagnostic can be made from a `Code`.
template <typename Code>
constexpr bool makes_diagnostic = requires(Code code) {
  make_diagnostic(code, std::string());
};

}  // namespace

TEST_SUITE("code table") {
  TEST_CASE("the table is sorted, without repeats, and every entry is documented") {
    auto const codes = diagnostic_codes();
    REQUIRE(codes.size() > 30);
    for (std::size_t i = 0; i < codes.size(); ++i) {
      CAPTURE(codes[i].code);
      if (i > 0) CHECK(codes[i - 1].code < codes[i].code);
      CHECK_FALSE(codes[i].summary.empty());
      CHECK(codes[i].documentation.starts_with("## What it does\n"));
      CHECK(find_diagnostic_code(codes[i].code) == &codes[i]);
    }
    CHECK(find_diagnostic_code("SL999") == nullptr);
  }

  TEST_CASE("every code the library's sources emit is in the table") {
    auto const found = codes_in_sources();
    REQUIRE(found.count("SL201") == 1);  // the scan sees the parser's codes
    for (auto const& entry : found) {
      CAPTURE(entry.first);
      CAPTURE(entry.second);
      CHECK(find_diagnostic_code(entry.first) != nullptr);
    }
  }

  TEST_CASE("every code has its section in the README's table") {
    auto const readme = read_text(source_dir / "README.md");
    for (auto const& c : diagnostic_codes()) {
      std::string anchor(c.code);
      std::transform(anchor.begin(), anchor.end(), anchor.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      CAPTURE(c.code);
      auto const row = "<a id=\"" + anchor + "\"></a>" + std::string(c.code) + " |";
      CHECK(readme.find(row) != std::string::npos);
    }
  }

  TEST_CASE("lint rules are the SL codes of the table") {
    std::set<std::string_view> lint;
    for (auto const& r : lint_rules()) lint.insert(r.code);
    for (auto const& c : diagnostic_codes())
      CHECK(lint.count(c.code) == (c.code.starts_with("SL") ? 1u : 0u));
  }

  TEST_CASE("a diagnostic takes its code and severity from its code, and a string is no code") {
    for (char const* code : {"SL205", "SL101", "compile-warning", "SE101"}) {
      auto const* entry = find_diagnostic_code(code);
      REQUIRE(entry);
      auto const d = make_diagnostic(*entry, "m");
      CHECK(d.code == code);
      CHECK(d.severity == entry->severity);
    }
    CHECK(find_diagnostic_code("SL205")->severity == Severity::info);
    CHECK(make_diagnostic(compile_warning, "m").severity == Severity::warning);
    // Codes are constants checked by the compiler: a string, spelt right or not, is refused.
    static_assert(makes_diagnostic<DiagnosticCode>);
    static_assert(!makes_diagnostic<char const*>);
    static_assert(!makes_diagnostic<std::string>);
  }

  TEST_CASE("a code section with a function name is one check for the expander and the linter") {
    std::string const text = "#section support_code\nint f(void);\n#section code\nx;\n";
    SourceManager sm;
    std::vector<Diagnostic> read;
    auto const id = add_source(sm, text, "a.c", read);
    REQUIRE(id);
    auto const set = merge_sections(sm, {*id});
    auto vector = parse_type("float64[:]");
    OpDescription op;
    op.inputs = {vector};
    op.outputs = {vector};
    op.func_name = "f";
    auto const expanded = expand(sm, set, op, single_node_context(op), {});
    REQUIRE(expanded.diagnostics.size() == 1);

    LintOptions options;
    options.op.func_name = "f";
    SourceManager lint_sm;
    auto const linted = lint_text(lint_sm, text, "a.c", options);
    auto const it = std::find_if(linted.begin(), linted.end(),
                                 [](Diagnostic const& d) { return d.code == "SL604"; });
    REQUIRE(it != linted.end());
    CHECK(expanded.diagnostics[0].code == "SL604");
    CHECK(expanded.diagnostics[0].message == it->message);
    CHECK(expanded.diagnostics[0].range == it->range);
  }
}
