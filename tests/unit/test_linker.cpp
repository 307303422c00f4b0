// Unit tests of the linker core that need no Python: types, module generation, the key and
// the commands of a module, modules of several graphs.
#include <doctest/doctest.h>

#include "linker_test.hpp"

#include "section/settings.hpp"

using namespace linker_test;

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
    // Add's failure code jumps to its own label, with its own id (the GIL taken back around
    // its calls of the API: the op's code runs without it).
    CHECK(m.text.find("{__failure = 6; if (!LIBSECTION_WITH_GIL(PyErr_Occurred())) "
                      "LIBSECTION_WITH_GIL(PyErr_SetString(PyExc_RuntimeError, "
                      "\"Add (node 0): C code failed without setting a Python exception\")); "
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
    CHECK(generate_together({&plain, &second}).whole_program);
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
    ModuleSource const both = generate_together({&a, &b});
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
    CHECK(generate_together({&a, &b}).text == both.text);

    // Graphs that cannot share a library: another language or other flags.
    ModuleSource const c = module("", "", Language::c);
    CHECK_FALSE(can_share_library(a, c));
    ModuleSource flagged = b;
    flagged.compile_args.push_back("-DX=1");
    CHECK_FALSE(can_share_library(a, flagged));
    CHECK_THROWS_AS(generate_together({&a, &flagged}), std::invalid_argument);
    CHECK_THROWS_AS(generate_together({&a}), std::invalid_argument);
    CHECK_FALSE(can_share_library(both, a));  // a module of several is no member

    // C has no namespaces: the graphs share their support code, exact duplicates once.
    ModuleSource const c2 = module("", "/* second */", Language::c);
    ModuleSource const cs = generate_together({&c, &c2});
    CHECK(cs.language == Language::c);
    CHECK(cs.text.find(graph_namespace_prefix) == std::string::npos);
    CHECK(cs.text.find(c_module_prelude) != std::string::npos);
    ModuleSource const c3 = module("", "\n#define TWICE(x) (2 * (x))\n", Language::c);
    CHECK(generate_together({&c3, &c2}).text.find("#undef TWICE\n") != std::string::npos);
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
}
