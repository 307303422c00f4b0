// section-lint fixtures: every tests/lint/fixtures/*.c is linted and its full rendering compared
// with tests/lint/snapshots/<name>.txt. LIBSECTION_UPDATE_GOLDEN=1 rewrites the snapshots.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "section/lint.hpp"
#include "section/op.hpp"
#include "section/render.hpp"
#include "section/signature.hpp"

using namespace section;
namespace fs = std::filesystem;

namespace {

fs::path const lint_dir = fs::path(LIBSECTION_SOURCE_DIR) / "tests" / "lint";

std::string read_bytes(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A fixture states the signature options it needs in a comment:
/// `// section-lint-test: --inputs float64[:] --outputs float64[:] --func-name f`.
LintOptions options_of(std::string const& text) {
  LintOptions options;
  auto const at = text.find("section-lint-test:");
  if (at == std::string::npos) return options;
  std::istringstream args(text.substr(at + 18, text.find('\n', at) - at - 18));
  std::string flag, value;
  while (args >> flag >> value) {
    if (flag == "--inputs") options.op.inputs = parse_type_list(value, "input");
    else if (flag == "--outputs") options.op.outputs = parse_type_list(value, "output");
    else if (flag == "--params") options.op.has_params = !parse_params(value).empty();
    else if (flag == "--func-name") options.op.func_name = value;
    else if (flag == "--language") options.op.language = parse_language(value, "fixture");
    else if (flag == "--differentiated") options.op.differentiated = value == "true";
    else FAIL("unknown option in fixture: " << flag);
  }
  return options;
}

std::vector<fs::path> fixtures() {
  std::vector<fs::path> out;
  for (auto const& e : fs::directory_iterator(lint_dir / "fixtures"))
    if (e.path().extension() == ".c") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

bool updating_golden() {
  char const* v = std::getenv("LIBSECTION_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

}  // namespace

TEST_SUITE("lint fixtures") {
  TEST_CASE("every fixture renders exactly as its snapshot") {
    auto const all = fixtures();
    REQUIRE(all.size() > 20);
    for (auto const& path : all) {
      auto const name = path.filename().string();
      CAPTURE(name);
      auto const text = read_bytes(path);
      SourceManager sm;
      auto const ds = lint_text(sm, text, name, options_of(text));
      auto const rendered = render_text(ds, sm);
      auto const snapshot = lint_dir / "snapshots" / (path.stem().string() + ".txt");
      if (updating_golden()) {
        std::ofstream(snapshot, std::ios::binary) << rendered;
        continue;
      }
      REQUIRE_MESSAGE(fs::exists(snapshot), "no snapshot; run with LIBSECTION_UPDATE_GOLDEN=1");
      CHECK(rendered == read_bytes(snapshot));
    }
  }

  TEST_CASE("a fixture named by a code reports that code, and its _ok twin does not") {
    for (auto const& path : fixtures()) {
      auto const stem = path.stem().string();
      if (!stem.starts_with("SL")) continue;
      auto const code = stem.substr(0, 5);
      CAPTURE(stem);
      auto const text = read_bytes(path);
      SourceManager sm;
      auto const ds = lint_text(sm, text, path.filename().string(), options_of(text));
      bool const reported =
          std::any_of(ds.begin(), ds.end(), [&](auto const& d) { return d.code == code; });
      CHECK(reported == !stem.ends_with("_ok"));
    }
  }

  TEST_CASE("the clean example op has no finding") {
    auto const text = read_bytes(lint_dir / "fixtures" / "clean_vector_times_vector.c");
    SourceManager sm;
    CHECK(lint_text(sm, text, "clean.c", options_of(text)).empty());
  }

  TEST_CASE("every rule has a fixture") {
    // SL004 (a path that cannot be read) and SL204 (no files at all) cannot be files; they are
    // covered in test_lint.cpp and tests/python/test_section_lint.py instead.
    for (auto const& rule : lint_rules()) {
      if (rule.code == "SL004" || rule.code == "SL204") continue;
      CAPTURE(rule.code);
      CHECK(fs::exists(lint_dir / "fixtures" / (std::string(rule.code) + ".c")));
    }
  }
}
