// Small file helpers for the linker: whole-file reads and names no other process uses.
#include "linker/cache/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <random>

#include "base/hash.hpp"
#include "linker/cache/private_dir_detail.hpp"
#include "section/linker/cache/private_dir.hpp"
#include "section/settings.hpp"

namespace section {

std::optional<std::string> read_file(std::filesystem::path const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return data;
}

std::optional<std::string> file_sha256(std::filesystem::path const& path,
                                       std::chrono::system_clock::time_point* changed) {
  FileHandle const fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uintmax_t>(st.st_size) > max_file_bytes_setting())
    return std::nullopt;
  auto const bytes = detail::read_fd(fd.get(), static_cast<std::size_t>(st.st_size));
  if (!bytes) return std::nullopt;
  if (changed) {
    auto const at = [](timespec const& t) {
      return std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec)));
    };
    *changed = std::max(at(st.st_mtim), at(st.st_ctim));
  }
  return detail::sha256_hex(*bytes);
}

std::string unique_name(std::string const& stem) {
  static std::atomic<unsigned> counter{0};
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return stem + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." +
         std::to_string(rng() % 1000000007ULL);
}

}  // namespace section
