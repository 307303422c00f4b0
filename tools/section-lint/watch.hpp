// `section-lint --watch`: lint, then lint again whenever a watched file changes, printing only the
// files whose findings changed, until Ctrl-C (or SIGTERM).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace lint_watch {

/// What one lint run found, file by file.
struct Report {
  /// Each linted file's rendered findings; an empty text means the file is clean.
  std::map<std::string, std::string> findings;
  std::size_t diagnostics = 0;  ///< how many findings in all
  /// Why nothing could be linted (a settings file that cannot be read); empty when linted.
  std::string error;
};

/// Runs `lint` now and again whenever one of the files `watched()` names changes, appears or
/// goes away (it is asked anew at every poll, so files new in a watched folder count). Polls
/// every `interval`. Findings go to stdout, status lines to stderr (none with `quiet`). Returns
/// when SIGINT or SIGTERM arrives, after saying so on stderr.
void watch(std::function<Report()> const& lint,
           std::function<std::vector<std::string>()> const& watched,
           std::chrono::milliseconds interval, bool quiet);

}  // namespace lint_watch
