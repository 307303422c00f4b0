// Internal: the descriptor helpers and trust checks that the cache's private directories
// (private_dir.cpp, which defines them), its locks and its entries share.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace section::detail {

/// Everything left to read from `fd` (`expected`: a size hint), or nothing on a read error.
std::optional<std::string> read_fd(int fd, std::size_t expected = 0);
/// Opens the directory `name` in `parent`, never following a symbolic link (-1: errno says).
int open_dir_at(int parent, std::string const& name);
/// Removes `name` in `parent` (a file, or a tree, depth first), never following a link.
void remove_at(int parent, std::string const& name);

/// `0755`-style text of a mode's permission bits.
std::string mode_text(mode_t mode);
/// `uid 1000`.
std::string uid_text(uid_t uid);
bool writable_by_others(struct stat const& st);
/// Why a directory of the cache cannot be trusted, with what to do about it; empty when it can.
std::string untrusted_because(std::filesystem::path const& path, struct stat const& st);
/// Throws `CacheError`: refusing to use the cache directory `path`, because `why`.
[[noreturn]] void refuse(std::filesystem::path const& path, std::string const& why);

}  // namespace section::detail
