// The helpers the linker core's unit tests share (test_linker.cpp, test_build.cpp,
// test_cache.cpp, test_manifest.cpp): types and ops written as templates, temporary folders,
// fake programs.
#pragma once

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

#include "linker/build/compile.hpp"
#include "section/ctype.hpp"
#include "section/linker.hpp"
#include "section/linker/cache/cache.hpp"
#include "section/linker/generate/module.hpp"
#include "section/log.hpp"
#include "section/platform.hpp"
#include "section/signature.hpp"

namespace fs = std::filesystem;
using namespace section;

namespace linker_test {

// A C `double` type (declare, init to 0.0, extract from a Python float, sync back) as templates.
inline CTypePtr double_type() {
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

inline Graph add_mul_graph() {
  auto d = double_type();
  Graph g;
  auto x = g.add_input(d, "x"), y = g.add_input(d, "y"), z = g.add_input(d, "z");
  auto a = g.add_apply(std::make_shared<TemplateOp>("Add", "+"), {x, y}, {d});
  auto b = g.add_apply(std::make_shared<TemplateOp>("Mul", "*"), {a[0], z}, {d});
  g.add_output(b[0]);
  return g;
}

inline std::size_t count(std::string const& text, std::string const& what) {
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

inline ModuleManifest write_library(PrivateDir const& work, std::string const& bytes) {
  std::ofstream(work.path() / "module.so", std::ios::binary) << bytes;
  ModuleManifest manifest;
  manifest.ops = {"Test"};
  return manifest;
}

inline unsigned mode_of(fs::path const& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 0777;
}

inline std::string read_all(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

inline std::string entry_key(char c) { return std::string(64, c); }

// The message of the CacheError `f` throws ("" when it throws none).
template <class F>
inline std::string cache_error_of(F&& f) {
  try {
    f();
  } catch (CacheError const& e) {
    return e.what();
  }
  return {};
}

inline bool contains(std::string const& text, std::string const& part) {
  return text.find(part) != std::string::npos;
}

// "<pid> <pid namespace> <host>": what a lock's exclusive holder records.
inline std::string holder_record(long pid) {
  char ns[128] = {}, host[256] = {};
  ssize_t const n = ::readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  ns[n > 0 ? n : 0] = '\0';
  ::gethostname(host, sizeof host - 1);
  return std::to_string(pid) + " " + ns + " " + host + "\n";
}

inline long dead_pid() {
  pid_t const child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

// A fake g++ for the one-time setup: what its header compile does comes from FAKE_PCH.
inline fs::path fake_gcc(fs::path const& dir) {
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

}  // namespace linker_test
