// Internal: small file helpers for the linker (whole-file reads, unique names).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace section {

/// The file's bytes, or nothing when it cannot be opened. For files outside the cache
/// (compiler output, /proc); the cache's own files go through `PrivateDir`.
std::optional<std::string> read_file(std::filesystem::path const& path);
/// The SHA-256 (hex) of a regular file outside the cache (a user's header: symbolic links are
/// followed, as the compiler followed them), or nothing when it is missing, not a regular file
/// (a FIFO is not waited for) or over LIBSECTION_MAX_FILE_BYTES. `changed`: when its bytes or
/// name last changed (the later of mtime and ctime), for a build to tell a header edited while
/// it compiled.
std::optional<std::string> file_sha256(std::filesystem::path const& path,
                                       std::chrono::system_clock::time_point* changed = nullptr);
/// A name no other process or thread uses: `<stem>.<pid>.<counter>.<random>`.
std::string unique_name(std::string const& stem);

}  // namespace section
