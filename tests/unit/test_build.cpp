// Unit tests of the build room: compiler messages as diagnostics, running programs, the
// toolchain (compilers, linkers, launchers, flags).
#include <doctest/doctest.h>

#include "linker_test.hpp"

using namespace linker_test;

TEST_SUITE("linker") {
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

  TEST_CASE("a program that outlives its time is stopped with every process it started") {
    TempDir dir;
    fs::create_directories(dir.path);
    fs::path const log = dir.path / "log";
    fs::path const child = dir.path / "child";
    ProgramLimits limits;
    limits.seconds = 0.2;
    limits.seconds_setting = "LIBSECTION_CHECK_TIMEOUT";
    limits.slow_because = "a FIFO?";
    // The shell waits for a child of its own, as a compiler driver waits for cc1plus.
    std::string const script = "sleep 1000 & echo $! > " + child.string() + "; wait";
    CHECK_THROWS_WITH_AS(run_program({"/bin/sh", "-c", script}, log, limits),
                         "`sh` was stopped after 0.2 s, the limit LIBSECTION_CHECK_TIMEOUT sets "
                         "(a FIFO?)",
                         ProgramStopped);
    std::ifstream in(child);
    long pid = 0;
    in >> pid;
    REQUIRE(pid > 0);
    // Killed with its group: gone, or a zombie until whoever adopted it reaps it.
    bool ended = false;
    for (int i = 0; i < 2000 && !ended; ++i) {  // a hang guard of 20 s, in steps
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      std::getline(stat, line);
      ended = line.empty() || line.substr(line.rfind(')') + 2, 1) == "Z";
      if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(ended);
    // Within its time, a program's status is its own.
    CHECK(run_program({"/bin/sh", "-c", "exit 4"}, log, limits) == 4);
  }

  TEST_CASE("a compiler that runs out of the memory it may allocate says so") {
    auto const compiler = find_on_path("c++");
    if (!compiler) return;
    TempDir dir;
    fs::create_directories(dir.path);
    fs::path const source = dir.path / "zero.cpp";
    std::ofstream(source) << "#include \"/dev/zero\"\n";
    ProgramLimits limits;
    limits.memory = std::uintmax_t{256} << 20;
    CHECK_THROWS_WITH_AS(
        run_program({compiler->string(), "-fsyntax-only", source.string()}, dir.path / "log",
                    limits),
        doctest::Contains("ran out of the 256 MiB each compiler process may allocate, the "
                          "limit LIBSECTION_COMPILE_MEMORY sets"),
        ProgramStopped);
    // Other failures stay the program's own.
    limits.memory = std::uintmax_t{1} << 30;
    CHECK(run_program({"/bin/sh", "-c", "echo 'no memory problem here'; exit 1"}, dir.path / "log",
                      limits) == 1);
  }

  TEST_CASE("compiler messages about a file whose name holds a newline are in that file") {
    SourceManager sm;
    FileId const file = sm.add("ops/we\nird.c", "line one\nint x = oops;\n");
    std::string const log = "ops/we\nird.c: In function 'f':\n"
                            "ops/we\nird.c:2:9: error: 'oops' was not declared in this scope\n";
    auto const ds = parse_compiler_output(log, sm);
    REQUIRE(ds.size() == 1);
    CHECK(ds[0].range.file == file);
    CHECK(sm.line_column(file, ds[0].range.begin).line == 2);
    CHECK(sm.line_column(file, ds[0].range.begin).column == 9);
  }

  TEST_CASE("a compiler's dependency list is read as Make writes it") {
    std::string const listed =
        "module: /cache/tmp/w/source.cpp /home/me/my\\ op/inc/a.h \\\n"
        " /home/me/op/cost$$.h /home/me/op/hash\\#.h\\\r\n /usr/include/python3.12/Python.h\n";
    CHECK(dependency_file_paths(listed) ==
          std::vector<std::string>{"/cache/tmp/w/source.cpp", "/home/me/my op/inc/a.h",
                                   "/home/me/op/cost$.h", "/home/me/op/hash#.h",
                                   "/usr/include/python3.12/Python.h"});
    CHECK(dependency_file_paths("").empty());
    CHECK(dependency_file_paths("module:").empty());
  }

  TEST_CASE("a program is never found through a relative PATH entry") {
    TempDir dir;
    fs::create_directories(dir.path / "bin");
    fs::path const tool = dir.path / "bin" / "libsection-test-tool";
    std::ofstream(tool) << "#!/bin/sh\n";
    fs::permissions(tool, fs::perms::owner_all);
    fs::path const was = fs::current_path();
    char const* path = std::getenv("PATH");
    std::string const old_path = path ? path : "";
    fs::current_path(dir.path / "bin");  // a folder one opened, say
    ::setenv("PATH", ":.:bin", 1);
    CHECK_FALSE(find_on_path("libsection-test-tool"));
    ::setenv("PATH", (dir.path / "bin").c_str(), 1);
    CHECK(find_on_path("libsection-test-tool") == tool);
    CHECK(find_on_path("./libsection-test-tool"));  // named with a slash: the caller's choice
    ::setenv("PATH", old_path.c_str(), 1);
    fs::current_path(was);
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
