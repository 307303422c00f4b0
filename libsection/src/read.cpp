// Reading section files: existence, binary data, UTF-8 validity, BOM, newline normalisation.
#include <boost/filesystem.hpp>
#include <cctype>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "read.hpp"
#include "section/parse.hpp"

namespace section {

namespace {

}  // namespace

std::optional<detail::Utf8Error> detail::find_invalid_utf8(std::string_view s) {
  auto const* p = reinterpret_cast<unsigned char const*>(s.data());
  std::size_t const n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII fast path, eight bytes at a time.
    while (i + 8 <= n) {
      std::uint64_t word;
      std::memcpy(&word, p + i, 8);
      if (word & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    unsigned char const c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return Utf8Error{i, "invalid start byte"};
    }
    for (std::size_t k = 1; k < len; ++k) {
      if (i + k >= n) return Utf8Error{i, "unexpected end of data"};
      unsigned char const b = p[i + k];
      bool const ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
      if (!ok) return Utf8Error{i, "invalid continuation byte"};
    }
    i += len;
  }
  return std::nullopt;
}

namespace {

using detail::find_invalid_utf8;

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

// Offset in the normalised text of a byte offset in the raw text (each CRLF lost one byte).
std::size_t normalised_offset(std::string_view raw, std::size_t raw_offset) {
  std::size_t removed = 0;
  for (std::size_t i = 0; i + 1 < raw_offset && i + 1 < raw.size(); ++i)
    if (raw[i] == '\r' && raw[i + 1] == '\n') ++removed;
  return raw_offset - removed;
}

Diagnostic os_error(std::string const& display_path, int error, int* error_out) {
  if (error_out) *error_out = error;
  std::string what = std::strerror(error);
  if (!what.empty()) what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  Diagnostic d;
  d.code = "SL004";
  d.message = "cannot read '" + display_path + "': " + what;
  return d;
}

// The whole file. Regular files are mapped and copied once (no zero-filled buffer, no second
// copy through stdio); others (pipes, /proc) are read in chunks. errno is set on failure.
std::optional<std::string> read_bytes(std::string const& path) {
  int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    auto const size = static_cast<std::size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (map != MAP_FAILED) {
      std::string text(static_cast<char const*>(map), size);
      ::munmap(map, size);
      return text;
    }
  }
  std::string text;
  char chunk[65536];
  while (true) {
    auto const n = ::read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) return text;
    text.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace

std::optional<FileId> add_source(SourceManager& sm, std::string text,
                                 std::string const& display_path,
                                 std::vector<Diagnostic>& diagnostics) {
  auto const bad = find_invalid_utf8(text);
  auto const nul = text.find('\0');
  std::string raw;
  if (bad) raw = text;  // offsets in messages refer to the bytes as they are on disk
  normalise_newlines(text);
  auto const id = sm.add(display_path, std::move(text));

  if (bad) {
    auto const at = normalised_offset(raw, bad->offset);
    Diagnostic d;
    d.code = "SL001";
    d.message = "invalid UTF-8 (in file " + display_path + "): can't decode byte " +
                hex_byte(static_cast<unsigned char>(raw[bad->offset])) + " at byte offset " +
                std::to_string(bad->offset) + ": " + bad->reason;
    d.range = {id, at, at + 1};
    d.notes.push_back({"section files are read as UTF-8; re-save the file as UTF-8", {}});
    diagnostics.push_back(std::move(d));
    return std::nullopt;
  }
  auto const& stored = sm.file(id).text();
  if (nul != std::string::npos) {
    Diagnostic d;
    d.code = "SL003";
    d.severity = Severity::warning;
    d.message = "file contains a NUL byte at byte offset " + std::to_string(nul) +
                "; it looks like binary data, not C source";
    auto const at = stored.find('\0');
    d.range = {id, at, at + 1};
    diagnostics.push_back(std::move(d));
  }
  if (stored.starts_with("\xEF\xBB\xBF")) {
    Diagnostic d;
    d.code = "SL002";
    d.severity = Severity::warning;
    d.message =
        "file starts with a UTF-8 byte order mark (U+FEFF); the reference loaders read it as "
        "text, so the first line is not a section marker";
    d.range = {id, 0, 3};
    d.fix = FixIt{"remove the byte order mark", {id, 0, 3}, ""};
    diagnostics.push_back(std::move(d));
  }
  return id;
}

std::optional<FileId> read_source(SourceManager& sm, std::string const& path,
                                  std::string const& display_path,
                                  std::vector<Diagnostic>& diagnostics) {
  return detail::read_source(sm, path, display_path, diagnostics, nullptr);
}

std::optional<FileId> detail::read_source(SourceManager& sm, std::string const& path,
                                          std::string const& display_path,
                                          std::vector<Diagnostic>& diagnostics, int* error) {
  namespace fs = boost::filesystem;
  boost::system::error_code ec;
  auto const status = fs::status(path, ec);
  if (status.type() == fs::file_not_found) {
    diagnostics.push_back(os_error(display_path, ENOENT, error));
    return std::nullopt;
  }
  if (status.type() == fs::directory_file) {
    diagnostics.push_back(os_error(display_path, EISDIR, error));
    return std::nullopt;
  }
  auto text = read_bytes(path);
  if (!text) {
    diagnostics.push_back(os_error(display_path, errno, error));
    return std::nullopt;
  }
  return add_source(sm, std::move(*text), display_path, diagnostics);
}

}  // namespace section
