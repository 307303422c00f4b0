// A diagnostic with its location resolved, as Python sees it (no SourceManager needed).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "section/diagnostic.hpp"

namespace section::python {

struct DiagnosticRecord {
  std::string code, severity, message;
  std::optional<std::string> filename;
  std::size_t line = 0, column = 0, end_line = 0, end_column = 0;
  std::vector<std::string> notes;
  std::optional<std::string> fix, replacement;
  std::string text;  // rendered in clang style
};

DiagnosticRecord make_record(Diagnostic const& d, SourceManager const& sm);
std::vector<DiagnosticRecord> make_records(std::vector<Diagnostic> const& ds,
                                           SourceManager const& sm);

}  // namespace section::python
