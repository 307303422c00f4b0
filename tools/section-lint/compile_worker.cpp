// The language server's compile checks on a worker thread, debounced and cancellable.
#include "compile_worker.hpp"

#include <algorithm>
#include <atomic>
#include <optional>

#include "section/codes.hpp"
#include "section/linker.hpp"

namespace lint_server {
namespace {

/// Whether the running check is to stop: asked by the build while it waits for the compiler
/// (`set_interrupt_check` takes a plain function; one worker per process).
std::atomic<bool> interrupt_requested{false};

bool interrupted() { return interrupt_requested.load(); }

}  // namespace

CompileWorker::CompileWorker(CompileChecker check, Done done, std::chrono::milliseconds delay)
    : check_(std::move(check)), done_(std::move(done)), delay_(delay) {
  section::set_interrupt_check(&interrupted);
  thread_ = std::thread([this] { run(); });
}

CompileWorker::~CompileWorker() {
  {
    std::lock_guard<std::mutex> const held(mutex_);
    stopping_ = true;
    interrupt_requested = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CompileWorker::stop_running(std::string const& uri) {
  if (running_ != uri) return;
  dropped_ = true;
  interrupt_requested = true;
}

void CompileWorker::request(std::string const& uri, std::string path, std::string text,
                            std::string python) {
  {
    std::lock_guard<std::mutex> const held(mutex_);
    stop_running(uri);
    pending_[uri] = Job{std::move(path), std::move(text), std::move(python),
                        std::chrono::steady_clock::now() + delay_};
  }
  wake_.notify_all();
}

void CompileWorker::forget(std::string const& uri) {
  std::lock_guard<std::mutex> const held(mutex_);
  stop_running(uri);
  pending_.erase(uri);
}

void CompileWorker::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    auto const next = std::min_element(pending_.begin(), pending_.end(), [](auto& a, auto& b) {
      return a.second.due < b.second.due;
    });
    if (next == pending_.end()) {
      wake_.wait(lock);
      continue;
    }
    if (auto const due = next->second.due; std::chrono::steady_clock::now() < due) {
      // `due` is a copy: wait_until reads it after waking, when `forget` may have erased the job.
      wake_.wait_until(lock, due);
      continue;
    }
    std::string const uri = next->first;
    Job const job = std::move(next->second);
    pending_.erase(next);
    running_ = uri;
    dropped_ = false;
    interrupt_requested = false;
    lock.unlock();
    std::optional<Compiled> result;
    try {
      result = check_(job.path, job.text, job.python);
    } catch (section::BuildInterrupted const&) {  // superseded or closed: nothing to say
    } catch (std::exception const& e) {           // a bug of ours: shown, the worker goes on
      result.emplace();
      result->sm.add(job.path, job.text);
      result->diagnostics.push_back(section::make_diagnostic(
          section::compile_check, std::string("not compile-checked: ") + e.what()));
    }
    lock.lock();
    running_.clear();
    if (!result || dropped_ || stopping_) continue;
    lock.unlock();
    done_(uri, std::move(*result));
    lock.lock();
  }
}

}  // namespace lint_server
