// The language server's compile checks, on threads of their own so that the server keeps
// answering while compilers run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
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

/// Runs compile checks, up to `compilers` at once, one at a time per document: a document's
/// check starts `delay` after its last request (saves in a row make one check), and a new
/// request for a document stops its running check (the compiler's process group is killed).
/// A check that hangs (until its time limit) holds up no other document's. `done` gets each
/// check that finished and was not superseded, on the thread that ran it.
class CompileWorker {
 public:
  using Done = std::function<void(std::string const& uri, Compiled)>;
  CompileWorker(CompileChecker check, Done done, std::chrono::milliseconds delay,
                unsigned compilers = default_compilers());
  ~CompileWorker();  ///< stops the running checks, then the threads
  CompileWorker(CompileWorker const&) = delete;
  CompileWorker& operator=(CompileWorker const&) = delete;

  void request(std::string const& uri, std::string path, std::string text, std::string python);
  /// The document was closed: its pending check is dropped, its running one stopped.
  void forget(std::string const& uri);

  /// Half the CPUs, at least 2 and at most 8.
  static unsigned default_compilers();

 private:
  struct Job {
    std::string path, text, python;
    std::chrono::steady_clock::time_point due;
  };
  /// A running check: asked to stop (read by the compiler's wait, on the check's thread), and
  /// whether its result is wanted.
  struct Running {
    std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
    bool dropped = false;
  };
  void run();
  /// The pending job due first whose document has no check running (end: none).
  std::map<std::string, Job>::iterator next_job();
  void stop_running(std::string const& uri);

  CompileChecker const check_;
  Done const done_;
  std::chrono::milliseconds const delay_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, Job> pending_;
  std::map<std::string, Running> running_;  ///< by URI
  bool stopping_ = false;                   ///< the worker is ending
  std::vector<std::thread> threads_;        ///< last: started once the rest is ready
};

}  // namespace lint_server
