// section-lint units: tokenizer, declaration reader, rule registry and selection, suppressions,
// signature checks, renderers, and robustness on arbitrary bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "parse/c_tokens.hpp"
#include "parse/declarations.hpp"
#include "section/expand.hpp"
#include "section/lint.hpp"

using namespace section;
using namespace section::c_scan;

namespace {

std::vector<std::string> spellings(std::string_view text) {
  std::vector<std::string> out;
  for (auto const& t : tokenize(text, 0, text.size()).tokens)
    out.emplace_back(text.substr(t.begin, t.end - t.begin));
  return out;
}

std::vector<std::string> codes_of(std::vector<Diagnostic> const& ds) {
  std::vector<std::string> out;
  for (auto const& d : ds) out.push_back(d.code);
  return out;
}

/// An op with `inputs` and `outputs` variables (of type `object`: the checks count them).
OpDescription op_with(std::size_t inputs, std::size_t outputs, bool has_params,
                      std::optional<std::string> func_name) {
  OpDescription op;
  op.inputs = std::vector<TypeSpec>(inputs);
  op.outputs = std::vector<TypeSpec>(outputs);
  op.has_params = has_params;
  op.func_name = std::move(func_name);
  return op;
}

std::vector<std::string> lint_codes(std::string text, LintOptions const& options = {}) {
  SourceManager sm;
  return codes_of(lint_text(sm, std::move(text), "t.c", options));
}

std::vector<Declaration> declarations(std::string_view text) {
  auto const body = tokenize(text, 0, text.size());
  return file_scope_declarations(text, body.tokens);
}

}  // namespace

TEST_SUITE("lint tokenizer") {
  TEST_CASE("comments, strings and characters hide what is inside them") {
    std::string_view const text =
        "a /* FAIL */ b // FAIL\n\"FAIL // x\" 'F' R\"x(FAIL)x\" u8\"s\" c";
    CHECK(spellings(text) == std::vector<std::string>{"a", "b", "\"FAIL // x\"", "'F'",
                                                      "R\"x(FAIL)x\"", "u8\"s\"", "c"});
    CHECK(tokenize(text, 0, text.size()).comments.size() == 2);
  }

  TEST_CASE("a directive is a line of its own, continuations included") {
    std::string_view const text = "#define FAIL \\\n  oops\nx\n  # undef  INPUT_0 // c\n";
    auto const body = tokenize(text, 0, text.size());
    CHECK(spellings(text) == std::vector<std::string>{"x"});
    REQUIRE(body.directives.size() == 2);
    CHECK(body.directives[0].name == "define");
    REQUIRE(body.directives[0].macro);
    CHECK(text.substr(body.directives[0].macro->begin, 4) == "FAIL");
    CHECK(body.directives[1].name == "undef");
    CHECK(body.comments.size() == 1);
  }

  TEST_CASE("`#` after code on the same line is not a directive") {
    CHECK(spellings("a # b") == std::vector<std::string>{"a", "#", "b"});
  }

  TEST_CASE("numbers with separators, exponents and suffixes are one token") {
    CHECK(spellings("1'000 1e+5 0x1p-3f .5") ==
          std::vector<std::string>{"1'000", "1e+5", "0x1p-3f", ".5"});
  }

  TEST_CASE("an unterminated block comment is reported as such") {
    std::string_view const text = "int x; /* open";
    auto const body = tokenize(text, 0, text.size());
    REQUIRE(body.comments.size() == 1);
    CHECK_FALSE(body.comments[0].terminated);
  }

  TEST_CASE("only the given range is read") {
    std::string_view const text = "aaa bbb ccc";
    auto const body = tokenize(text, 4, 7);
    REQUIRE(body.tokens.size() == 1);
    CHECK(body.tokens[0].begin == 4);
    CHECK(body.tokens[0].end == 7);
  }
}

TEST_SUITE("lint declarations") {
  TEST_CASE("function definitions, prototypes, globals and types") {
    auto const ds =
        declarations("static int f(int a, int b) { return a; }\n"
                     "int g(void);\n"
                     "double x = 1, y[3];\n"
                     "struct s { int n; } inst;\n"
                     "int APPLY_SPECIFIC(h)(PyArrayObject* a, PyArrayObject** z) { return 0; }\n");
    REQUIRE(ds.size() == 7);
    CHECK(ds[0].kind == Declaration::Kind::function_definition);
    CHECK(ds[0].name == "f");
    CHECK(ds[0].parameter_count == 2);
    CHECK(ds[1].kind == Declaration::Kind::function_declaration);
    CHECK(ds[1].parameter_count == 0);
    CHECK(ds[2].name == "x");
    CHECK(ds[3].name == "y");
    CHECK(ds[4].kind == Declaration::Kind::type);
    CHECK(ds[4].name == "s");
    CHECK(ds[5].name == "inst");
    CHECK(ds[6].name == "APPLY_SPECIFIC(h)");
    CHECK(ds[6].apply_specific);
    CHECK(ds[6].parameter_count == 2);
  }

  TEST_CASE("nested parentheses and templates do not split parameters") {
    auto const ds = declarations("int f(void (*cb)(int, int), std::map<int, int>* m, int n) { }");
    REQUIRE(ds.size() == 1);
    // `std::map<int, int>` has a comma outside parentheses: the reader counts it, a known limit.
    CHECK(ds[0].parameter_count == 4);
  }

  TEST_CASE("deeply nested namespaces do not exhaust the stack") {
    std::string text;
    for (int i = 0; i < 100000; ++i) text += "namespace n {";
    text += "int x = 0;";
    CHECK(declarations(text).empty());  // beyond the nesting bound nothing is read
    CHECK(declarations("namespace a { namespace b { int x = 0; } }").size() == 1);
  }

  TEST_CASE("unbalanced input does not crash or loop") {
    for (std::string_view text : {"int f(", "int f() {", "}", "struct {", "int x = {1, 2", ") ] }"})
      CHECK_NOTHROW(declarations(text));
  }
}

TEST_SUITE("lint registry") {
  TEST_CASE("codes are unique, well formed and documented with the four headings") {
    auto const rules = lint_rules();
    REQUIRE(rules.size() >= 25);
    for (std::size_t i = 0; i < rules.size(); ++i) {
      auto const& r = rules[i];
      CAPTURE(r.code);
      CHECK(r.code.size() == 5);
      CHECK(r.code.starts_with("SL"));
      if (i > 0) CHECK(rules[i - 1].code < r.code);
      CHECK(find_lint_rule(r.code) == &r);
      for (auto heading :
           {"## What it does", "## Why is this bad?", "## Example", "## Use instead"})
        CHECK(r.documentation.find(heading) != std::string_view::npos);
      CHECK_FALSE(r.summary.ends_with("."));
    }
    CHECK(find_lint_rule("SL999") == nullptr);
  }

  TEST_CASE("--explain text names the code, its reporter and carries its documentation") {
    auto const text = explain_code(*find_lint_rule("SL401"));
    CHECK(text.starts_with("# SL401 (missing-apply-specific)\n\n"));
    CHECK(text.find("Reported by section-lint.") != std::string::npos);
    CHECK(text.find("## Why is this bad?") != std::string::npos);
    auto const expander = explain_code(*find_diagnostic_code("SE101"));
    CHECK(expander.starts_with("# SE101 (unknown-dtype)\n\n"));
    CHECK(expander.find("Reported by the expander") != std::string::npos);
    auto const compiler = explain_code(*find_diagnostic_code("compile-error"));
    CHECK(compiler.starts_with("# compile-error\n\n"));
    CHECK(compiler.find("Reported by the C compiler") != std::string::npos);
    CHECK(compiler.find("`failed/` folder") != std::string::npos);
  }

  TEST_CASE("selection by prefix: longest prefix wins, ignore wins ties") {
    RuleSelection const all;
    CHECK(all.enabled("SL301"));
    RuleSelection const macros({"SL3"}, {});
    CHECK(macros.enabled("SL304"));
    CHECK_FALSE(macros.enabled("SL401"));
    RuleSelection const but_one({"SL3"}, {"SL304"});
    CHECK(but_one.enabled("SL301"));
    CHECK_FALSE(but_one.enabled("SL304"));
    RuleSelection const specific_select({"SL301"}, {"SL3"});
    CHECK(specific_select.enabled("SL301"));
    CHECK_FALSE(specific_select.enabled("SL302"));
    RuleSelection const tie({"SL3"}, {"SL3"});
    CHECK_FALSE(tie.enabled("SL301"));
  }

  TEST_CASE("a prefix that matches no rule is a usage error") {
    CHECK_THROWS_AS(RuleSelection({"SL8"}, {}), std::invalid_argument);
    CHECK_THROWS_AS(RuleSelection({}, {"E501"}), std::invalid_argument);
    CHECK_THROWS_AS(RuleSelection({""}, {}), std::invalid_argument);
  }
}

TEST_SUITE("lint rules") {
  TEST_CASE("macro scope follows the expander's table") {
    CHECK(lint_codes("#section init_code_struct\nFAIL;\n").empty());
    CHECK(lint_codes("#section cleanup_code_struct\nFAIL;\n") == std::vector<std::string>{"SL301"});
    CHECK(lint_codes("#section code_cleanup\nPy_XDECREF(OUTPUT_0);\n").empty());
    CHECK(lint_codes("#section init_code_apply\nx = INPUT_0;\n") ==
          std::vector<std::string>{"SL302"});
    CHECK(lint_codes("#section init_code_apply\nint APPLY_SPECIFIC(x);\n").empty());
    CHECK(lint_codes("#section init_code\nint APPLY_SPECIFIC(x);\n") ==
          std::vector<std::string>{"SL303"});
  }

  TEST_CASE("macro scope is what the expander defines around each section") {
    // Expands each of the nine sections and lints a use of each macro family there: the linter
    // must flag exactly the families the expander's string for that section does not define.
    for (ExpansionMethod const& method : expansion_methods()) {
      std::string const tag(method.tag);
      CAPTURE(tag);
      SourceManager sm;
      std::vector<Diagnostic> diagnostics;
      auto const file = add_source(sm, "#section " + tag + "\nx;\n", "t.c", diagnostics);
      REQUIRE(file);
      SectionSet const set = merge_sections(sm, {*file});
      OpDescription op;
      op.inputs = op.outputs = std::vector<TypeSpec>{parse_type("float64[:]")};
      op.has_params = true;
      op.params = params_spec(parse_params("k:int64"));
      Expansion const e = expand(sm, set, op, single_node_context(op));
      MethodResult const result = method_result(e, method);
      std::string text;
      if (auto const* s = std::get_if<std::string>(&result)) text = *s;
      if (auto const* list = std::get_if<std::vector<std::string>>(&result)) text = list->at(0);
      REQUIRE_FALSE(text.empty());
      auto defines = [&](char const* name) {
        return text.find(std::string("#define ") + name) != std::string::npos;
      };
      auto flagged = [&](char const* use, char const* code) {
        auto const codes = lint_codes("#section " + tag + "\n" + use + "\n");
        return std::find(codes.begin(), codes.end(), code) != codes.end();
      };
      CHECK(flagged("int APPLY_SPECIFIC(v);", "SL303") == !defines("APPLY_SPECIFIC"));
      CHECK(flagged("PARAMS_TYPE* p;", "SL303") == !defines("PARAMS_TYPE"));
      CHECK(flagged("FAIL;", "SL301") == !defines("FAIL"));
      CHECK(flagged("int k = PARAMS->k;", "SL301") == !defines("PARAMS "));
      CHECK(flagged("f(INPUT_0);", "SL302") == !defines("INPUT_0"));
      CHECK(flagged("f(OUTPUT_0);", "SL302") == !defines("OUTPUT_0"));
    }
  }

  TEST_CASE("a misspelled generated macro gets a did-you-mean and a fix to the macro") {
    // "misspelled -> replacement", the misspelled name read from the fix's range.
    auto const fixed = [](std::string const& use) -> std::string {
      SourceManager sm;
      auto const ds = lint_text(sm, "#section code\n" + use + ";\n", "t.c", {});
      REQUIRE(ds.size() == 1);
      CHECK(ds[0].code == "SL305");
      REQUIRE(ds[0].fix);
      auto const& fix = *ds[0].fix;
      CHECK(ds[0].message.find("did you mean `" + fix.replacement + "`?") != std::string::npos);
      auto const& text = sm.file(fix.range.file).text();
      return std::string(text.substr(fix.range.begin, fix.range.end - fix.range.begin)) + " -> " +
             fix.replacement;
    };
    CHECK(fixed("DTYPE_OUPUT_0 v") == "DTYPE_OUPUT_0 -> DTYPE_OUTPUT_0");
    CHECK(fixed("APPLY_SPECIFC(vector_add)(x)") == "APPLY_SPECIFC -> APPLY_SPECIFIC");
    CHECK(fixed("n = TYPENUM_INTPUT_1") == "TYPENUM_INTPUT_1 -> TYPENUM_INPUT_1");
    CHECK(fixed("PARMS->k") == "PARMS -> PARAMS");
    CHECK(fixed("Py_XDECREF(OUPUT_0)") == "OUPUT_0 -> OUTPUT_0");
    CHECK(fixed("ITEMSIZE_INPTU_12") == "ITEMSIZE_INPTU_12 -> ITEMSIZE_INPUT_12");  // index kept
    CHECK(fixed("if (x) FIAL") == "FIAL -> FAIL");
    CHECK(fixed("APPLYSPECIFIC(f)") == "APPLYSPECIFIC -> APPLY_SPECIFIC");
  }

  TEST_CASE("ordinary names, the file's own macros and generated macros are not typos") {
    for (char const* use : {"PyArray_DIMS(x)",
                            "NPY_FLOAT64",
                            "INPUT",
                            "OUTPUT",
                            "Py_XDECREF(z)",
                            "DTYPE_OUTPUT_0",
                            "TYPENUM_INPUT_1",
                            "APPLY_SPECIFIC(f)",
                            "PARAMS",
                            "FAIL",
                            "INPUT_0",
                            "OUTPUT_10",
                            "PARAMS_TYPE",
                            "DTYPE_PARAM_k",
                            "TAIL",
                            "FALL",
                            "FAILS",
                            "INPUTS",
                            "DTYPE_INT_0",
                            "MY_OUTPUT_0",
                            "OUTPUT_0_SIZE",
                            "apply_specifc(f)",
                            "Dtype_Ouput_0",
                            "NPY_ARRAY_IN_ARRAY"})
      CHECK_MESSAGE(lint_codes(std::string("#section code\nx = ") + use + ";\n").empty(), use);
    CHECK(
        lint_codes("#section support_code\n#define PARMS 3\n#section code\nx = PARMS;\n").empty());
    // A name close to two generated macros alike is no clear guess.
    CHECK(lint_codes("#section code\nx = TYPENUM_OPUT_0;\n").empty());
  }

  TEST_CASE("a #define body may use macros of other sections") {
    CHECK(lint_codes("#section support_code\n#define CHECK(c) if (!(c)) FAIL\n").empty());
  }

  TEST_CASE("return inside a lambda in code is the lambda's own") {
    CHECK(lint_codes("#section code\nauto f = [](int x) { return x; };\n").empty());
    CHECK(lint_codes("#section code\nif (x) { return; }\n") == std::vector<std::string>{"SL501"});
  }

  TEST_CASE("labels of one code block are visible from another") {
    CHECK(
        lint_codes("#section code\ngoto done;\n#section support_code\n#section code\ndone: ;\n") ==
        std::vector<std::string>{"SL205", "SL206"});
  }

  TEST_CASE("signature checks run only with a signature") {
    std::string const text = "#section code\nx = INPUT_5;\n";
    CHECK(lint_codes(text).empty());
    LintOptions options;
    options.op.inputs = std::vector<TypeSpec>(2);
    CHECK(lint_codes(text, options) == std::vector<std::string>{"SL601"});
  }

  TEST_CASE("the main function may be in any file of the op") {
    SourceManager sm;
    auto const dir = std::filesystem::temp_directory_path() / "section_lint_unit";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "a.c") << "#section support_code\nint helper(void) { return 0; }\n";
    std::ofstream(dir / "b.c")
        << "#section support_code_apply\n"
           "int APPLY_SPECIFIC(f)(PyArrayObject* x, PyArrayObject** z) { return 0; }\n";
    LintOptions options;
    options.op = op_with(1, 1, false, "APPLY_SPECIFIC( f )");
    CHECK(lint_files(sm, {(dir / "a.c").string(), (dir / "b.c").string()}, options).empty());
    SourceManager sm2;
    CHECK(codes_of(lint_files(sm2, {(dir / "a.c").string()}, options)) ==
          std::vector<std::string>{"SL602"});
    options.op.has_params = true;
    SourceManager sm3;
    CHECK(codes_of(lint_files(sm3, {dir.string()}, options)) == std::vector<std::string>{"SL603"});
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("paths that cannot be read and empty folders are reported, not thrown") {
    SourceManager sm;
    CHECK(codes_of(lint_files(sm, {"/nonexistent/section-lint/x.c"})) ==
          std::vector<std::string>{"SL004"});
    auto const dir = std::filesystem::temp_directory_path() / "section_lint_empty";
    std::filesystem::create_directories(dir);
    SourceManager sm2;
    CHECK(codes_of(lint_files(sm2, {dir.string()})) == std::vector<std::string>{"SL204"});
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("folders are walked for *.c and *.h in sorted order, hidden folders skipped") {
    auto const dir = std::filesystem::temp_directory_path() / "section_lint_walk";
    std::filesystem::create_directories(dir / "sub");
    std::filesystem::create_directories(dir / ".git");
    for (auto name : {"b.c", "a.h", "sub/c.c", "notes.txt", ".git/x.c"})
      std::ofstream(dir / name) << "#section support_code\n";
    auto const paths = collect_lint_paths({dir.string()});
    std::vector<std::string> names;
    for (auto const& p : paths)
      names.push_back(std::filesystem::path(p).lexically_relative(dir).generic_string());
    CHECK(names == std::vector<std::string>{"a.h", "b.c", "sub/c.c"});
    std::filesystem::remove_all(dir);
  }
}

TEST_SUITE("lint suppressions") {
  TEST_CASE("a language comment checks its file as C or as C++, whatever the op declares") {
    std::string const cxx = "#section support_code\nint* p = nullptr;\n";
    CHECK(lint_codes(cxx).empty());
    CHECK(lint_codes(cxx + "// section-lint: language[c]\n") == std::vector<std::string>{"SL208"});
    CHECK(lint_codes(cxx + "/* section-lint: language[c] */\n") ==
          std::vector<std::string>{"SL208"});
    LintOptions c;
    c.op.language = Language::c;
    SourceManager sm;
    CHECK(lint_text(sm, cxx, "op.c", c).size() == 1);
    CHECK(lint_text(sm, cxx + "// section-lint: language[c++]\n", "op.c", c).empty());
    auto const bad = lint_text(sm, cxx + "// section-lint: language[fortran]\n", "op.c", c);
    REQUIRE(bad.size() == 2);
    CHECK(bad[1].code == "SL903");
    CHECK(bad[1].message.find("expected `language[c]` or `language[c++]`") != std::string::npos);
  }

  TEST_CASE("a line suppression covers findings starting on its line only") {
    CHECK(lint_codes("#section code\nreturn 1; // section-lint: ignore[SL501]\nreturn 2;\n") ==
          std::vector<std::string>{"SL501"});
  }

  TEST_CASE("a file suppression covers the file, wherever it is") {
    CHECK(
        lint_codes("#section code\nreturn 1;\nreturn 2;\n/* section-lint: ignore-file[SL501] */\n")
            .empty());
  }

  TEST_CASE("suppressions apply to the parser's findings too") {
    CHECK(lint_codes("#section support_code\n#section  code // section-lint: ignore[SL101]\n")
              .empty());
  }

  TEST_CASE("a suppression of a rule that is not selected is not reported unused") {
    LintOptions options;
    options.selection = RuleSelection({}, {"SL5"});
    CHECK(lint_codes("#section code\nreturn 1; // section-lint: ignore[SL501]\n", options).empty());
  }

  TEST_CASE("findings about suppressions can be suppressed") {
    CHECK(lint_codes("#section code\n// section-lint: ignore-file[SL901]\nx; // section-lint: "
                     "ignore[SL501]\n")
              .empty());
  }
}

TEST_SUITE("lint renderers") {
  TEST_CASE("SARIF carries rules, levels, code point columns and fixes") {
    SourceManager sm;
    auto const ds =
        lint_text(sm, "#section support_code_apply\n/* é */ int counter;\n", "dir/a b.c");
    REQUIRE(ds.size() == 1);
    auto const log = nlohmann::json::parse(render_sarif(ds, sm));
    CHECK(log["version"] == "2.1.0");
    auto const& run = log["runs"][0];
    CHECK(run["tool"]["driver"]["rules"].size() == lint_rules().size());
    auto const& result = run["results"][0];
    CHECK(result["ruleId"] == "SL401");
    CHECK(result["level"] == "warning");
    CHECK(run["tool"]["driver"]["rules"][result["ruleIndex"].get<std::size_t>()]["id"] == "SL401");
    auto const& location = result["locations"][0]["physicalLocation"];
    CHECK(location["artifactLocation"]["uri"] == "dir/a%20b.c");
    CHECK(location["region"]["startLine"] == 2);
    CHECK(location["region"]["startColumn"] == 13);  // `é` is two bytes, one code point
    CHECK(result["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] ==
          "APPLY_SPECIFIC(counter)");
  }

  TEST_CASE("GitHub annotations escape and drop columns of multi-line ranges") {
    SourceManager sm;
    auto const ds =
        lint_text(sm, "#section code\n/* section-lint: oops,\n */\nreturn 1;\n", "a,b.c");
    auto const out = render_github(ds, sm);
    CHECK(
        out.find("::warning file=a%2Cb.c,line=2,endLine=3,title=section-lint (SL903)::malformed") !=
        std::string::npos);
    CHECK(out.find("::error file=a%2Cb.c,line=4,col=1,endLine=4,endColumn=7,title=section-lint "
                   "(SL501)::") != std::string::npos);
  }
}

TEST_SUITE("lint robustness") {
  TEST_CASE("arbitrary bytes never throw or crash") {
    std::mt19937 rng(12345);
    std::string const alphabet =
        "#section code support_apply{}()[];:/*\"'\\\n\t FAIL INPUT_0 return goto R\"x(";
    for (int round = 0; round < 2000; ++round) {
      std::string text = round % 2 ? "#section code\n" : "#section support_code_apply\n";
      std::size_t const n = rng() % 200;
      for (std::size_t i = 0; i < n; ++i)
        text += round % 3 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng() % 256);
      SourceManager sm;
      LintOptions options;
      options.op = op_with(1, 1, true, "f");
      CHECK_NOTHROW(lint_text(sm, text, "fuzz.c", options));
    }
  }
}
