// Internal: small file helpers for the linker (whole-file reads, atomic writes, temp names).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace section {

/// The file's bytes, or nothing when it cannot be opened.
std::optional<std::string> read_file(std::filesystem::path const& path);
/// Writes to a temporary file beside `path`, then renames it over `path` (mode 0600).
void write_file_atomic(std::filesystem::path const& path, std::string const& data);
/// A name in `dir` no other process or thread uses: `<stem>.<pid>.<counter>.<random>`.
std::filesystem::path unique_temp_path(std::filesystem::path const& dir, std::string const& stem);

}  // namespace section
