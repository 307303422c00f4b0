// libFuzzer target: any bytes as the input of `section-lint server` (tools/section-lint/
// server.cpp): Content-Length framing, JSON-RPC, and every method's params, with documents
// linted for a signature so hover expands them, their fixes offered as the fix-all action, and
// each open and save asks the compile worker (a stand-in check: the compiler is not run here)
// for a check. It must never crash, hang or read
// out of bounds, and everything it writes must be framed JSON (one message per Content-Length).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "section/codes.hpp"
#include "section/lint.hpp"
#include "section/signature.hpp"
#include "server.hpp"

namespace {

lint_server::Findings lint(std::string const& path, std::string const& text) {
  lint_server::Findings found;
  found.op.inputs = section::parse_type_list("float64[:],float64[:]", "input");
  found.op.outputs = section::parse_type_list("float64[:]", "output");
  section::LintOptions options;
  options.op = found.op;
  found.diagnostics = section::lint_text(found.sm, text, path, options);
  // Every fix as the fix-all action's edits, overlapping and unsafe ones too (section-lint
  // keeps the safe ones that do not overlap): the action must cope with any range it is given.
  for (auto const& d : found.diagnostics)
    if (d.fix) found.fix_all.push_back(*d.fix);
  return found;
}

/// A compile check without a compiler: one error at the start of the text.
lint_server::Compiled check(std::string const& path, std::string const& text, std::string const&) {
  lint_server::Compiled compiled;
  compiled.sm.add(path, text);
  compiled.diagnostics.push_back(
      section::make_diagnostic(section::compile_error, "stand-in", section::SourceRange{0, 0, 0}));
  return compiled;
}

/// Aborts unless `out` is a sequence of `Content-Length: N\r\n\r\n` + N bytes of JSON.
void check_framed(std::string const& out) {
  std::size_t at = 0;
  while (at < out.size()) {
    std::string_view const rest = std::string_view(out).substr(at);
    constexpr std::string_view header = "Content-Length: ";
    if (!rest.starts_with(header)) std::abort();
    auto const end = rest.find("\r\n\r\n");
    if (end == std::string_view::npos) std::abort();
    std::size_t const length = std::stoul(std::string(rest.substr(header.size(), end)));
    if (end + 4 + length > rest.size()) std::abort();
    if (!nlohmann::json::accept(rest.substr(end + 4, length))) std::abort();
    at += end + 4 + length;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<char const*>(data), size));
  std::ostringstream out;
  int const status = lint_server::serve(lint, check, in, out);
  if (status != 0 && status != 1) std::abort();
  check_framed(out.str());
  return 0;
}
