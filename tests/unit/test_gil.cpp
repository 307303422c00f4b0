// The GIL around an op's code: which calls the linker wraps to take it back (Python's and
// NumPy's API, not the accessors that read an array's fields), and what keeps it held for the
// whole op (what the linker cannot classify, code that manages the GIL itself); and the module
// an op's code becomes.
#include <doctest/doctest.h>

#include "linker_test.hpp"
#include "parse/gil_uses.hpp"

using namespace section::c_scan;
using namespace linker_test;

namespace {

struct Read {
  std::vector<std::string> wrapped;  // the text of each call to wrap
  std::string keep;                  // why the GIL is kept, empty when it is not
  std::string keep_at;               // the text from where the reason is found
};

Read read_texts(std::vector<std::pair<std::string, GilText::Scope>> const& texts,
                std::vector<std::string> const& headers = {}) {
  std::vector<GilText> in;
  for (auto const& [text, scope] : texts) in.push_back({text, scope});
  GilUses const uses = find_gil_uses(in, headers);
  Read out;
  for (auto const& c : uses.calls)
    out.wrapped.push_back(texts[c.text].first.substr(c.begin, c.end - c.begin));
  if (uses.keep) {
    out.keep = uses.keep->why;
    if (uses.keep->text < texts.size())
      out.keep_at = texts[uses.keep->text].first.substr(uses.keep->at, 24);
  }
  return out;
}

Read read_support(std::string const& support, std::string const& code = "") {
  return read_texts({{support, GilText::Scope::file}, {code, GilText::Scope::statements}});
}

Read read_code(std::string const& code) { return read_texts({{code, GilText::Scope::statements}}); }

// The tutorial's op as PyTensor users write it: its output reused when the shape matches,
// allocated (and the old one dropped) when not, an error raised with its class.
std::string const classic =
    "#define DTYPE_INPUT_0 npy_float64\n"
    "int APPLY_SPECIFIC(vmul)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) {\n"
    "  if (PyArray_NDIM(x) != 1) {\n"
    "    PyErr_SetString(PyExc_ValueError, \"x is not a vector\");\n"
    "    return 1;\n"
    "  }\n"
    "  npy_intp n = PyArray_DIMS(x)[0];\n"
    "  if (*z == NULL || PyArray_DIMS(*z)[0] != n) {\n"
    "    Py_XDECREF(*z);\n"
    "    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);\n"
    "    if (!*z) return 1;\n"
    "  }\n"
    "  DTYPE_INPUT_0* px = (DTYPE_INPUT_0*)PyArray_DATA(x);\n"
    "  double* pz = (double*)PyArray_DATA(*z);\n"
    "  for (npy_intp i = 0; i < n; ++i) pz[i] = px[i] * *(double*)PyArray_GETPTR1(y, i) + "
    "std::exp(sqrt(2.0));\n"
    "  return 0;\n"
    "}\n";

// An op whose code is `code`, saying `releases` to running it without the GIL.
class CodeOp final : public COp {
 public:
  CodeOp(std::string code, bool releases, std::string support = {})
      : code_(std::move(code)), support_(std::move(support)), releases_(releases) {}
  std::string name() const override { return "CodeOp"; }
  bool may_release_gil() const override { return releases_; }
  OpCode generate(NodeContext const& ctx) const override {
    OpCode code;
    code.code = code_ + "\n" + ctx.outputs[0] + " = " + ctx.inputs[0] + ";";
    code.support_code = {support_};
    return code;
  }

 private:
  std::string code_, support_;
  bool releases_;
};

ModuleSource code_op_module(std::string const& code, bool releases = true) {
  Graph g;
  auto const x = g.add_input(parse_ctype("float64"), "x");
  g.add_output(
      g.add_apply(std::make_shared<CodeOp>(code, releases), {x}, {parse_ctype("float64")})[0]);
  return generate_module(g);
}

std::string const classic_call =
    "{\n  if (APPLY_SPECIFIC(vmul)(V1, V3, &V5) != 0) {\n"
    "    {__failure = 7; if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, \"vmul: "
    "failed\"); goto __label_7;}\n  }\n}\n";

}  // namespace

TEST_SUITE("gil") {
  TEST_CASE("the API's allocations, references and errors are wrapped; its accessors are not") {
    Read const r = read_support(classic, classic_call);
    CHECK(r.keep.empty());
    CHECK(r.wrapped == std::vector<std::string>{
                           "PyErr_SetString(PyExc_ValueError, \"x is not a vector\")",
                           "Py_XDECREF(*z)",
                           "PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0)",
                           "PyErr_Occurred()",
                           "PyErr_SetString(PyExc_RuntimeError, \"vmul: failed\")",
                       });
  }

  TEST_CASE("a call inside a wrapped call is not wrapped again; unevaluated operands are not") {
    Read const r = read_code(
        "Py_XDECREF(PyArray_Cast(a, NPY_INT64));\nn = sizeof(PyArray_EMPTY(0, 0, 0, 0));\n"
        "Py_CLEAR(b);\nl = ::PyList_New(0);\n");
    CHECK(r.keep.empty());
    CHECK(r.wrapped == std::vector<std::string>{"Py_XDECREF(PyArray_Cast(a, NPY_INT64))",
                                                "Py_CLEAR(b)", "::PyList_New(0)"});
  }

  TEST_CASE("a macro's body is read where it is used, and wrapped in its directive") {
    Read const r = read_support(
        "#define FAIL_WITH(m) { PyErr_SetString(PyExc_ValueError, m); return 1; }\n"
        "int APPLY_SPECIFIC(f)(PyArrayObject* x) { if (!x) FAIL_WITH(\"no x\"); return 0; }\n");
    CHECK(r.keep.empty());
    CHECK(r.wrapped == std::vector<std::string>{"PyErr_SetString(PyExc_ValueError, m)"});

    Read const global =
        read_support("#define NEW_LIST PyList_New(0)\nstatic PyObject* cache = NEW_LIST;\n");
    CHECK(global.keep.find("calls `PyList_New` outside a function's body") == 0);
    Read const both =
        read_support("#define NEW_LIST PyList_New(0)\nstatic PyObject* cache = NEW_LIST;\n"
                     "static PyObject* fresh(void) { return NEW_LIST; }\n");
    CHECK(both.keep.find("its macro `NEW_LIST` calls Python's API and is used outside") == 0);
  }

  TEST_CASE("code that takes or releases the GIL itself keeps it as written") {
    for (std::string const word : {"Py_BEGIN_ALLOW_THREADS", "PyGILState_Ensure()",
                                   "NPY_BEGIN_THREADS", "PyEval_SaveThread()"}) {
      CAPTURE(word);
      Read const r = read_code("double s = 0;\n" + word + ";\n");
      CHECK(r.keep ==
            "takes or releases the GIL itself (`" + word.substr(0, word.find('(')) + "`)");
    }
  }

  TEST_CASE("what the linker cannot classify keeps the GIL, named where it is") {
    Read const external = read_support(
        "double cblas_ddot(int n, double const* x, int incx, double const* y, int incy);\n"
        "int APPLY_SPECIFIC(dot)(PyArrayObject* x) {\n"
        "  return cblas_ddot(3, (double*)PyArray_DATA(x), 1, (double*)PyArray_DATA(x), 1) > 0;\n"
        "}\n");
    CHECK(external.keep ==
          "calls `cblas_ddot`, which its code does not define (a library's function may call "
          "Python)");
    CHECK(external.keep_at.find("cblas_ddot(3,") == 0);

    CHECK(
        read_code("double (*f)(double) = lookup();\ny = (*f)(x);\n").keep.find("calls `lookup`") ==
        0);
    CHECK(read_code("y = (*f)(x);\n").keep.find("calls through a function pointer") == 0);
    CHECK(read_code("y = table[k](x);\n").keep.find("calls through an array") == 0);
    CHECK(read_code("y = s->callback(x);\n").keep.find("calls the member `callback`") == 0);
    CHECK(read_code("y = Eigen::solve(x);\n").keep.find("calls `Eigen::solve`") == 0);
    CHECK(read_code("f = &Py_DecRef;\n").keep.find("names `Py_DecRef` without calling it") == 0);
    CHECK(read_code("y = make()(x);\n").keep.find("calls `make`") == 0);
    CHECK(read_support("static PyObject* d = PyDict_New();\n")
              .keep.find("calls `PyDict_New` outside a function's body") == 0);
  }

  TEST_CASE("the op's own functions, the standard library and casts are classified") {
    Read const r = read_support(
        "#include <vector>\n#include <math.h>\n"
        "namespace detail { static double sq(double v) { return v * v; } }\n"
        "struct Acc { double s = 0; void add(double v) { s += detail::sq(v); } };\n"
        "template <class T> T twice(T v) { return v + v; }\n"
        "int APPLY_SPECIFIC(f)(PyArrayObject* x, PyArrayObject** z) {\n"
        "  std::vector<double> buf(4);\n"
        "  Acc acc;\n"
        "  auto scale = [&](double v) { return 2 * v; };\n"
        "  for (std::size_t i = 0; i < buf.size(); ++i) acc.add(scale(twice<double>(buf[i])));\n"
        "  double m = std::max<double>(acc.s, fabsf(1.0f)) + (double)(acc.s) + "
        "static_cast<double>(memcmp(&m, &m, 8));\n"
        "  std::sort(buf.begin(), buf.end());\n"
        "  return m > 0 ? 0 : 1;\n"
        "}\n",
        "{ if (APPLY_SPECIFIC(f)(V1, &V3)) {} }\n");
    CHECK(r.keep == "");
    CHECK(r.wrapped.empty());
  }

  TEST_CASE("libsection's own texts keep nothing, and their calls of the API are wrapped") {
    // A derivative's numbers and drivers: an X-macro calls its parameter `F`, which in the op's
    // own text would keep the GIL; the drivers raise through the API, which must be wrapped.
    std::string const library =
        "#define RULES(F) F(exp, std::exp(x)) F(log, std::log(x))\n"
        "#define DEFINE(name, value) inline double lsd_##name(double x) { return value; }\n"
        "RULES(DEFINE)\n"
        "inline int lsd_fail(void) { PyErr_SetString(PyExc_ValueError, \"no\"); return -1; }\n"
        "inline double lsd_twice(double x) { return x > 0 ? x + x : lsd_fail(); }\n";
    std::string const code = "{ double y = lsd_twice(1.0); (void)y; }\n";
    std::vector<GilText> texts{{code, GilText::Scope::statements}, {library, GilText::Scope::file}};
    CHECK(find_gil_uses(texts, {}).keep.has_value());  // read as the op's own: kept
    texts[1].library = true;
    GilUses const uses = find_gil_uses(texts, {});
    CHECK_FALSE(uses.keep.has_value());
    REQUIRE(uses.calls.size() == 1);
    CHECK(library.substr(uses.calls[0].begin, uses.calls[0].end - uses.calls[0].begin) ==
          "PyErr_SetString(PyExc_ValueError, \"no\")");
  }

  TEST_CASE("a header the linker cannot read keeps the GIL; the standard ones do not") {
    CHECK(read_support("#include <math.h>\n#include <numpy/npy_math.h>\n").keep.empty());
    CHECK(read_support("#include \"kernels.h\"\n").keep ==
          "includes `\"kernels.h\"`, whose code the linker cannot see");
    CHECK(read_texts({}, {"<cblas.h>"}).keep ==
          "includes `<cblas.h>`, whose code the linker cannot see");
    CHECK(read_texts({}, {"<cmath>", "stdio.h"}).keep.empty());
  }

  TEST_CASE("any text is read without a crash") {
    for (std::string const text :
         {"(((((", ")))){{", "a<b>(c", "}(", "](", ">(", "::(", "f(", "APPLY_SPECIFIC(", "#define",
          "#define X(", "template <", "struct {", "x = [&](", "\xff\xfe(", ""}) {
      CAPTURE(text);
      for (auto scope : {GilText::Scope::file, GilText::Scope::members, GilText::Scope::statements})
        read_texts({{text, scope}});
    }
  }

  TEST_CASE("an op's block gives the GIL up; its variables' glue keeps it") {
    ModuleSource const m = generate_module(add_mul_graph());
    CHECK(count(m.text, "LIBSECTION_NOGIL_REGION(__nogil_plan_") == 2);  // Add and Mul
    auto const plan = m.text.find("int __nogil_plan_6 = 0;");
    auto const region = m.text.find("LIBSECTION_NOGIL_REGION(__nogil_plan_6)\n// Op class Add");
    REQUIRE(region != std::string::npos);
    CHECK(plan < m.text.find("__label_1: ;"));  // declared at the top of run, before any block
    CHECK(plan < region);
    // The glue of the variables (a template type's: PyFloat_Check, PyFloat_AsDouble, ...) is
    // the module's, not the op's: it runs with the GIL, unwrapped.
    CHECK(m.text.find("PyFloat_AsDouble(py_") != std::string::npos);
    CHECK(m.text.find("LIBSECTION_WITH_GIL(PyFloat") == std::string::npos);
  }

  TEST_CASE("an op that manages the GIL itself, or says no, is written as before") {
    std::string const own = "Py_BEGIN_ALLOW_THREADS\nPy_END_ALLOW_THREADS\nPy_XDECREF(p);";
    for (auto const& m : {code_op_module(own), code_op_module("Py_XDECREF(p);", false)}) {
      CHECK(m.text.find("LIBSECTION_NOGIL_REGION(__nogil") == std::string::npos);
      CHECK(m.text.find("LIBSECTION_WITH_GIL(Py") == std::string::npos);
    }
    ModuleSource const released = code_op_module("Py_XDECREF(p);");
    CHECK(released.text.find("LIBSECTION_WITH_GIL(Py_XDECREF(p));") != std::string::npos);
    CHECK(released.name != code_op_module("Py_XDECREF(p);", false).name);
  }

  TEST_CASE("what keeps the GIL is said once, at DEBUG, with the file and line") {
    std::vector<LogRecord> records;
    set_log_sink([&](LogRecord const& r) { records.push_back(r); });
    std::string const code = "#line 12 \"ops/dot.c\"\ndouble v = 0;\nv = cblas_ddot(v);";
    code_op_module(code);
    code_op_module(code);
    // A `#line` whose number is out of range is no directive to go by.
    code_op_module("#line 99999999999999999999999 \"x.c\"\nv = cblas_daxpy(v);");
    set_log_sink({});
    REQUIRE(records.size() == 2);
    CHECK(records[1].message.find("CodeOp keeps the GIL while its code runs: <c_code>:2: calls "
                                  "`cblas_daxpy`") == 0);
    CHECK(records[0].level == LogLevel::debug);
    CHECK(records[0].message ==
          "CodeOp keeps the GIL while its code runs: ops/dot.c:13: calls `cblas_ddot`, which its "
          "code does not define (a library's function may call Python) (release_gil = False on "
          "the op says so without this note)");
  }

  TEST_CASE("support code two applies share is wrapped for the one that gives the GIL up") {
    std::string const support = "static void drop(PyObject* p) { Py_XDECREF(p); }\n";
    for (bool const released_first : {true, false}) {
      CAPTURE(released_first);
      auto const released = std::make_shared<CodeOp>("drop(NULL);", true, support);
      auto const kept = std::make_shared<CodeOp>("drop(NULL); unknown();", true, support);
      Graph g;
      auto const d = parse_ctype("float64");
      auto const x = g.add_input(d, "x");
      auto const a = g.add_apply(released_first ? released : kept, {x}, {d});
      g.add_output(g.add_apply(released_first ? kept : released, {a[0]}, {d})[0]);
      ModuleSource const m = generate_module(g);
      CHECK(count(m.text, "static void drop(PyObject* p)") == 1);
      CHECK(count(m.text, "LIBSECTION_WITH_GIL(Py_XDECREF(p))") == 1);
      CHECK(count(m.text, "LIBSECTION_NOGIL_REGION(__nogil") == 1);
    }
  }
}
