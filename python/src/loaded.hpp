// Sections loaded from files together with the sources they point into; shared by the bindings.
#pragma once

#include <memory>

#include "section/parse.hpp"

namespace section::python {

/// What `_core.load_sections` returns: the merged sections and the `SourceManager` their ranges
/// refer to, kept alive together (other bindings, such as the expander's, take this object).
struct LoadedSections {
  std::shared_ptr<SourceManager> sources;
  SectionSet set;
};

}  // namespace section::python
