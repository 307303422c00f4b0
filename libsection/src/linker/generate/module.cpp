// Module generation: storage cells, the instance struct (init/run/cleanup) with nested blocks
// and `__label_N` cleanup labels, and the exported entry points the loader calls.
#include "section/linker/generate/module.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "base/hash.hpp"
#include "base/text.hpp"
#include "linker/generate/gil.hpp"
#include "linker/generate/layout.hpp"
#include "linker/generate/prelude.h.hpp"
#include "section/names.hpp"
#include "section/settings.hpp"

namespace section {

char const* const module_prelude = embedded::prelude_h;

// ---- generation ----------------------------------------------------------------------------

namespace {

std::string run_failure(int id, std::string const& what) {
  return "{__failure = " + std::to_string(id) +
         "; if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, \"" + what +
         ": C code failed without setting a Python exception\"); goto __label_" +
         std::to_string(id) + ";}";
}

std::string init_failure(int id, std::string const& what) {
  return "{if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, \"" + what +
         ": C code failed without setting a Python exception\"); return " + std::to_string(id) +
         ";}";
}

std::string include_line(std::string const& header) {
  if (header.empty()) return {};
  if (header.front() == '<' || header.front() == '"') return "#include " + header + "\n";
  return "#include <" + header + ">\n";
}

// A run-time block: its declarations go to the top of run(); behaviour opens a nested scope
// whose cleanup (after its label) runs on success and on any failure inside it.
//
// An op's block also catches C++ exceptions (ops are compiled as C++, and one escaping an
// `extern "C"` entry point would abort the process): `on_exception` turns it into a Python
// error. When the op has no cleanup code, only its code is in the `try`, and the handler jumps
// to the label as a FAIL would. A cleanup may use variables the code declares (they share a
// scope, as in PyTensor), so then the `try` spans the whole block and the handler only records
// the failure: the op's own cleanup is skipped, the enclosing blocks' cleanups still run.
struct RunBlock {
  std::string declare, behavior, cleanup;
  int id;
  std::string on_exception = {};
};

bool is_blank_code(std::string const& code) {
  return code.find_first_not_of(" \t\r\n") == std::string::npos;
}

// `text` where the module is compiled as C++ (a module's text is valid C as well).
std::string cxx_only(std::string const& text) { return "#ifdef __cplusplus\n" + text + "#endif\n"; }

// The blocks' declarations (first in `run`), and the blocks nested in one another.
struct Nested {
  std::string declare, blocks;
};

Nested nest(std::vector<RunBlock> const& blocks) {
  std::string declare, head, tail;
  for (auto const& b : blocks) {
    declare += b.declare;
    std::string const label = "__label_" + std::to_string(b.id) + ": ;\n";
    if (b.on_exception.empty()) {
      head += "{\n" + b.behavior;
      tail = label + b.cleanup + "}\n" + tail;
    } else if (is_blank_code(b.cleanup)) {
      head += "{\n" + cxx_only("try {\n") + b.behavior +
              cxx_only("} catch (...) {\n" + b.on_exception + "goto __label_" +
                       std::to_string(b.id) + ";\n}\n");
      tail = label + b.cleanup + "}\n" + tail;
    } else {
      head += "{\n" + cxx_only("try {\n") + b.behavior;
      tail =
          label + b.cleanup + cxx_only("} catch (...) {\n" + b.on_exception + "}\n") + "}\n" + tail;
    }
  }
  return {declare, head + tail};
}

/// The module's language: C only when every op of the graph is declared C and the text is C
/// (`why_cxx`, why the text is C++, is empty); otherwise a `LinkError` for the op declared C,
/// naming why. Never a silent switch to C++.
Language module_language(Graph const& graph, std::string const& why_cxx) {
  COp const* declared_c = nullptr;
  COp const* declared_cxx = nullptr;
  for (auto const& apply : graph.applies()) {
    COp const*& first = apply.op->language() == Language::c ? declared_c : declared_cxx;
    if (!first) first = apply.op.get();
  }
  if (!declared_c) return Language::cxx;
  std::string const op = declared_c->name() + " is declared C (language = \"c\")";
  if (declared_cxx)
    throw LinkError(op + ", but its module also holds " + declared_cxx->name() +
                    ", which is C++: a module is compiled in one language, so declare them alike");
  if (!why_cxx.empty())
    throw LinkError(op + ", but its module is C++: " + why_cxx +
                    "; declare it C++ (language = \"c++\", the default) to build it");
  return Language::c;
}

/// Writes one module: gathers the parts the graph's types and ops give (in the order the
/// text lists them), then lays out the text part by part. Failure ids number the run-time
/// blocks (variables, then applies) and, separately, the init-time ones (applies, then
/// constants).
class ModuleWriter {
 public:
  explicit ModuleWriter(Graph const& graph);
  ModuleSource write() &&;

 private:
  // ---- gathering
  void add_type_parts(CType const& type);
  void add_op_parts(OpCode const& code, ReleasedCode const& gil);
  void add_build_flags(BuildFlags const& flags, std::string const& owner);
  std::string label_of(std::size_t v) const;
  // The storage cell of variable `name`: an element of the instance's `storage` array (one
  // array, not a member or a local per cell: GCC's time on a function grows with them).
  std::string cell(std::string const& name) const {
    return "storage[" + std::to_string(cell_of_.at(name)) + "]";
  }
  RunBlock variable_block(std::size_t v);
  bool fill_runtime_block(RunBlock& b, std::size_t v, Sub const& sub);
  std::string node_table() const;
  void fill_input_block(RunBlock& b, std::string const& n, CType const& type, Sub const& sub) const;
  void fill_output_block(RunBlock& b, std::string const& n, CType const& type,
                         Sub const& sub) const;
  void fill_intermediate_block(RunBlock& b, std::string const& n, CType const& type,
                               Sub const& sub) const;
  NodeContext apply_context(std::size_t a, int id, int init_id, std::string const& what) const;
  void add_apply(std::size_t a);
  void add_constant(std::size_t v);
  // ---- the text
  std::string body() const;
  std::string instance_part() const;
  bool plain_instance() const;
  std::string plain_instance_part() const;
  std::string run_body() const;
  std::string plain_instance_functions() const;
  std::string rows_function(std::string const& run) const;
  std::string batch_entry() const;
  std::string init_function() const;
  std::string cleanup_function() const;
  std::string graph_init_function() const;
  std::string instance_functions() const;
  ModuleSource named(std::string text, std::string body) &&;
  std::string why_cxx() const;

  Graph const& graph_;
  std::vector<Graph::Variable> const& vars_;
  std::vector<std::string> names_;  // `V1`, `V2`, ...: the C name of each variable
  std::vector<std::size_t>
      cells_;  // storage cells, in the order `libsection_instance_new` gets them
  std::set<std::size_t> is_output_;
  std::map<std::string, std::size_t> cell_of_;  // by C name: its index in `cells_`
  ModuleSource module_;
  // Support code: the types' first, then the ops'; exact duplicates dropped, as PyTensor does.
  std::vector<std::string> headers_, init_code_;
  SharedSupport support_;
  std::vector<RunBlock> run_blocks_;
  std::vector<RuntimeVar> runtime_vars_;  // the node table: variables whose glue is the runtime's
  // Per input and output cell, its node table entry (`&libsection_vars[k]`), which the batch
  // loop reads; whether every input and output can take a batch's rows (a batch entry).
  std::vector<std::string> cell_entries_;
  bool batchable_ = true;
  int next_id_ = 1, next_init_id_ = 1;
  std::string support_apply_, struct_members_, struct_init_, init_apply_;
  std::vector<std::string> struct_cleanups_;
  std::vector<std::string> struct_code_;  // per apply: its struct members, init and cleanup
  bool all_runtime_ = true;               // every run-time variable's glue is the runtime's
  std::string const_members_, const_init_, const_cleanup_;
};

ModuleWriter::ModuleWriter(Graph const& graph) : graph_(graph), vars_(graph.variables()) {
  if (graph.applies().empty()) throw std::invalid_argument("a module needs at least one apply");
  if (graph.outputs().empty()) throw std::invalid_argument("a module needs at least one output");
  for (std::size_t i = 0; i < vars_.size(); ++i) names_.push_back('V' + std::to_string(i + 1));
  cells_ = graph.inputs();
  cells_.insert(cells_.end(), graph.outputs().begin(), graph.outputs().end());
  cells_.insert(cells_.end(), graph.constants().begin(), graph.constants().end());
  is_output_.insert(graph.outputs().begin(), graph.outputs().end());
  for (std::size_t i = 0; i < cells_.size(); ++i) cell_of_[names_[cells_[i]]] = i;
  cell_entries_.resize(graph.inputs().size() + graph.outputs().size());
  batchable_ = !graph.inputs().empty();
}

void ModuleWriter::add_type_parts(CType const& t) {
  add_build_flags(
      {t.c_headers(), t.c_header_dirs(), t.c_libraries(), t.c_lib_dirs(), t.c_compile_args()},
      "type " + t.describe());
  for (auto const& s : t.c_support_code()) support_.add(s);
  for (auto const& c : t.c_init_code()) add_unique(init_code_, c);
}

void ModuleWriter::add_op_parts(OpCode const& code, ReleasedCode const& gil) {
  std::size_t k = 0;  // gil.support_calls: library_code's, then support_code's
  for (auto const& text : code.library_code) support_.add(text, gil.support_calls.at(k++));
  for (auto const& text : code.support_code) support_.add(text, gil.support_calls.at(k++));
  for (auto const& c : code.init_code) add_unique(init_code_, c);
}

/// `owner`'s flags, each checked (they come from users, and each becomes an argument of the
/// compiler's command or an `#include` line): a bad one throws `LinkError` naming it.
void ModuleWriter::add_build_flags(BuildFlags const& flags, std::string const& owner) {
  auto const take = [&](std::vector<std::string> const& items, char const* method,
                        std::vector<std::string>& into) {
    for (auto const& item : items) {
      if (item.empty()) continue;  // left out, as PyTensor leaves them out
      auto problem = compiler_argument_problem(item);
      // `-Wl,-rpath,DIR` splits at commas: a folder with one would pass the linker options.
      if (!problem && &into == &module_.lib_dirs && item.find(',') != std::string::npos)
        problem = "holds a comma (it is passed to the linker as -Wl,-rpath,FOLDER)";
      // A library is named as `-l` takes it: `m`, not `-lm` (which would look for `-lm`).
      if (!problem && &into == &module_.libraries && item.front() == '-')
        problem = "is a flag, not a library's name (give `m` for -lm)";
      if (problem) {
        std::string shown = bounded_quote(item, 60);
        for (char& c : shown)
          if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
        throw LinkError(owner + ": " + method + " `" + shown + "` " + *problem +
                        " (each is one argument of the compiler's command)");
      }
      add_unique(into, item);
    }
  };
  for (auto const& h : flags.headers) {
    if (h.empty()) continue;
    try {
      check_header_name(h, owner + ": c_headers");
    } catch (signature_error const& e) {
      throw LinkError(e.what());
    }
    add_unique(headers_, h);
  }
  take(flags.header_dirs, "c_header_dirs", module_.header_dirs);
  take(flags.libraries, "c_libraries", module_.libraries);
  take(flags.lib_dirs, "c_lib_dirs", module_.lib_dirs);
  take(flags.compile_args, "c_compile_args", module_.compile_args);
}

std::string ModuleWriter::label_of(std::size_t v) const {
  auto const& var = vars_[v];
  for (std::size_t i = 0; i < graph_.inputs().size(); ++i)
    if (graph_.inputs()[i] == v)
      return "input " + std::to_string(i) + (var.label.empty() ? "" : " (" + var.label + ")");
  for (std::size_t i = 0; i < graph_.outputs().size(); ++i)
    if (graph_.outputs()[i] == v) return "output " + std::to_string(i);
  return var.label.empty() ? names_[v] : var.label;
}

// ---- run(): one block per input and intermediate, then one per apply -----------------------

RunBlock ModuleWriter::variable_block(std::size_t v) {
  auto const& var = vars_[v];
  std::string const& n = names_[v];
  int const id = next_id_++;
  Sub sub{{"fail", run_failure(id, escape_for_c_string(label_of(v)))},
          {"id", std::to_string(id)},
          {"failure_var", "__failure"},
          {"label", label_of(v)}};
  RunBlock b{"PyObject* py_" + n + ";\n" + var.type->c_declare(n, sub, true), {}, {}, id};
  if (fill_runtime_block(b, v, sub)) return b;
  all_runtime_ = false;
  if (var.role == Graph::Role::input || is_output_.count(v)) batchable_ = false;  // own glue
  if (var.role == Graph::Role::input) fill_input_block(b, n, *var.type, sub);
  else if (is_output_.count(v)) fill_output_block(b, n, *var.type, sub);
  else fill_intermediate_block(b, n, *var.type, sub);
  return b;
}

namespace {

/// How a batch's row reaches a variable of this runtime kind: as an array over the row, as the
/// row's value (a scalar), or not at all (any Python object).
enum class RowForm { array, scalar, none };

RowForm row_form(RuntimeVar const& var) {
  using Kind = RuntimeVar::Kind;
  switch (var.kind) {
    case Kind::array:
    case Kind::pytensor_array:
    case Kind::pytensor_array_unchecked: return RowForm::array;
    case Kind::object: return RowForm::none;
    default: return RowForm::scalar;
  }
}

}  // namespace

// A variable of a built-in type: one call of the runtime each way, its entry of the node table
// saying what to check and the messages (the runtime always sets an exception when it fails).
// An input or output also takes a batch's rows (`__batch`, batch.c): an input the row's array or
// value, an output the row's array to write into, handed back to the runtime after the op ran.
bool ModuleWriter::fill_runtime_block(RunBlock& b, std::size_t v, Sub const& sub) {
  auto entry = vars_[v].type->runtime_var(sub, true);
  if (!entry) return false;
  std::string const& n = names_[v];
  std::string const table_entry = "&libsection_vars" + std::string(member_placeholder) + "[" +
                                  std::to_string(runtime_vars_.size()) + "]";
  std::string const args = "&py_" + n + ", &" + n + ", " + table_entry;
  std::string const id = std::to_string(b.id);
  std::string const fail = " {__failure = " + id + "; goto __label_" + id + ";}\n";
  RowForm const form = row_form(*entry);
  runtime_vars_.push_back(std::move(*entry));
  bool const input = vars_[v].role == Graph::Role::input;
  if (!input && !is_output_.count(v)) {
    b.behavior = "libsection_rt->init(" + args + ");\n";
    b.cleanup = "libsection_rt->cleanup(" + args + ");\n";
    return true;
  }
  std::size_t const c = cell_of_.at(n);
  std::string const row = "__batch->views[" + std::to_string(c) + "]";
  std::string const data = "__batch->data[" + std::to_string(c) + "]";
  if (form == RowForm::none) batchable_ = false;  // any Python object: it has no rows
  cell_entries_[c] = table_entry;
  // Each form: (as a single call has it, as a batch's row has it).
  auto either = [&](std::string const& call, std::string const& from_row) {
    if (form == RowForm::none) return call;
    return "if (!__batch) {\n" + call + "} else {\n" + from_row + "}\n";
  };
  if (input) {
    b.behavior =
        either("if (libsection_rt->extract(" + cell(n) + ", " + args + "))" + fail,
               form == RowForm::array ? "LIBSECTION_ROW_VIEW(" + n + ", " + row + ");\n"
                                      : "memcpy(&" + n + ", " + data + ", sizeof " + n + ");\n");
    b.cleanup = (form == RowForm::none ? "" : "if (!__batch) ") +
                ("libsection_rt->cleanup(" + args + ");\n");
    return true;
  }
  b.behavior = either("if (libsection_rt->extract_output(" + cell(n) + ", " + args + "))" + fail,
                      form == RowForm::array ? "LIBSECTION_ROW_VIEW(" + n + ", " + row +
                                                   ");\nPy_XINCREF(" + row + ");\n"
                                             : "memset(&" + n + ", 0, sizeof " + n + ");\n");
  b.cleanup = either("if (libsection_rt->store_output(" + cell(n) + ", " + args +
                         ", __failure)) __failure = " + id + ";\n",
                     form == RowForm::array
                         ? "if (LIBSECTION_ROW_OUTPUT(" + n + ", __batch, " + std::to_string(c) +
                               ", __failure)) __failure = " + id + ";\n"
                         : "if (!__failure) memcpy(" + data + ", &" + n + ", sizeof " + n + ");\n");
  return true;
}

std::string ModuleWriter::node_table() const {
  if (runtime_vars_.empty()) return {};
  std::string t =
      "static const libsection_var libsection_vars" + std::string(member_placeholder) + "[] = {\n";
  for (auto const& e : runtime_vars_) t += c_initializer(e) + ",\n";
  return t + "};\n";
}

void ModuleWriter::fill_input_block(RunBlock& b, std::string const& n, CType const& type,
                                    Sub const& sub) const {
  b.behavior = "py_" + n + " = PyList_GET_ITEM(" + cell(n) + ", 0);\nLIBSECTION_INCREF(py_" + n +
               ");\n" + type.c_extract(n, sub, true);
  b.cleanup = type.c_cleanup(n, sub) + "LIBSECTION_XDECREF(py_" + n + ");\n";
}

// The cell still holds the previous output when the caller let go of it: the op may reuse it
// (the tutorial's `vector_times_vector` does when the shape matches).
void ModuleWriter::fill_output_block(RunBlock& b, std::string const& n, CType const& type,
                                     Sub const& sub) const {
  b.behavior = "py_" + n + " = PyList_GET_ITEM(" + cell(n) + ", 0);\nLIBSECTION_INCREF(py_" + n +
               ");\nif (py_" + n + " == Py_None) {\n" + type.c_init(n, sub) + "} else {\n" +
               type.c_extract(n, sub, true) + "}\n";
  b.cleanup = "if (!__failure) {\n" + type.c_sync(n, sub) + "  PyObject* old_ = PyList_GET_ITEM(" +
              cell(n) +
              ", 0);\n"
              "  LIBSECTION_INCREF(py_" +
              n + ");\n  PyList_SET_ITEM(" + cell(n) + ", 0, py_" + n +
              ");\n  LIBSECTION_XDECREF(old_);\n}\n" + type.c_cleanup(n, sub) +
              "LIBSECTION_XDECREF(py_" + n + ");\n";
}

void ModuleWriter::fill_intermediate_block(RunBlock& b, std::string const& n, CType const& type,
                                           Sub const& sub) const {
  b.behavior = "py_" + n + " = Py_None;\nLIBSECTION_INCREF(Py_None);\n" + type.c_init(n, sub);
  b.cleanup = type.c_cleanup(n, sub) + "LIBSECTION_XDECREF(py_" + n + ");\n";
}

// ---- per apply: ask the op for its code ----------------------------------------------------

NodeContext ModuleWriter::apply_context(std::size_t a, int id, int init_id,
                                        std::string const& what) const {
  auto const& apply = graph_.applies()[a];
  NodeContext ctx;
  ctx.node_name = "node_" + std::string(hash_placeholder) + "_" + std::to_string(a);
  for (auto v : apply.inputs) {
    ctx.inputs.push_back(names_[v]);
    ctx.input_types.push_back(vars_[v].type.get());
    ctx.input_dtypes.push_back(dtype_name(*vars_[v].type));
  }
  for (auto v : apply.outputs) {
    ctx.outputs.push_back(names_[v]);
    ctx.output_types.push_back(vars_[v].type.get());
    ctx.output_dtypes.push_back(dtype_name(*vars_[v].type));
  }
  ctx.sub = {
      {"fail", run_failure(id, what)}, {"id", std::to_string(id)}, {"failure_var", "__failure"}};
  ctx.init_sub = {{"fail", init_failure(init_id, what)}, {"id", std::to_string(init_id)}};
  if (apply.params) ctx.sub["params"] = ctx.init_sub["params"] = names_[*apply.params];
  return ctx;
}

void ModuleWriter::add_apply(std::size_t a) {
  auto const& apply = graph_.applies()[a];
  std::string const op_name = apply.op->name();
  module_.op_names.push_back(op_name);
  int const id = next_id_++;
  int const init_id = next_init_id_++;
  std::string const what = escape_for_c_string(op_name + " (node " + std::to_string(a) + ")");
  OpCode code = apply.op->generate(apply_context(a, id, init_id, what));
  add_build_flags(code, op_name);  // checked before anything reads them
  ReleasedCode const gil = release_gil(code, op_name, apply.op->may_release_gil());
  bool const nogil = gil.released;
  add_op_parts(code, gil);
  support_apply_ += code.support_code_apply + "\n";
  init_apply_ += code.init_code_apply + "\n";
  struct_members_ += code.support_code_struct + "\n";
  struct_init_ += "{\n" + code.init_code_struct + "\n}\n";
  struct_cleanups_.push_back(code.cleanup_code_struct);
  struct_code_.push_back(code.support_code_struct + code.init_code_struct +
                         code.cleanup_code_struct);
  run_blocks_.push_back(
      {nogil ? nogil_plan(id) : "",
       (nogil ? nogil_region(id) : "") + "// Op class " + op_name + "\n" + code.code + "\n",
       code.code_cleanup + "\n", id,
       "__failure = " + std::to_string(id) + ";\nlibsection_rt->set_cxx_error(\"" + what +
           "\");\n"});
}

// ---- constants: members of the struct, extracted once by init() ----------------------------

void ModuleWriter::add_constant(std::size_t v) {
  std::string const& n = names_[v];
  CType const& type = *vars_[v].type;
  int const init_id = next_init_id_++;
  Sub sub{{"fail", init_failure(init_id, escape_for_c_string(label_of(v)))},
          {"id", std::to_string(init_id)},
          {"label", label_of(v)}};
  const_members_ += "PyObject* py_" + n + ";\n" + type.c_declare(n, sub, true);
  const_init_ += "py_" + n + " = PyList_GET_ITEM(" + cell(n) + ", 0);\nLIBSECTION_INCREF(py_" + n +
                 ");\n" + type.c_extract(n, sub, true);
  const_cleanup_ = type.c_cleanup(n, sub) + "LIBSECTION_XDECREF(py_" + n + ");\n" + const_cleanup_;
}

// ---- the text ------------------------------------------------------------------------------

// Everything of the graph's own after the shared support code, its symbols suffixed with
// `member_placeholder`.
std::string ModuleWriter::body() const {
  // Past this many variables the glue's reference counting is out of line (see the prelude).
  constexpr std::size_t inline_refs_up_to = 32;
  std::string t = "#undef LIBSECTION_OUTLINE_REFS\n#define LIBSECTION_OUTLINE_REFS " +
                  std::string(names_.size() > inline_refs_up_to ? "1" : "0") + "\n";
  return t + node_table() + support_apply_ + instance_part() + "\n//////// graph entry points\n" +
         graph_init_function() + instance_functions();
}

// Without constants and struct code from ops, the instance is only its cells: a C struct and
// plain functions (C as well as C++, and cheaper to compile than a class with methods).
bool ModuleWriter::plain_instance() const {
  return graph_.constants().empty() &&
         std::all_of(struct_code_.begin(), struct_code_.end(), is_blank_code);
}

// A plain instance is its array of cells (`new_cells` of the runtime).
std::string ModuleWriter::plain_instance_part() const {
  std::string t = "\n//////// instance\nstatic int libsection_run" +
                  std::string(member_placeholder) +
                  "(PyObject** storage, libsection_batch* __batch) {\n";
  return t + run_body() + "}\n";
}

// `run`'s body: the blocks once for a single call (`__batch` NULL), or once per row of a batch.
std::string ModuleWriter::run_body() const {
  Nested const nested = nest(run_blocks_);
  return "int __failure = 0;\n" + nested.declare + "for (;;) {\n" + nested.blocks +
         "if (!__batch || __failure || libsection_rt->batch_next(__batch, &__failure)) break;\n"
         "}\nreturn __failure;\n";
}

std::string ModuleWriter::instance_part() const {
  if (plain_instance()) return plain_instance_part();
  std::string t = "\n//////// instance\nnamespace {\nstruct " + std::string("op_instance_") +
                  hash_placeholder + " {\n";
  t += "PyObject* storage[" + std::to_string(cells_.size()) + "];\n";
  t += const_members_ + struct_members_;
  t += init_function() + cleanup_function();
  return t + "\nint run(libsection_batch* __batch) {\n" + run_body() + "}\n};\n}\n";
}

std::string ModuleWriter::init_function() const {
  std::string t = "\nint init(PyObject** cells) {\nfor (int i = 0; i < " +
                  std::to_string(cells_.size()) +
                  "; ++i) {\n  storage[i] = cells[i];\n  Py_INCREF(cells[i]);\n}\n";
  return t + const_init_ + struct_init_ + "return 0;\n}\n";
}

// Cleanup runs in reverse order of init; it also runs after a failed init, on the zeroed
// members that init did not reach (the same contract as PyTensor's memset struct).
std::string ModuleWriter::cleanup_function() const {
  std::string t = "\nvoid cleanup() {\n";
  for (auto it = struct_cleanups_.rbegin(); it != struct_cleanups_.rend(); ++it)
    t += "{\n" + *it + "\n}\n";
  t += const_cleanup_;
  t += "for (int i = 0; i < " + std::to_string(cells_.size()) + "; ++i) Py_XDECREF(storage[i]);\n";
  return t + "}\n";
}

// No C++ exception may leave these extern "C" functions: it would abort the process.
std::string ModuleWriter::graph_init_function() const {
  std::string t = "LIBSECTION_EXPORT PyObject* libsection_init" + std::string(member_placeholder) +
                  "(void) {\n";
  std::string init;
  for (auto const& c : init_code_) init += "{\n" + c + "\n}\n";
  init += init_apply_;
  if (is_blank_code(init)) return t + "return Py_None;\n}\n\n";
  return t + cxx_only("try {\n") + init +
         cxx_only("} catch (...) {\n  libsection_rt->set_cxx_error(\"module initialisation\");\n"
                  "  return NULL;\n}\n") +
         "return Py_None;\n}\n\n";
}

// `libsection_rows`: `run` (a call of it given in `run`) on one call (`__batch` NULL) or on a
// batch's rows, and the two entry points that call it. One copy of it: the batch entry passes
// its address, so a copy inlined into `libsection_instance_run` (or cloned for its NULL)
// would compile the op's code twice, and a whole program could no longer inline the op's
// function into its one caller.
std::string ModuleWriter::rows_function(std::string const& run) const {
  std::string const ph = member_placeholder;
  return "LIBSECTION_ONE_COPY static int libsection_rows" + ph +
         "(void* self, libsection_batch* __batch) {\n" + run +
         "}\n\nLIBSECTION_EXPORT int libsection_instance_run" + ph +
         "(void* self) {\n  return libsection_rows" + ph + "(self, NULL);\n}\n\n" + batch_entry();
}

// The batch entry (batch.c's `run_batch` over this graph's rows), when every input and output
// can take a row.
std::string ModuleWriter::batch_entry() const {
  if (!batchable_) return {};
  std::string const ph = member_placeholder;
  std::string cells;
  for (auto const& entry : cell_entries_) cells += entry + ", ";
  return "static const libsection_var* const libsection_cells" + ph + "[] = {" + cells +
         "};\n\nLIBSECTION_EXPORT int libsection_instance_run_batch" + ph +
         "(void* self, PyObject* const* inputs, PyObject** outputs, const long long* plan, "
         "const char* const* labels) {\n  return libsection_rt->run_batch(self, libsection_rows" +
         ph + ", libsection_cells" + ph + ", " + std::to_string(graph_.inputs().size()) + ", " +
         std::to_string(graph_.outputs().size()) + ", inputs, outputs, plan, labels);\n}\n\n";
}

std::string ModuleWriter::plain_instance_functions() const {
  std::string const n = std::to_string(cells_.size());
  std::string const ph = member_placeholder;
  std::string run = "  return libsection_run" + ph + "((PyObject**)self, __batch);\n";
  if (!all_runtime_)  // a type's own glue may be C++ that throws
    run = cxx_only("  try {\n") + run +
          cxx_only("  } catch (...) {\n    libsection_rt->set_cxx_error(\"run (outside an op's "
                   "code)\");\n    return -1;\n  }\n");
  // Made and freed by the runtime: the loops of every module's own cost about 15 ms of its
  // compile.
  return "LIBSECTION_EXPORT void* libsection_instance_new" + ph +
         "(PyObject** storage) {\n  return libsection_rt->new_cells(storage, " + n + ");\n}\n\n" +
         rows_function(run) + "LIBSECTION_EXPORT void libsection_instance_free" + ph +
         "(void* self) {\n  libsection_rt->free_cells(self, " + n + ");\n}\n";
}

std::string ModuleWriter::instance_functions() const {
  if (plain_instance()) return plain_instance_functions();
  std::string const instance = "op_instance_" + std::string(hash_placeholder);
  std::string const ph = member_placeholder;
  return "LIBSECTION_EXPORT void* libsection_instance_new" + ph + "(PyObject** storage) {\n" +
         instance +
         "* self = NULL;\n"
         "try { self = new " +
         instance +
         "(); } catch (...) { PyErr_NoMemory(); return NULL; }\n"
         "int failed = 0;\n"
         "try {\n  failed = self->init(storage);\n} catch (...) {\n"
         "  libsection_rt->set_cxx_error(\"instance initialisation (init_code_struct)\");\n"
         "  failed = -1;\n}\n"
         "if (failed != 0) {\n  try { self->cleanup(); } catch (...) {}\n  delete self;\n"
         "  return NULL;\n}\n"
         "return self;\n}\n\n" +
         rows_function("  try {\n    return static_cast<" + instance +
                       "*>(self)->run(__batch);\n  } catch (...) {\n"
                       "    libsection_rt->set_cxx_error(\"run (outside an op's code)\");\n"
                       "    return -1;\n  }\n") +
         "LIBSECTION_EXPORT void libsection_instance_free" + ph +
         "(void* self) {\n  try {\n"
         "    static_cast<" +
         instance +
         "*>(self)->cleanup();\n  } catch (...) {}\n"
         "  delete static_cast<" +
         instance + "*>(self);\n}\n";
}

ModuleSource ModuleWriter::named(std::string t, std::string body) && {
  replace_all(t, member_placeholder, graph_suffix(0, 1));
  // Generated code after each user fragment is numbered as lines of the module itself.
  t = relocate_line_directives(t, module_file_name);
  // Named after its own content, so that APPLY_SPECIFIC symbols are unique per module (and
  // per graph of a module of several).
  module_.name = "m" + detail::sha256_hex(t);
  replace_all(t, hash_placeholder, module_.name);
  module_.text = std::move(t);
  replace_all(body, hash_placeholder, module_.name);
  module_.member.body = std::move(body);
  module_.member.support = support_.texts();
  for (auto v : graph_.inputs()) module_.input_types.push_back(vars_[v].type->describe());
  for (auto v : graph_.outputs()) module_.output_types.push_back(vars_[v].type->describe());
  return std::move(module_);
}

// Why the text is C++ rather than C, for the error of an op declared C; empty when it is C:
// a plain instance (no constants, no struct code) whose variables' glue is all the runtime's.
std::string ModuleWriter::why_cxx() const {
  if (!graph_.constants().empty())
    return "its params are a constant of the module, which only the C++ instance struct holds";
  if (!plain_instance())
    return "an op's struct sections are members of the C++ instance struct (SL209)";
  if (!all_runtime_)
    return "a variable's type brings its own glue (`c_extract`, `c_sync`, ...), compiled as C++";
  return {};
}

ModuleSource ModuleWriter::write() && {
  for (auto const& v : vars_) add_type_parts(*v.type);
  for (std::size_t v = 0; v < vars_.size(); ++v)
    if (vars_[v].role != Graph::Role::constant) run_blocks_.push_back(variable_block(v));
  for (std::size_t a = 0; a < graph_.applies().size(); ++a) add_apply(a);
  for (auto v : graph_.constants()) add_constant(v);
  // After the ops' code: what an op declared C is refused for in its own files comes first.
  module_.language = module_language(graph_, why_cxx());
  for (auto const& h : headers_)
    if (auto line = include_line(h); !line.empty()) module_.member.includes.push_back(line);
  std::string own = body();
  std::string text = module_head(join_names(module_.op_names), module_.language,
                                 module_.member.includes, support_.texts()) +
                     own + module_entry_points();
  return std::move(*this).named(std::move(text), std::move(own));
}

}  // namespace

ModuleSource write_module(Graph const& graph) { return ModuleWriter(graph).write(); }

}  // namespace section
