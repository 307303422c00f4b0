#include "watch.hpp"

#include <sys/stat.h>

#include <csignal>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <thread>

namespace lint_watch {
namespace {

volatile std::sig_atomic_t stop_signal = 0;

extern "C" void on_stop(int signal) { stop_signal = signal; }

/// What a file looks like to the poll. A file rewritten within the clock's resolution keeps
/// its time, so the size counts too.
struct Stamp {
  bool exists = false;
  std::int64_t mtime_ns = 0;
  std::int64_t size = 0;
  bool operator==(Stamp const&) const = default;
};

using Stamps = std::map<std::string, Stamp>;

Stamps stamps(std::vector<std::string> const& paths) {
  Stamps out;
  for (auto const& path : paths) {
    struct stat st {};
    Stamp& s = out[path];
    if (::stat(path.c_str(), &st) != 0) continue;
    s = {true, std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
         std::int64_t(st.st_size)};
  }
  return out;
}

/// The files that changed, appeared or went away between two polls.
std::vector<std::string> changes(Stamps const& before, Stamps const& after) {
  std::vector<std::string> out;
  for (auto const& [path, s] : after) {
    auto const it = before.find(path);
    if (it == before.end() ? s.exists : !(it->second == s)) out.push_back(path);
  }
  for (auto const& [path, s] : before)
    if (s.exists && !after.count(path)) out.push_back(path);
  return out;
}

std::string clock_time() {
  std::time_t const now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &local);
  return text;
}

/// The findings of the files whose findings changed; a file that became clean says so.
void print_changed(Report const& before, Report const& after) {
  for (auto const& [path, text] : after.findings) {
    auto const it = before.findings.find(path);
    if (it != before.findings.end() && it->second == text) continue;
    if (!text.empty()) std::cout << text;
    else if (it != before.findings.end() && !path.empty()) std::cout << path << ": no findings\n";
  }
  std::cout.flush();
}

std::string count(std::size_t n, char const* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

/// Sleeps for `interval` unless a stop signal arrives first.
void nap(std::chrono::milliseconds interval) {
  auto const slice = std::chrono::milliseconds(50);
  for (auto left = interval; left.count() > 0 && !stop_signal; left -= slice)
    std::this_thread::sleep_for(std::min(left, slice));
}

}  // namespace

void watch(std::function<Report()> const& lint,
           std::function<std::vector<std::string>()> const& watched,
           std::chrono::milliseconds interval, bool quiet) {
  struct sigaction action {};
  action.sa_handler = on_stop;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  auto status = [&](std::string const& line) {
    if (!quiet) std::cerr << "[" << clock_time() << "] " << line << std::endl;
  };
  auto report_status = [&](Report const& r) {
    if (!r.error.empty()) status("section-lint: " + r.error + " (fix it and save: watching on)");
    else
      status("Found " + count(r.diagnostics, "diagnostic") +
             "; watching for changes (Ctrl-C to stop)");
  };

  // Stamped before linting, so a save during the run is seen by the next poll.
  Stamps seen = stamps(watched());
  Report last = lint();
  print_changed({}, last);
  report_status(last);
  while (!stop_signal) {
    nap(interval);
    if (stop_signal) break;
    Stamps now = stamps(watched());
    auto const changed = changes(seen, now);
    if (changed.empty()) continue;
    seen = std::move(now);
    status(changed.size() == 1 ? changed.front() + " changed"
                               : count(changed.size(), "file") + " changed");
    Report next = lint();
    print_changed(last, next);
    report_status(next);
    last = std::move(next);
  }
  if (!quiet)
    std::cerr << "\nsection-lint: stopped watching ("
              << (stop_signal == SIGINT ? "Ctrl-C" : "SIGTERM") << "); the last run found "
              << count(last.diagnostics, "diagnostic") << "\n";
}

}  // namespace lint_watch
