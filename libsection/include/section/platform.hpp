// Everything libsection asks of the operating system that is Linux-specific, in one place: a
// macOS or Windows port reimplements these functions (src/base/platform.cpp) and nothing else
// that names /proc. The rest of the library uses POSIX (openat, O_NOFOLLOW, flock, posix_spawn,
// dlopen), which macOS also has; Windows needs more (README, "Platforms").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace section::platform {

/// A path that opens the file behind descriptor `fd` of this process, whatever its name now
/// (`/proc/self/fd/N`): the loader dlopens a verified module through it.
std::string descriptor_path(int fd);

/// Gives the file behind descriptor `fd` the name `name` in directory `dir_fd` as well (a hard
/// link, through `descriptor_path`): the same bytes, whatever its first name now. False with
/// `errno` set when the file system refuses.
bool link_descriptor(int fd, int dir_fd, std::string const& name);

/// The names of the symbols a shared library (`image`, its bytes) leaves for the dynamic loader
/// to find elsewhere (ELF's undefined dynamic symbols); nothing when `image` is not a library
/// this reader understands.
std::optional<std::vector<std::string>> undefined_symbols(std::string_view image);

/// Names this process's pid namespace (`pid:[4026531836]`), "?" when the system has none: a
/// lock holder's pid means something only to processes in the same namespace.
std::string pid_namespace();

/// Whether process `pid` is stopped (SIGSTOP, a debugger); false when unknown.
bool is_stopped(long pid);

/// A descriptor that becomes readable when the child process `pid` ends (Linux's pidfd), so a
/// wait can sleep until then or a deadline; -1 when the system has none (the caller then polls).
int process_descriptor(long pid);

/// The CPU's model and feature flags, what `-march=native` resolves from (empty when unknown).
std::string cpu_description();

}  // namespace section::platform
