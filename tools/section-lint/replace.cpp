#include "replace.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include "section/source.hpp"

namespace fs = std::filesystem;

namespace lint_replace {
namespace {

/// A descriptor closed when it goes.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd const&) = delete;
  Fd& operator=(Fd const&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// What a file is: the same inode, unchanged, has the same of these.
bool same_file(struct stat const& a, struct stat const& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

/// The file `name` of folder `dir` as the linter reads it, and its status; nothing (with
/// `why` set) when it is not a regular file that can be read.
std::optional<std::string> read_text(int dir, std::string const& name, struct stat& st,
                                     std::string& why, std::string* raw = nullptr) {
  Fd file(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.fd < 0 || ::fstat(file.fd, &st) != 0) {
    why = std::string("cannot read it again: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    why = "it is no longer a regular file";
    return std::nullopt;
  }
  std::string text;
  char chunk[65536];
  for (ssize_t n; (n = ::read(file.fd, chunk, sizeof chunk)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      why = std::string("cannot read it again: ") + std::strerror(errno);
      return std::nullopt;
    }
    text.append(chunk, static_cast<std::size_t>(n));
  }
  if (raw != nullptr) *raw = text;
  section::normalise_newlines(text);
  return text;
}

/// The newline the file's first line ends with ("\r\n", "\r" or "\n"): the linter reads
/// every newline as LF, and a rewrite keeps the file's own (ruff keeps the first line's too).
std::string first_newline(std::string const& raw) {
  auto const at = raw.find_first_of("\r\n");
  if (at == std::string::npos || raw[at] == '\n') return "\n";
  return at + 1 < raw.size() && raw[at + 1] == '\n' ? "\r\n" : "\r";
}

std::string with_newlines(std::string const& text, std::string const& newline) {
  if (newline == "\n") return text;
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (char const c : text) {
    if (c == '\n') out += newline;
    else out += c;
  }
  return out;
}

bool write_all(int fd, std::string const& data) {
  for (std::size_t at = 0; at < data.size();) {
    ssize_t const n = ::write(fd, data.data() + at, data.size() - at);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    at += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::string replace_if_unchanged(std::string const& path, std::string const& linted,
                                 std::string const& fixed) {
  std::error_code ec;
  fs::path const target = fs::canonical(path, ec);  // a link's target is what is fixed
  if (ec) return "cannot find it again: " + ec.message();
  std::string const name = target.filename().string();
  Fd dir(::open(target.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0) return std::string("cannot open its folder: ") + std::strerror(errno);

  std::string why;
  struct stat read_as {};
  std::string raw;
  auto const now = read_text(dir.fd, name, read_as, why, &raw);
  if (!now) return why;
  if (*now != linted) return "it changed since it was linted";
  // A rename would leave the file's other names with the old text.
  if (read_as.st_nlink > 1) return "it has other names (hard links), which a rewrite would split";

  std::random_device random;
  // At most 255 bytes, however long the file's name.
  std::string const temporary = "." + name.substr(0, 100) + ".section-lint-" +
                                std::to_string(::getpid()) + "-" + std::to_string(random());
  mode_t const mode = read_as.st_mode & 07777;
  Fd out(::openat(dir.fd, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  mode));
  if (out.fd < 0) return std::string("cannot write beside it: ") + std::strerror(errno);
  struct Remove {
    int dir;
    std::string const& name;
    bool armed = true;
    ~Remove() {
      if (armed) ::unlinkat(dir, name.c_str(), 0);
    }
  } remove{dir.fd, temporary};
  ::fchmod(out.fd, mode);  // the file's own mode, not the umask's
  if (::fchown(out.fd, read_as.st_uid, read_as.st_gid) != 0) {
    // Not permitted (another user's file in a group-writable folder): the rename would give
    // it to us; left as it is instead.
    if (read_as.st_uid != ::geteuid()) return "it belongs to another user";
  }
  if (!write_all(out.fd, with_newlines(fixed, first_newline(raw))) || ::fsync(out.fd) != 0)
    return std::string("cannot write beside it: ") + std::strerror(errno);

  // The last check, right before the rename: the same file, unchanged, with the linted text.
  struct stat last {};
  auto const again = read_text(dir.fd, name, last, why);
  if (!again) return why;
  if (!same_file(read_as, last) || *again != linted) return "it changed since it was linted";
  if (::renameat(dir.fd, temporary.c_str(), dir.fd, name.c_str()) != 0)
    return std::string("cannot replace it: ") + std::strerror(errno);
  remove.armed = false;
  return {};
}

namespace {

std::vector<std::string> lines_of(std::string const& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

/// A unified diff of `before` → `after` as one hunk around the changed lines.
std::string unified_diff(std::string const& path, std::string const& before,
                         std::string const& after) {
  auto const a = lines_of(before), b = lines_of(after);
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  std::size_t const context = 3;
  std::size_t const from = head > context ? head - context : 0;
  std::size_t const a_end = std::min(a.size(), a.size() - tail + context);
  std::size_t const b_end = std::min(b.size(), b.size() - tail + context);
  auto range = [](std::size_t start, std::size_t count) {
    return std::to_string(count ? start + 1 : start) + "," + std::to_string(count);
  };
  std::string out = "--- " + path + "\n+++ " + path + "\n@@ -" + range(from, a_end - from) + " +" +
                    range(from, b_end - from) + " @@\n";
  for (std::size_t i = from; i < head; ++i) out += " " + a[i] + "\n";
  for (std::size_t i = head; i < a.size() - tail; ++i) out += "-" + a[i] + "\n";
  for (std::size_t i = head; i < b.size() - tail; ++i) out += "+" + b[i] + "\n";
  for (std::size_t i = a.size() - tail; i < a_end; ++i) out += " " + a[i] + "\n";
  return out;
}

}  // namespace lint_replace
