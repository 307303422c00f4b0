// Unit tests of the expander: reference strings, #line directives, signatures, cache versions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/hash.hpp"
#include "expand/line_directives.hpp"
#include "section/expand.hpp"
#include "section/op.hpp"
#include "section/signature.hpp"

namespace fs = std::filesystem;
using namespace section;

namespace {

using Files = std::vector<std::pair<std::string, std::string>>;

/// Sections merged from in-memory files, each a (name, text) pair.
struct Loaded {
  SourceManager sm;
  SectionSet set;

  explicit Loaded(Files const& files) {
    std::vector<Diagnostic> diagnostics;
    std::vector<FileId> ids;
    for (auto const& [name, text] : files) {
      auto id = add_source(sm, text, name, diagnostics);
      REQUIRE(id);
      ids.push_back(*id);
    }
    set = merge_sections(sm, ids, std::move(diagnostics));
    REQUIRE(set.ok());
  }
};

/// An op and one node of it, as the expander takes them.
struct Apply {
  OpDescription op;
  NodeContext node;
};

/// The only node of a single-node graph of an op with these types, as PyTensor names it.
Apply single_node(std::vector<TypeSpec> inputs, std::vector<TypeSpec> outputs,
                  std::optional<ParamsSpec> params = std::nullopt) {
  Apply a;
  a.op.inputs = std::move(inputs);
  a.op.outputs = std::move(outputs);
  a.op.has_params = params.has_value();
  a.op.params = std::move(params);
  a.node = single_node_context(a.op);
  return a;
}

Expansion expand_apply(SourceManager const& sm, SectionSet const& set, Apply const& a,
                       ExpandOptions const& options = {}) {
  return expand(sm, set, a.op, a.node, options);
}

Apply vtv_signature() {
  auto vector = parse_type("float64[:]");
  Apply s = single_node({vector, vector}, {vector});
  s.op.func_name = "APPLY_SPECIFIC(vector_times_vector)";
  return s;
}

ExpandOptions reference_mode() {
  ExpandOptions o;
  o.line_directives = false;
  o.newline_fix = false;
  return o;
}

std::string read_file(fs::path const& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json expansion_json(Expansion const& e, std::string const& cache_version) {
  nlohmann::json out = nlohmann::json::object();
  for (ExpansionMethod const& method : expansion_methods()) {
    MethodResult const result = method_result(e, method);
    nlohmann::json& value = out[std::string(method.name)];
    if (auto const* text = std::get_if<std::string>(&result)) value = *text;
    if (auto const* list = std::get_if<std::vector<std::string>>(&result)) value = *list;
  }
  out["c_code_cache_version"] = cache_version;
  return out;
}

/// PyTensor's `c_code` for ops/vector_times_vector on two float64 vectors, byte for byte.
std::string const vtv_reference_c_code =
    "\n                #define APPLY_SPECIFIC(str) str##_node_<<<<HASH_PLACEHOLDER>>>>_0\n"
    "                {\n"
    "                  if (APPLY_SPECIFIC(vector_times_vector)(V5, V3, &V1) != 0) {\n"
    "                    {\n"
    "        __failure = 7;\n"
    "        if (!PyErr_Occurred()) {\n"
    "            PyErr_SetString(PyExc_RuntimeError,\n"
    "                \"Unexpected error in an Op's C code. \"\n"
    "                \"No Python exception was set.\");\n"
    "        }\n"
    "        goto __label_7;}\n"
    "                  }\n"
    "                }\n"
    "                #undef APPLY_SPECIFIC\n"
    "                ";

}  // namespace

TEST_SUITE("expander") {
  TEST_CASE("generates the tutorial op's c_code exactly as the reference does") {
    Loaded files(Files{{"vtv.c", "#section support_code_apply\nint f;\n"}});
    Expansion e = expand_apply(files.sm, files.set, vtv_signature(), reference_mode());
    REQUIRE(e.code);
    CHECK(*e.code == vtv_reference_c_code);
  }

  TEST_CASE("wraps apply sections in dtype, APPLY_SPECIFIC and params macros in LIFO pairs") {
    Loaded files(Files{{"a.c", "#section support_code_apply\nint x;\n"}});
    Apply s = single_node({parse_type("int32[:]"), parse_type("object")}, {parse_type("float32")});
    s.op.params = ParamsSpec{"_Params_x", {{"k", "npy_int64"}, {"g", ""}}};
    Expansion e = expand(files.sm, files.set, s.op, s.node, reference_mode());
    CHECK(e.support_code_apply ==
          "\n#define DTYPE_INPUT_0 npy_int32\n#define TYPENUM_INPUT_0 5\n"
          "#define ITEMSIZE_INPUT_0 4\n"
          "#define DTYPE_OUTPUT_0 npy_float32\n#define TYPENUM_OUTPUT_0 11\n"
          "#define ITEMSIZE_OUTPUT_0 4\n"
          "#define APPLY_SPECIFIC(str) str##_node_<<<<HASH_PLACEHOLDER>>>>_0\n"
          "#define PARAMS_TYPE _Params_x\n#define DTYPE_PARAM_k npy_int64\n"
          "\nint x;\n\n"
          "#undef DTYPE_INPUT_0\n#undef TYPENUM_INPUT_0\n#undef ITEMSIZE_INPUT_0\n"
          "#undef DTYPE_OUTPUT_0\n#undef TYPENUM_OUTPUT_0\n#undef ITEMSIZE_OUTPUT_0\n"
          "#undef APPLY_SPECIFIC\n#undef PARAMS_TYPE\n#undef DTYPE_PARAM_k");
  }

  TEST_CASE("continues a multi-line FAIL with backslashes and defines PARAMS in init_code_struct") {
    Loaded files(Files{{"a.c", "#section init_code_struct\nFAIL;\n"}});
    Apply s = vtv_signature();
    s.op.check_input = false;
    s.node.init_sub["fail"] = "{\nreturn 7;\n}";
    s.node.sub["params"] = s.node.init_sub["params"] = "V7";
    Expansion e = expand(files.sm, files.set, s.op, s.node, reference_mode());
    CHECK(e.init_code_struct ==
          "\n#define APPLY_SPECIFIC(str) str##_node_<<<<HASH_PLACEHOLDER>>>>_0\n"
          "#define FAIL { \\\nreturn 7; \\\n}\n#define PARAMS V7\n\nFAIL;\n\n"
          "#undef FAIL\n#undef PARAMS\n#undef APPLY_SPECIFIC");
  }

  TEST_CASE("pads the function call with NULL and passes params last") {
    Loaded files(Files{{"a.c", "#section support_code\n"}});
    Apply s = vtv_signature();
    s.op.num_inputs = 3;
    s.op.num_outputs = 2;
    s.node.sub["params"] = s.node.init_sub["params"] = "V7";
    Expansion e = expand(files.sm, files.set, s.op, s.node, reference_mode());
    REQUIRE(e.code);
    CHECK(e.code->find("(APPLY_SPECIFIC(vector_times_vector)(V5, V3, NULL, &V1, NULL, V7) != 0)") !=
          std::string::npos);
  }

  TEST_CASE("ends code and code_cleanup with a newline unless the fix is off") {
    Loaded files(Files{{"a.c", "#section code\nx;\n#section code_cleanup\ny;\n"}});
    Apply s = vtv_signature();
    s.op.func_name.reset();
    ExpandOptions fixed;
    fixed.line_directives = false;
    Expansion with_fix = expand(files.sm, files.set, s.op, s.node, fixed);
    Expansion without = expand(files.sm, files.set, s.op, s.node, reference_mode());
    REQUIRE(with_fix.code);
    REQUIRE(without.code);
    CHECK(without.code->ends_with("#undef APPLY_SPECIFIC"));
    CHECK(*with_fix.code == *without.code + "\n");
    CHECK(with_fix.code_cleanup == without.code_cleanup + "\n");
  }

  TEST_CASE("defines INPUT_i and OUTPUT_i only in code and code_cleanup") {
    Loaded files(Files{{"a.c", "#section code\nx;\n#section support_code_struct\ny;\n"}});
    Apply s = vtv_signature();
    s.op.func_name.reset();
    Expansion e = expand(files.sm, files.set, s.op, s.node, reference_mode());
    REQUIRE(e.code);
    CHECK(e.code->find("#define INPUT_0 V5\n#define INPUT_1 V3\n#define OUTPUT_0 V1\n") !=
          std::string::npos);
    CHECK(e.support_code_struct.find("INPUT_0 V5") == std::string::npos);
  }

  TEST_CASE("reports a code section combined with a function name and leaves c_code unset") {
    Loaded files(Files{{"a.c", "#section code\nx;\n#section support_code\ny;\n"}});
    Expansion e = expand_apply(files.sm, files.set, vtv_signature(), reference_mode());
    CHECK_FALSE(e.code);
    REQUIRE(e.diagnostics.size() == 1);
    CHECK(e.diagnostics[0].code == "SL604");
    CHECK(e.diagnostics[0].range.valid());
    CHECK(e.support_code == "\ny;\n");
  }

  TEST_CASE("leaves c_code unset without a code section or a function name") {
    Loaded files(Files{{"a.c", "#section support_code\ny;\n"}});
    Apply s = vtv_signature();
    s.op.func_name.reset();
    Expansion e = expand(files.sm, files.set, s.op, s.node, reference_mode());
    CHECK_FALSE(e.code);
    CHECK(e.diagnostics.empty());
  }

  TEST_CASE("rejects an unknown dtype and names that do not match the types") {
    Loaded files(Files{{"a.c", "#section support_code\n"}});
    Apply s = vtv_signature();
    s.node.input_dtypes[1] = "float128";
    s.node.outputs.push_back("V9");
    Expansion e = expand(files.sm, files.set, s.op, s.node);
    REQUIRE(e.diagnostics.size() == 2);
    CHECK(e.diagnostics[0].code == "SE101");
    CHECK(e.diagnostics[0].message.find("`float128` for input 1") != std::string::npos);
    CHECK(e.diagnostics[1].code == "SE102");
    CHECK_FALSE(e.code);
  }

  TEST_CASE("knows the NumPy type numbers and sizes of every PyTensor dtype") {
    CHECK(known_dtypes().size() == 14);
    CHECK(dtype_info("float64")->typenum == 12);
    CHECK(dtype_info("int64")->typenum == 7);
    CHECK(dtype_info("float16")->itemsize == 2);
    CHECK(dtype_info("complex128")->c_type == "npy_complex128");
    CHECK_FALSE(dtype_info("float128"));
  }
}

TEST_SUITE("line directives") {
  TEST_CASE("precedes each block with the line of its file and resumes after the fragment") {
    Loaded files(Files{{"a.c", "#section support_code_apply\nint a;\n"},
                       {"dir/b.c", "\n#section support_code_apply\nint b;\n"}});
    Expansion e = expand_apply(files.sm, files.set, vtv_signature());
    std::string const& s = e.support_code_apply;
    CHECK(s.starts_with("\n#line 3 \"<libsection-generated> c_support_code_apply\"\n"
                        "#define DTYPE_INPUT_0 npy_float64\n"));
    CHECK(s.find("#define APPLY_SPECIFIC(str) str##_node_<<<<HASH_PLACEHOLDER>>>>_0\n"
                 "#line 2 \"a.c\"\nint a;\n#line 3 \"dir/b.c\"\nint b;\n"
                 "#line 18 \"<libsection-generated> c_support_code_apply\"\n"
                 "#undef DTYPE_INPUT_0") != std::string::npos);
    // Generated lines are numbered as the lines of the method's string.
    std::size_t resume = s.find("#line 18 ");
    REQUIRE(resume != std::string::npos);
    CHECK(std::count(s.begin(), s.begin() + static_cast<long>(resume), '\n') + 2 == 18);
  }

  TEST_CASE("starts a directive on its own line when a file does not end with a newline") {
    Loaded files(
        Files{{"a.c", "#section support_code\nint a;"}, {"b.c", "#section support_code\nint b;"}});
    Expansion e = expand_apply(files.sm, files.set, vtv_signature());
    CHECK(e.support_code == "#line 2 \"a.c\"\nint a;\n#line 2 \"b.c\"\nint b;\n"
                            "#line 6 \"<libsection-generated> c_support_code\"\n");
  }

  TEST_CASE("names files by line_paths and escapes them as C strings") {
    Loaded files(Files{{"a.c", "#section init_code\nx();\n"}});
    ExpandOptions o;
    o.line_paths = {"/abs/we\"ird\\a.c"};
    Expansion e = expand_apply(files.sm, files.set, vtv_signature(), o);
    REQUIRE(e.init_code.size() == 1);
    CHECK(e.init_code[0].starts_with("#line 2 \"/abs/we\\\"ird\\\\a.c\"\nx();\n"));
  }

  TEST_CASE("names no file for an empty section, only the generated lines") {
    Loaded files(Files{{"a.c", "#section support_code\nint a;\n#section code_cleanup"}});
    Apply s = vtv_signature();
    Expansion e = expand(files.sm, files.set, s.op, s.node);
    CHECK(e.code_cleanup.starts_with("\n#line 3 \"<libsection-generated> c_code_cleanup\"\n"));
    CHECK(e.code_cleanup.find("a.c") == std::string::npos);
    CHECK(e.code_cleanup.find("#line", 2) == std::string::npos);
  }

  TEST_CASE("numbers the generated call of func_name as the lines of c_code") {
    Loaded files(Files{{"a.c", "#section support_code\n"}});
    Expansion e = expand_apply(files.sm, files.set, vtv_signature());
    REQUIRE(e.code);
    std::string reference = vtv_reference_c_code;
    CHECK(*e.code == "\n#line 3 \"<libsection-generated> c_code\"" + reference);
  }

  TEST_CASE("relocates resume directives to the module's own lines") {
    std::string module =
        "a\n#line 7 \"<libsection-generated> c_code\"\nb\n  #line 3 \"x.c\"\n"
        "#line 9 \"<libsection-generated>x\n#line \"<libsection-generated> c_code\"\n";
    CHECK(relocate_line_directives(module, "/tmp/mod.cpp") ==
          "a\n#line 3 \"/tmp/mod.cpp\"\nb\n  #line 3 \"x.c\"\n"
          "#line 9 \"<libsection-generated>x\n#line \"<libsection-generated> c_code\"\n");
  }

  TEST_CASE("the path of a directive reads back as it was written") {
    for (std::string path : {"ops/vtv.c", "we\"ird\\name\n.c", "<libsection-module>", ""})
      CHECK(detail::line_directive_path("  " + detail::line_directive(12, path)) == path);
    for (char const* line : {"#line 3", "#line x \"a.c\"", "#line 3 \"a\"b.c\"", "#line 3 \"a.c",
                             "int x; // #line 3 \"a.c\"", "#line 3 \"a.c\\\""})
      CHECK_MESSAGE(!detail::line_directive_path(line), line);
  }
}

TEST_SUITE("signature strings") {
  TEST_CASE("reads tensors, scalars and objects") {
    auto types = parse_type_list(" float64[:], float32[:, :],int64 ,object", "input");
    REQUIRE(types.size() == 4);
    CHECK(types[0].kind == TypeSpec::Kind::tensor);
    CHECK(types[0].ndim == 1);
    CHECK(types[1].ndim == 2);
    CHECK(types[1].to_string() == "float32[:,:]");
    CHECK(types[2].kind == TypeSpec::Kind::scalar);
    CHECK(types[3].kind == TypeSpec::Kind::generic);
    CHECK_FALSE(types[3].dtype_name());
    CHECK(parse_type_list("", "input").empty());
  }

  TEST_CASE("names the item and the character of a bad signature string") {
    CHECK_THROWS_WITH_AS(parse_type_list("float64[:],float64[:", "output"),
                         "output 1 `float64[:`: expected `,` or `]` at the end of "
                         "`float64[:],float64[:`",
                         signature_error);
    CHECK_THROWS_WITH_AS(parse_type_list("float64[:],flot64[:]", "input"),
                         doctest::Contains("input 1 `flot64[:]`: unknown dtype `flot64`"),
                         signature_error);
    CHECK_THROWS_WITH_AS(parse_type_list("float64[:],,int64", "input"),
                         doctest::Contains("input 1 ``: expected a type at character 12"),
                         signature_error);
    CHECK_THROWS_AS(parse_type("float64[;]"), signature_error);
    CHECK_THROWS_AS(parse_type("object[:]"), signature_error);
    CHECK_THROWS_AS(parse_params("k:int64,k:int32"), signature_error);
    CHECK_THROWS_AS(parse_params("1k:int64"), signature_error);
    CHECK_THROWS_AS(parse_params("k"), signature_error);
  }

  TEST_CASE("reads any string without crashing: a list of types or a signature_error") {
    // Deterministic pseudo-random strings over the characters the grammar cares about.
    std::string const alphabet = "float64int32object[]:, \t;x";
    std::uint32_t state = 12345;
    auto next = [&] { return state = state * 1664525u + 1013904223u; };
    for (int i = 0; i < 20000; ++i) {
      std::string text(next() % 24, ' ');
      for (char& c : text) c = alphabet[next() % alphabet.size()];
      try {
        for (TypeSpec const& t : parse_type_list(text, "input")) {
          CHECK(parse_type(t.to_string()).to_string() == t.to_string());
        }
      } catch (signature_error const& e) {
        CHECK(std::string(e.what()).find(text) != std::string::npos);
      }
      try {
        parse_params(text);
      } catch (signature_error const&) {
      }
    }
  }

  TEST_CASE("prints types as PyTensor 3 does") {
    CHECK(parse_type("float64[:]").pytensor_str() == "Vector(float64, shape=(?,))");
    CHECK(parse_type("float32[:,:]").pytensor_str() == "Matrix(float32, shape=(?, ?))");
    CHECK(parse_type("int8[:,:,:]").pytensor_str() == "Tensor3(int8, shape=(?, ?, ?))");
    CHECK(parse_type("int64").pytensor_str() == "int64");
    CHECK(parse_type("object").pytensor_str() == "Generic");
  }

  TEST_CASE("names the params struct as PyTensor's ParamsType does") {
    // the struct name PyTensor gives ParamsType(k=int64)
    ParamsSpec spec = params_spec(parse_params("k:int64"));
    CHECK(spec.type_name ==
          "_Params_8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a_"
          "bc2229666b96007e875c5f62897ee5b7648db2baa5fabf3e771afac323afbd57");
    ParamsSpec sorted = params_spec(parse_params("k:int64,a:float64[:],g:object"));
    REQUIRE(sorted.fields.size() == 3);
    CHECK(sorted.fields[0].name == "a");
    CHECK(sorted.fields[1].c_element_type.empty());
  }

  TEST_CASE("numbers a single node's variables as PyTensor's CLinker does") {
    auto v = parse_type("float64[:]");
    NodeContext s = single_node({v, v, v}, {v, v}).node;
    CHECK(s.inputs == std::vector<std::string>{"V9", "V7", "V5"});
    CHECK(s.outputs == std::vector<std::string>{"V3", "V1"});
    CHECK(s.sub.at("fail").find("__failure = 11;") != std::string::npos);
    NodeContext p = single_node({v, v}, {v}, params_spec(parse_params("k:int64"))).node;
    CHECK(p.sub.at("params") == "V7");
    CHECK(p.sub.at("fail").find("goto __label_9;}") != std::string::npos);
    CHECK(p.init_sub.at("fail").find("return 9;\n}") != std::string::npos);
  }
}

TEST_SUITE("cache version") {
  TEST_CASE("changes with the files, the function name, padding, check_input and params") {
    Loaded a(Files{{"a.c", "#section support_code_apply\nint a;\n"}});
    Loaded edited(Files{{"a.c", "#section support_code_apply\nint b;\n"}});
    Apply s = vtv_signature();
    std::string base = op_cache_version(a.sm, a.set, s.op);
    CHECK(base.starts_with("ls"));
    CHECK(base.size() == 66);
    CHECK(op_cache_version(a.sm, a.set, s.op) == base);
    CHECK(op_cache_version(edited.sm, edited.set, s.op) != base);

    auto differs = [&](auto change) {
      Apply t = vtv_signature();
      change(t);
      return op_cache_version(a.sm, a.set, t.op) != base;
    };
    CHECK(differs([](Apply& t) { t.op.func_name = "APPLY_SPECIFIC(other)"; }));
    CHECK(differs([](Apply& t) { t.op.num_inputs = 3; }));
    CHECK(differs([](Apply& t) { t.op.num_outputs = 1; }));
    CHECK(differs([](Apply& t) { t.op.check_input = false; }));
    CHECK(differs([](Apply& t) { t.op.params = params_spec(parse_params("k:int64")); }));
    CHECK(differs([](Apply& t) { t.op.language = Language::c; }));
    // C symbols and node names belong to the linker's key, not the op's version:
    // op_cache_version takes the OpDescription alone, so no node can reach it.
    CHECK(op_cache_version(a.sm, a.set, s.op, reference_mode()) != base);
  }

  TEST_CASE("a C++ op's version does not name its language: it stays as it was") {
    Loaded a(Files{{"a.c", "#section support_code_apply\nint a;\n"}});
    Apply s = vtv_signature();
    Apply cxx = vtv_signature();
    cxx.op.language = Language::cxx;
    CHECK(op_cache_version(a.sm, a.set, cxx.op) == op_cache_version(a.sm, a.set, s.op));
  }

  TEST_CASE("does not depend on where the files are") {
    Loaded here(Files{{"a.c", "#section support_code\nint a;\n"}});
    Loaded there(Files{{"/elsewhere/a.c", "#section support_code\nint a;\n"}});
    ExpandOptions moved;
    moved.line_paths = {"/moved/a.c"};
    std::string base = op_cache_version(here.sm, here.set, vtv_signature().op);
    CHECK(op_cache_version(there.sm, there.set, vtv_signature().op) == base);
    CHECK(op_cache_version(here.sm, here.set, vtv_signature().op, moved) == base);
  }

  TEST_CASE("hashes with SHA-256") {
    CHECK(detail::sha256_hex("") ==
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(detail::sha256_hex("abc") ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(detail::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(detail::sha256_hex(std::string(1000000, 'a')) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
}

TEST_SUITE("golden") {
  // Each tests/golden/expand/<case>.case.json names files and a signature; the expansion must
  // equal <case>.expected.json (reference mode: no #line, no newline fix; a Python test checks
  // these against the installed PyTensor) and <case>.line.expected.json (default options).
  // LIBSECTION_UPDATE_GOLDEN=1 rewrites them.
  TEST_CASE("expands every golden case to its expected output") {
    fs::path const dir = fs::path(LIBSECTION_SOURCE_DIR) / "tests/golden/expand";
    bool const update = std::getenv("LIBSECTION_UPDATE_GOLDEN") != nullptr;
    std::vector<fs::path> cases;
    for (auto const& entry : fs::directory_iterator(dir)) {
      if (entry.path().string().ends_with(".case.json")) cases.push_back(entry.path());
    }
    std::sort(cases.begin(), cases.end());
    REQUIRE(cases.size() >= 10);
    for (fs::path const& case_path : cases) {
      std::string const name = case_path.filename().string().substr(
          0, case_path.filename().string().size() - std::string(".case.json").size());
      CAPTURE(name);
      auto const spec = nlohmann::json::parse(read_file(case_path));
      SourceManager sm;
      std::vector<SourceSpec> specs;
      for (auto const& f : spec.at("files")) {
        specs.push_back({(dir / f.get<std::string>()).string(), f.get<std::string>()});
      }
      SectionSet set = load_sections(sm, specs);
      REQUIRE(set.ok());
      auto params = parse_params(spec.value("params", ""));
      Apply s = single_node(parse_type_list(spec.at("inputs").get<std::string>(), "input"),
                            parse_type_list(spec.at("outputs").get<std::string>(), "output"),
                            params.empty() ? std::nullopt : std::optional(params_spec(params)));
      if (spec.contains("func_name")) s.op.func_name = spec["func_name"].get<std::string>();
      if (spec.contains("num_inputs")) s.op.num_inputs = spec["num_inputs"].get<int>();
      if (spec.contains("num_outputs")) s.op.num_outputs = spec["num_outputs"].get<int>();
      s.op.check_input = spec.value("check_input", true);

      for (auto const& [suffix, options] : {std::pair{".expected.json", reference_mode()},
                                            std::pair{".line.expected.json", ExpandOptions{}}}) {
        Expansion e = expand(sm, set, s.op, s.node, options);
        CHECK(e.diagnostics.empty());
        std::string const actual =
            expansion_json(e, op_cache_version(sm, set, s.op, options)).dump(2) + "\n";
        fs::path const expected_path = dir / (name + suffix);
        if (update) {
          std::ofstream(expected_path, std::ios::binary) << actual;
        } else {
          CHECK_MESSAGE(actual == read_file(expected_path),
                        "regenerate with LIBSECTION_UPDATE_GOLDEN=1 if the change is intended");
        }
      }
    }
  }
}

TEST_SUITE("language") {
  TEST_CASE("an op declares c or c++, and anything else names the op and the accepted values") {
    CHECK(parse_language("c", "Op") == Language::c);
    CHECK(parse_language("c++", "Op") == Language::cxx);
    CHECK(language_name(Language::c) == "c");
    CHECK(language_name(Language::cxx) == "c++");
    for (char const* bad : {"C", "cpp", "", "c ", "c89"}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH_AS(parse_language(bad, "MyOp"), doctest::Contains("MyOp: language is \""),
                           std::invalid_argument);
      CHECK_THROWS_WITH_AS(parse_language(bad, "MyOp"),
                           doctest::Contains("give \"c++\" (the default) or \"c\""),
                           std::invalid_argument);
    }
  }

  TEST_CASE("an op declared C is refused at the line of a C++ construct or a struct section") {
    Loaded files(Files{{"op.c", "#section support_code\n"
                                "static int f(int const& x) { return x; }\n"
                                "#section support_code_struct\n"
                                "int APPLY_SPECIFIC(n);\n"
                                "#section code\n"
                                "int* p = nullptr;\n"}});
    Apply a = single_node({}, {});
    Expansion const cxx = expand(files.sm, files.set, a.op, a.node);
    CHECK_FALSE(has_errors(cxx.diagnostics));
    a.op.language = Language::c;
    Expansion const c = expand(files.sm, files.set, a.op, a.node);
    std::vector<std::string> codes;
    for (auto const& d : c.diagnostics) codes.push_back(d.code);
    CHECK(codes == std::vector<std::string>{"SL208", "SL209", "SL208"});
    CHECK(c.diagnostics[0].message.find("reference parameter") != std::string::npos);
    CHECK(
        files.sm.file(c.diagnostics[0].range.file).line_column(c.diagnostics[0].range.begin).line ==
        2);
    CHECK(c.diagnostics[2].message.find("write `NULL`") != std::string::npos);
    CHECK_FALSE(c.code);  // nothing is expanded for an op refused
  }

  TEST_CASE("C code and names C++ reserves pass as C") {
    Loaded files(
        Files{{"op.c", "#section support_code\n"
                       "static int class_of(int new, int delete) { return new & delete; }\n"
                       "struct s { int class; };\n"
                       "static int g(struct s* p) { int try = p->class; return try; }\n"
                       "#section code\n"
                       "int a[4 & 3] = {0};\n"
                       "for (int i = 0; i < 4; ++i) if (a[i] == 0) a[i] = i;\n"}});
    Apply a = single_node({}, {});
    a.op.language = Language::c;
    CHECK(expand(files.sm, files.set, a.op, a.node).diagnostics.empty());
  }
}
