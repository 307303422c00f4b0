// The language server's compile checks on worker threads, debounced and cancellable, one at a
// time per document and several documents at once.
#include "compile_worker.hpp"

#include <algorithm>
#include <optional>

#include "section/codes.hpp"
#include "section/linker.hpp"

namespace lint_server {
namespace {

/// The running check's stop flag on this thread, asked by the build while it waits for the
/// compiler (`set_interrupt_check` takes a plain function, shared by every thread).
thread_local std::atomic<bool> const* this_check_stop = nullptr;

bool interrupted() { return this_check_stop != nullptr && this_check_stop->load(); }

}  // namespace

unsigned CompileWorker::default_compilers() {
  return std::clamp(std::thread::hardware_concurrency() / 2, 2u, 8u);
}

CompileWorker::CompileWorker(CompileChecker check, Done done, std::chrono::milliseconds delay,
                             unsigned compilers)
    : check_(std::move(check)), done_(std::move(done)), delay_(delay) {
  section::set_interrupt_check(&interrupted);
  for (unsigned i = 0; i < std::max(compilers, 1u); ++i) threads_.emplace_back([this] { run(); });
}

CompileWorker::~CompileWorker() {
  {
    std::lock_guard<std::mutex> const held(mutex_);
    stopping_ = true;
    for (auto& [uri, running] : running_) *running.stop = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void CompileWorker::stop_running(std::string const& uri) {
  auto const it = running_.find(uri);
  if (it == running_.end()) return;
  it->second.dropped = true;
  *it->second.stop = true;
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

std::map<std::string, CompileWorker::Job>::iterator CompileWorker::next_job() {
  auto next = pending_.end();
  for (auto it = pending_.begin(); it != pending_.end(); ++it)
    if (!running_.count(it->first) && (next == pending_.end() || it->second.due < next->second.due))
      next = it;
  return next;
}

void CompileWorker::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    auto const next = next_job();
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
    auto const stop = running_[uri].stop;
    this_check_stop = stop.get();
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
    this_check_stop = nullptr;
    // Still running while its result goes out, so the document's next check cannot overtake it.
    if (result && !running_[uri].dropped && !stopping_) {
      lock.unlock();
      done_(uri, std::move(*result));
      lock.lock();
    }
    running_.erase(uri);
    wake_.notify_all();  // the document's next check may start
  }
}

}  // namespace lint_server
