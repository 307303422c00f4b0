// The parser's entry points: scan, judge, then merge the blocks of all files into sections.
#include <algorithm>
#include <unordered_map>

#include "parse/checks.hpp"
#include "parse/read.hpp"
#include "parse/scan.hpp"

namespace section {

namespace {

std::string_view body_text(SourceManager const& sm, Block const& b) {
  auto const& text = sm.file(b.body.file).text();
  return std::string_view(text).substr(b.body.begin, b.body.end - b.body.begin);
}

Section& section_for(SectionSet& set, std::string const& tag) {
  for (auto& s : set.sections)
    if (s.tag == tag) return s;
  set.sections.push_back({tag, {}, {}});
  return set.sections.back();
}

// Repeated `#section` blocks concatenate in order within and across files; legacy markers
// assign (a later block replaces). Blocks of unknown tags are left out.
void merge_blocks(SourceManager const& sm, std::vector<detail::ScannedFile> const& files,
                  std::vector<std::string> const& extra_tags, SectionSet& set) {
  // Each section's text is allocated once at its final size: growing it block by block would
  // touch (and page-fault) about twice the memory on large files.
  std::unordered_map<std::string, std::size_t> section_sizes;
  for (auto const& f : files)
    if (f.parsed.style == MarkerStyle::section || f.parsed.style == MarkerStyle::mixed)
      for (auto const& b : f.parsed.blocks) section_sizes[b.tag] += b.body.end - b.body.begin;

  for (auto const& f : files) {
    auto const& p = f.parsed;
    if (p.style == MarkerStyle::legacy) {
      for (auto const& b : p.blocks) {
        auto& s = section_for(set, b.tag);
        s.text.assign(body_text(sm, b));
        s.blocks.assign(1, b);
      }
    } else if (p.style == MarkerStyle::section || p.style == MarkerStyle::mixed) {
      for (auto const& b : p.blocks) {
        if (!is_section_tag(b.tag, extra_tags)) continue;
        auto& s = section_for(set, b.tag);
        if (s.text.empty()) s.text.reserve(section_sizes[b.tag]);
        s.text.append(body_text(sm, b));
        s.blocks.push_back(b);
      }
    }
  }
}

}  // namespace

ParsedFile parse_file(SourceManager const& sm, FileId file, std::vector<Diagnostic>& diagnostics,
                      std::vector<std::string> const& extra_tags) {
  auto scanned = detail::scan_file(sm, file);
  detail::check_file(sm, scanned, extra_tags, diagnostics);
  return std::move(scanned.parsed);
}

Section const* SectionSet::find(std::string_view tag) const {
  auto const it = std::find_if(sections.begin(), sections.end(),
                               [&](Section const& s) { return s.tag == tag; });
  return it == sections.end() ? nullptr : &*it;
}

SectionSet merge_sections(SourceManager const& sm, std::vector<FileId> const& files,
                          std::vector<Diagnostic> diagnostics,
                          std::vector<std::string> const& extra_tags) {
  SectionSet set;
  set.files = files;
  set.diagnostics = std::move(diagnostics);
  auto const judged_from = set.diagnostics.size();  // those given were judged by the reader
  std::vector<detail::ScannedFile> scanned;
  scanned.reserve(files.size());
  for (auto id : files) {
    scanned.push_back(detail::scan_file(sm, id));
    detail::check_file(sm, scanned.back(), extra_tags, set.diagnostics);
  }
  detail::check_files(scanned, set.diagnostics, judged_from);
  set.error = detail::reference_error(sm, scanned, std::span(set.diagnostics).subspan(judged_from));
  merge_blocks(sm, scanned, extra_tags, set);
  return set;
}

SectionSet load_sections(SourceManager& sm, std::vector<SourceSpec> const& files,
                         std::vector<std::string> const& extra_tags) {
  std::vector<Diagnostic> diagnostics;
  std::vector<FileId> ids;
  std::optional<LoadError> read_error;
  for (auto const& spec : files) {
    auto const& shown = spec.display_path.empty() ? spec.path : spec.display_path;
    int os_errno = 0;
    auto const before = diagnostics.size();
    if (auto id = detail::read_source(sm, spec.path, shown, diagnostics, &os_errno)) {
      ids.push_back(*id);
    } else if (!read_error) {  // the reference reads every file before parsing any
      auto const failure =
          std::find_if(diagnostics.begin() + static_cast<std::ptrdiff_t>(before), diagnostics.end(),
                       [](Diagnostic const& d) { return d.is_error(); });
      read_error =
          LoadError{os_errno, failure != diagnostics.end() ? failure->message : "", spec.path};
    }
  }
  if (read_error && ids.empty()) {  // nothing to merge: "no sections" would only add noise
    SectionSet set;
    set.diagnostics = std::move(diagnostics);
    set.error = read_error;
    return set;
  }
  auto set = merge_sections(sm, ids, std::move(diagnostics), extra_tags);
  if (read_error) set.error = read_error;
  return set;
}

}  // namespace section
