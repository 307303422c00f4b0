// Generating the C++ source of a module for one or more applies, laid out as PyTensor's CLinker
// lays it out: the C struct with storage cells, nested blocks, `__label_N` cleanup labels and a
// `__failure` code.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
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

/// Bumped whenever the layout of generated modules or their exported functions change.
inline constexpr int module_abi_version = 4;

/// Stands for the suffix of a graph's own symbols until its module is laid out: nothing in a
/// module of one graph, `_<k>` for graph k of a module of several (`generate_batch`).
inline constexpr char const* member_placeholder = "<<<<MEMBER_PLACEHOLDER>>>>";

/// What the namespace of each graph's C++ code in a module of several starts with (the graph's
/// number follows).
inline constexpr char const* graph_namespace_prefix = "libsection_graph_";

/// The symbols' suffix of graph `graph` in a library of `graphs` graphs (see `ModuleSource`).
std::string graph_suffix(int graph, int graphs);

/// What a module of several graphs (`generate_batch`) takes from the module of one of them:
/// its include lines and support code (shared by the graphs, duplicates dropped, as PyTensor's
/// CLinker drops them), and the rest of its text, named, with `member_placeholder` where its
/// symbols take their suffix.
struct ModuleMember {
  std::vector<std::string> includes;
  std::vector<std::string> support;
  std::string body;
};

/// A generated module. Its exported C functions (all `extern "C"`):
///   `int libsection_abi_version(void)`
///   `PyObject* libsection_module_init(const void* runtime)`  (the `libsection_runtime` table;
///       returns a borrowed `Py_None`, or NULL with an exception)
/// and for each of its graphs, their names ending in the graph's suffix (`graph_suffix`):
///   `PyObject* libsection_init(void)`  (the graph's init code, run once per process before its
///       first instance; returns a borrowed `Py_None`, or NULL with an exception)
///   `void* libsection_instance_new(PyObject** storage)`  (cells: inputs, outputs, constants)
///   `int libsection_instance_run(void*)`  (0, or a failure code with an exception set)
///   `void libsection_instance_free(void*)`
/// Each storage cell is a one-element list, as in PyTensor's CLinker.
struct ModuleSource {
  std::string text;
  std::string name;  ///< `m<sha256>` of the text before naming, substituted for the placeholders
  std::vector<std::string> header_dirs;
  std::vector<std::string> libraries;
  std::vector<std::string> lib_dirs;
  std::vector<std::string> compile_args;
  std::vector<std::string> op_names;
  std::vector<std::string> input_types, output_types;  ///< `describe()` of each, for messages
  /// What the text is compiled as: C only when every op of the graph is declared C and the
  /// text is C (it then starts with `module_prelude` and `c_module_prelude`); part of the key.
  Language language = Language::cxx;
  /// How many graphs the module holds: 1, or more for `generate_batch`'s.
  int graphs = 1;
  /// A module nothing outside needs a symbol of but its entry points (`whole_program_text`, no
  /// library linked, no LTO, no flag including a file): GCC compiles it with `-fwhole-program`,
  /// so the op's functions are compiled once, where they are called, and not a second time on
  /// their own. Part of the key.
  bool whole_program = false;
  /// A module of one graph: what `generate_batch` takes of it.
  ModuleMember member;
};

/// What every module starts with (also the precompiled header): Python, NumPy's C API, and the
/// glue every variable of a type shares, written once per module instead of once per variable
/// (a module's size, and so its compile time, grows with its inputs only by their calls).
inline constexpr char const* module_prelude =
    "#define PY_SSIZE_T_CLEAN\n"
    // libstdc++'s <cmath> (which Python.h includes) instantiates the templates of C++17's
    // special math functions (std::cyl_bessel_j, ...) in every file: a third of a small
    // module's compile. A module that cannot use them leaves them out (`no_special_math_flag`).
    // Python.h's configuration comes first, as Python.h itself has it.
    "#if defined(__cplusplus) && defined(LIBSECTION_NO_SPECIAL_MATH)\n"
    "#include <pyconfig.h>\n#include <cstddef>\n#undef _GLIBCXX_USE_STD_SPEC_FUNCS\n#endif\n"
    "#include <Python.h>\n"
    "#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION\n#include <numpy/arrayobject.h>\n"
    // What C++ modules have always had (ops may rely on it), in the precompiled header: parsed
    // in each module's compile it cost 10% of a small one.
    "#ifdef __cplusplus\n#include <exception>\n#endif\n"
    "#ifndef LIBSECTION_PRELUDE\n#define LIBSECTION_PRELUDE\n"
    // 0 when `py` is an aligned array of `typenum` (native byte order) with `ndim` dimensions;
    // otherwise -1 with a TypeError that starts with `want` ("input 0: expected a ...").
    // PyArray_EquivTypenums ignores byte order: a '>f8' array would pass as float64 and be read
    // as garbage, so non-native byte order is refused too.
    "static __attribute__((unused)) int libsection_check_tensor(PyObject* py, int typenum, int "
    "ndim,\n"
    "                                                          const char* want,\n"
    "                                                          const char* label) {\n"
    "  if (!PyArray_Check(py)) {\n"
    "    PyErr_Format(PyExc_TypeError, \"%s, got %s\", want, Py_TYPE(py)->tp_name);\n"
    "    return -1;\n"
    "  }\n"
    "  PyArrayObject* a = (PyArrayObject*)py;\n"
    "  int const same = PyArray_NDIM(a) == ndim && PyArray_EquivTypenums(PyArray_TYPE(a), "
    "typenum);\n"
    "  if (!same || PyArray_ISBYTESWAPPED(a)) {\n"
    "    PyObject* got_dtype = PyObject_Str((PyObject*)PyArray_DESCR(a));\n"
    "    char const* got = got_dtype ? PyUnicode_AsUTF8(got_dtype) : \"?\";\n"
    "    if (same)\n"
    "      PyErr_Format(PyExc_TypeError, \"%s, got a %d-d %s array in non-native byte order; "
    "convert it with a.astype(a.dtype.newbyteorder('='))\", want, PyArray_NDIM(a), got);\n"
    "    else\n"
    "      PyErr_Format(PyExc_TypeError, \"%s, got a %d-d %s array\", want, PyArray_NDIM(a), "
    "got);\n"
    "    Py_XDECREF(got_dtype);\n"
    "    return -1;\n"
    "  }\n"
    "  if (!PyArray_ISALIGNED(a)) {\n"
    "    PyErr_Format(PyExc_TypeError, \"%s: the array's data is not aligned for its dtype\", "
    "label);\n"
    "    return -1;\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    // PyTensor's TensorType glue (its code version 11), for the types of drop-in nodes: its
    // checks, exception types and messages exactly, written once here. `libsection_pt_extract`
    // is its c_extract's check of `py` against `typenum` (`typenum_name` is the NPY_ macro's
    // name, which its messages quote); `libsection_pt_sync` its c_sync, `*py` becoming `value`.
    "static __attribute__((unused)) void libsection_pt_shape(PyArrayObject* a, long int "
    "out[6]) {\n"
    "  int const n = PyArray_NDIM(a);\n"
    "  for (int i = 0; i < 3; ++i) {\n"
    "    out[i] = n >= 3 - i ? (long int)PyArray_DIMS(a)[n - 3 + i] : -1;\n"
    "    out[3 + i] = n >= 3 - i ? (long int)PyArray_STRIDES(a)[n - 3 + i] : -1;\n"
    "  }\n"
    "}\n"
    "static __attribute__((noinline, unused)) int libsection_pt_extract(PyObject* py, int "
    "typenum,\n"
    "                                                                  const char* typenum_name) "
    "{\n"
    "  if (py == Py_None) {\n"
    "    PyErr_SetString(PyExc_ValueError, \"expected an ndarray, not None\");\n"
    "    return -1;\n"
    "  }\n"
    "  if (!PyArray_Check(py)) {\n"
    "    PyErr_SetString(PyExc_ValueError, \"expected an ndarray\");\n"
    "    return -1;\n"
    "  }\n"
    "  PyArrayObject* a = (PyArrayObject*)py;\n"
    "  if (!PyArray_ISALIGNED(a)) {\n"
    "    long int s[6];\n"
    "    libsection_pt_shape(a, s);\n"
    "    PyErr_Format(PyExc_NotImplementedError, \"expected an aligned array of type %ld (%s), got "
    "non-aligned array of type %ld with %ld dimensions, with 3 last dims %ld, %ld, %ld and 3 last "
    "strides %ld %ld, %ld.\", (long int)typenum, typenum_name, (long int)PyArray_TYPE(a), (long "
    "int)PyArray_NDIM(a), s[0], s[1], s[2], s[3], s[4], s[5]);\n"
    "    return -1;\n"
    "  }\n"
    "  if (PyArray_TYPE(a) != typenum) {\n"
    "    PyErr_Format(PyExc_TypeError, \"expected type_num %d (%s) got %d\", typenum, "
    "typenum_name, PyArray_TYPE(a));\n"
    "    return -1;\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    "static __attribute__((noinline, unused)) int libsection_pt_sync(PyObject** py, "
    "PyArrayObject* value) {\n"
    "  Py_XDECREF(*py);\n"
    "  if (!value) {\n"
    "    Py_INCREF(Py_None);\n"
    "    *py = Py_None;\n"
    "  } else if ((void*)*py != (void*)value) {\n"
    "    *py = (PyObject*)value;\n"
    "  }\n"
    "  Py_XINCREF(*py);\n"
    "  if (value && !PyArray_ISALIGNED(value)) {\n"
    "    long int s[6];\n"
    "    libsection_pt_shape(value, s);\n"
    "    PyErr_Format(PyExc_NotImplementedError, \"c_sync: expected an aligned array, got "
    "non-aligned array of type %ld with %ld dimensions, with 3 last dims %ld, %ld, %ld and 3 last "
    "strides %ld %ld, %ld.\", (long int)PyArray_TYPE(value), (long int)PyArray_NDIM(value), s[0], "
    "s[1], s[2], s[3], s[4], s[5]);\n"
    "    return -1;\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    // Reference counting in the glue: inline, or in a module with many variables (where
    // LIBSECTION_OUTLINE_REFS is 1) calls, since GCC's time on one function of thousands of
    // inline branches grows faster than the function.
    "static __attribute__((noinline, unused)) void libsection_incref(PyObject* o) {\n"
    "  Py_INCREF(o);\n"
    "}\n"
    "static __attribute__((noinline, unused)) void libsection_xdecref(PyObject* o) {\n"
    "  Py_XDECREF(o);\n"
    "}\n"
    "#define LIBSECTION_INCREF(o) \\\n"
    "  (LIBSECTION_OUTLINE_REFS ? libsection_incref((PyObject*)(o)) : Py_INCREF(o))\n"
    "#define LIBSECTION_XDECREF(o) \\\n"
    "  (LIBSECTION_OUTLINE_REFS ? libsection_xdecref((PyObject*)(o)) : Py_XDECREF(o))\n"
    // The runtime (see `runtime_source`): the glue of the built-in types, built with the
    // Python package and reached through this table, which `libsection_module_init` receives. A
    // module's node table has one `libsection_var` per variable the runtime handles: its kind
    // (`RuntimeVar::Kind`), NumPy type number, dimensions (arrays) or item size (scalars), and
    // the two strings its messages quote. `value` points at the variable's C value.
    "typedef struct libsection_var {\n"
    "  int kind, typenum, n;\n"
    "  const char* a;\n"
    "  const char* b;\n"
    "} libsection_var;\n"
    "typedef struct libsection_runtime {\n"
    "  int abi;\n"
    "  int (*extract)(PyObject* cell, PyObject** py, void* value, const libsection_var* var);\n"
    "  int (*extract_output)(PyObject* cell, PyObject** py, void* value,\n"
    "                        const libsection_var* var);\n"
    "  void (*init)(PyObject** py, void* value, const libsection_var* var);\n"
    "  int (*store_output)(PyObject* cell, PyObject** py, void* value, const libsection_var* "
    "var,\n"
    "                      int failed);\n"
    "  void (*cleanup)(PyObject** py, void* value, const libsection_var* var);\n"
    // Sets the Python error for the C++ exception being handled (called inside a `catch`).
    "  void (*set_cxx_error)(const char* where);\n"
    "  void** numpy_api;\n"
    "  int numpy_version;\n"
    // A value from its object, as `extract` converts an input's (params fields use it).
    "  int (*convert)(PyObject* py, void* value, const libsection_var* var);\n"
    // A plain instance (a module's without constants or struct code) is only its cells: made
    // and freed here, not by code compiled in every module.
    "  void* (*new_cells)(PyObject** storage, int n);\n"
    "  void (*free_cells)(void* instance, int n);\n"
    "} libsection_runtime;\n"
    // A module takes NumPy's API table from the runtime, which imported it: the running NumPy's
    // table, whichever NumPy headers either was compiled with.
    "#if NPY_ABI_VERSION >= 0x02000000\n"
    "#define LIBSECTION_USE_RUNTIME_NUMPY(rt) \\\n"
    "  (PyArray_API = (rt)->numpy_api, PyArray_RUNTIME_VERSION = (rt)->numpy_version)\n"
    "#else\n"
    "#define LIBSECTION_USE_RUNTIME_NUMPY(rt) (PyArray_API = (rt)->numpy_api)\n"
    "#endif\n"
    // So `import_array()`, which PyTensor's TensorType puts in every module's init code, has
    // nothing left to import when it runs: NumPy's `_import_array` it expands to was 15% of a
    // small module's compile. A block, as NumPy's is, so a call without `;` still compiles.
    "#undef import_array\n"
    "#define import_array() {}\n"
    "#endif\n";

/// The runtime's C++ source (valid C too): the prelude, the functions of `libsection_runtime`,
/// `libsection_abi_version` and `libsection_runtime_table`. The Python package compiles it into
/// `libsection/_runtime.so` (python/CMakeLists.txt); its loader loads it once per process, and
/// every module's `libsection_module_init` gets the table.
std::string runtime_source();

/// The compile flag of a C++ module that cannot use C++17's special math functions (see
/// `module_prelude`): no code of it names one, includes a header outside the standard library
/// (which could) or has its flags include a file. Part of the module's key and of its
/// precompiled header's flags.
inline constexpr char const* no_special_math_flag = "-DLIBSECTION_NO_SPECIAL_MATH";

/// Whether a C++ module with this text and these compile flags may use C++17's special math
/// functions (`no_special_math_flag`).
bool may_use_special_math(std::string_view text, std::vector<std::string> const& compile_args);

/// Whether the code of a module (its support code and graph text, not the prelude) leaves
/// every symbol but the entry points to the module: it names no `asm` (which may name a symbol
/// the compiler cannot see used) and sets no `visibility` (a symbol meant to be seen outside).
bool whole_program_text(std::string_view text);

/// The compiler flag of a `ModuleSource::whole_program` module (GCC only; clang ignores it).
inline constexpr char const* whole_program_flag = "-fwhole-program";

/// What a module compiled as C has after `module_prelude`: `bool`, `true` and `false`, which
/// PyTensor's C code uses (C++ has them built in; C before C23 from this header).
inline constexpr char const* c_module_prelude = "#include <stdbool.h>\n";

/// The name `#line` directives give the module's own source (its path is only known when it is
/// compiled, and must not change the text); compile errors there are mapped to the kept file.
inline constexpr char const* module_file_name = "<libsection-module>";

/// Stands for the module's name until it is known; `APPLY_SPECIFIC` suffixes use it.
inline constexpr char const* hash_placeholder = "<<<<HASH_PLACEHOLDER>>>>";

/// Generates the module. Throws `LinkError` (from an op) or `std::invalid_argument` (bad graph).
ModuleSource generate_module(Graph const& graph);

/// Whether the modules of two graphs can share one library: the same language, flags, header
/// and library directories and libraries.
bool can_share_library(ModuleSource const& a, ModuleSource const& b);

/// One module holding the graphs of `members` (modules of one graph each, which
/// `can_share_library`), graph k with the symbols' suffix `_k`: one compile and one link for
/// all of them. Their support code is shared, duplicates dropped. Throws
/// `std::invalid_argument` for fewer than two members or members that cannot share.
ModuleSource generate_batch(std::vector<ModuleSource const*> const& members);

}  // namespace section
