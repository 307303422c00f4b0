// The language server's compile checks, on a thread of their own so that the server keeps
// answering while the compiler runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "section/diagnostic.hpp"
#include "section/source.hpp"

namespace lint_server {

/// What the compile check found in one document.
struct Compiled {
  section::SourceManager sm;  ///< file 0: the document's text as compiled
  std::vector<section::Diagnostic> diagnostics;
};

/// Compile-checks `text` as the file `path` for the signature its settings give it; `python`
/// is the client's `python` setting (empty: none). Throws `section::BuildInterrupted` when
/// stopped.
using CompileChecker = std::function<Compiled(std::string const& path, std::string const& text,
                                              std::string const& python)>;

/// Runs compile checks one at a time: a document's check starts `delay` after its last request
/// (saves in a row make one check), and a new request for a document stops its running check
/// (the compiler's process group is killed). `done` gets each check that finished and was not
/// superseded, on the worker's thread.
class CompileWorker {
 public:
  using Done = std::function<void(std::string const& uri, Compiled)>;
  CompileWorker(CompileChecker check, Done done, std::chrono::milliseconds delay);
  ~CompileWorker();  ///< stops the running check, then the thread
  CompileWorker(CompileWorker const&) = delete;
  CompileWorker& operator=(CompileWorker const&) = delete;

  void request(std::string const& uri, std::string path, std::string text, std::string python);
  /// The document was closed: its pending check is dropped, its running one stopped.
  void forget(std::string const& uri);

 private:
  struct Job {
    std::string path, text, python;
    std::chrono::steady_clock::time_point due;
  };
  void run();
  void stop_running(std::string const& uri);

  CompileChecker const check_;
  Done const done_;
  std::chrono::milliseconds const delay_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, Job> pending_;
  std::string running_;    ///< the URI being checked
  bool dropped_ = false;   ///< the running check's result is not wanted
  bool stopping_ = false;  ///< the worker is ending
  std::thread thread_;     ///< last: started once the rest is ready
};

}  // namespace lint_server
