// section-lint SL6xx: checks that need the op's signature
// (--inputs/--outputs/--params/--func-name).
#include <algorithm>
#include <cctype>

#include "lint/checks.hpp"
#include "parse/checks.hpp"

namespace section::lint_detail {
namespace {

std::string without_blanks(std::string_view s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

bool may_declare_main_function(std::string_view tag) {
  // support_code_struct counts: `run()` is a member of the struct those members belong to.
  return tag == "support_code" || tag == "support_code_apply" || tag == "support_code_struct";
}

void check_arity(std::string_view name, GeneratedMacro const& m, OpDescription const& op,
                 SourceRange range, std::vector<Diagnostic>& out) {
  auto const count = arity(m.is_input ? op.inputs : op.outputs);
  if (!m.index || !count || *m.index < *count) return;
  std::string const what = m.is_input ? "input" : "output";
  std::string message = "`" + std::string(name) + "` refers to " + what + " " +
                        std::to_string(*m.index) + " but the op has " + std::to_string(*count) +
                        " " + what + (*count == 1 ? "" : "s");
  auto d = make_diagnostic("SL601", std::move(message), range);
  if (*count > 0)
    d.notes.push_back({what + " indices run from 0 to " + std::to_string(*count - 1), {}});
  out.push_back(std::move(d));
}

}  // namespace

void check_io_arity(FileView const& file, OpDescription const& op, std::vector<Diagnostic>& out) {
  for_each_macro_use(file, [&](MacroUse const& use) {  // uses out of scope are SL30x
    if (use.in_scope) check_arity(use.name, use.macro, op, use.range, out);
  });
}

void check_signature(std::span<FileView const> files, OpDescription const& op,
                     std::vector<Diagnostic>& out) {
  if (!op.func_name) return;
  std::string const func_name = without_blanks(*op.func_name);
  auto const inputs = arity(op.inputs), outputs = arity(op.outputs);
  std::optional<std::size_t> expected;
  if (inputs && outputs) expected = *inputs + *outputs + (op.has_params ? 1 : 0);

  bool found = false;
  for (auto const& file : files) {
    for (auto const& block : file.blocks) {
      if (block.block.tag == "code") {
        out.push_back(detail::code_section_with_func_name(block.block.marker, *op.func_name));
      }
      if (!may_declare_main_function(block.block.tag)) continue;
      for (auto const& decl : file_scope_declarations(file.text, block.body.tokens)) {
        bool const is_function = decl.kind == Declaration::Kind::function_definition ||
                                 decl.kind == Declaration::Kind::function_declaration;
        if (!is_function || decl.name != func_name) continue;
        found = true;
        if (!expected || !decl.parameter_count || *decl.parameter_count == *expected) continue;
        std::string message = "`" + decl.name + "` takes " + std::to_string(*decl.parameter_count) +
                              " parameters but the op calls it with " + std::to_string(*expected);
        auto d = make_diagnostic("SL603", std::move(message),
                                 {file.file, decl.parameters_begin, decl.parameters_end});
        d.notes.push_back({std::to_string(*inputs) + " inputs, " + std::to_string(*outputs) +
                               " outputs" + (op.has_params ? ", 1 params struct" : ""),
                           {}});
        out.push_back(std::move(d));
      }
    }
  }
  if (!found) {
    SourceRange where = files.empty() ? SourceRange{} : SourceRange{files.front().file, 0, 0};
    out.push_back(make_diagnostic(
        "SL602", "no section declares the main function `" + *op.func_name + "`", where));
  }
}

}  // namespace section::lint_detail
