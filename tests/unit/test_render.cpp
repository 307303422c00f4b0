// Rendering: golden files of the parser's diagnostics (text and JSON) and the split they go with.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "golden.hpp"
#include "section/parse.hpp"
#include "section/render.hpp"

using namespace section;
namespace fs = std::filesystem;

namespace {

// A readable dump of what was loaded: each section's blocks with their lines, then diagnostics.
std::string dump(SourceManager const& sm, SectionSet const& set) {
  std::string out;
  for (auto const& s : set.sections) {
    out += "section " + s.tag + ": " + std::to_string(s.text.size()) + " bytes\n";
    for (auto const& b : s.blocks)
      out +=
          "  block " + sm.file(b.marker.file).path() + ":" + std::to_string(b.marker_line) + "\n";
  }
  out += "error: " + (set.error ? set.error->message : std::string("none")) + "\n";
  out += "--- diagnostics\n" + render_text(set.diagnostics, sm);
  return out;
}

std::vector<fs::path> golden_inputs() {
  std::vector<fs::path> files;
  for (auto const& e : fs::directory_iterator(golden::source_dir() / "tests/golden/parse"))
    if (e.path().extension() == ".c") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_SUITE("render") {
  TEST_CASE("parser diagnostics render as the golden text files say") {
    auto const inputs = golden_inputs();
    REQUIRE(inputs.size() >= 9);
    for (auto const& input : inputs) {
      CAPTURE(input.string());
      SourceManager sm;
      auto set = load_sections(sm, {{input.string(), input.filename().string()}});
      golden::check(fs::path(input).replace_extension(".expected"), dump(sm, set));
    }
  }

  TEST_CASE("JSON records carry the documented keys") {
    auto const input = golden::source_dir() / "tests/golden/parse/unknown_tag.c";
    SourceManager sm;
    auto set = load_sections(sm, {{input.string(), "unknown_tag.c"}});
    auto const text = render_json(set.diagnostics, sm);
    golden::check(golden::source_dir() / "tests/golden/parse/unknown_tag.json", text);
    auto const records = nlohmann::json::parse(text);
    REQUIRE(records.size() == 1);
    auto const& r = records[0];
    for (auto key :
         {"code", "severity", "message", "filename", "location", "end_location", "fix", "url"})
      CHECK(r.contains(key));
    CHECK(r["code"] == "SL201");
    CHECK(r["location"]["row"] == 4);
    CHECK(r["location"]["column"] == 10);
    CHECK(r["end_location"]["column"] == 27);  // exclusive end, as Ruff
    CHECK(r["fix"]["edits"][0]["content"] == "support_code_apply");
  }

  TEST_CASE("a diagnostic without a location renders with the tool's name") {
    SourceManager sm;
    Diagnostic d{"SL204", Severity::error, "No sections where defined in the C files", {}, {}, {}};
    CHECK(render_text(d, sm) ==
          "libsection: error: No sections where defined in the C files [SL204]\n");
  }

  TEST_CASE("the caret keeps tabs so it lines up under the range") {
    SourceManager sm;
    auto const id = sm.add("t.c", "\tint x;\n");
    Diagnostic d{"SL999", Severity::warning, "m", {id, 5, 6}, {}, {}};
    CHECK(render_text(d, sm) == "t.c:1:6: warning: m [SL999]\n 1 | \tint x;\n   | \t    ^\n");
  }
}
