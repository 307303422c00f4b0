#include "watch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

namespace lint_watch {
namespace {

volatile std::sig_atomic_t stop_signal = 0;

extern "C" void on_stop(int signal) { stop_signal = signal; }

/// What a file looks like to the poll. A file rewritten within the clock's resolution keeps
/// its times and often its size: one modified in the last seconds is also known by a hash of
/// its content (a rename over it gives it another inode, a `touch` back a new ctime).
struct Stamp {
  bool exists = false;
  std::uint64_t inode = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::int64_t size = 0;
  std::optional<std::size_t> content;  ///< for a file modified lately
  bool operator==(Stamp const& o) const {
    return exists == o.exists && inode == o.inode && mtime_ns == o.mtime_ns &&
           ctime_ns == o.ctime_ns && size == o.size &&
           (!content || !o.content || *content == *o.content);
  }
};

using Stamps = std::map<std::string, Stamp>;

std::int64_t nanoseconds(struct timespec const& t) {
  return std::int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

/// A hash of a regular file's content, read without blocking (a FIFO is not opened for it).
std::optional<std::size_t> content_hash(std::string const& path) {
  int const fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  std::string text;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (std::int64_t{64} << 20)) {
    char chunk[65536];
    for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;)
      text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return std::hash<std::string>{}(text);
}

Stamps stamps(std::vector<std::string> const& paths) {
  Stamps out;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::int64_t const lately = nanoseconds(now) - std::int64_t{2'000'000'000};
  for (auto const& path : paths) {
    struct stat st {};
    Stamp& s = out[path];
    if (::stat(path.c_str(), &st) != 0) continue;
    s = {true,
         std::uint64_t(st.st_ino),
         nanoseconds(st.st_mtim),
         nanoseconds(st.st_ctim),
         std::int64_t(st.st_size),
         std::nullopt};
    if (std::max(s.mtime_ns, s.ctime_ns) >= lately) s.content = content_hash(path);
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
