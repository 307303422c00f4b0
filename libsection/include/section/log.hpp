// Notices from the linker core (compiles, the one-time setup, lock waits, damaged cache entries).
// They go to one sink: stderr by default (the command-line tools; DEBUG records left out),
// Python's `logging` when the core runs inside libsection._core, so a notebook can capture or
// silence them.
#pragma once

#include <functional>
#include <string>

namespace section {

enum class LogLevel { debug, info, warning };

struct LogRecord {
  LogLevel level = LogLevel::info;
  std::string message;  ///< one line, without the "libsection: " prefix
  double seconds = -1;  ///< how long the reported step took; negative when not timed
};

using LogSink = std::function<void(LogRecord const&)>;

/// Replaces the sink for the whole process; an empty function restores the stderr default.
/// Called from any thread that builds, so the sink must be thread-safe.
void set_log_sink(LogSink sink);

/// Sends one record to the current sink.
void log_record(LogLevel level, std::string message, double seconds = -1);

}  // namespace section
