// Unit tests of derived gradients that need no Python: the derivative op's module (its element
// macros, its compiles of the op's code, its driver, its language), what the forward module
// keeps, the refusal of casts that hide values from derivatives (SL306) and of float arrays
// made or converted with a fixed type number (SL307), and what a compile error on dual numbers
// is told as.
#include <doctest/doctest.h>

#include "linker/generate/layout.hpp"
#include "linker_test.hpp"
#include "parse/hidden_values.hpp"
#include "section/lint.hpp"

using namespace linker_test;

namespace {

std::string const vector_sum =
    "#section support_code_apply\n"
    "int APPLY_SPECIFIC(total)(PyArrayObject* x, PyArrayObject* w, PyArrayObject** z) {\n"
    "    DTYPE_OUTPUT_0 s = 0;\n"
    "    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i)\n"
    "        s += *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i) * *(DTYPE_INPUT_1*)PyArray_GETPTR1(w, "
    "i);\n"
    "    if (!*z) *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);\n"
    "    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = s;\n"
    "    return 0;\n"
    "}\n";

struct LoadedOp {
  std::shared_ptr<SectionOp> op;
  std::vector<CTypePtr> inputs, outputs;
};

LoadedOp load_op(std::string const& text, std::string const& inputs = "float64[:],float64[:]",
                 Language language = Language::cxx) {
  auto sm = std::make_shared<SourceManager>();
  FileId const file = sm->add("op.c", text);
  SectionSet set = merge_sections(*sm, {file});
  OpDescription description;
  description.name = "Total";
  description.func_name = "APPLY_SPECIFIC(total)";
  description.language = language;
  description.inputs = parse_type_list(inputs, "input");
  description.outputs = parse_type_list("float64[]", "output");
  LoadedOp out;
  out.inputs = ctypes_for(*description.inputs);
  out.outputs = ctypes_for(*description.outputs);
  out.op = std::make_shared<SectionOp>(description, sm, set);
  return out;
}

DerivativeSpec pullback_spec(LoadedOp const& op, std::vector<bool> differentiated, int width) {
  DerivativeSpec spec;
  spec.differentiated = std::move(differentiated);
  spec.cotangents = {true};
  spec.outputs = op.outputs;
  spec.width = width;
  return spec;
}

/// The module of the derivative's node: the op's inputs, then the output's cotangent and its
/// value; one gradient per differentiated input.
ModuleSource derivative_module(LoadedOp const& op, DerivativeSpec spec) {
  Graph g;
  std::vector<std::size_t> ins;
  for (auto const& t : op.inputs) ins.push_back(g.add_input(t));
  ins.push_back(g.add_input(op.outputs[0]));
  ins.push_back(g.add_input(op.outputs[0]));
  std::vector<CTypePtr> grads;
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    if (spec.differentiated[i]) grads.push_back(op.inputs[i]);
  for (auto v : g.add_apply(derivative_op(*op.op, op.op, std::move(spec)), ins, grads))
    g.add_output(v);
  return generate_module(g);
}

bool has(std::string const& text, std::string const& what) {
  return text.find(what) != std::string::npos;
}

/// The error refusing `op`'s pullback in the inputs `differentiated` marks.
LinkError refusal(LoadedOp const& op, std::vector<bool> differentiated) {
  try {
    derivative_op(*op.op, op.op, pullback_spec(op, std::move(differentiated), 1));
  } catch (LinkError const& e) {
    return e;
  }
  FAIL("expected a LinkError");
  return LinkError("");
}

/// The linter's diagnostics of `text`, for an op meant to be differentiated or not.
std::vector<Diagnostic> lint_as(std::string const& text, bool differentiated) {
  SourceManager sm;
  LintOptions options;
  options.op.differentiated = differentiated;
  return lint_text(sm, text, "t.c", options);
}

}  // namespace

TEST_SUITE("derivatives") {
  TEST_CASE("a derivative's module runs the op's code on dual numbers of the width asked") {
    auto const op = load_op(vector_sum);
    ModuleSource const m = derivative_module(op, pullback_spec(op, {true, false}, 3));
    CHECK(m.language == Language::cxx);
    CHECK(has(m.text, "typedef libsection::dual<npy_float64, 3> libsection_dual_float64_3;"));
    CHECK(has(m.text, "#define DTYPE_INPUT_0 libsection_dual_float64_3\n"
                      "#define TYPENUM_INPUT_0 libsection_dual_float64_3_typenum()\n"
                      "#define ITEMSIZE_INPUT_0 32\n"));
    CHECK(has(m.text, "#define DTYPE_INPUT_1 npy_float64\n"));  // not differentiated: plain
    CHECK(has(m.text, "#define DTYPE_OUTPUT_0 libsection_dual_float64_3\n"));
    CHECK(has(m.text, "while (lsd_.next_pass()) {"));
    CHECK(has(m.text, "lsd_.check_values<libsection_dual_float64_3>(lsd_out_0, (PyObject*)V"));
    CHECK(has(m.text, "lsd_.contract<libsection_dual_float64_3>(lsd_out_0, (PyObject*)V"));
    CHECK(has(m.text, "lsd_state->pass(lsd_in_0, V"));  // the plain input as it is
    CHECK(has(m.text, "namespace libsection {"));       // dual.h
    CHECK(m.op_names == std::vector<std::string>{"Total.pullback"});
  }

  TEST_CASE("a pullback's module holds the op's code on dual and on taped numbers") {
    auto const op = load_op(vector_sum);
    ModuleSource const m = derivative_module(op, pullback_spec(op, {true, false}, 3));
    // Each compile in a namespace of its own, the op's code in `lsd_state::pass`.
    CHECK(has(m.text, "namespace lsd_dual_"));
    CHECK(has(m.text, "namespace lsd_taped_"));
    CHECK(has(m.text, "typedef libsection::active<npy_float64> libsection_active_float64;"));
    CHECK(has(m.text, "#define DTYPE_INPUT_0 libsection_active_float64\n"
                      "#define TYPENUM_INPUT_0 libsection_active_float64_typenum()\n"
                      "#define ITEMSIZE_INPUT_0 16\n"));
    CHECK(has(m.text, "int pass(I0& lsd_in_0, I1& lsd_in_1, O0& lsd_out_0)"));
    // The tape is the instance's; each call reads the settings and picks by the number of
    // differentiated scalars, forward passes up to reverse_above(width).
    CHECK(has(m.text, "libsection::tape lsd_tape_"));
    CHECK(has(m.text, "if (lsd_settings.read())"));
    CHECK(has(m.text, "((npy_intp)0 + PyArray_SIZE(V"));
    CHECK(has(m.text, " <= " + std::to_string(reverse_above(3)) + ");"));
    // The tape a record op left for these inputs, else the instance's.
    CHECK(
        has(m.text, "libsection::reverse_pass lsd_((lsd_found.r ? lsd_found.r->taped : lsd_tape_"));
    CHECK(has(m.text, "lsd_.seed<libsection_active_float64>(lsd_out_0, (PyObject*)V"));
    CHECK(has(m.text, "lsd_.sweep(\"Total.pullback\", \"op.c\")"));
    CHECK(reverse_above(1) == 5);
    CHECK(reverse_above(4) == 8);
    CHECK(reverse_above(8) == 8);
    // Forced to one method, a module holds that compile only.
    DerivativeSpec forward = pullback_spec(op, {true, false}, 3);
    forward.method = DerivativeSpec::Method::forward;
    std::string const f = derivative_module(op, forward).text;
    CHECK_FALSE(has(f, "namespace lsd_taped_"));
    CHECK_FALSE(has(f, "libsection::tape lsd_tape_"));
    DerivativeSpec reverse = pullback_spec(op, {true, false}, 3);
    reverse.method = DerivativeSpec::Method::reverse;
    std::string const r = derivative_module(op, reverse).text;
    CHECK_FALSE(has(r, "namespace lsd_dual_"));
    CHECK(has(r, "lsd_.usable(\"Total.pullback\", \"op.c\", true)"));
  }

  TEST_CASE("the op's struct sections are a struct each pass starts afresh") {
    std::string const text =
        "#section support_code_struct\n"
        "DTYPE_OUTPUT_0 APPLY_SPECIFIC(memo);\n"
        "int APPLY_SPECIFIC(total)(PyArrayObject* x, PyArrayObject* w, PyArrayObject** z) {\n"
        "    if (!*z) *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);\n"
        "    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = APPLY_SPECIFIC(memo);\n"
        "    return 0;\n"
        "}\n"
        "#section init_code_struct\n"
        "APPLY_SPECIFIC(memo) = 1;\n"
        "#section cleanup_code_struct\n"
        "APPLY_SPECIFIC(memo) = 0;\n";
    auto const op = load_op(text);
    std::string const m = derivative_module(op, pullback_spec(op, {true, false}, 2)).text;
    // The members, init and cleanup are lsd_state's, not the instance's.
    auto const state = m.find("struct lsd_state {");
    REQUIRE(state != std::string::npos);
    auto const member = m.find("DTYPE_OUTPUT_0 APPLY_SPECIFIC(memo);", state);
    CHECK(member != std::string::npos);
    CHECK(has(m, "int init() {\n{\n"));
    CHECK(has(m, "void cleanup() {\n{\n"));
    // Each pass: a new state, its init, the pass, its cleanup.
    CHECK(has(m, "lsd_state(new lsd_dual_"));
    CHECK(has(m, "int lsd_failed = lsd_state->init();\n"
                 "if (!lsd_failed) lsd_failed = lsd_state->pass(lsd_in_0, V"));
    CHECK(has(m, "lsd_state->cleanup();\n"));
  }

  TEST_CASE("the op's own module is the same whether or not a derivative was made of it") {
    auto const op = load_op(vector_sum);
    Graph forward = single_op_graph(op.op, op.inputs, op.outputs);
    std::string const before = generate_module(forward).text;
    derivative_module(op, pullback_spec(op, {true, true}, 2));
    CHECK(generate_module(forward).text == before);
    CHECK_FALSE(has(before, "libsection_dual"));
    CHECK_FALSE(has(before, "namespace libsection"));
  }

  TEST_CASE("an op's module and its derivative's compile together, the number types outside") {
    // The number types add to namespace std: inside a graph's namespace, that namespace would
    // hide the real std from the graph's code, and the library would not compile.
    auto const op = load_op(vector_sum);
    ModuleSource const own = generate_module(single_op_graph(op.op, op.inputs, op.outputs));
    ModuleSource const grad = derivative_module(op, pullback_spec(op, {true, false}, 8));
    REQUIRE(can_share_library(own, grad));
    std::string const both = generate_together({&own, &grad}).text;
    auto const header = both.find(file_scope_marker);
    REQUIRE(header != std::string::npos);
    CHECK(both.find(file_scope_marker, header + 1) == std::string::npos);
    CHECK(header < both.find("namespace libsection_graph_0 {"));
    CHECK(has(both, "namespace libsection_graph_1 {"));
  }

  TEST_CASE("an op declared C is differentiated in a C++ module") {
    auto const op = load_op(vector_sum, "float64[:],float64[:]", Language::c);
    CHECK(generate_module(single_op_graph(op.op, op.inputs, op.outputs)).language == Language::c);
    CHECK(derivative_module(op, pullback_spec(op, {true, false}, 1)).language == Language::cxx);
  }

  TEST_CASE("a pushforward takes the tangents and makes the outputs' ones in one pass") {
    auto const op = load_op(vector_sum);
    DerivativeSpec spec = pullback_spec(op, {true, false}, 1);
    spec.mode = DerivativeSpec::Mode::pushforward;
    spec.cotangents = {false};
    Graph g;
    auto const x = g.add_input(op.inputs[0]), w = g.add_input(op.inputs[1]);
    auto const t = g.add_input(op.inputs[0]);
    auto const y = g.add_input(op.outputs[0]);  // the output's value, checked against
    for (auto v : g.add_apply(derivative_op(*op.op, op.op, spec), {x, w, t, y}, op.outputs))
      g.add_output(v);
    std::string const text = generate_module(g).text;
    CHECK(has(text, "lsd_.tangent(0, (PyObject*)V"));
    CHECK_FALSE(has(text, "while (lsd_.next_pass())"));
    CHECK_FALSE(has(text, "namespace lsd_taped_"));  // forward mode only
    // The pass's values are checked against the op's own before its tangents are handed back.
    auto const check =
        text.find("lsd_.check_values<libsection_dual_float64_1>(lsd_out_0, (PyObject*)V");
    auto const tangent = text.find("lsd_.output_tangent<libsection_dual_float64_1>(lsd_out_0, &V");
    REQUIRE(check != std::string::npos);
    REQUIRE(tangent != std::string::npos);
    CHECK(check < tangent);
    // Without the output's value, the node does not fit.
    Graph old;
    std::vector<std::size_t> const ins = {old.add_input(op.inputs[0]), old.add_input(op.inputs[1]),
                                          old.add_input(op.inputs[0])};
    for (auto v : old.add_apply(derivative_op(*op.op, op.op, spec), ins, op.outputs))
      old.add_output(v);
    CHECK_THROWS_WITH_AS(generate_module(old), doctest::Contains("expected 4 inputs"),
                         std::invalid_argument);
  }

  TEST_CASE("a record op and its pullback name one recording, found by the inputs' bytes") {
    auto const op = load_op(vector_sum);
    auto const record_module = [&](std::vector<bool> differentiated) {
      DerivativeSpec spec = pullback_spec(op, std::move(differentiated), 8);
      spec.mode = DerivativeSpec::Mode::record;
      spec.cotangents = {false};
      Graph g;
      std::vector<std::size_t> const ins = {g.add_input(op.inputs[0]), g.add_input(op.inputs[1])};
      for (auto v : g.add_apply(derivative_op(*op.op, op.op, spec), ins, op.outputs))
        g.add_output(v);
      return generate_module(g).text;
    };
    auto const named = [](std::string const& text, std::string const& call) {
      auto const at = text.find(call + "(\"");
      REQUIRE(at != std::string::npos);
      auto const start = at + call.size() + 2;
      return text.substr(start, text.find('"', start) - start);
    };
    std::string const record = record_module({true, false});
    std::string const pullback = derivative_module(op, pullback_spec(op, {true, false}, 8)).text;
    // Each in a module of its own (another apply id and node name): one identity.
    CHECK(named(record, "recording_to_fill") == named(pullback, "recording_of"));
    CHECK(named(record, "recording_to_fill").size() == 32);
    // Another set of differentiated inputs tapes another pass.
    CHECK(named(record_module({true, true}), "recording_to_fill") !=
          named(record, "recording_to_fill"));
    // The op's code on its own numbers beside the taped, and both inputs in the fingerprint.
    CHECK(has(record, "namespace lsd_plain_"));
    CHECK(has(record, "namespace lsd_taped_"));
    CHECK(has(record, "lsd_.plain_output<libsection_active_float64>(lsd_out_0, &V"));
    CHECK(has(record, "lsd_.same_as_plain<libsection_active_float64>(lsd_out_0, V"));
    auto const fingerprint = record.find("libsection::fingerprint lsd_inputs;");
    REQUIRE(fingerprint != std::string::npos);
    CHECK(record.find("lsd_inputs.add(V", fingerprint) != std::string::npos);
    DerivativeSpec spec = pullback_spec(op, {true, false}, 8);
    spec.mode = DerivativeSpec::Mode::record;
    CHECK(make_derivative_op(op.op, spec)->name() == "Total.record");
  }

  TEST_CASE("specs that do not fit are refused") {
    auto const op = load_op(vector_sum);
    CHECK_THROWS_AS(make_derivative_op(op.op, pullback_spec(op, {true, false}, 0)),
                    std::invalid_argument);
    CHECK_THROWS_AS(make_derivative_op(op.op, pullback_spec(op, {true, false}, max_width + 1)),
                    std::invalid_argument);
    CHECK_THROWS_AS(make_derivative_op(op.op, pullback_spec(op, {false, false}, 1)),
                    std::invalid_argument);
    DerivativeSpec wide = pullback_spec(op, {true, false}, 2);
    wide.mode = DerivativeSpec::Mode::pushforward;
    CHECK_THROWS_AS(make_derivative_op(op.op, wide), std::invalid_argument);
    DerivativeSpec taped = pullback_spec(op, {true, false}, 1);
    taped.mode = DerivativeSpec::Mode::pushforward;
    taped.method = DerivativeSpec::Method::reverse;
    CHECK_THROWS_AS(make_derivative_op(op.op, taped), std::invalid_argument);
    // An integer input carries no derivative: refused when the module is written.
    auto const ints = load_op(vector_sum, "int64[:],float64[:]");
    CHECK_THROWS_WITH_AS(derivative_module(ints, pullback_spec(ints, {true, false}, 1)),
                         doctest::Contains("only float32 and float64 inputs carry derivatives"),
                         LinkError);
  }

  TEST_CASE("a cast that reads a differentiated array as plain double is refused at its line") {
    std::string const text =
        "#section support_code_apply\n"
        "int APPLY_SPECIFIC(total)(PyArrayObject* x, PyArrayObject* w, PyArrayObject** z) {\n"
        "    double* xs = (double*)PyArray_DATA(x);\n"
        "    double* ws = (double*)PyArray_DATA(w);\n"
        "    double* scratch = (double*)PyArray_DATA(x);  // section-lint: ignore[SL306]\n"
        "    *(double*)PyArray_DATA(*z) = xs[0] * ws[0];\n"
        "    return 0;\n"
        "}\n";
    auto const op = load_op(text);
    // x is differentiated, w is not: the casts of x and of the output are refused, with the
    // macro to write; w's passes, and so does the line that says so.
    {
      LinkError const e = refusal(op, {true, false});
      std::string const what = e.what();
      CHECK(has(what, "Total: its gradient cannot be derived from its C code"));
      CHECK(has(what, "op.c:3:18: error: `PyArray_DATA(x)` is read as plain `double`"));
      CHECK(has(what, "write `DTYPE_INPUT_0` in place of `double`"));
      CHECK(has(what, "op.c:6:6: error: `PyArray_DATA(z)`"));
      CHECK(has(what, "`DTYPE_OUTPUT_0`"));
      CHECK_FALSE(has(what, "op.c:4:"));
      CHECK_FALSE(has(what, "op.c:5:"));
      REQUIRE(e.diagnostics().size() == 2);
      CHECK(e.diagnostics()[0].code == "SL306");
      CHECK(e.diagnostics()[0].severity == Severity::error);
    }
    // With w differentiated too, its cast is refused as well.
    CHECK_THROWS_WITH_AS(derivative_op(*op.op, op.op, pullback_spec(op, {true, true}, 1)),
                         doctest::Contains("op.c:4:18"), LinkError);
  }

  TEST_CASE("a compile error on a dual number is told as what to write instead") {
    SourceManager sm;
    FileId const op = sm.add("op.c", "#section support_code_apply\n"
                                     "static double twice(double v) { return 2 * v; }\n"
                                     "int f(DTYPE_INPUT_0 x) {\n"
                                     "    double s = x;\n"
                                     "    return twice(x) + j0(x) + (double)x;\n"
                                     "}\n");
    auto const sources = compiled_sources("#line 1 \"op.c\"\n", "gen/source.cpp", sm);
    REQUIRE(sources.section_files == std::vector<FileId>{op});
    std::string const dual = "\u2018libsection_dual_float64_3\u2019 {aka "
                             "\u2018libsection::dual<double, 3>\u2019}";
    std::string const log =
        "op.c:4:16: error: cannot convert " + dual + " to \u2018double\u2019 in initialization\n" +
        "op.c:5:18: error: cannot convert " + dual + " to \u2018double\u2019\n" +
        "op.c:2:27: note:   initializing argument 1 of \u2018double twice(double)\u2019\n" +
        "op.c:5:26: error: cannot convert " + dual + " to \u2018double\u2019\n" +
        "/usr/include/x86_64-linux-gnu/bits/mathcalls.h:220:19: note:   initializing argument 1 "
        "of \u2018double j0(double)\u2019\n" +
        "op.c:5:31: error: invalid cast from type " + dual + " to type \u2018double\u2019\n" +
        "op.c:6:1: error: invalid conversion from \u2018void*\u2019 to \u2018double*\u2019\n";
    auto ds = parse_compiler_output(log, sm);
    std::string const text = explain_compile_errors(ds, sm, sources, false);
    CHECK(has(text, "\nop.c:4:16: note: libsection derives this op's gradient by running its C "
                    "code on dual numbers"));
    CHECK(has(text, "(`DTYPE_OUTPUT_0 total = 0;`, not `double total`)"));
    CHECK(has(text, "\nop.c:5:18: note: libsection derives"));
    CHECK(has(text, "`twice` takes a plain number: declare its parameter"));
    CHECK(has(text, "`j0` has no derivative rule in libsection"));
    CHECK(has(text, "\nop.c:6:1: note: C++ converts `void*` to another pointer type only with a "
                    "cast"));
  }

  TEST_CASE("an error of the op's code on dual and on taped numbers is told once") {
    // A pullback's module compiles the op's code twice, so the compiler says each error twice
    // at one place, the number types apart: one error, with the macro its line reads.
    SourceManager sm;
    FileId const op = sm.add("op.c", "#section support_code_apply\n"
                                     "int f(PyArrayObject* x) {\n"
                                     "    double v = *(DTYPE_INPUT_0*)PyArray_DATA(x);\n"
                                     "    return j0(*(DTYPE_INPUT_0*)PyArray_DATA(x)) > v;\n"
                                     "}\n");
    auto const sources = compiled_sources("#line 1 \"op.c\"\n", "gen/source.cpp", sm);
    REQUIRE(sources.section_files == std::vector<FileId>{op});
    std::string const dual = "\u2018libsection_dual_float64_8\u2019 {aka "
                             "\u2018libsection::dual<double, 8>\u2019}";
    std::string const taped = "\u2018libsection_active_float64\u2019 {aka "
                              "\u2018libsection::active<double>\u2019}";
    std::string const j0 = "/usr/include/x86_64-linux-gnu/bits/mathcalls.h:220:19: note:   "
                           "initializing argument 1 of \u2018double j0(double)\u2019\n";
    std::string log;
    for (auto const& number : {dual, taped})
      log += "op.c:3:16: error: cannot convert " + number +
             " to \u2018double\u2019 in "
             "initialization\nop.c:4:15: error: cannot convert " +
             number + " to \u2018double\u2019\n" + j0;
    auto ds = parse_compiler_output(log, sm);
    REQUIRE(ds.size() == 4);
    std::string const text = explain_compile_errors(ds, sm, sources, false);
    CHECK(ds.size() == 2);
    CHECK(count(text, "op.c:3:16: error:") == 1);
    CHECK(count(text, "op.c:3:16: note:") == 1);
    CHECK(count(text, "op.c:4:15: error:") == 1);
    CHECK(count(text, "`j0` has no derivative rule") == 1);
    CHECK(has(text, "\nop.c:3:16: note: libsection derives this op's gradient by running its C "
                    "code on dual numbers"));
    CHECK(has(text, "write `DTYPE_INPUT_0` in place of `double`"));
  }
}

TEST_SUITE("lint SL306") {
  TEST_CASE("casts of array data to plain floating pointers, found where they are written") {
    SourceManager sm;
    FileId const file = sm.add(
        "t.c", "#section support_code_apply\n"
               "void f(PyArrayObject* x, PyArrayObject** z, PyArrayObject* INPUT_9) {\n"
               "  double* a = (double*)PyArray_DATA(x);\n"
               "  npy_float64* b = (npy_float64 *)(char*)PyArray_BYTES(x);\n"
               "  float* c = reinterpret_cast<float*>(PyArray_GETPTR1(*z, 0));\n"
               "  long double* d = (long double*)x->data;\n"
               "  double* e = PyArray_DATA(x);\n"
               "  const double* f = static_cast<const double *>(PyArray_GETPTR2(INPUT_9, 0, 1));\n"
               "  DTYPE_INPUT_0* ok1 = (DTYPE_INPUT_0*)PyArray_DATA(x);\n"
               "  double* ok2 = (double*)malloc(8);\n"
               "  double ok3 = (double)n;\n"
               "  double* ok4 = buffer;\n"
               "}\n");
    std::vector<Diagnostic> ds;
    auto const parsed = parse_file(sm, file, ds);
    auto const found = detail::find_hidden_values(sm, parsed.blocks);
    std::vector<std::string> arrays, types, accessors;
    for (auto const& f : found) {
      arrays.push_back(f.array);
      types.push_back(f.type);
      accessors.push_back(f.accessor);
    }
    CHECK(arrays == std::vector<std::string>{"x", "x", "z", "x", "x", "INPUT_9"});
    CHECK(types == std::vector<std::string>{"double", "npy_float64", "float", "long double",
                                            "double", "double"});
    CHECK(accessors == std::vector<std::string>{"PyArray_DATA", "PyArray_BYTES", "PyArray_GETPTR1",
                                                "->data", "PyArray_DATA", "PyArray_GETPTR2"});
    CHECK(sm.line_column(file, found[0].range.begin).line == 3);
    CHECK(sm.line_column(file, found[0].range.begin).column == 15);
  }

  TEST_CASE("reported only for an op meant to be differentiated") {
    std::string const text =
        "#section support_code_apply\n"
        "void APPLY_SPECIFIC(f)(PyArrayObject* x) { double* v = (double*)PyArray_DATA(x); }\n";
    CHECK(lint_as(text, false).empty());
    auto const ds = lint_as(text, true);
    REQUIRE(ds.size() == 1);
    CHECK(ds[0].code == "SL306");
    CHECK(ds[0].severity == Severity::warning);
    CHECK(has(ds[0].message, "write DTYPE_INPUT_i or DTYPE_OUTPUT_i of that array"));
    CHECK(lint_as(text + "// section-lint: ignore-file[SL306]\n", true).empty());
  }
}

TEST_SUITE("lint SL307") {
  TEST_CASE("float arrays made or converted with a fixed type number, found with their array") {
    SourceManager sm;
    FileId const file = sm.add(
        "t.c",
        "#section support_code_apply\n"
        "void f(PyArrayObject* x, PyArrayObject** z) {\n"
        "  *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_DOUBLE, 0);\n"
        "  PyObject* t = PyArray_ZEROS(1, dims, NPY_FLOAT32, 0);\n"
        "  OUTPUT_1 = (PyArrayObject*)PyArray_SimpleNew(1, dims, NPY_FLOAT64);\n"
        "  *z = (PyArrayObject*)PyArray_Empty(1, d, PyArray_DescrFromType(NPY_FLOAT), 0);\n"
        "  PyArrayObject* c = (PyArrayObject*)PyArray_FROM_OTF((PyObject*)x, NPY_DOUBLE, 0);\n"
        "  PyArray_ContiguousFromAny(INPUT_2, NPY_FLOAT64, 1, 1);\n"
        "  *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);\n"
        "  *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_INT64, 0);\n"
        "  PyArray_FROM_OTF((PyObject*)x, TYPENUM_INPUT_0, NPY_ARRAY_IN_ARRAY);\n"
        "}\n");
    std::vector<Diagnostic> ds;
    auto const parsed = parse_file(sm, file, ds);
    auto const found = detail::find_hidden_values(sm, parsed.blocks);
    std::vector<std::string> arrays, types, calls;
    std::vector<bool> made;
    for (auto const& f : found) {
      arrays.push_back(f.array);
      types.push_back(f.type);
      calls.push_back(f.accessor);
      made.push_back(f.kind == detail::HiddenValue::Kind::made);
    }
    CHECK(arrays == std::vector<std::string>{"z", "t", "OUTPUT_1", "z", "x", "INPUT_2"});
    CHECK(types == std::vector<std::string>{"NPY_DOUBLE", "NPY_FLOAT32", "NPY_FLOAT64", "NPY_FLOAT",
                                            "NPY_DOUBLE", "NPY_FLOAT64"});
    CHECK(calls == std::vector<std::string>{"PyArray_EMPTY", "PyArray_ZEROS", "PyArray_SimpleNew",
                                            "PyArray_Empty", "PyArray_FROM_OTF",
                                            "PyArray_ContiguousFromAny"});
    CHECK(made == std::vector<bool>{true, true, true, true, false, false});
    // The range is the type number's, which the fix replaces.
    CHECK(sm.line_column(file, found[0].range.begin).line == 3);
    CHECK(sm.line_column(file, found[0].range.begin).column == 58);
  }

  TEST_CASE("a derivative is refused where an output is made or an input converted as float64") {
    std::string const text =
        "#section support_code_apply\n"
        "int APPLY_SPECIFIC(total)(PyArrayObject* x, PyArrayObject* w, PyArrayObject** z) {\n"
        "    PyArrayObject* xs = (PyArrayObject*)PyArray_FROM_OTF((PyObject*)x, NPY_DOUBLE, 0);\n"
        "    PyArrayObject* ws = (PyArrayObject*)PyArray_FROM_OTF((PyObject*)w, NPY_DOUBLE, 0);\n"
        "    PyArrayObject* scratch = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), "
        "NPY_DOUBLE, 0);  // section-lint: ignore[SL307]\n"
        "    *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, NPY_DOUBLE, 0);\n"
        "    return 0;\n"
        "}\n";
    auto const op = load_op(text);
    {
      LinkError const e = refusal(op, {true, false});
      std::string const what = e.what();
      CHECK(has(what, "op.c:3:72: error: `PyArray_FROM_OTF` converts `x` with `NPY_DOUBLE`"));
      CHECK(has(what, "write `TYPENUM_INPUT_0` in place of `NPY_DOUBLE`, and read its elements "
                      "as `DTYPE_INPUT_0`"));
      CHECK(has(what, "op.c:6:49: error: `z` is made by `PyArray_EMPTY` with `NPY_DOUBLE`"));
      CHECK(has(what, "write `TYPENUM_OUTPUT_0` in place of `NPY_DOUBLE`"));
      CHECK_FALSE(has(what, "op.c:4:"));  // w carries no derivative
      CHECK_FALSE(has(what, "op.c:5:"));  // the line says the scratch array is plain
      REQUIRE(e.diagnostics().size() == 2);
      CHECK(e.diagnostics()[0].code == "SL307");
      CHECK(e.diagnostics()[0].severity == Severity::error);
      REQUIRE(e.diagnostics()[1].fix);
      CHECK(e.diagnostics()[1].fix->replacement == "TYPENUM_OUTPUT_0");
    }
  }

  TEST_CASE("reported by the linter only for an op meant to be differentiated") {
    std::string const text =
        "#section support_code_apply\n"
        "void APPLY_SPECIFIC(f)(PyArrayObject* x, PyArrayObject** z) {\n"
        "  *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_DOUBLE, 0);\n"
        "}\n";
    CHECK(lint_as(text, false).empty());
    auto const ds = lint_as(text, true);
    REQUIRE(ds.size() == 1);
    CHECK(ds[0].code == "SL307");
    CHECK(ds[0].severity == Severity::warning);
    CHECK(has(ds[0].message, "write TYPENUM_OUTPUT_i of that output in place of `NPY_DOUBLE`"));
    CHECK_FALSE(ds[0].fix);
    CHECK(lint_as(text + "// section-lint: ignore-file[SL307]\n", true).empty());
  }
}
