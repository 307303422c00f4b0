// Hostile and clumsy input at the edges: names that reach generated source, compiler output,
// files that are not regular or too large, byte order and 0-d tensors, C++ exceptions in ops.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "linker/build/compile.hpp"
#include "section/ctype.hpp"
#include "section/expand.hpp"
#include "section/linker.hpp"
#include "section/linker/generate/module.hpp"
#include "section/names.hpp"
#include "section/parse.hpp"
#include "section/signature.hpp"

namespace fs = std::filesystem;
using namespace section;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("libsection-edges-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string write(std::string const& name, std::string const& bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
    return (path / name).string();
  }
};

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, std::string const& value) : name(std::move(n)) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

std::string const& load_message(SectionSet const& set) {
  REQUIRE(set.error.has_value());
  return set.error->message;
}

// An op whose code and cleanup are given as text.
class TextOp final : public COp {
 public:
  TextOp(std::string name, std::string code, std::string cleanup = {})
      : name_(std::move(name)), code_(std::move(code)), cleanup_(std::move(cleanup)) {}
  std::string name() const override { return name_; }
  OpCode generate(NodeContext const&) const override {
    OpCode c;
    c.code = code_;
    c.code_cleanup = cleanup_;
    return c;
  }

 private:
  std::string name_, code_, cleanup_;
};

Graph text_op_graph(std::shared_ptr<COp const> op) {
  Graph g;
  auto const in = g.add_input(parse_ctype("float64[:]"));
  for (auto v : g.add_apply(std::move(op), {in}, {parse_ctype("float64[:]")})) g.add_output(v);
  return g;
}

}  // namespace

TEST_SUITE("names in generated source") {
  TEST_CASE("params field names must be C identifiers, wherever the params come from") {
    std::string const evil = "a;}; int evil() { return 0; } struct X {int b";
    CHECK_THROWS_WITH_AS(params_spec({{evil, parse_type("int64")}}),
                         doctest::Contains("not a C identifier"), signature_error);
    CHECK_THROWS_AS(ParamsType({{evil, parse_type("int64")}}), std::invalid_argument);
    CHECK_THROWS_AS(ParamsType({{"", parse_type("int64")}}), std::invalid_argument);
    CHECK_THROWS_AS(ParamsType({{"9k", parse_type("int64")}}), std::invalid_argument);
    CHECK_THROWS_WITH_AS(ParamsType({{"k", parse_type("int64")}, {"k", parse_type("int32")}}),
                         doctest::Contains("appears twice"), std::invalid_argument);
    CHECK_NOTHROW(ParamsType({{"k_2", parse_type("int64")}, {"_a", parse_type("float64[:]")}}));
  }

  TEST_CASE("params field names that are C or C++ keywords are refused, naming the word") {
    for (auto word : {"int", "return", "class", "restrict", "template", "_Bool"}) {
      std::string const expected = std::string("`") + word + "`: a reserved word";
      CHECK_THROWS_WITH_AS(params_spec({{word, parse_type("int64")}}),
                           doctest::Contains(expected.c_str()), signature_error);
    }
    for (auto ok : {"integer", "classes", "Return", "int_", "new_value"})
      CHECK_NOTHROW(params_spec({{ok, parse_type("int64")}}));
  }

  TEST_CASE("a function name is an identifier, a qualified one, or one macro call of either") {
    for (auto ok : {"f", "APPLY_SPECIFIC(vector_times_vector)", " APPLY_SPECIFIC( f ) ", "ns::f",
                    "M(ns::inner::f)"})
      CHECK_NOTHROW(check_func_name(ok));
    for (auto bad : {"", " ", "f(", "f)", "f(x)(y)", "1f", "f;g", "f() { evil(); } int g",
                     "f(a, b)", "a:b", "f\n"})
      CHECK_THROWS_AS(check_func_name(bad), signature_error);
    std::string const huge(1 << 20, 'x');
    CHECK_NOTHROW(check_func_name(huge));  // long but harmless; the message stays short
    CHECK_THROWS_WITH(check_func_name(huge + "("), doctest::Contains("bytes)"));
    try {
      check_func_name(huge + "(");
    } catch (signature_error const& e) {
      CHECK(std::string(e.what()).size() < 300);
    }
  }

  TEST_CASE("the expander refuses a bad function name or padding (SE104, SE105)") {
    SourceManager sm;
    std::vector<Diagnostic> ds;
    auto id =
        add_source(sm, "#section support_code\nint f(PyArrayObject*) { return 0; }\n", "f.c", ds);
    auto const set = merge_sections(sm, {*id}, ds);
    auto const vector = parse_type("float64[:]");
    OpDescription sig;
    sig.inputs = sig.outputs = std::vector<TypeSpec>{vector};
    NodeContext const node = single_node_context(sig);
    sig.func_name = "";
    auto e = expand(sm, set, sig, node);
    REQUIRE_FALSE(e.diagnostics.empty());
    CHECK(e.diagnostics[0].code == "SE104");
    CHECK_FALSE(e.code.has_value());
    sig.func_name = "f";
    sig.num_inputs = -1;
    e = expand(sm, set, sig, node);
    REQUIRE_FALSE(e.diagnostics.empty());
    CHECK(e.diagnostics[0].code == "SE105");
    sig.num_inputs = 1'000'000'000;
    auto const start = std::chrono::steady_clock::now();
    e = expand(sm, set, sig, node);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
    CHECK(e.diagnostics[0].code == "SE105");
    sig.num_inputs = 3;
    CHECK(expand(sm, set, sig, node).code.has_value());
  }

  TEST_CASE("op names and labels shown in the module are printable, short, without backslashes") {
    for (auto bad : {std::string(), std::string("a\nint evil;"), std::string("a\\"),
                     std::string(300, 'x'), std::string("\xff")})
      CHECK_THROWS_AS(check_display_name(bad, "op name"), signature_error);
    CHECK_NOTHROW(check_display_name("VectorTimesVector (float64[:]) \xC3\xA9", "op name"));
    Graph g;
    CHECK_THROWS_AS(g.add_input(parse_ctype("float64[:]"), "x\ny"), signature_error);
    auto const in = g.add_input(parse_ctype("float64[:]"), "x");
    CHECK_THROWS_AS(g.add_apply(std::make_shared<TextOp>("Op\n#include </etc/passwd>", ""), {in},
                                {parse_ctype("float64[:]")}),
                    signature_error);
    SourceManager sm;
    OpDescription spec;
    spec.name = "x\n";
    CHECK_THROWS_AS(SectionOp(spec, std::make_shared<SourceManager>(), {}), signature_error);
    spec.name = "ok";
    spec.func_name = "";
    CHECK_THROWS_AS(SectionOp(spec, std::make_shared<SourceManager>(), {}), signature_error);
    spec.func_name = std::nullopt;
    spec.num_outputs = -2;
    CHECK_THROWS_AS(SectionOp(spec, std::make_shared<SourceManager>(), {}), signature_error);
  }
}

TEST_SUITE("compiler output") {
  TEST_CASE("reads a 1 MB error line without a regex, with and without a column") {
    SourceManager sm;
    FileId const file = sm.add("op.c", "one\ntwo\nthree\n");
    std::string const long_message(1 << 20, 'y');
    std::string const log = "op.c:2:3: error: " + long_message + "\n" +   // clang and gcc
                            "op.c:3: error: no column on long lines\n" +  // gcc past 4096 columns
                            std::string(1 << 20, ':') + "\n" + std::string(1 << 20, '1') + "\n" +
                            "op.c:99999999999999999999999:99999999999999999999: warning: huge\n" +
                            "C:\\x\\op.c:2: note: a colon in the path\n";
    auto const ds = parse_compiler_output(log, sm);
    REQUIRE(ds.size() == 3);
    CHECK(ds[0].is_error());
    CHECK(ds[0].message.size() < 2100);  // bounded
    CHECK(sm.line_column(file, ds[0].range.begin).line == 2);
    CHECK(sm.line_column(file, ds[0].range.begin).column == 3);
    CHECK(ds[1].message == "no column on long lines");
    CHECK(ds[1].range.file == file);
    CHECK(sm.line_column(file, ds[1].range.begin).line == 3);
    CHECK(ds[2].severity == Severity::warning);
    CHECK(ds[2].notes.size() == 1);
    CHECK(ds[2].notes[0].message == "a colon in the path");
  }

  TEST_CASE("takes the shortest path, as the regex did, and needs one") {
    SourceManager sm;
    sm.add("a:1:b", "x\n");
    auto ds = parse_compiler_output(
        "a:1:b:1:1: error: e: error: f\n: error: none\n:1: error: none\n", sm);
    REQUIRE(ds.size() == 1);
    CHECK(ds[0].message == "e: error: f");
    CHECK(sm.file(ds[0].range.file).path() == "a:1:b");
  }

  TEST_CASE("reads only regular files named in the output") {
    SourceManager sm;
    auto const ds = parse_compiler_output("/dev/zero:1:1: error: x\n/proc:1:1: error: y\n", sm);
    REQUIRE(ds.size() == 2);
    CHECK_FALSE(ds[0].range.valid());
    CHECK_FALSE(ds[1].range.valid());
    CHECK(sm.size() == 0);
  }
}

TEST_SUITE("reading files") {
  TEST_CASE("a FIFO is refused at once, without waiting for a writer") {
    TempDir dir;
    auto const fifo = (dir.path / "op.c").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    SourceManager sm;
    auto const start = std::chrono::steady_clock::now();
    auto const set = load_sections(sm, {{fifo, "op.c"}});
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
    CHECK(load_message(set).find("a FIFO, not a regular file") != std::string::npos);
    CHECK(set.error->os_errno == 0);
  }

  TEST_CASE("a device is refused, not read until memory runs out") {
    SourceManager sm;
    auto const set = load_sections(sm, {{"/dev/zero", "/dev/zero"}});
    CHECK(load_message(set).find("a character device") != std::string::npos);
  }

  TEST_CASE("files over LIBSECTION_MAX_FILE_BYTES are refused with the limit named") {
    TempDir dir;
    auto const path = dir.write("big.c", "#section code\n" + std::string(100, 'x') + "\n");
    {
      ScopedEnv limit("LIBSECTION_MAX_FILE_BYTES", "100");
      SourceManager sm;
      auto const set = load_sections(sm, {{path, "big.c"}});
      auto const& message = load_message(set);
      CHECK(message.find("over the limit of 100 bytes") != std::string::npos);
      CHECK(message.find("LIBSECTION_MAX_FILE_BYTES") != std::string::npos);
    }
    {
      ScopedEnv limit("LIBSECTION_MAX_FILE_BYTES", "lots");
      SourceManager sm;
      auto const set = load_sections(sm, {{path, "big.c"}});
      CHECK(load_message(set).find("not a positive number") != std::string::npos);
    }
    SourceManager sm;
    CHECK(load_sections(sm, {{path, "big.c"}}).ok());  // the default is 64 MiB
  }

  TEST_CASE("a NUL byte in a path is an error, not a shorter path") {
    TempDir dir;
    auto const path = dir.write("x.txt", "#section code\nx\n");
    SourceManager sm;
    auto const set = load_sections(sm, {{path + std::string("\0.c", 3), "x.txt"}});
    CHECK(load_message(set).find("NUL byte") != std::string::npos);
  }
}

TEST_SUITE("types") {
  TEST_CASE("float64[] is a 0-d tensor") {
    auto const t = parse_type("float64[]");
    CHECK(t.kind == TypeSpec::Kind::tensor);
    CHECK(t.ndim == 0);
    CHECK(t.to_string() == "float64[]");
    CHECK(parse_type("float64[ ]").ndim == 0);
    CHECK(t.pytensor_str() == "Scalar(float64, shape=())");
    CHECK(parse_ctype("float64[]")->describe() == "float64[]");
    CHECK_THROWS_AS(parse_type("float64[,]"), signature_error);
    CHECK_THROWS_AS(parse_type("object[]"), signature_error);
  }

  TEST_CASE("tensor extraction refuses non-native byte order") {
    // Through the prelude's shared check, which every module starts with.
    std::string const code = parse_ctype("float64[:]")->c_extract("V3", {{"fail", "F;"}}, true);
    CHECK(code.find("libsection_check_tensor(py_V3, 12, 1, ") != std::string::npos);
    std::string const prelude = module_prelude;
    CHECK(prelude.find("PyArray_ISBYTESWAPPED") != std::string::npos);
    CHECK(prelude.find("non-native byte order") != std::string::npos);
  }
}

TEST_SUITE("generated module") {
  TEST_CASE("C++ exceptions from an op's code become Python errors, with cleanup") {
    auto const plain = generate_module(text_op_graph(std::make_shared<TextOp>("Thrower", "f();")));
    CHECK(plain.text.find("libsection_rt->set_cxx_error(\"Thrower (node 0)\")") !=
          std::string::npos);
    CHECK(plain.text.find("try {\n#endif\n// Op class Thrower\nf();") != std::string::npos);
    // With cleanup code sharing the code's scope, the try spans both.
    auto const shared = generate_module(
        text_op_graph(std::make_shared<TextOp>("Thrower", "int* p = g();", "free(p);")));
    auto const at = shared.text.find("try {\n#endif\n// Op class Thrower");
    REQUIRE(at != std::string::npos);
    CHECK(shared.text.find("free(p);\n#ifdef __cplusplus\n} catch (...)", at) != std::string::npos);
    // No exception may leave the exported functions: the only code they run that can throw is
    // the op's (in its try), since the instance is plain and the glue is the runtime's.
    auto const entries = plain.text.substr(plain.text.find("//////// graph entry points"));
    CHECK(entries.find("libsection_run(") != std::string::npos);
    CHECK(entries.find("new ") == std::string::npos);
    CHECK(entries.find("throw") == std::string::npos);
  }
}

TEST_SUITE("generated module") {
  TEST_CASE("a scalar where the main function takes an array is an InputTypeError, and back") {
    auto sm = std::make_shared<SourceManager>();
    std::vector<Diagnostic> ds;
    auto const id =
        add_source(*sm,
                   "#section support_code\n"
                   "typedef PyArrayObject* Arr;\n"
                   "int f(PyArrayObject* x, const double k, Arr y, PyArrayObject** z);\n",
                   "f.c", ds);
    auto const set = merge_sections(*sm, {*id}, ds);
    OpDescription spec;
    spec.name = "F";
    spec.func_name = "f";
    auto const op = std::make_shared<SectionOp>(spec, sm, set);
    auto const array = parse_ctype("float64[:]"), number = parse_ctype("float64");
    auto graph = [&](CTypePtr a, CTypePtr b, CTypePtr c) {
      return single_op_graph(op, {a, b, c}, {array});
    };
    CHECK_NOTHROW(generate_module(graph(array, number, array)));
    CHECK_THROWS_WITH_AS(generate_module(graph(number, number, array)),
                         doctest::Contains("F input 0: expected an array (`f` takes "
                                           "`PyArrayObject * x`), got a scalar of type float64"),
                         InputTypeError);
    CHECK_THROWS_WITH_AS(generate_module(graph(array, array, array)),
                         doctest::Contains("F input 1: expected a scalar"), InputTypeError);
    // A typedef may hide a pointer: no verdict, the compiler has the last word.
    CHECK_NOTHROW(generate_module(graph(array, number, number)));
  }
}
