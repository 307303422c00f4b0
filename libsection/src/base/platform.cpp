// The Linux implementation of section/platform.hpp: /proc answers each question.
#include "section/platform.hpp"

#include <unistd.h>

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
