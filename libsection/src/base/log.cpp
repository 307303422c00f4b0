#include "section/log.hpp"

#include <cstdio>
#include <memory>
#include <mutex>

namespace section {
namespace {

std::mutex sink_mutex;
std::shared_ptr<LogSink const> current_sink;  // null: stderr

// Notices only: DEBUG records are for a sink that asks for them (Python's `logging`).
void to_stderr(LogRecord const& record) {
  if (record.level == LogLevel::debug) return;
  std::fprintf(stderr, "libsection: %s\n", record.message.c_str());
}

}  // namespace

void set_log_sink(LogSink sink) {
  auto replacement = sink ? std::make_shared<LogSink const>(std::move(sink)) : nullptr;
  std::lock_guard<std::mutex> guard(sink_mutex);
  current_sink = std::move(replacement);
}

void log_record(LogLevel level, std::string message, double seconds) {
  std::shared_ptr<LogSink const> sink;
  {
    std::lock_guard<std::mutex> guard(sink_mutex);
    sink = current_sink;
  }
  LogRecord const record{level, std::move(message), seconds};
  // Called outside the lock: a sink may block (Python's, on the GIL).
  if (sink) (*sink)(record);
  else to_stderr(record);
}

}  // namespace section
