// Parser: the reference split, every reference error, near-miss markers, file checks, linearity.
#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "section/parse.hpp"

using namespace section;

namespace {

struct Loaded {
  SourceManager sm;
  SectionSet set;
};

// Loads in-memory files as `load_sections` would load them from disk.
Loaded load_texts(std::vector<std::pair<std::string, std::string>> const& files) {
  Loaded out;
  std::vector<Diagnostic> diagnostics;
  std::vector<FileId> ids;
  for (auto const& [name, text] : files)
    if (auto id = add_source(out.sm, text, name, diagnostics)) ids.push_back(*id);
  out.set = merge_sections(out.sm, ids, std::move(diagnostics));
  return out;
}

Loaded load_text(std::string const& text, std::string const& name = "t.c") {
  return load_texts({{name, text}});
}

std::string text_of(Loaded const& l, std::string_view tag) {
  auto const* s = l.set.find(tag);
  REQUIRE(s != nullptr);
  return s->text;
}

std::vector<std::string> codes(Loaded const& l) {
  std::vector<std::string> out;
  for (auto const& d : l.set.diagnostics) out.push_back(d.code);
  return out;
}

bool has_code(Loaded const& l, std::string const& code) {
  auto const c = codes(l);
  return std::find(c.begin(), c.end(), code) != c.end();
}

Diagnostic const& diagnostic(Loaded const& l, std::string const& code) {
  for (auto const& d : l.set.diagnostics)
    if (d.code == code) return d;
  FAIL("no diagnostic " << code);
  throw;
}

std::string message(Loaded const& l) {
  REQUIRE(l.set.error.has_value());
  return l.set.error->message;
}

}  // namespace

TEST_SUITE("parser") {
  TEST_CASE("a section's text starts with the newline ending its marker and stops before the next "
            "marker") {
    auto l = load_text("#section support_code\nint y;\n#section code");
    CHECK(l.set.ok());
    CHECK(text_of(l, "support_code") == "\nint y;\n");
    CHECK(text_of(l, "code") == "");
    REQUIRE(l.set.sections.size() == 2);
    CHECK(l.set.sections[0].tag == "support_code");
    CHECK(l.set.sections[1].tag == "code");
  }

  TEST_CASE("whitespace before the first marker is accepted and dropped") {
    auto l = load_text("\n  \n\t\n#section support_code\nint y;");
    CHECK(l.set.ok());
    CHECK(text_of(l, "support_code") == "\nint y;");
  }

  TEST_CASE("Python's Unicode whitespace counts as whitespace before the first marker") {
    auto l = load_text("\xC2\xA0\xE2\x80\x83\x0B\x1C\n#section code\nx\n");  // NBSP, EM SPACE
    CHECK(l.set.ok());
  }

  TEST_CASE("repeated tags concatenate in order within a file and across files") {
    auto within =
        load_text("#section support_code\na\n#section code\nc\n#section support_code\nb\n");
    CHECK(text_of(within, "support_code") == "\na\n\nb\n");
    CHECK(has_code(within, "SL206"));

    auto across = load_texts(
        {{"a.c", "#section support_code\nint y;\n"}, {"b.c", "#section support_code\nint y;\n"}});
    CHECK(text_of(across, "support_code") == "\nint y;\n\nint y;\n");
    CHECK(text_of(across, "support_code").size() == 16);
  }

  TEST_CASE("CRLF and lone CR are normalised to LF before splitting") {
    auto crlf = load_text("#section support_code\r\nint y;\r\n#section code\r\nx;\r\n");
    CHECK(crlf.set.ok());
    CHECK(text_of(crlf, "support_code") == "\nint y;\n");
    auto cr = load_text("#section support_code\rint y;\r#section code\rx;");
    CHECK(text_of(cr, "code") == "\nx;");
  }

  TEST_CASE("blocks keep their file and the line of their marker") {
    auto l = load_texts({{"a.c", "\n#section code\nx\n"}, {"b.c", "#section code\ny\n"}});
    auto const& blocks = l.set.find("code")->blocks;
    REQUIRE(blocks.size() == 2);
    CHECK(l.sm.file(blocks[0].marker.file).path() == "a.c");
    CHECK(blocks[0].marker_line == 2);
    CHECK(l.sm.line_column(blocks[0].tag_range.file, blocks[0].tag_range.begin).column == 10);
    CHECK(l.sm.file(blocks[1].marker.file).path() == "b.c");
    CHECK(blocks[1].marker_line == 1);
  }

  TEST_CASE("legacy markers assign, ignore text before them, and accept all three prefixes") {
    auto l = load_text(
        "junk\nPYTENSOR_SUPPORT_CODE_SECTION\nint s;\nPYTENSOR_APPLY_CODE_SECTION\nint a;\n"
        "PYTENSOR_SUPPORT_CODE_SECTION\nint s2;\n");
    CHECK(l.set.ok());
    CHECK(text_of(l, "support_code") == "\nint s2;\n");
    CHECK(text_of(l, "support_code_apply") == "\nint a;\n");
    CHECK(has_code(l, "SL102"));
    for (auto prefix : {"THEANO_", "AESARA_", "PYTENSOR_"}) {
      auto p = load_text(std::string(prefix) + "APPLY_CODE_SECTION\nint a;\n");
      CHECK(p.set.ok());
      CHECK(text_of(p, "support_code_apply") == "\nint a;\n");
    }
  }

  TEST_CASE("a later legacy file replaces an earlier one's section") {
    auto l = load_texts({{"a.c", "THEANO_SUPPORT_CODE_SECTION\nfirst\n"},
                         {"b.c", "AESARA_SUPPORT_CODE_SECTION\nsecond\n"}});
    CHECK(text_of(l, "support_code") == "\nsecond\n");
  }

  TEST_CASE("mixing marker styles is an error, within a file or across files") {
    auto one = load_text("#section code\nx\nPYTENSOR_APPLY_CODE_SECTION\ny\n");
    CHECK(message(one).starts_with("Both the new and the old syntax"));
    CHECK(has_code(one, "SL103"));
    auto two =
        load_texts({{"a.c", "#section code\nx\n"}, {"b.c", "THEANO_APPLY_CODE_SECTION\ny\n"}});
    CHECK(message(two).starts_with("Both the new and the old syntax"));
    CHECK(has_code(two, "SL103"));
  }

  TEST_CASE(
      "stray code before the first marker keeps the reference message with the whole prelude") {
    auto l = load_text("int x;\n#section code\ny\n", "stray.c");
    CHECK(message(l) == "Stray code before first #section statement (in file stray.c): int x;\n");
    auto const& d = diagnostic(l, "SL202");
    CHECK(d.message == "Stray code before first #section statement (in file stray.c)");
    CHECK(l.sm.line_column(d.range.file, d.range.begin).line == 1);
  }

  TEST_CASE("an unknown tag is an error with a did-you-mean fix-it on the tag") {
    auto l = load_text("#section support_code\nx\n#section suport_code_apply\ny\n", "u.c");
    CHECK(message(l) == "Unknown section type (in file u.c): suport_code_apply");
    auto const& d = diagnostic(l, "SL201");
    REQUIRE(d.fix.has_value());
    CHECK(d.fix->replacement == "support_code_apply");
    auto const lc = l.sm.line_column(d.range.file, d.range.begin);
    CHECK(lc.line == 3);
    CHECK(lc.column == 10);
  }

  TEST_CASE("a file without markers, including an empty file, has no valid marker") {
    CHECK(message(load_text("", "e.c")) == "No valid section marker was found in file e.c");
    CHECK(message(load_text("int x;\n", "n.c")) == "No valid section marker was found in file n.c");
  }

  TEST_CASE("no files at all is the reference's 'No sections where defined' error") {
    auto l = load_texts({});
    CHECK(message(l) == "No sections where defined in the C files");
    CHECK(has_code(l, "SL204"));
  }

  TEST_CASE("lines that look like markers are reported with a fix-it and stay C text") {
    struct Case {
      std::string line, reason;
    };
    for (auto const& c : std::vector<Case>{{" #section code", "indented"},
                                           {"#section code ", "blanks after the tag"},
                                           {"#section  code", "exactly one space"},
                                           {"#section\tcode", "exactly one space"},
                                           {"# section code", "between `#` and `section`"},
                                           {"#SECTION code", "lower-case"},
                                           {"#sectioncode", "no space"},
                                           {"#section", "no tag"},
                                           {"#section code-x", "letters, digits and underscores"},
                                           {"#section code // main", "text after the tag"}}) {
      CAPTURE(c.line);
      auto l = load_text("#section support_code\na\n" + c.line + "\nb\n");
      CHECK(l.set.ok());  // the reference accepts the file, reading the line as C code
      CHECK(text_of(l, "support_code") == "\na\n" + c.line + "\nb\n");
      auto const& d = diagnostic(l, "SL101");
      CHECK(d.message.find(c.reason) != std::string::npos);
      REQUIRE(d.fix.has_value());
      CHECK(d.fix->replacement.starts_with("#section"));
      CHECK(l.sm.line_column(d.range.file, d.range.begin).line == 3);
    }
  }

  TEST_CASE("a near-miss marker fix-it corrects a misspelled tag too") {
    auto l = load_text("#section code\n #section suport_code\n");
    CHECK(diagnostic(l, "SL101").fix->replacement == "#section support_code");
  }

  TEST_CASE("ordinary preprocessor lines and identifiers are not near misses") {
    auto l = load_text(
        "#section support_code\n#include <x.h>\n#define SECTION 1\n  #if A\nPyArray_X();\n"
        "THEANO_APPLY_CODE_SECTION_X;\n#sect\n");
    CHECK(l.set.ok());
    CHECK(codes(l).empty());
  }

  TEST_CASE("empty sections are reported as info") {
    auto l = load_text("#section support_code\n\n  \n#section code\nx\n");
    CHECK(diagnostic(l, "SL205").severity == Severity::info);
  }
  TEST_CASE(
      "the reference's error is the first error diagnostic, marker styles across files first") {
    // An unknown tag in the first file, mixed styles across the second and third.
    auto l = load_texts({{"a.c", "#section kode\nx\n"},
                         {"b.c", "#section code\ny\n"},
                         {"c.c", "PYTENSOR_SUPPORT_CODE_SECTION\nz\n"}});
    REQUIRE(l.set.error);
    CHECK(l.set.error->message == diagnostic(l, "SL103").message);
    auto first = std::find_if(l.set.diagnostics.begin(), l.set.diagnostics.end(),
                              [](Diagnostic const& d) { return d.is_error(); });
    CHECK(first->code == "SL201");

    auto unknown = load_texts({{"a.c", "#section kode\nx\n#section tode\n"}});
    REQUIRE(unknown.set.error);
    CHECK(unknown.set.error->message == "Unknown section type (in file a.c): kode");
  }

  TEST_CASE("the reference's stray-code error quotes the text the diagnostic points at") {
    auto l = load_text("int x;\n#section code\ny\n");
    REQUIRE(l.set.error);
    CHECK(diagnostic(l, "SL202").message ==
          "Stray code before first #section statement (in file t.c)");
    CHECK(l.set.error->message ==
          "Stray code before first #section statement (in file t.c): int x;\n");
  }
}

TEST_SUITE("reading files") {
  namespace fs = std::filesystem;

  struct TempDir {
    fs::path path = fs::temp_directory_path() / ("libsection-test-" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(path); }
    ~TempDir() { fs::remove_all(path); }
    std::string write(std::string const& name, std::string const& bytes) const {
      std::ofstream(path / name, std::ios::binary) << bytes;
      return (path / name).string();
    }
  };

  TEST_CASE("a missing file is an OS error naming the file") {
    SourceManager sm;
    auto set = load_sections(sm, {{"/nonexistent/x.c", "x.c"}});
    REQUIRE(set.error.has_value());
    CHECK(set.error->os_errno == ENOENT);
    CHECK(set.diagnostics.front().code == "SL004");
    CHECK(set.diagnostics.front().message.find("x.c") != std::string::npos);
  }

  TEST_CASE("a directory is an OS error") {
    TempDir dir;
    SourceManager sm;
    auto set = load_sections(sm, {{dir.path.string(), "dir"}});
    REQUIRE(set.error.has_value());
    CHECK(set.error->os_errno == EISDIR);
  }

  TEST_CASE("invalid UTF-8 is an error naming the byte offset in the file") {
    TempDir dir;
    auto const path = dir.write("bad.c", "#section code\r\nint \xE9t\xE9;\n");
    SourceManager sm;
    auto set = load_sections(sm, {{path, "bad.c"}});
    REQUIRE(set.error.has_value());
    CHECK(set.error->os_errno == 0);
    CHECK(set.error->message.find("byte 0xe9 at byte offset 19") != std::string::npos);
    CHECK(set.error->message.find("invalid continuation byte") != std::string::npos);
  }

  TEST_CASE("UTF-8 checks follow Python's strict decoder") {
    for (auto const& bytes_and_reason : std::vector<std::pair<std::string, std::string>>{
             {"\x80", "invalid start byte"},
             {"\xC0\xAF", "invalid start byte"},                 // overlong
             {"\xED\xA0\x80", "invalid continuation byte"},      // surrogate
             {"\xF4\x90\x80\x80", "invalid continuation byte"},  // > U+10FFFF
             {"\xE2\x82", "unexpected end of data"}}) {
      auto const& bytes = bytes_and_reason.first;
      auto const& reason = bytes_and_reason.second;
      CAPTURE(reason);
      SourceManager sm;
      std::vector<Diagnostic> ds;
      CHECK_FALSE(add_source(sm, "#section code\n" + bytes, "f.c", ds).has_value());
      REQUIRE(ds.size() == 1);
      CHECK(ds[0].message.find(reason) != std::string::npos);
    }
    SourceManager sm;
    std::vector<Diagnostic> ds;
    CHECK(add_source(sm, "#section code\n\xF0\x9F\x98\x80 \xC3\xA9\n", "ok.c", ds).has_value());
    CHECK(ds.empty());
  }

  TEST_CASE("a byte order mark is reported, and the file then fails like in the reference") {
    auto l = load_text("\xEF\xBB\xBF#section code\nx\n", "bom.c");
    CHECK(has_code(l, "SL002"));
    CHECK(message(l) == "No valid section marker was found in file bom.c");
    auto two = load_text("\xEF\xBB\xBF#section code\nx\n#section code\ny\n", "bom.c");
    CHECK(message(two).starts_with(
        "Stray code before first #section statement (in file bom.c): \xEF\xBB\xBF#section code\n"));
  }

  TEST_CASE("binary data with NUL bytes is flagged") {
    auto l = load_text(std::string("#section code\nx\0y\n", 18));
    CHECK(has_code(l, "SL003"));
  }
}

TEST_SUITE("parser performance") {
  TEST_CASE("parsing time grows linearly with the number of blocks in one section") {
    auto build = [](std::size_t blocks) {
      std::string text;
      for (std::size_t i = 0; i < blocks; ++i) text += "#section support_code\nint a;\n";
      return text;
    };
    // The process's CPU time, the least of three loads: other processes on a loaded machine
    // move wall-clock time by more than the margin (this failed under a full test run).
    auto time_load = [&](std::string const& text) {
      double least = 1e9;
      for (int repeat = 0; repeat < 3; ++repeat) {
        std::clock_t const start = std::clock();
        auto l = load_text(text);
        CHECK(l.set.find("support_code")->blocks.size() * 29 == text.size());
        least = std::min(least, double(std::clock() - start) / CLOCKS_PER_SEC);
      }
      return least;
    };
    auto const small = time_load(build(20000));
    auto const large = time_load(build(160000));  // 8x the blocks
    // Quadratic concatenation would take ~64x; allow generous noise around 8x.
    CHECK(large < small * 24 + 0.05);
  }

  TEST_CASE("a line looks like a marker as the scanner sees one, malformed ones too") {
    for (char const* line :
         {"#section code", "  #  section support_code", "#SECTION code", "#sectionx",
          "PYTENSOR_APPLY_CODE_SECTION", "THEANO_SUPPORT_CODE_SECTION x"})
      CHECK_MESSAGE(section::looks_like_marker(line), line);
    for (char const* line : {"", "int x;", "# include <x.h>", "// #section code", "#sect"})
      CHECK_FALSE_MESSAGE(section::looks_like_marker(line), line);
  }
}
