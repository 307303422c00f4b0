// Internal: an op's code run without the GIL. The module writer asks for each apply: the op's
// code is read for what needs the GIL (parse/gil_uses), each call of Python's or NumPy's API in
// it is wrapped in `LIBSECTION_WITH_GIL`, and its block opens with `LIBSECTION_NOGIL_REGION`
// (both in prelude.h), so threads run it at once, as they run NumPy's loops.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "section/linker/generate/graph.hpp"

namespace section {

/// A call to wrap in a text: `[begin, end)`.
using WrappedCall = std::pair<std::size_t, std::size_t>;

/// What `release_gil` decided for an apply: whether its block gives the GIL up, and for each of
/// its module-wide texts (`code.library_code`, then `code.support_code`, in order) the calls to
/// wrap there, which `SharedSupport` does (those texts are shared with the module's other applies).
struct ReleasedCode {
  bool released = false;
  std::vector<std::vector<WrappedCall>> support_calls;
};

/// Rewrites `code` to run without the GIL where that is safe: its calls of the API wrapped to
/// take the GIL back around them (in its module-wide support code, by the module's
/// `SharedSupport`). When it does not (the op or the setting LIBSECTION_RELEASE_GIL says no,
/// or its code calls what the linker cannot classify, or takes or releases the GIL itself),
/// `code` is unchanged and the reason is logged at DEBUG, once per process, naming the file
/// and line. `op_allows`: the op's own say (`release_gil`).
ReleasedCode release_gil(OpCode& code, std::string const& op_name, bool op_allows);

/// The module-wide support code of a module's types and applies: each text once, in the order
/// first given (exact duplicates dropped, as PyTensor drops them), with the calls that every
/// apply giving it wraps: an apply that gives the GIL up finds its calls wrapped whichever
/// apply gave the text first (wrapped calls do nothing in code that kept the GIL).
class SharedSupport {
 public:
  void add(std::string const& text, std::vector<WrappedCall> const& calls = {});
  std::vector<std::string> texts() const;

 private:
  struct Entry {
    std::string text;
    std::set<WrappedCall> calls;
  };
  std::vector<Entry> entries_;
};

/// What a block released by `release_gil` declares at the top of `run` (its batch's plan) and
/// starts with; `id` is the block's failure id.
std::string nogil_plan(int id);
std::string nogil_region(int id);

}  // namespace section
