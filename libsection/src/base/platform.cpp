// The Linux implementation of section/platform.hpp: /proc answers each question.
#include "section/platform.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include <fstream>
#include <sstream>

namespace section::platform {

namespace {

std::string read_proc(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return in ? out.str() : std::string();
}

}  // namespace

std::string descriptor_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

bool link_descriptor(int fd, int dir_fd, std::string const& name) {
  // Following the /proc link is how an unprivileged process names an open file's inode
  // (AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH).
  return ::linkat(AT_FDCWD, descriptor_path(fd).c_str(), dir_fd, name.c_str(), AT_SYMLINK_FOLLOW) ==
         0;
}

namespace {

/// A `T` at `offset` of `image`, when it lies wholly inside.
template <class T>
std::optional<T> read_at(std::string_view image, std::uint64_t offset) {
  if (offset > image.size() || image.size() - offset < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;
}

}  // namespace

std::optional<std::vector<std::string>> undefined_symbols(std::string_view image) {
  auto const header = read_at<Elf64_Ehdr>(image, 0);
  if (!header || std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 ||
      header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_shentsize != sizeof(Elf64_Shdr))
    return std::nullopt;
  auto section = [&](std::uint64_t i) {
    return read_at<Elf64_Shdr>(image, header->e_shoff + i * sizeof(Elf64_Shdr));
  };
  for (std::uint64_t i = 0; i < header->e_shnum; ++i) {
    auto const symbols = section(i);
    if (!symbols) return std::nullopt;
    if (symbols->sh_type != SHT_DYNSYM) continue;
    auto const names = section(symbols->sh_link);
    if (!names || names->sh_offset > image.size() ||
        names->sh_size > image.size() - names->sh_offset)
      return std::nullopt;
    std::string_view const strings = image.substr(names->sh_offset, names->sh_size);
    std::vector<std::string> out;
    for (std::uint64_t at = 0; at + sizeof(Elf64_Sym) <= symbols->sh_size;
         at += sizeof(Elf64_Sym)) {
      auto const symbol = read_at<Elf64_Sym>(image, symbols->sh_offset + at);
      if (!symbol) return std::nullopt;
      if (symbol->st_shndx != SHN_UNDEF || symbol->st_name == 0) continue;
      if (symbol->st_name >= strings.size()) return std::nullopt;
      std::string_view const name = strings.substr(symbol->st_name);
      out.emplace_back(name.substr(0, name.find('\0')));
    }
    return out;
  }
  return std::vector<std::string>{};  // no dynamic symbols: nothing left undefined
}

std::string pid_namespace() {
  char ns[128] = "?";
  ssize_t const n = ::readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  ns[n > 0 ? n : 1] = '\0';
  return ns;
}

bool is_stopped(long pid) {
  // The state is the field after the command name, which is in parentheses and may hold any
  // character, so it is found from the last ')'.
  std::string const stat = read_proc("/proc/" + std::to_string(pid) + "/stat");
  auto const close_paren = stat.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < stat.size() &&
         (stat[close_paren + 2] == 'T' || stat[close_paren + 2] == 't');
}

int process_descriptor(long pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
#else
  (void)pid;
  return -1;
#endif
}

std::string cpu_description() {
  std::string description;
  std::istringstream info(read_proc("/proc/cpuinfo"));
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) description += line + "\n";
    if (line.empty() && !description.empty()) break;  // the first CPU is enough
  }
  return description;
}

}  // namespace section::platform
