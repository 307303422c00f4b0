// Everything libsection asks of the operating system that is Linux-specific, in one place: a
// macOS or Windows port reimplements these functions (src/base/platform.cpp) and nothing else
// that names /proc. The rest of the library uses POSIX (openat, O_NOFOLLOW, flock, posix_spawn,
// dlopen), which macOS also has; Windows needs more (README, "Platforms").
#pragma once

#include <string>

namespace section::platform {

/// A path that opens the file behind descriptor `fd` of this process, whatever its name now
/// (`/proc/self/fd/N`): the loader dlopens a verified module through it.
std::string descriptor_path(int fd);

/// Names this process's pid namespace (`pid:[4026531836]`), "?" when the system has none: a
/// lock holder's pid means something only to processes in the same namespace.
std::string pid_namespace();

/// Whether process `pid` is stopped (SIGSTOP, a debugger); false when unknown.
bool is_stopped(long pid);

/// The CPU's model and feature flags, what `-march=native` resolves from (empty when unknown).
std::string cpu_description();

}  // namespace section::platform
