// Unit tests of the linker core that need no Python: types, module generation, the cache,
// compiler output parsing and process running.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "linker/compile.hpp"
#include "section/cache.hpp"
#include "section/ctype.hpp"
#include "section/linker.hpp"
#include "section/log.hpp"
#include "section/module.hpp"
#include "section/platform.hpp"
#include "section/settings.hpp"
#include "section/signature.hpp"

namespace fs = std::filesystem;
using namespace section;

namespace {

// A C `double` type (declare, init to 0.0, extract from a Python float, sync back) as templates.
CTypePtr double_type() {
  TemplateTypeSpec spec;
  spec.description = "double";
  spec.declare = "double %(name)s;\n";
  spec.init = "%(name)s = 0.0;\n";
  spec.extract =
      "if (!PyFloat_Check(py_%(name)s)) { PyErr_SetString(PyExc_TypeError, \"expected a float\"); "
      "%(fail)s }\n%(name)s = PyFloat_AsDouble(py_%(name)s);\n";
  spec.sync = "Py_XDECREF(py_%(name)s);\npy_%(name)s = PyFloat_FromDouble(%(name)s);\n";
  spec.cleanup = "";
  return template_type(spec);
}

// `z = x <symbol> y` on doubles, failing on negative inputs.
class TemplateOp final : public COp {
 public:
  TemplateOp(std::string name, std::string symbol)
      : name_(std::move(name)), symbol_(std::move(symbol)) {}
  std::string name() const override { return name_; }
  OpCode generate(NodeContext const& ctx) const override {
    OpCode code;
    code.code = "if (" + ctx.inputs[0] + " < 0) " + ctx.sub.at("fail") + "\n" + ctx.outputs[0] +
                " = " + ctx.inputs[0] + " " + symbol_ + " " + ctx.inputs[1] + ";";
    code.code_cleanup = "/* cleanup " + name_ + " */";
    code.support_code = {"/* shared support */"};
    code.support_code_apply = "/* apply " + ctx.node_name + " */";
    return code;
  }

 private:
  std::string name_, symbol_;
};

Graph add_mul_graph() {
  auto d = double_type();
  Graph g;
  auto x = g.add_input(d, "x"), y = g.add_input(d, "y"), z = g.add_input(d, "z");
  auto a = g.add_apply(std::make_shared<TemplateOp>("Add", "+"), {x, y}, {d});
  auto b = g.add_apply(std::make_shared<TemplateOp>("Mul", "*"), {a[0], z}, {d});
  g.add_output(b[0]);
  return g;
}

std::size_t count(std::string const& text, std::string const& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("libsection_linker_test_" + std::to_string(::getpid()) +
                                        "_" + std::to_string(counter()++));
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static std::atomic<int>& counter() {
    static std::atomic<int> c{0};
    return c;
  }
};

ModuleManifest write_library(PrivateDir const& work, std::string const& bytes) {
  std::ofstream(work.path() / "module.so", std::ios::binary) << bytes;
  ModuleManifest manifest;
  manifest.ops = {"Test"};
  return manifest;
}

unsigned mode_of(fs::path const& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 0777;
}

}  // namespace

TEST_SUITE("linker") {
  TEST_CASE("templates fill %(key)s and %% and reject unknown keys") {
    CHECK(fill_template("double %(name)s; // 100%%", {{"name", "V1"}}) == "double V1; // 100%");
    CHECK(fill_template("%(fail)s", {{"fail", "goto x;"}}) == "goto x;");
    CHECK(fill_template("50% off", {}) == "50% off");
    CHECK_THROWS_WITH_AS(fill_template("%(nope)s", {}), doctest::Contains("%(nope)s"),
                         std::invalid_argument);
  }

  TEST_CASE("type strings become the built-in types") {
    CHECK(parse_ctype("float64[:]")->describe() == "float64[:]");
    CHECK(parse_ctype("float32[:,:]")->c_element_type() == "npy_float32");
    CHECK(parse_ctype("int64")->describe() == "int64");
    CHECK(parse_ctype("object")->describe() == "object");
    CHECK_FALSE(parse_ctype("object")->dtype());
    CHECK(parse_ctype("int32")->dtype()->typenum == 5);
    CHECK_THROWS(parse_ctype("flaot64[:]"));
  }

  TEST_CASE("tensor extraction checks dtype, dimensions and alignment with the variable's label") {
    auto const t = parse_ctype("float64[:,:]");
    std::string const code =
        t->c_extract("V3", {{"fail", "FAIL_HERE"}, {"label", "input 1 (y)"}}, true);
    // One call of the prelude's shared check (type number 12, 2-d), failing in one place.
    CHECK(count(code, "FAIL_HERE") == 1);
    CHECK(code.find("libsection_check_tensor(py_V3, 12, 2, ") != std::string::npos);
    CHECK(code.find("\"input 1 (y): expected a float64[:,:] array (float64, 2-d)\", "
                    "\"input 1 (y)\")") != std::string::npos);
    CHECK(t->c_extract("V3", {{"fail", "FAIL_HERE"}}, false).find("FAIL_HERE") ==
          std::string::npos);
  }

  TEST_CASE(
      "PyTensor's tensor glue calls the prelude's functions, the rest is the wrapped type's") {
    auto const rest = parse_ctype("float64[:]");
    auto const t = pytensor_tensor_type("npy_float64", "NPY_FLOAT64", rest);
    Sub const sub{{"fail", "FAIL_HERE"}, {"label", "input 0"}};
    std::string const extract = t->c_extract("V1", sub, true);
    CHECK(count(extract, "FAIL_HERE") == 1);
    CHECK(extract.find("libsection_pt_extract(py_V1, NPY_FLOAT64, \"NPY_FLOAT64\")") !=
          std::string::npos);
    CHECK(t->c_extract("V1", sub, false).find("FAIL_HERE") == std::string::npos);
    CHECK(t->c_declare("V1", sub, true).find("typedef npy_float64 dtype_V1;") != std::string::npos);
    CHECK(t->c_sync("V1", sub).find("libsection_pt_sync(&py_V1, V1)") != std::string::npos);
    CHECK(t->describe() == rest->describe());
    CHECK(t->c_code_cache_version() == rest->c_code_cache_version());
    CHECK(std::string(module_prelude).find("int libsection_pt_extract(") != std::string::npos);
    // Both names are pasted into C code.
    CHECK_THROWS_AS(pytensor_tensor_type("npy_float64); x(", "NPY_FLOAT64", rest),
                    std::invalid_argument);
    CHECK_THROWS_AS(pytensor_tensor_type("npy_float64", "1 + NPY_FLOAT64", rest),
                    std::invalid_argument);
    CHECK_THROWS_AS(pytensor_tensor_type("npy_float64", "NPY_FLOAT64", nullptr),
                    std::invalid_argument);
  }

  TEST_CASE("params structs are named like PyTensor's ParamsType and extracted per field") {
    ParamsType params({{"k", parse_type("int64")}, {"a", parse_type("float64[:]")}});
    CHECK(params.spec().type_name.rfind("_Params_", 0) == 0);
    REQUIRE(params.spec().fields.size() == 2);
    CHECK(params.spec().fields[0].name == "a");  // sorted by name
    CHECK(params.spec().fields[1].c_element_type == "npy_int64");
    std::string const extract = params.c_extract("V7", {{"fail", "F;"}}, true);
    CHECK(extract.find("PyDict_GetItemString(py_V7, \"k\")") != std::string::npos);
    CHECK(params.c_support_code().front().find("npy_int64 k;") != std::string::npos);
    CHECK_THROWS_AS(ParamsType({{"o", parse_type("object")}}), std::invalid_argument);
  }

  TEST_CASE("a module nests one block per variable and apply, innermost cleaned first") {
    ModuleSource const m = generate_module(add_mul_graph());
    // 3 inputs, a, b, then Add and Mul: 7 blocks, labels closing innermost first.
    auto const l7 = m.text.find("__label_7: ;"), l6 = m.text.find("__label_6: ;"),
               l1 = m.text.find("__label_1: ;");
    REQUIRE(l7 != std::string::npos);
    CHECK(l7 < l6);
    CHECK(l6 < l1);
    CHECK(m.text.find("/* cleanup Mul */") < m.text.find("/* cleanup Add */"));
    // Add's failure code jumps to its own label, with its own id.
    CHECK(m.text.find("{__failure = 6; if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "
                      "\"Add (node 0): C code failed without setting a Python exception\"); "
                      "goto __label_6;}") != std::string::npos);
    // Outputs sync only on success; support code appears once; placeholders are gone.
    CHECK(count(m.text, "if (!__failure) {") == 1);
    CHECK(count(m.text, "/* shared support */") == 1);
    CHECK(m.text.find(hash_placeholder) == std::string::npos);
    CHECK(m.text.find("/* apply node_" + m.name + "_1 */") != std::string::npos);
    CHECK(m.op_names == std::vector<std::string>{"Add", "Mul"});
    CHECK(m.text.find("#include <iostream>") == std::string::npos);
  }

  TEST_CASE("built-in types' glue is a node table entry and one runtime call each way") {
    Graph g;
    auto const x = g.add_input(parse_ctype("float64[:]"), "x");
    auto const k = g.add_input(parse_ctype("int16"), "k");
    auto const o = g.add_input(parse_ctype("object"));
    auto out = g.add_apply(std::make_shared<TemplateOp>("Add", "+"), {x, k, o},
                           {parse_ctype("float32"), parse_ctype("float64[:,:]")});
    g.add_output(out[1]);  // out[0] is an intermediate
    ModuleSource const m = generate_module(g);
    // The table: kind, typenum, dimensions or item size, and the messages' strings.
    CHECK(m.text.find("{1, 12, 1, \"input 0 (x): expected a float64[:] array (float64, 1-d)\", "
                      "\"input 0 (x)\"},") != std::string::npos);
    CHECK(m.text.find("{6, 3, 2, \"input 1 (k): expected an integer for int16, got %s\", "
                      "\"input 1 (k): value out of range for int16\"},") != std::string::npos);
    CHECK(m.text.find("{2, 0, 0, \"\", \"\"},") != std::string::npos);
    CHECK(m.text.find("{8, 11, 4, ") != std::string::npos);
    CHECK(m.text.find("{1, 12, 2, \"output 0: expected a float64[:,:] array") != std::string::npos);
    CHECK(count(m.text, "libsection_rt->extract(storage[") == 3);
    CHECK(count(m.text, "libsection_rt->init(") == 1);
    CHECK(count(m.text, "libsection_rt->extract_output(storage[") == 1);
    CHECK(count(m.text, "libsection_rt->store_output(storage[") == 1);
    CHECK(count(m.text, "libsection_rt->cleanup(") == 4);
    // No glue of its own: no check, no conversion, no reference counting of variables.
    CHECK(m.text.find("libsection_check_tensor(py_") == std::string::npos);
    CHECK(m.text.find("PyNumber_Index") == std::string::npos);
    CHECK(m.text.find("LIBSECTION_INCREF(py_") == std::string::npos);
    // A plain instance: its cells, made and freed by the runtime; the module initialised from
    // the runtime's table.
    CHECK(m.text.find("libsection_rt->new_cells(storage, 4)") != std::string::npos);
    CHECK(m.text.find("libsection_rt->free_cells(self, 4)") != std::string::npos);
    CHECK(m.text.find("libsection_module_init(const void* runtime)") != std::string::npos);
    CHECK(m.text.find("_import_array") == std::string::npos);
    CHECK(m.text.find("namespace {") == std::string::npos);
    CHECK(m.text.find("int run() {") == std::string::npos);
  }

  TEST_CASE("the runtime holds the built-in types' glue, its table in the prelude") {
    std::string const runtime = runtime_source();
    CHECK(runtime.rfind("// The libsection ", 0) == 0);
    CHECK(runtime.find(module_prelude) != std::string::npos);
    CHECK(runtime.find(
              "LIBSECTION_EXPORT const libsection_runtime* libsection_runtime_table(void)") !=
          std::string::npos);
    CHECK(runtime.find("#define LIBSECTION_RUNTIME_ABI " + std::to_string(module_abi_version)) !=
          std::string::npos);
    CHECK(std::string(module_prelude).find("typedef struct libsection_runtime {") !=
          std::string::npos);
  }

  TEST_CASE("types with their own glue keep it: templates and params") {
    ModuleSource const m = generate_module(add_mul_graph());
    CHECK(m.text.find("PyFloat_AsDouble(py_V1)") != std::string::npos);
    CHECK(m.text.find("libsection_rt->extract") == std::string::npos);
    CHECK(m.text.find("static const libsection_var") == std::string::npos);
  }

  TEST_CASE("module generation is deterministic") {
    CHECK(generate_module(add_mul_graph()).text == generate_module(add_mul_graph()).text);
  }

  TEST_CASE("bad graphs are rejected with the reason") {
    Graph g;
    auto x = g.add_input(double_type());
    CHECK_THROWS_WITH(g.add_output(x), doctest::Contains("only outputs of applies"));
    CHECK_THROWS_WITH(
        g.add_apply(std::make_shared<TemplateOp>("Add", "+"), {x, 9}, {double_type()}),
        doctest::Contains("input variable 9 does not exist"));
    CHECK_THROWS_WITH(generate_module(g), doctest::Contains("at least one apply"));
  }

  TEST_CASE("the cache key covers source, compiler, flags and Python") {
    ModuleSource m = generate_module(add_mul_graph());
    Toolchain tc{{}, {"/usr/bin/c++"}, "/usr/bin/c++: g++ 12", {"-O3"}};
    PythonEnvironment py{{"/inc"}, "cpython-311", "numpy 2 C-API 1"};
    std::string const key = module_cache_key(m, tc, py);
    CHECK(key.size() == 64);
    CHECK(module_cache_key(m, tc, py) == key);
    auto flags = tc;
    flags.flags.push_back("-march=native");
    CHECK(module_cache_key(m, flags, py) != key);
    auto compiler = tc;
    compiler.identity = "/usr/bin/c++: g++ 13";
    CHECK(module_cache_key(m, compiler, py) != key);
    auto abi = py;
    abi.abi = "cpython-312";
    CHECK(module_cache_key(m, tc, abi) != key);
    auto gold = tc;
    gold.link_flags = {"-fuse-ld=gold"};
    CHECK(module_cache_key(m, gold, py) != key);
    auto launcher = tc;
    launcher.launcher = {"/usr/bin/ccache"};  // does not change what is built
    CHECK(module_cache_key(m, launcher, py) == key);
    m.text += "\n";
    CHECK(module_cache_key(m, tc, py) != key);
  }

  TEST_CASE("header and library directories reach the commands and the key") {
    ModuleSource m = generate_module(add_mul_graph());
    Toolchain tc{{}, {"/usr/bin/c++"}, "/usr/bin/c++: g++ 12", {"-O3"}};
    PythonEnvironment py{{"/inc"}, "cpython-311", "numpy 2 C-API 1"};
    std::string const key = module_cache_key(m, tc, py);
    m.header_dirs = {"/opt/op/include"};
    m.lib_dirs = {"/opt/op/lib"};
    m.libraries = {"opmath"};
    auto const cmd = compile_commands(tc, py, m, "m.cpp", "m.o", "m.so");
    auto has = [](std::vector<std::string> const& argv, std::string const& arg) {
      return std::find(argv.begin(), argv.end(), arg) != argv.end();
    };
    CHECK(has(cmd.compile, "-I/opt/op/include"));
    CHECK(has(cmd.link, "-L/opt/op/lib"));
    CHECK(has(cmd.link, "-Wl,-rpath,/opt/op/lib"));
    CHECK(has(cmd.link, "-lopmath"));
    CHECK(module_cache_key(m, tc, py) != key);
    // A directory moved from one list to the other is another build.
    auto swapped = m;
    std::swap(swapped.header_dirs, swapped.lib_dirs);
    CHECK(module_cache_key(swapped, tc, py) != module_cache_key(m, tc, py));
  }

  TEST_CASE("an op's flags and headers are checked as compiler arguments, named by the op") {
    class Flagged final : public COp {
     public:
      explicit Flagged(BuildFlags flags) : flags_(std::move(flags)) {}
      std::string name() const override { return "Flagged"; }
      OpCode generate(NodeContext const& ctx) const override {
        OpCode code;
        static_cast<BuildFlags&>(code) = flags_;
        code.code = ctx.outputs[0] + " = " + ctx.inputs[0] + ";";
        return code;
      }

     private:
      BuildFlags flags_;
    };
    auto const f64 = ctype_for(parse_type("float64[:]"));
    auto module = [&](BuildFlags flags) {
      Graph g;
      auto v = g.add_input(f64, "v");
      g.add_output(g.add_apply(std::make_shared<Flagged>(std::move(flags)), {v}, {f64})[0]);
      return generate_module(g);
    };
    ModuleSource const good = module({{"<cblas.h>", "\"mine.h\"", "plain.h"},
                                      {"/opt/include"},
                                      {"m"},
                                      {"/opt/lib"},
                                      {"-DFOO=42", "-include", "/opt/x.h"}});
    CHECK(good.text.find("#include <cblas.h>\n#include \"mine.h\"\n#include <plain.h>\n") !=
          std::string::npos);
    CHECK(good.compile_args[0] == "-DFOO=42");
    CHECK(good.header_dirs == std::vector<std::string>{"/opt/include"});
    // Empty items are left out, as PyTensor leaves them out.
    CHECK(module({{""}, {""}, {""}, {""}, {""}}).compile_args == module({}).compile_args);
    auto refused = [&](BuildFlags flags) -> std::string {
      try {
        module(std::move(flags));
      } catch (LinkError const& e) {
        return e.what();
      }
      return "accepted";
    };
    CHECK(refused({{}, {}, {}, {}, {"-DA\nB"}}) ==
          "Flagged: c_compile_args `-DA?B` holds a control character (byte 0x0a at offset 3) "
          "(each is one argument of the compiler's command)");
    CHECK(refused({{}, {}, {}, {}, {std::string("-DA\0B", 5)}}).find("byte 0x00") !=
          std::string::npos);
    CHECK(refused({{},
                   {"/opt/in\x01"
                    "clude"},
                   {},
                   {},
                   {}})
              .find("c_header_dirs") != std::string::npos);
    CHECK(refused({{}, {}, {"m\r"}, {}, {}}).find("c_libraries") != std::string::npos);
    CHECK(refused({{}, {}, {"-lm"}, {}, {}}) ==
          "Flagged: c_libraries `-lm` is a flag, not a library's name (give `m` for -lm) (each "
          "is one argument of the compiler's command)");
    CHECK(refused({{}, {}, {}, {"/a,--no-as-needed"}, {}}).find("holds a comma") !=
          std::string::npos);
    CHECK(refused({{}, {}, {}, {}, {std::string(5000, 'x')}}).find("over 4096 bytes") !=
          std::string::npos);
    for (std::string header :
         {"a.h>\nint evil;", "\"a.h\" \\", "<a.h> <b.h>", "a\"b.h", "<>", "\x01.h"})
      CHECK_MESSAGE(refused({{header}, {}, {}, {}, {}}).find("Flagged: c_headers `") == 0, header);
  }

  TEST_CASE("LIBSECTION_CXXFLAGS, LIBSECTION_CFLAGS and the launcher are checked the same way") {
    ::setenv("LIBSECTION_CXXFLAGS",
             "-O2 -DA\x01"
             "B",
             1);
    CHECK_THROWS_WITH(read_settings(),
                      "LIBSECTION_CXXFLAGS: the word `-DA?B` holds a control character (byte "
                      "0x01 at offset 3)");
    ::unsetenv("LIBSECTION_CXXFLAGS");
    ::setenv("LIBSECTION_CFLAGS", std::string(5000, 'x').c_str(), 1);
    CHECK_THROWS_WITH(read_settings(), doctest::Contains("LIBSECTION_CFLAGS: the word"));
    ::unsetenv("LIBSECTION_CFLAGS");
    ::setenv("LIBSECTION_COMPILER_LAUNCHER", "ccache\x7f", 1);
    CHECK_THROWS_WITH(read_settings(), doctest::Contains("LIBSECTION_COMPILER_LAUNCHER"));
    ::unsetenv("LIBSECTION_COMPILER_LAUNCHER");
    CHECK_NOTHROW(read_settings());
  }

  TEST_CASE("a C module is compiled as C by the C compiler, keyed and headed apart") {
    ModuleSource m;
    m.name = "mc";
    m.op_names = {"Op"};
    m.text = std::string(module_prelude) + c_module_prelude + "int f(void) { return 0; }\n";
    Toolchain cxx{{}, {"/usr/bin/c++"}, "/usr/bin/c++: g++ 12", {"-O3"}};
    PythonEnvironment py{{"/inc"}, "cpython-311", "numpy 2 C-API 1"};
    std::string const cxx_key = module_cache_key(m, cxx, py);
    m.language = Language::c;
    CHECK(module_cache_key(m, cxx, py) != cxx_key);  // the language alone is another build
    CHECK_THROWS_WITH_AS(compile_commands(cxx, py, m, "m.c", "m.o", "m.so"),
                         doctest::Contains("module mc is c, but its compiler is for c++"),
                         LinkError);
    Toolchain c = cxx;
    c.language = Language::c;
    auto const cmd = compile_commands(c, py, m, "m.c", "m.o", "m.so");
    auto const x = std::find(cmd.compile.begin(), cmd.compile.end(), "-x");
    REQUIRE(x + 1 < cmd.compile.end());
    CHECK(*(x + 1) == "c");
    CHECK(precompiled_header_key(c, py) != precompiled_header_key(cxx, py));
  }

  TEST_CASE("a precompiled header is built with the module's code-generation flags") {
    // GCC refuses a header built without the module's -m/-f flags (a drop-in's -march=native)
    // and reads the headers' text instead: such a module gets a header of its own.
    std::vector<std::string> const args = {"-march=native", "-DX=1", "-I/x", "-ffp-contract=fast",
                                           "-Wall",         "-O2",   "-g",   "-std=c++17"};
    CHECK(header_flags(args) == std::vector<std::string>{"-march=native", "-ffp-contract=fast",
                                                         "-O2", "-g", "-std=c++17"});
    Toolchain tc;
    tc.identity = "g++ 12";
    PythonEnvironment py;
    CHECK(precompiled_header_key(tc, py, {}, {}) == precompiled_header_key(tc, py));
    CHECK(precompiled_header_key(tc, py, {}, {"-march=native"}) != precompiled_header_key(tc, py));
    CHECK(header_flags({"-DONLY_A_MACRO=1", "-I/include"}).empty());  // one header for these
  }

  TEST_CASE("a C++ module leaves out the special math functions only when it cannot use them") {
    // A module that names none, includes only standard headers and no file by its flags.
    CHECK_FALSE(may_use_special_math("#include <cmath>\n# include <vector>\ndouble y = beta_;\n"
                                     "float f(float x) { return sqrtf(x) + legendre_2; }\n",
                                     {"-O3", "-DX=1"}));
    CHECK_FALSE(may_use_special_math("#include <numpy/npy_math.h>\n#include <sys/mman.h>\n", {}));
    // Any name of one, with its float and long double suffixes, or the macros telling them.
    for (char const* use : {"std::cyl_bessel_j(0, x)", "beta(a, b)", "std::expintf(x)",
                            "__gnu_cxx::airy_ail(x)", "#ifdef __STDCPP_MATH_SPEC_FUNCS__"})
      CHECK_MESSAGE(may_use_special_math(std::string("#include <cmath>\n") + use, {}), use);
    // A header of the op's own, one outside the standard library, or one named by a macro.
    for (char const* include : {"#include \"helpers.h\"", "#include <boost/math/tools.hpp>",
                                "  #  include_next <x.h>", "#include HEADER"})
      CHECK_MESSAGE(may_use_special_math(include, {}), include);
    // Names in comments and literals call nothing; the literal's end is found, raw ones too.
    CHECK_FALSE(may_use_special_math("// legendre\n/* beta(a, b) */\nchar const* m = \"input 0 "
                                     "(beta)\\\" beta\"; char c = '\\''; int n = 1'000;\n"
                                     "char const* r = R\"x(\" beta( )\" )x\";\n",
                                     {}));
    CHECK(may_use_special_math("char const* r = R\"x(\" )x\"; double b = beta(1.0, 2.0);", {}));
    // In directives: a macro's body, continued or not, and a condition; not a #line's path.
    CHECK(may_use_special_math("#define J0(x) \\\n  std::cyl_bessel_j(0, x)\n", {}));
    CHECK(may_use_special_math("#if __STDCPP_MATH_SPEC_FUNCS__\n#endif\n", {}));
    CHECK_FALSE(may_use_special_math("#line 3 \"/ops/beta/legendre.c\"\nint x;\n", {}));
    CHECK(may_use_special_math("char c = 'a'; double b = std::expint(1.0);", {}));
    CHECK(may_use_special_math("", {"-include", "my.h"}));
    CHECK(may_use_special_math("", {"-imacrosdefs.h"}));

    // The generated glue names none: a module of built-in types leaves them out, and its header
    // is built with the flag (which changes the header's text).
    auto const f64 = ctype_for(parse_type("float64[:]"));
    Graph g;
    auto v = g.add_input(f64, "beta");  // a label, in the glue's messages only
    g.add_output(g.add_apply(std::make_shared<TemplateOp>("Add", "+"), {v, v}, {f64})[0]);
    ModuleSource const lean = generate_module(g);
    CHECK(lean.text.find("(beta)") != std::string::npos);
    CHECK(std::count(lean.compile_args.begin(), lean.compile_args.end(), no_special_math_flag) ==
          1);
    CHECK(header_flags(lean.compile_args) == std::vector<std::string>{no_special_math_flag});
    // An op that uses one keeps them.
    class Bessel final : public COp {
     public:
      std::string name() const override { return "Bessel"; }
      OpCode generate(NodeContext const& ctx) const override {
        OpCode code;
        code.code = "double j0 = std::cyl_bessel_j(0.0, 1.0); " + ctx.outputs[0] + " = " +
                    ctx.inputs[0] + ";";
        return code;
      }
    };
    Graph b;
    auto w = b.add_input(f64, "w");
    b.add_output(b.add_apply(std::make_shared<Bessel>(), {w}, {f64})[0]);
    auto const args = generate_module(b).compile_args;
    CHECK(std::find(args.begin(), args.end(), no_special_math_flag) == args.end());
  }

  TEST_CASE("a module is C when its ops are declared C and its text is C, never switched") {
    class DeclaredC final : public COp {
     public:
      std::string name() const override { return "COp"; }
      OpCode generate(NodeContext const& ctx) const override {
        OpCode code;
        code.code = ctx.outputs[0] + " = " + ctx.inputs[0] + ";";
        return code;
      }
      Language language() const override { return Language::c; }
    };
    auto d = double_type();
    Graph alone;
    auto x = alone.add_input(d, "x");
    alone.add_output(alone.add_apply(std::make_shared<DeclaredC>(), {x}, {d})[0]);
    // A type with glue of its own (templates, C++) makes the text C++: refused with why.
    CHECK_THROWS_WITH_AS(generate_module(alone),
                         doctest::Contains("COp is declared C (language = \"c\"), but its "
                                           "module is C++: a variable's type brings its own glue"),
                         LinkError);
    CHECK_THROWS_WITH_AS(generate_module(alone), doctest::Contains("language = \"c++\""),
                         LinkError);
    Graph mixed;
    auto y = mixed.add_input(d, "y");
    auto a = mixed.add_apply(std::make_shared<TemplateOp>("Add", "+"), {y, y}, {d});
    mixed.add_output(mixed.add_apply(std::make_shared<DeclaredC>(), {a[0]}, {d})[0]);
    CHECK_THROWS_WITH_AS(generate_module(mixed),
                         doctest::Contains("its module also holds Add, which is C++"), LinkError);
    CHECK(generate_module(add_mul_graph()).language == Language::cxx);
    // Built-in types (the runtime's glue), no params, no struct code: the text is C.
    auto const f64 = ctype_for(parse_type("float64[:]"));
    Graph plain;
    auto v = plain.add_input(f64, "v");
    plain.add_output(plain.add_apply(std::make_shared<DeclaredC>(), {v}, {f64})[0]);
    ModuleSource const c = generate_module(plain);
    CHECK(c.language == Language::c);
    CHECK(c.text.find(c_module_prelude) != std::string::npos);
    Graph with_params;
    auto w = with_params.add_input(f64, "w");
    auto k = with_params.add_constant(f64, "params");
    with_params.add_output(with_params.add_apply(std::make_shared<DeclaredC>(), {w}, {f64}, k)[0]);
    CHECK_THROWS_WITH_AS(generate_module(with_params), doctest::Contains("its params"), LinkError);
  }

  TEST_CASE("a module that links no library and exports nothing is a whole program") {
    // Its op's functions are then compiled once, where they are called (GCC -fwhole-program).
    CHECK(whole_program_text("static int f(void) { return 1; }\nint g(void) { return f(); }"));
    // `asm` may name a symbol the compiler cannot see used; `visibility` exports one. In code
    // or in a macro, not in a comment or a literal.
    CHECK_FALSE(whole_program_text("int f(void) { __asm__ volatile(\"call g\"); return 0; }"));
    CHECK_FALSE(whole_program_text("#define BARRIER() asm(\"\" ::: \"memory\")\n"));
    CHECK_FALSE(whole_program_text("__attribute__((visibility(\"default\"))) int seen(void);"));
    CHECK_FALSE(whole_program_text("int h(void) __attribute__((externally_visible));"));
    CHECK(whole_program_text("/* asm visibility */ char const* s = \"asm\";"));
    CHECK(whole_program_text("#include <asm/unistd.h>\nint f(void) { return 0; }"));

    class DeclaredC final : public COp {
     public:
      DeclaredC(std::string support, std::vector<std::string> libraries,
                std::vector<std::string> flags)
          : support_(std::move(support)), libraries_(std::move(libraries)),
            flags_(std::move(flags)) {}
      std::string name() const override { return "COp"; }
      OpCode generate(NodeContext const& ctx) const override {
        OpCode code;
        code.support_code = {support_};
        code.libraries = libraries_;
        code.compile_args = flags_;
        code.code = ctx.outputs[0] + " = " + ctx.inputs[0] + ";";
        return code;
      }
      Language language() const override { return Language::c; }

     private:
      std::string support_;
      std::vector<std::string> libraries_, flags_;
    };
    auto const f64 = ctype_for(parse_type("float64[:]"));
    auto module = [&](std::string support, std::vector<std::string> libraries = {},
                      std::vector<std::string> flags = {}) {
      Graph g;
      auto v = g.add_input(f64, "v");
      g.add_output(
          g.add_apply(std::make_shared<DeclaredC>(support, libraries, flags), {v}, {f64})[0]);
      return generate_module(g);
    };
    ModuleSource const plain = module("int helper(void) { return 1; }");
    CHECK(plain.whole_program);
    // Its entry points stay exported under GCC's flag (clang knows neither).
    CHECK(plain.text.find("#define LIBSECTION_VISIBLE __attribute__((visibility(\"default\"), "
                          "externally_visible))") != std::string::npos);
    // A static library may call back into the op's functions (BLAS's `xerbla_`).
    CHECK_FALSE(module("int helper(void) { return 1; }", {"blas"}).whole_program);
    CHECK_FALSE(module("__attribute__((visibility(\"default\"))) int seen(void) { return 1; }")
                    .whole_program);
    CHECK_FALSE(module("", {}, {"-flto=auto"}).whole_program);             // LTO decides for itself
    CHECK_FALSE(module("", {}, {"-include", "exports.h"}).whole_program);  // code unread
    CHECK(module("", {}, {"-DN=3"}).whole_program);
    ModuleSource const cxx = generate_module(add_mul_graph());
    CHECK(cxx.whole_program);
    CHECK(cxx.text.find("#define LIBSECTION_EXPORT extern \"C\" LIBSECTION_VISIBLE\n") !=
          std::string::npos);

    Toolchain gcc{{}, {"/usr/bin/cc"}, "/usr/bin/cc: cc (Debian 12.2.0) 12.2.0", {"-O3"}};
    gcc.language = Language::c;
    PythonEnvironment py{{"/inc"}, "cpython-311", "numpy 2 C-API 1"};
    auto flagged = [&](Toolchain const& tc, ModuleSource const& m) {
      auto const cmd = compile_commands(tc, py, m, "m.c", "m.o", "m.so").compile;
      return std::count(cmd.begin(), cmd.end(), whole_program_flag) == 1;
    };
    CHECK(flagged(gcc, plain));
    Toolchain clang = gcc;
    clang.identity = "/usr/bin/clang: Debian clang version 14.0.6";
    CHECK_FALSE(flagged(clang, plain));
    ModuleSource other = plain;
    other.whole_program = false;
    CHECK_FALSE(flagged(gcc, other));
    CHECK(module_cache_key(other, gcc, py) != module_cache_key(plain, gcc, py));
    CHECK_FALSE(can_share_library(plain, other));
    ModuleSource const second = module("int helper(void) { return 2; }");
    REQUIRE(can_share_library(plain, second));
    CHECK(generate_batch({&plain, &second}).whole_program);
  }

  TEST_CASE("graphs compiled together keep their own names, macros and entry points") {
    // An op whose support code and code are given, on one float64 vector.
    class Written final : public COp {
     public:
      Written(std::string support, std::string code, Language language = Language::cxx)
          : support_(std::move(support)), code_(std::move(code)), language_(language) {}
      std::string name() const override { return "Written"; }
      OpCode generate(NodeContext const& ctx) const override {
        OpCode code;
        code.support_code = {support_};
        code.code = ctx.outputs[0] + " = " + ctx.inputs[0] + "; " + code_;
        code.init_code = {"/* init " + ctx.node_name + " */"};
        return code;
      }
      Language language() const override { return language_; }

     private:
      std::string support_, code_;
      Language language_;
    };
    auto const f64 = ctype_for(parse_type("float64[:]"));
    auto module = [&](std::string support, std::string code, Language language = Language::cxx) {
      Graph g;
      auto v = g.add_input(f64, "v");
      g.add_output(g.add_apply(std::make_shared<Written>(support, code, language), {v}, {f64})[0]);
      return generate_module(g);
    };
    // A module of one graph: no suffix, no namespace, the old text's shape.
    ModuleSource const a =
        module("int helper(void) { return 1; }\n#define LIMIT 3\n", "(void)helper(); (void)LIMIT;");
    ModuleSource const b =
        module("#include <vector>\nint helper(void) { return 2; }\n", "(void)helper();");
    CHECK(a.graphs == 1);
    CHECK(a.text.find(member_placeholder) == std::string::npos);
    CHECK(a.text.find("LIBSECTION_EXPORT void* libsection_instance_new(PyObject** storage)") !=
          std::string::npos);
    CHECK(a.text.find("LIBSECTION_EXPORT PyObject* libsection_init(void)") != std::string::npos);
    CHECK(a.text.find(graph_namespace_prefix) == std::string::npos);
    CHECK(graph_suffix(0, 1).empty());
    CHECK(graph_suffix(3, 5) == "_3");

    REQUIRE(can_share_library(a, b));
    ModuleSource const both = generate_batch({&a, &b});
    CHECK(both.graphs == 2);
    CHECK(both.op_names == std::vector<std::string>{"Written", "Written"});
    CHECK(both.name.rfind("m", 0) == 0);
    CHECK(both.text.find(member_placeholder) == std::string::npos);
    CHECK(both.text.find(hash_placeholder) == std::string::npos);
    // Each graph's entry points carry its suffix; the library's own are there once.
    for (char const* fn : {"libsection_init_", "libsection_instance_new_",
                           "libsection_instance_run_", "libsection_instance_free_"}) {
      CHECK(both.text.find(std::string(fn) + "0(") != std::string::npos);
      CHECK(both.text.find(std::string(fn) + "1(") != std::string::npos);
    }
    CHECK(count(both.text, "libsection_module_init(const void* runtime)") == 1);
    CHECK(count(both.text, "libsection_abi_version(void)") == 1);
    // Each graph's code in a namespace of its own: the two helpers do not meet. An include
    // directive stands outside it, where it was; a graph's macros end with it.
    CHECK(count(both.text, "namespace libsection_graph_0 {") == 1);
    CHECK(count(both.text, "namespace libsection_graph_1 {") == 2);  // reopened after #include
    CHECK(both.text.find("}\n#include <vector>\nnamespace libsection_graph_1 {") !=
          std::string::npos);
    auto const undef = both.text.find("#undef LIMIT\n");
    REQUIRE(undef != std::string::npos);
    CHECK(undef < both.text.find("namespace libsection_graph_1 {"));
    // Each graph's names are its own module's (APPLY_SPECIFIC and the node name).
    CHECK(both.text.find("init node_" + a.name + "_0") != std::string::npos);
    CHECK(both.text.find("init node_" + b.name + "_0") != std::string::npos);
    // The same members make the same text.
    CHECK(generate_batch({&a, &b}).text == both.text);

    // Graphs that cannot share a library: another language or other flags.
    ModuleSource const c = module("", "", Language::c);
    CHECK_FALSE(can_share_library(a, c));
    ModuleSource flagged = b;
    flagged.compile_args.push_back("-DX=1");
    CHECK_FALSE(can_share_library(a, flagged));
    CHECK_THROWS_AS(generate_batch({&a, &flagged}), std::invalid_argument);
    CHECK_THROWS_AS(generate_batch({&a}), std::invalid_argument);
    CHECK_FALSE(can_share_library(both, a));  // a module of several is no member

    // C has no namespaces: the graphs share their support code, exact duplicates once.
    ModuleSource const c2 = module("", "/* second */", Language::c);
    ModuleSource const cs = generate_batch({&c, &c2});
    CHECK(cs.language == Language::c);
    CHECK(cs.text.find(graph_namespace_prefix) == std::string::npos);
    CHECK(cs.text.find(c_module_prelude) != std::string::npos);
    ModuleSource const c3 = module("", "\n#define TWICE(x) (2 * (x))\n", Language::c);
    CHECK(generate_batch({&c3, &c2}).text.find("#undef TWICE\n") != std::string::npos);
  }

  TEST_CASE("a library's undefined symbols are read from its ELF image, anything else refused") {
    std::ifstream in("/proc/self/exe", std::ios::binary);
    std::string const image((std::istreambuf_iterator<char>(in)), {});
    REQUIRE(image.size() > 64);
    auto const undefined = platform::undefined_symbols(image);
    REQUIRE(undefined);
    // This test program takes SHA-256 from OpenSSL's libcrypto (a sanitizer's runtime defines
    // libc's memcpy itself), and defines main. Versions are not part of the names.
    CHECK(std::count(undefined->begin(), undefined->end(), "EVP_Digest") == 1);
    CHECK(std::count(undefined->begin(), undefined->end(), "main") == 0);
    CHECK_FALSE(platform::undefined_symbols(""));
    CHECK_FALSE(platform::undefined_symbols("not an ELF file at all, but long enough to be read "
                                            "as a header if the magic were not checked"));
    // Cut anywhere, it is refused or read in part, never read outside.
    for (std::size_t cut : {std::size_t{64}, image.size() / 2, image.size() - 1})
      (void)platform::undefined_symbols(std::string_view(image).substr(0, cut));
  }

  TEST_CASE("the cache builds once, verifies, and rebuilds a corrupt entry") {
    TempDir dir;
    ModuleCache cache(dir.path);
    CHECK(mode_of(dir.path) == 0700);
    CHECK(mode_of(dir.path / "entries") == 0700);
    std::string const key(64, 'a');
    int builds = 0;
    auto builder = [&](PrivateDir const& work) {
      ++builds;
      return write_library(work, "library bytes");
    };
    bool built = false;
    auto entry = cache.get_or_build(key, builder, &built);
    CHECK(built);
    CHECK(mode_of(entry.dir) == 0700);
    cache.get_or_build(key, builder, &built);
    CHECK_FALSE(built);
    CHECK(builds == 1);
    REQUIRE(cache.find(key));

    std::ofstream(entry.library, std::ios::binary) << "library bytez";  // same size, other hash
    CHECK_FALSE(cache.find(key));
    CHECK_FALSE(fs::exists(entry.dir));
    cache.get_or_build(key, builder, &built);
    CHECK(built);
    CHECK(builds == 2);
  }

  TEST_CASE("a failed build publishes nothing and leaves no temporary directory") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const key(64, 'b');
    CHECK_THROWS_AS(
        cache.get_or_build(
            key, [](PrivateDir const&) -> ModuleManifest { throw LinkError("compiler exploded"); }),
        LinkError);
    CHECK_FALSE(cache.find(key));
    CHECK(fs::is_empty(dir.path / "tmp"));
  }

  TEST_CASE("concurrent builders of one key build it once") {
    TempDir dir;
    std::string const key(64, 'c');
    std::atomic<int> builds{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 6; ++i)
      threads.emplace_back([&] {
        ModuleCache cache(dir.path);
        cache.get_or_build(key, [&](PrivateDir const& work) {
          ++builds;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          return write_library(work, "shared");
        });
      });
    for (auto& t : threads) t.join();
    CHECK(builds == 1);
  }

  TEST_CASE("gc evicts least recently used entries down to the cap") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const old_key(64, 'd'), new_key(64, 'e');
    cache.get_or_build(
        old_key, [](PrivateDir const& w) { return write_library(w, std::string(4000, 'x')); });
    cache.get_or_build(
        new_key, [](PrivateDir const& w) { return write_library(w, std::string(4000, 'y')); });
    struct timespec times[2] = {{1000, 0}, {1000, 0}};  // make `old_key` clearly older
    ::utimensat(AT_FDCWD, (dir.path / "entries" / old_key).c_str(), times, 0);
    auto const total = cache.list().total_size;
    auto const removed = cache.gc(total - 1);
    CHECK(removed == std::vector<std::string>{old_key});
    CHECK(cache.find(new_key));
    CHECK(cache.gc(0).size() == 1);
    CHECK(cache.list().entries.empty());
  }

  TEST_CASE("the cache refuses a root writable by others that it does not own") {
    if (::geteuid() != 0) return;  // needs root to hand the directory to another user
    TempDir dir;
    fs::create_directories(dir.path);
    REQUIRE(::chown(dir.path.c_str(), 4242, 4242) == 0);
    ::chmod(dir.path.c_str(), 0777);
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path}, doctest::Contains("owned by uid 4242"), LinkError);
  }

  TEST_CASE("compiler messages become diagnostics in the user's file") {
    SourceManager sm;
    FileId const file = sm.add("ops/vtv.c", "line one\nint x = oops;\nline three\n");
    std::string const log = "ops/vtv.c:2:9: error: 'oops' was not declared in this scope\n"
                            "ops/vtv.c:1:1: note: declared here\n"
                            "/nonexistent/other.cpp:5:1: warning: something\n"
                            "compilation terminated.\n";
    auto const ds = parse_compiler_output(log, sm);
    REQUIRE(ds.size() == 2);
    CHECK(ds[0].is_error());
    CHECK(ds[0].message == "'oops' was not declared in this scope");
    CHECK(ds[0].range.file == file);
    CHECK(sm.line_column(file, ds[0].range.begin).line == 2);
    CHECK(sm.line_column(file, ds[0].range.begin).column == 9);
    CHECK(ds[0].notes.size() == 1);
    CHECK(ds[1].severity == Severity::warning);
    CHECK_FALSE(ds[1].range.valid());
  }

  TEST_CASE("a failed compile is told in the user's file, with a did-you-mean for a typo") {
    SourceManager sm;
    FileId const op = sm.add("op.c", "#section support_code_apply\n"
                                     "int APPLY_SPECIFC(vector_add)(PyArrayObject* x) {\n"
                                     "    return DTYPE_OUPUT_0;\n"
                                     "}\n");
    // The module names its section files in `#line` directives.
    auto const sources = compiled_sources("#line 1 \"op.c\"\n"
                                          "                  if (APPLY_SPECIFIC(vector_add)(V1, "
                                          "&V2) != 0) {\n"
                                          "#line 3 \"<libsection-module>\"\n",
                                          "gen/source.cpp", sm);
    CHECK(sources.section_files == std::vector<FileId>{op});
    std::string const hash(64, 'a');
    std::string const log =
        "op.c:2:19: error: \u2018vector_add\u2019 was not declared in this scope\n"
        "op.c:3:12: error: 'DTYPE_OUPUT_0' was not declared in this scope\n"
        "gen/source.cpp:2:38: error: \u2018vector_add_node_m" +
        hash + "_0\u2019 was not declared in this scope; did you mean \u2018op_instance_m" + hash +
        "\u2019?\n"
        "gen/source.cpp:3:1: error: something about the module itself\n"
        "gen/source.cpp:3:5: error: and something more\n";
    auto const explain = [&](bool show_generated) {
      auto ds = parse_compiler_output(log, sm);
      REQUIRE(ds.size() == 5);
      auto const text = explain_compile_errors(ds, sm, sources, show_generated);
      return std::pair{text, ds};
    };
    auto const [text, ds] = explain(false);
    std::string const apply = "`APPLY_SPECIFC` is not a macro libsection defines; did you mean "
                              "`APPLY_SPECIFIC`?";
    CHECK(text == "\nop.c:2:19: error: \u2018vector_add\u2019 was not declared in this scope"
                  "\nop.c:2:5: note: " +
                      apply +
                      "\nop.c:3:12: error: 'DTYPE_OUPUT_0' was not declared in this scope"
                      "\nop.c:3:12: note: `DTYPE_OUPUT_0` is not a macro libsection defines; did "
                      "you mean `DTYPE_OUTPUT_0`?"
                      "\nop.c:2:5: error: func_name names the op's main function "
                      "`APPLY_SPECIFIC(vector_add)`, but no section file declares it"
                      "\nerror in the generated module: something about the module itself (1 "
                      "more error there; LIBSECTION_SHOW_GENERATED=1 lists them with their "
                      "lines)");
    // Every error stays a diagnostic where the compiler put it; what was told is in its notes.
    CHECK(ds[0].notes.at(0).message == apply);
    CHECK(ds[0].notes.at(0).range.file == op);
    CHECK(ds[2].range.file == sources.generated);
    CHECK(ds[2].notes.size() == 2);
    CHECK(ds[3].notes.empty());

    auto const [shown, _] = explain(true);
    CHECK(shown.find("\ngen/source.cpp:2:38: error: \u2018vector_add_node_m" + hash) !=
          std::string::npos);
    CHECK(shown.find("\nop.c:2:5: note: func_name names the op's main function") !=
          std::string::npos);
    CHECK(shown.find("\ngen/source.cpp:3:5: error: and something more") != std::string::npos);
    CHECK(shown.find("error in the generated module") == std::string::npos);
  }

  TEST_CASE("programs run without a shell, their output captured") {
    TempDir dir;
    fs::create_directories(dir.path);
    fs::path const log = dir.path / "log";
    CHECK(run_program({"/bin/sh", "-c", "echo to-out; echo to-err >&2; exit 3"}, log) == 3);
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    CHECK(text == "to-out\nto-err\n");
    CHECK(run_program({"/bin/echo", "a b; rm -rf /"}, log) == 0);  // one argument, no shell
    CHECK_THROWS_AS(run_program({"/nonexistent/compiler"}, log), LinkError);
    CHECK(shell_quote({"g++", "-DX=1", "a b", "it's"}) == "g++ -DX=1 'a b' 'it'\\''s'");
  }

  TEST_CASE("the compiler comes from CXX, else the PATH, and its identity is remembered") {
    TempDir dir;
    fs::create_directories(dir.path / "bin");
    fs::path const fake = dir.path / "bin" / "fakecc";
    std::ofstream(fake) << "#!/bin/sh\necho \"fakecc 1.0\" >> " << (dir.path / "calls").string()
                        << "\necho \"fakecc 1.0\"\n";
    fs::permissions(fake, fs::perms::owner_all);
    ::setenv("CXX", (fake.string() + " -m64").c_str(), 1);
    Toolchain const tc = find_toolchain(PrivateDir::open(dir.path / "state", true));
    CHECK(tc.compiler == std::vector<std::string>{fake.string(), "-m64"});
    CHECK(tc.identity == fake.string() + ": fakecc 1.0 -m64");
    CHECK(find_toolchain(PrivateDir::open(dir.path / "state", true)).identity == tc.identity);
    std::ifstream calls(dir.path / "calls");
    std::string text((std::istreambuf_iterator<char>(calls)), {});
    CHECK(text == "fakecc 1.0\n");  // asked once, then remembered
    ::setenv("CXX", "no-such-compiler-anywhere", 1);
    CHECK_THROWS_WITH_AS(find_toolchain(PrivateDir::open(dir.path, true)),
                         doctest::Contains("CXX names `no-such-compiler"), LinkError);
    ::unsetenv("CXX");
  }
}

TEST_SUITE("linker") {
  TEST_CASE("C modules are compiled by CC, else cc, as GNU C11 with LIBSECTION_CFLAGS") {
    TempDir dir;
    fs::create_directories(dir.path / "bin");
    fs::path const fake = dir.path / "bin" / "fakec";
    std::ofstream(fake) << "#!/bin/sh\necho \"fakec 3.0\"\n";
    fs::permissions(fake, fs::perms::owner_all);
    ::setenv("CC", fake.string().c_str(), 1);
    ::setenv("LIBSECTION_CFLAGS", "-DC_ONLY", 1);
    ::setenv("LIBSECTION_CXXFLAGS", "-DCXX_ONLY", 1);
    auto const state = PrivateDir::open(dir.path / "state", true);
    Toolchain const c = find_toolchain(state, Language::c);
    CHECK(c.language == Language::c);
    CHECK(c.compiler == std::vector<std::string>{fake.string()});
    CHECK(c.identity == fake.string() + ": fakec 3.0");
    auto has = [](Toolchain const& tc, char const* flag) {
      return std::find(tc.flags.begin(), tc.flags.end(), flag) != tc.flags.end();
    };
    CHECK(has(c, "-std=gnu11"));
    CHECK(has(c, "-DC_ONLY"));
    CHECK_FALSE(has(c, "-DCXX_ONLY"));
    CHECK_FALSE(has(c, "-Wno-write-strings"));  // a C++ warning: C compilers complain of it
    Toolchain const cxx = find_toolchain(state);
    CHECK(cxx.language == Language::cxx);
    CHECK(has(cxx, "-std=c++17"));
    CHECK(has(cxx, "-DCXX_ONLY"));
    CHECK_FALSE(has(cxx, "-DC_ONLY"));
    ::setenv("CC", "no-such-c-compiler-anywhere", 1);
    CHECK_THROWS_WITH_AS(find_toolchain(state, Language::c),
                         doctest::Contains("CC names `no-such-c-compiler"), LinkError);
    ::unsetenv("CC");
    ::unsetenv("LIBSECTION_CFLAGS");
    ::unsetenv("LIBSECTION_CXXFLAGS");
  }

  TEST_CASE("modules link with gold when it is installed, or with the linker asked for") {
    TempDir dir;
    auto const state = PrivateDir::open(dir.path / "state", true);
    ::unsetenv("LIBSECTION_LINKER");
    bool const gold = std::filesystem::exists("/usr/bin/ld.gold");
    Toolchain const found = find_toolchain(state);
    CHECK((found.link_flags == std::vector<std::string>{"-fuse-ld=gold"}) == gold);
    ::setenv("LIBSECTION_LINKER", "bfd", 1);
    CHECK(find_toolchain(state).link_flags == std::vector<std::string>{"-fuse-ld=bfd"});
    ::setenv("LIBSECTION_LINKER", "default", 1);
    CHECK(find_toolchain(state).link_flags.empty());
    ::setenv("LIBSECTION_LINKER", "mold;rm", 1);
    CHECK_THROWS_WITH_AS(find_toolchain(state), doctest::Contains("give bfd, gold, lld or default"),
                         LinkError);
    ::unsetenv("LIBSECTION_LINKER");
  }

  TEST_CASE("a launcher written in CXX is split off, and native flags name the CPU") {
    TempDir dir;
    fs::create_directories(dir.path / "bin");
    for (char const* name : {"ccache", "fakecc"}) {
      fs::path const script = dir.path / "bin" / name;
      std::ofstream(script) << "#!/bin/sh\necho \"" << name << " 2.0\"\n";
      fs::permissions(script, fs::perms::owner_all);
    }
    std::string const cxx =
        (dir.path / "bin" / "ccache").string() + " " + (dir.path / "bin" / "fakecc").string();
    ::setenv("CXX", cxx.c_str(), 1);
    Toolchain const plain = find_toolchain(PrivateDir::open(dir.path / "state", true));
    CHECK(plain.launcher == std::vector<std::string>{(dir.path / "bin" / "ccache").string()});
    CHECK(plain.identity == (dir.path / "bin" / "fakecc").string() + ": fakecc 2.0");

    ::setenv("LIBSECTION_CXXFLAGS", "-march=native", 1);
    Toolchain const native = find_toolchain(PrivateDir::open(dir.path / "state", true));
    CHECK(native.flags.back() == "-march=native");
    CHECK(native.identity.rfind(plain.identity + " cpu:", 0) == 0);
    ::unsetenv("LIBSECTION_CXXFLAGS");
    ::unsetenv("CXX");
  }
}

// ---- the cache's trust model and upkeep ----------------------------------------------------

namespace {

std::string read_all(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string entry_key(char c) { return std::string(64, c); }

// The message of the LinkError `f` throws ("" when it throws none).
template <class F>
std::string link_error_of(F&& f) {
  try {
    f();
  } catch (LinkError const& e) {
    return e.what();
  }
  return {};
}

bool contains(std::string const& text, std::string const& part) {
  return text.find(part) != std::string::npos;
}

// "<pid> <pid namespace> <host>": what a lock's exclusive holder records.
std::string holder_record(long pid) {
  char ns[128] = {}, host[256] = {};
  ssize_t const n = ::readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  ns[n > 0 ? n : 0] = '\0';
  ::gethostname(host, sizeof host - 1);
  return std::to_string(pid) + " " + ns + " " + host + "\n";
}

long dead_pid() {
  pid_t const child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

// A fake g++ for the one-time setup: what its header compile does comes from FAKE_PCH.
fs::path fake_gcc(fs::path const& dir) {
  fs::create_directories(dir);
  fs::path const script = dir / "fake-g++";
  std::ofstream(script)
      << "#!/bin/sh\n"
         "case \"$*\" in *c++-header*)\n"
         "  case \"$FAKE_PCH\" in\n"
         "    enospc) echo 'fatal error: cannot write PCH file: No space left on device' >&2; exit "
         "1;;\n"
         "    signal) kill -9 $$;;\n"
         "    error) echo 'x.h:1:1: error: this compiler cannot precompile' >&2; exit 1;;\n"
         "  esac;;\n"
         "esac\n"
         "exit 0\n";
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

}  // namespace

TEST_SUITE("linker") {
  TEST_CASE(
      "the size cap is a plain integer with K, M or G, rejected otherwise naming the variable") {
    CHECK(ModuleCache::parse_size("16", "X") == 16);
    CHECK(ModuleCache::parse_size("0", "X") == 0);
    CHECK(ModuleCache::parse_size("10K", "X") == 10240);
    CHECK(ModuleCache::parse_size("500M", "X") == 500ull << 20);
    CHECK(ModuleCache::parse_size("2g", "X") == 2ull << 30);
    for (char const* bad : {"inf", "1e30", "nan", "garbage", "-1", "5MB", "0x10", "1.5G", " 16",
                            "16 ", "", "99999999999999999999", "99999999999999999G"}) {
      CAPTURE(bad);
      ::setenv("LIBSECTION_CACHE_MAX_BYTES", bad, 1);
      if (!*bad) {
        CHECK(ModuleCache::default_max_bytes() == (1ull << 30));  // unset or empty: the default
        continue;
      }
      CHECK(contains(link_error_of([] { ModuleCache::default_max_bytes(); }),
                     "LIBSECTION_CACHE_MAX_BYTES=`" + std::string(bad) + "`"));
    }
    // Rejected before anything exists on disk.
    TempDir dir;
    ::setenv("LIBSECTION_CACHE_MAX_BYTES", "5MB", 1);
    CHECK_THROWS_AS(ModuleCache{dir.path}, LinkError);
    CHECK_FALSE(fs::exists(dir.path));
    ::setenv("LIBSECTION_LOCK_TIMEOUT", "soon", 1);
    ::unsetenv("LIBSECTION_CACHE_MAX_BYTES");
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path}, doctest::Contains("LIBSECTION_LOCK_TIMEOUT=`soon`"),
                         LinkError);
    ::unsetenv("LIBSECTION_LOCK_TIMEOUT");
  }

  TEST_CASE("a lock file that is a symbolic link is never followed") {
    TempDir dir;
    ModuleCache cache(dir.path / "cache");
    fs::create_directories(dir.path / "elsewhere");
    fs::path const target = dir.path / "elsewhere" / "created-by-us";
    std::string const key = entry_key('f');
    fs::create_symlink(target, dir.path / "cache" / "locks" / (key + ".lock"));
    cache.get_or_build(key, [](PrivateDir const& w) { return write_library(w, "bytes"); });
    CHECK_FALSE(fs::exists(target));
    CHECK_FALSE(fs::is_symlink(dir.path / "cache" / "locks" / (key + ".lock")));
  }

  TEST_CASE(
      "a busy lock times out naming its holder's pid, and a dead holder's lock is taken over") {
    TempDir dir;
    PrivateDir const locks = PrivateDir::open(dir.path, true);
    FileLock held(locks, "k.lock", FileLock::Mode::exclusive, 0);
    REQUIRE(held.held());
    CHECK(read_all(dir.path / "k.lock") == holder_record(::getpid()));
    auto const start = std::chrono::steady_clock::now();
    CHECK(
        contains(link_error_of([&] { FileLock(locks, "k.lock", FileLock::Mode::exclusive, 0.3); }),
                 "held by pid " + std::to_string(::getpid()) + ", which is running"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    FileLock busy(locks, "k.lock", FileLock::Mode::exclusive, 10, true);
    CHECK_FALSE(busy.held());

    // The holder died, but its descriptor lives on (here: in this process, as in a leaked fd).
    int const leaked = ::open((dir.path / "dead.lock").c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(::flock(leaked, LOCK_EX) == 0);
    std::string const record = holder_record(dead_pid());
    REQUIRE(::write(leaked, record.data(), record.size()) == static_cast<ssize_t>(record.size()));
    FileLock taken(locks, "dead.lock", FileLock::Mode::exclusive, 10);
    CHECK(taken.held());
    CHECK(read_all(dir.path / "dead.lock") == holder_record(::getpid()));
    ::close(leaked);
  }

  TEST_CASE("the cache root may be the user's own symbolic link, never another user's") {
    TempDir dir;
    fs::create_directories(dir.path / "real");
    ::chmod((dir.path / "real").c_str(), 0755);
    fs::create_symlink(dir.path / "real", dir.path / "link");
    ModuleCache cache(dir.path / "link");
    CHECK(fs::exists(dir.path / "real" / "entries"));
    if (::geteuid() != 0) return;  // needs root to hand the link to another user
    fs::create_directories(dir.path / "victim");
    ::chmod((dir.path / "victim").c_str(), 0755);
    fs::create_symlink(dir.path / "victim", dir.path / "planted");
    REQUIRE(::lchown((dir.path / "planted").c_str(), 4242, 4242) == 0);
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path / "planted"},
                         doctest::Contains("is a symbolic link owned by uid 4242"), LinkError);
    CHECK(mode_of(dir.path / "victim") == 0755);  // not chmod'ed
    CHECK(fs::is_empty(dir.path / "victim"));
  }

  TEST_CASE("cache directories writable by others, symbolic links or another user's are refused "
            "with what to do") {
    TempDir dir;
    { ModuleCache cache(dir.path); }
    ::chmod((dir.path / "entries").c_str(), 0777);
    std::string const refused = link_error_of([&] { ModuleCache{dir.path}; });
    CHECK(contains(refused, "writable by other users (mode 0777)"));
    CHECK(contains(refused, "chmod 700 " + (dir.path / "entries").string()));
    CHECK(mode_of(dir.path / "entries") == 0777);  // refused, not silently changed
    fs::remove(dir.path / "entries");
    fs::create_directories(dir.path / "elsewhere");
    fs::create_symlink(dir.path / "elsewhere", dir.path / "entries");
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path}, doctest::Contains("is a symbolic link"), LinkError);
    fs::remove(dir.path / "entries");
    if (::geteuid() != 0) return;  // needs root to hand a directory to another user
    fs::create_directories(dir.path / "entries");
    REQUIRE(::chown((dir.path / "entries").c_str(), 4242, 4242) == 0);
    ::chmod((dir.path / "entries").c_str(), 0700);
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path}, doctest::Contains("owned by uid 4242"), LinkError);
  }

  TEST_CASE("every kind of damaged entry is rebuilt, never stuck") {
    auto const damages = {"size-not-a-number", "sha-not-text",      "not-an-object",
                          "key-missing",       "entry-mode-0777",   "entry-symlink",
                          "library-symlink",   "library-truncated", "library-mode-0666",
                          "library-missing",   "manifest-directory"};
    for (std::string const damage : damages) {
      CAPTURE(damage);
      TempDir dir;
      ModuleCache cache(dir.path);
      std::string const key = entry_key('9');
      int builds = 0;
      auto builder = [&](PrivateDir const& w) {
        ++builds;
        return write_library(w, std::string(1000, 'L'));
      };
      auto const entry = cache.get_or_build(key, builder);
      fs::path const manifest = entry.dir / "manifest.json";
      auto edit_manifest = [&](std::string const& from, std::string const& to) {
        std::string text = read_all(manifest);
        auto const at = text.find(from);
        REQUIRE(at != std::string::npos);
        std::ofstream(manifest, std::ios::binary | std::ios::trunc)
            << text.replace(at, from.size(), to);
      };
      if (damage == "size-not-a-number") edit_manifest("\"size\": 1000", "\"size\": \"big\"");
      else if (damage == "sha-not-text")
        edit_manifest("\"sha256\": \"", "\"sha256\": 7, \"x\": \"");
      else if (damage == "not-an-object") std::ofstream(manifest, std::ios::trunc) << "[1, 2]";
      else if (damage == "key-missing") edit_manifest("\"key\"", "\"kee\"");
      else if (damage == "entry-mode-0777") ::chmod(entry.dir.c_str(), 0777);
      else if (damage == "entry-symlink") {
        fs::rename(entry.dir, dir.path / "moved");
        fs::create_symlink(dir.path / "moved", entry.dir);
      } else if (damage == "library-symlink") {
        fs::rename(entry.library, dir.path / "module.so");
        fs::create_symlink(dir.path / "module.so", entry.library);
      } else if (damage == "library-truncated") fs::resize_file(entry.library, 10);
      else if (damage == "library-mode-0666") ::chmod(entry.library.c_str(), 0666);
      else if (damage == "library-missing") fs::remove(entry.library);
      else if (damage == "manifest-directory") {
        fs::remove(manifest);
        fs::create_directories(manifest);
      }
      CHECK_FALSE(cache.find(key));
      bool built = false;
      auto const again = cache.get_or_build(key, builder, &built);
      CHECK(built);
      CHECK(builds == 2);
      CHECK(read_all(again.library) == std::string(1000, 'L'));
      CHECK(cache.find(key));
    }
  }

  TEST_CASE("a verified entry's descriptor keeps the verified bytes when the entry is swapped") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const key = entry_key('7');
    cache.get_or_build(key, [](PrivateDir const& w) { return write_library(w, "genuine module"); });
    auto const entry = cache.find(key);
    REQUIRE(entry);
    REQUIRE(entry->library_file);
    // Between verification and loading, the entry is replaced by a planted one.
    fs::rename(entry->dir, dir.path / "genuine");
    fs::create_directories(entry->dir);
    std::ofstream(entry->library, std::ios::binary) << "planted module";
    fs::path const by_fd = "/proc/self/fd/" + std::to_string(entry->library_file.get());
    CHECK(read_all(by_fd) == "genuine module");  // what dlopen(by_fd) maps
    CHECK(read_all(entry->library) == "planted module");
  }

  TEST_CASE("leftovers of killed builds are reclaimed, running builds are not") {
    TempDir dir;
    ModuleCache cache(dir.path);
    WorkDir running = cache.make_work_dir("running");
    fs::create_directories(dir.path / "tmp" / "killed.1.2.3");
    std::ofstream(dir.path / "tmp" / "killed.1.2.3" / ".in-use") << holder_record(dead_pid());
    std::ofstream(dir.path / "tmp" / "killed.1.2.3" / "probe.o") << "half written";
    fs::create_directories(dir.path / "tmp" / "young.1.2.3");
    fs::create_directories(dir.path / "tmp" / "removing.1.2.3");
    fs::create_directories(dir.path / "state" / "pch-0123");  // where older versions kept them
    struct timespec old[2] = {{1000, 0}, {1000, 0}};
    for (char const* name : {"killed.1.2.3", "removing.1.2.3"})
      ::utimensat(AT_FDCWD, (dir.path / "tmp" / name).c_str(), old, 0);
    ::utimensat(AT_FDCWD, running.dir.path().c_str(), old, 0);
    cache.gc(1ull << 40);
    CHECK_FALSE(fs::exists(dir.path / "tmp" / "killed.1.2.3"));
    CHECK_FALSE(fs::exists(dir.path / "tmp" / "removing.1.2.3"));
    CHECK_FALSE(fs::exists(dir.path / "state" / "pch-0123"));
    CHECK(fs::exists(running.dir.path()));
    CHECK(fs::exists(dir.path / "tmp" / "young.1.2.3"));  // its builder may not have locked it yet
  }

  TEST_CASE("the one-time setup costs one compile: the header's, no timing probes") {
    TempDir dir;
    fs::create_directories(dir.path / "bin");
    fs::path const gcc = dir.path / "bin" / "counting-g++";
    // Logs each run; a header compile writes the .gch it was asked for.
    std::ofstream(gcc) << "#!/bin/sh\necho run >> " << (dir.path / "runs").string() << "\n"
                       << "for a; do out=\"$a\"; done\n"
                       << "case \"$*\" in *c++-header*) : > \"$out\";; esac\nexit 0\n";
    fs::permissions(gcc, fs::perms::owner_all);
    ModuleCache cache(dir.path / "cache");
    Toolchain const tc{{}, {gcc.string()}, gcc.string() + ": g++ (counting) 12", {}};
    PythonEnvironment const py{{}, "abi", "numpy"};
    auto const pch = precompiled_header(tc, py, cache);
    REQUIRE(pch);
    CHECK(read_all(dir.path / "runs") == "run\n");
    CHECK(precompiled_header(tc, py, cache));  // decided once: nothing runs again
    CHECK(read_all(dir.path / "runs") == "run\n");
  }

  TEST_CASE(
      "the one-time setup remembers real verdicts, not passing failures, inside the size cap") {
    TempDir dir;
    fs::path const gcc = fake_gcc(dir.path / "bin");
    ModuleCache cache(dir.path / "cache");
    Toolchain const tc{{}, {gcc.string()}, gcc.string() + ": g++ (fake) 12", {}};
    PythonEnvironment const py{{}, "abi", "numpy"};
    for (char const* passing : {"enospc", "signal"}) {
      CAPTURE(passing);
      ::setenv("FAKE_PCH", passing, 1);
      CHECK_FALSE(precompiled_header(tc, py, cache));
      CHECK(cache.list().headers.empty());  // no verdict: the next build tries again
      CHECK(fs::is_empty(dir.path / "cache" / "tmp"));
    }
    ::setenv("FAKE_PCH", "error", 1);
    CHECK_FALSE(precompiled_header(tc, py, cache));
    auto const report = cache.list();
    REQUIRE(report.headers.size() == 1);
    CHECK(read_all(report.headers[0].dir / "verdict") == "skip");
    CHECK(report.total_size >= report.headers[0].size);
    ::unsetenv("FAKE_PCH");
    CHECK_FALSE(precompiled_header(tc, py, cache));  // decided: no second setup
    CHECK(cache.gc(0) == std::vector<std::string>{report.headers[0].key});
    CHECK(cache.list().headers.empty());
    ::setenv("FAKE_PCH", "error", 1);
    precompiled_header(tc, py, cache);
    ::unsetenv("FAKE_PCH");
    REQUIRE(cache.list().headers.size() == 1);
    cache.clear();
    CHECK(cache.list().headers.empty());
  }

  TEST_CASE("the core's notices go to the log sink with their levels, not to stderr") {
    TempDir dir;
    fs::path const gcc = fake_gcc(dir.path / "bin");
    ModuleCache cache(dir.path / "cache");
    Toolchain const tc{{}, {gcc.string()}, gcc.string() + ": g++ (fake) 12", {}};
    PythonEnvironment const py{{}, "abi", "numpy"};
    std::vector<LogRecord> records;
    set_log_sink([&](LogRecord const& r) { records.push_back(r); });
    ::setenv("FAKE_PCH", "enospc", 1);
    CHECK_FALSE(precompiled_header(tc, py, cache));
    ::unsetenv("FAKE_PCH");
    set_log_sink({});
    REQUIRE(records.size() == 2);
    CHECK(records[0].level == LogLevel::info);
    CHECK(records[0].message == "one-time setup: precompiling the Python and NumPy headers");
    CHECK(records[1].level == LogLevel::warning);
    CHECK(
        contains(records[1].message, "one-time setup failed (fatal error: cannot write PCH file"));
  }

  TEST_CASE("clear leaves what another process is using and says so, instead of waiting") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const busy = entry_key('b'), idle = entry_key('i');
    for (auto const& key : {busy, idle})
      cache.get_or_build(key, [](PrivateDir const& w) { return write_library(w, "x"); });
    ::setenv("LIBSECTION_LOCK_TIMEOUT", "600", 1);
    ModuleCache patient(dir.path);
    ::unsetenv("LIBSECTION_LOCK_TIMEOUT");
    FileLock held = cache.lock(busy + ".lock", FileLock::Mode::exclusive);
    auto const start = std::chrono::steady_clock::now();
    CHECK(patient.clear() == std::vector<std::string>{busy});
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    CHECK(fs::exists(dir.path / "entries" / busy));
    CHECK_FALSE(fs::exists(dir.path / "entries" / idle));
  }

  TEST_CASE("opening an existing cache never creates one") {
    TempDir dir;
    CHECK_FALSE(ModuleCache::open_existing(dir.path / "x"));
    CHECK_FALSE(fs::exists(dir.path));
    ModuleCache created(dir.path);
    CHECK(ModuleCache::open_existing(dir.path));
  }
}

// ---- the entry's format: the manifest and the versions in every key -------------------------

namespace {

ModuleManifest full_manifest() {
  ModuleManifest m;
  m.module = "m0123";
  m.ops = {"Add", "Mul"};
  m.inputs = {"float64[:]", "float64[:]"};
  m.outputs = {"float64[:]"};
  m.libsection_version = "1.2.3";
  m.compiler = "/usr/bin/c++: g++ 12";
  m.compile_command = "c++ -O3 -c -x c++ 'a b/source.cpp' -o module.o";
  m.link_command = "c++ -shared -o module.so module.o";
  m.python_abi = "cpython-312-x86_64-linux-gnu";
  m.numpy = "numpy 2.1 C-API 19";
  m.build_seconds = 1.25;
  m.graph = 2;
  m.graphs = 3;
  m.library_key = entry_key('b');
  m.key = entry_key('a');
  m.size = 1000;
  m.sha256 = std::string(64, 'f');
  m.created = 1700000000;
  return m;
}

// `full_manifest()`'s JSON with `from` replaced by `to` (which must be there).
std::string edited_manifest(std::string const& from, std::string const& to) {
  std::string text = full_manifest().to_json();
  auto const at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_SUITE("linker") {
  TEST_CASE("a manifest reads back what it wrote, with its format number") {
    ModuleManifest const m = full_manifest();
    std::string const text = m.to_json();
    CHECK(contains(text, "\"format\": " + std::to_string(manifest_format) + ",\n"));
    CHECK(contains(text, "\"size\": 1000\n"));  // what the damage tests edit
    CHECK(text.back() == '\n');
    auto const read = ModuleManifest::parse(text);
    REQUIRE(read.manifest);
    CHECK(read.problem.kind == ManifestProblem::Kind::none);
    CHECK(read.manifest->to_json() == text);  // every field came back
    CHECK(read.manifest->format == manifest_format);
    CHECK(read.manifest->ops == m.ops);
    CHECK(read.manifest->compile_command == m.compile_command);
    CHECK(read.manifest->build_seconds == 1.25);
    CHECK(read.manifest->size == 1000);
    CHECK(read.manifest->created == 1700000000);
    CHECK(read.manifest->graph == 2);
    CHECK(read.manifest->graphs == 3);
    CHECK(read.manifest->library_key == entry_key('b'));
  }

  TEST_CASE("a damaged manifest is refused naming what is wrong, never thrown") {
    std::string const f = std::to_string(manifest_format);
    std::pair<std::string, std::string> const cases[] = {
        {"", "manifest.json is not a JSON object"},
        {"{\"format\": 1", "manifest.json is not a JSON object"},
        {"[1, 2]", "manifest.json is not a JSON object"},
        {edited_manifest("\"format\": " + f, "\"format\": \"one\""),
         "manifest.json has no format number"},
        {edited_manifest("\"format\": " + f, "\"format\": -1"),
         "manifest.json has no format number"},
        {edited_manifest("\"key\"", "\"kee\""), "manifest.json has no key text"},
        {edited_manifest("\"size\": 1000", "\"size\": \"big\""),
         "manifest.json has no size in bytes"},
        {edited_manifest("\"size\": 1000", "\"size\": -1000"),
         "manifest.json has no size in bytes"},
        {edited_manifest("\"sha256\": \"", "\"sha256\": 7, \"x\": \""),
         "manifest.json has no sha256 text"},
        {edited_manifest("\"Add\"", "7"), "manifest.json has no ops list of text"},
        {edited_manifest("\"created\": 1700000000", "\"created\": 1.5"),
         "manifest.json has no created in seconds since the epoch"},
        {edited_manifest("\"build_seconds\": 1.25", "\"build_seconds\": null"),
         "manifest.json has no build_seconds in seconds"},
        {edited_manifest("\"graph\": 2", "\"graph\": -2"), "manifest.json has no graph count"},
        {edited_manifest("\"graphs\": 3", "\"graphs\": 2.5"), "manifest.json has no graphs count"},
        {edited_manifest("\"graph\": 2", "\"graph\": 3"), "manifest.json names graph 3 of 3"},
        {edited_manifest("\"graphs\": 3", "\"graphs\": 0"), "manifest.json names graph 2 of 0"},
        {edited_manifest("\"library_key\"", "\"library\""),
         "manifest.json has no library_key text"},
    };
    for (auto const& c : cases) {  // not a structured binding: clang 14 cannot capture one
      std::string const& text = c.first;
      CAPTURE(text);
      auto const read = ModuleManifest::parse(text);
      CHECK_FALSE(read.manifest);
      CHECK(read.problem.kind == ManifestProblem::Kind::damaged);
      CHECK(read.problem.message == c.second);
    }
  }

  TEST_CASE("a manifest in another format is refused as such, with its number") {
    std::string const f = std::to_string(manifest_format);
    auto const later = ModuleManifest::parse(edited_manifest("\"format\": " + f, "\"format\": 99"));
    CHECK_FALSE(later.manifest);
    CHECK(later.problem.kind == ManifestProblem::Kind::other_format);
    CHECK(later.problem.format == 99);
    CHECK(later.problem.message ==
          "manifest.json is in format 99; this libsection reads format " + f);
    // Before format numbers: a manifest without one, whatever else it holds.
    auto const older = ModuleManifest::parse(R"({"key": "abc", "size": 1, "sha256": "00"})");
    CHECK(older.problem.kind == ManifestProblem::Kind::other_format);
    CHECK(older.problem.format == 0);
    CHECK(contains(older.problem.message, "no format number"));
    // Another format's fields are not read: a field this format requires may be gone.
    auto const reshaped = ModuleManifest::parse(R"({"format": 1, "library": {"bytes": 5}})");
    CHECK(reshaped.problem.kind == ManifestProblem::Kind::other_format);
  }

  TEST_CASE("an entry whose manifest has another format is a miss and rebuilt, never an error") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const key = entry_key('5');
    int builds = 0;
    auto builder = [&](PrivateDir const& w) {
      ++builds;
      return write_library(w, "library bytes");
    };
    auto const entry = cache.get_or_build(key, builder);
    REQUIRE(entry.manifest);
    CHECK(entry.manifest->format == manifest_format);
    CHECK(entry.manifest->key == key);
    CHECK(entry.manifest->size == 13);
    fs::path const manifest = entry.dir / "manifest.json";
    std::string text = read_all(manifest);
    std::string const format = "\"format\": " + std::to_string(manifest_format);
    REQUIRE(contains(text, format));
    std::ofstream(manifest, std::ios::binary | std::ios::trunc)
        << text.replace(text.find(format), format.size(), "\"format\": 99");

    std::vector<LogRecord> records;
    set_log_sink([&](LogRecord const& r) { records.push_back(r); });
    CHECK_FALSE(cache.find(key));  // not loaded, and not an error
    auto const listed = cache.list();
    REQUIRE(listed.entries.size() == 1);
    CHECK_FALSE(listed.entries[0].manifest);
    CHECK(listed.entries[0].manifest_problem.kind == ManifestProblem::Kind::other_format);
    CHECK(listed.entries[0].manifest_problem.format == 99);
    bool built = false;
    auto const again = cache.get_or_build(key, builder, &built);
    set_log_sink({});
    CHECK(built);
    CHECK(builds == 2);
    REQUIRE(again.manifest);
    CHECK(again.manifest->format == manifest_format);
    CHECK(cache.find(key));
    for (auto const& r : records) {
      CAPTURE(r.message);
      CHECK(r.level != LogLevel::warning);  // a miss, not damage
    }
    REQUIRE(records.size() == 1);
    CHECK(contains(records[0].message, "was written in another format (manifest.json is in "
                                       "format 99"));
  }

  TEST_CASE("the module ABI and the manifest format enter every cache key") {
    ModuleSource const m = generate_module(add_mul_graph());
    Toolchain const tc{{}, {"/usr/bin/c++"}, "/usr/bin/c++: g++ 12", {"-O3"}};
    PythonEnvironment const py{{"/inc"}, "cpython-311", "numpy 2 C-API 1"};
    CacheFormat const today{module_abi_version, manifest_format};
    CacheFormat const other_abi{module_abi_version + 1, manifest_format};
    CacheFormat const other_manifest{module_abi_version, manifest_format + 1};
    std::string const module_key = module_cache_key(m, tc, py);
    CHECK(module_cache_key(m, tc, py, today) == module_key);
    CHECK(module_cache_key(m, tc, py, other_abi) != module_key);
    CHECK(module_cache_key(m, tc, py, other_manifest) != module_key);
    std::string const header_key = precompiled_header_key(tc, py);
    CHECK(header_key.size() == 24);
    CHECK(precompiled_header_key(tc, py, today) == header_key);
    CHECK(precompiled_header_key(tc, py, other_abi) != header_key);
    CHECK(precompiled_header_key(tc, py, other_manifest) != header_key);
  }
}
