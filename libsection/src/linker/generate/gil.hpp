// Internal: an op's code run without the GIL. The module writer asks for each apply: the op's
// code is read for what needs the GIL (parse/gil_uses), each call of Python's or NumPy's API in
// it is wrapped in `LIBSECTION_WITH_GIL`, and its block opens with `LIBSECTION_NOGIL_REGION`
// (both in prelude.h), so threads run it at once, as they run NumPy's loops.
#pragma once

#include <string>

#include "section/linker/generate/graph.hpp"

namespace section {

/// Rewrites `code` to run without the GIL where that is safe: its calls of the API wrapped to
/// take the GIL back around them. Returns whether it did; when not (the op or the setting
/// LIBSECTION_RELEASE_GIL says no, or its code calls what the linker cannot classify, or takes
/// or releases the GIL itself), `code` is unchanged and the reason is logged at DEBUG, once per
/// process, naming the file and line. `op_allows`: the op's own say (`release_gil`).
bool release_gil(OpCode& code, std::string const& op_name, bool op_allows);

/// What a block released by `release_gil` declares at the top of `run` (its batch's plan) and
/// starts with; `id` is the block's failure id.
std::string nogil_plan(int id);
std::string nogil_region(int id);

}  // namespace section
