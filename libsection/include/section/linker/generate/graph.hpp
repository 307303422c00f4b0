// What a module is generated from: a graph of applies of ops, each op giving its C code for
// one apply (`COp::generate`), and the error an op or a build raises.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "section/ctype.hpp"
#include "section/diagnostic.hpp"
#include "section/expand.hpp"
#include "section/op.hpp"

namespace section {

/// What an op adds to the build of its module besides code: PyTensor's `c_headers`,
/// `c_header_dirs`, `c_libraries`, `c_lib_dirs` and `c_compile_args`. Each item is checked
/// when a module is generated (`check_header_name`, `compiler_argument_problem`) and enters
/// the module's cache key.
struct BuildFlags {
  std::vector<std::string> headers;      ///< `<x.h>` or `"x.h"`, or a bare name (gets `<>`)
  std::vector<std::string> header_dirs;  ///< searched for headers (`-I`)
  std::vector<std::string> libraries;    ///< `m` for `-lm`
  std::vector<std::string> lib_dirs;     ///< searched for libraries (`-L`, and the run path)
  std::vector<std::string> compile_args;
};

/// The C code one op contributes for one apply (the reference's `c_*` methods).
struct OpCode : ApplyCode, BuildFlags {
  /// libsection's own module-wide texts the op's code needs (a derivative's numbers and
  /// drivers), before `support_code`: the GIL's scan wraps their calls of the API, but nothing
  /// in them keeps the GIL for the op (they call Python only through the API).
  std::vector<std::string> library_code;
  std::vector<std::string> support_code;  ///< module-wide, deduplicated
  std::string code;
};

/// Raised when an op cannot produce its code, or a module cannot be built; carries diagnostics
/// when the problem has a location in a user's file.
class LinkError : public std::runtime_error {
 public:
  explicit LinkError(std::string const& message, std::vector<Diagnostic> diagnostics = {})
      : std::runtime_error(message), diagnostics_(std::move(diagnostics)) {}
  std::vector<Diagnostic> const& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

/// An op with a C implementation.
class COp {
 public:
  virtual ~COp() = default;
  /// Shown in the generated source (`// Op class <name>`) and in progress messages.
  virtual std::string name() const = 0;
  /// Throws `LinkError` when the op cannot generate code for this apply.
  virtual OpCode generate(NodeContext const& node) const = 0;
  /// What its code is written in: C++ unless the op declares C (`language = "c"`).
  virtual Language language() const { return Language::cxx; }
  /// Whether its code may run without the GIL where the linker sees that is safe (README,
  /// "Threads"); an op says no with `release_gil = False`.
  virtual bool may_release_gil() const { return true; }
};

using COpPtr = std::shared_ptr<COp const>;

/// A graph of applies, in execution order. Variables are either function inputs, outputs of an
/// apply, or constants (like params), whose values are given once per instance.
class Graph {
 public:
  std::size_t add_input(CTypePtr type, std::string label = {});
  std::size_t add_constant(CTypePtr type, std::string label = {});
  /// Adds an apply of `op` and returns the indices of its new output variables.
  std::vector<std::size_t> add_apply(COpPtr op, std::vector<std::size_t> inputs,
                                     std::vector<CTypePtr> output_types,
                                     std::optional<std::size_t> params = std::nullopt);
  /// Marks a variable as a function output (returned by a call, in the order marked).
  void add_output(std::size_t variable);

  enum class Role { input, intermediate, constant };
  struct Variable {
    CTypePtr type;
    Role role;
    std::string label;
  };
  struct Apply {
    COpPtr op;
    std::vector<std::size_t> inputs, outputs;
    std::optional<std::size_t> params;
  };

  std::vector<Variable> const& variables() const { return variables_; }
  std::vector<Apply> const& applies() const { return applies_; }
  std::vector<std::size_t> const& inputs() const { return inputs_; }
  std::vector<std::size_t> const& outputs() const { return outputs_; }
  std::vector<std::size_t> const& constants() const { return constants_; }

 private:
  std::size_t add_variable(CTypePtr type, Role role, std::string label);
  std::vector<Variable> variables_;
  std::vector<Apply> applies_;
  std::vector<std::size_t> inputs_, outputs_, constants_;
};

}  // namespace section
