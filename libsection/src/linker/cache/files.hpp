// Internal: small file helpers for the linker (whole-file reads, unique names).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace section {

/// The file's bytes, or nothing when it cannot be opened. For files outside the cache
/// (compiler output, /proc); the cache's own files go through `PrivateDir`.
std::optional<std::string> read_file(std::filesystem::path const& path);
/// A name no other process or thread uses: `<stem>.<pid>.<counter>.<random>`.
std::string unique_name(std::string const& stem);

}  // namespace section
