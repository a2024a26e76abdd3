// A fixed pool of threads pulling indices from an atomic counter; each writes
// its result into its own slot, so no locking is needed for the results.
#include "sandbox/run_many.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "util/error.h"

namespace rlf::sandbox {

int default_workers() { return std::max(1, int(std::thread::hardware_concurrency())); }

std::vector<ExecResult> run_many(const std::vector<std::string>& programs, const SandboxOptions& options,
                                 int n_workers) {
  check(n_workers >= 0, "run_many: n_workers must be >= 0 (0 = one per hardware thread), got ", n_workers);
  validate(options);
  check_sandbox_supported(options);
  std::vector<ExecResult> results(programs.size());
  if (programs.empty()) return results;
  size_t n_threads = std::min(programs.size(), size_t(n_workers == 0 ? default_workers() : n_workers));
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < programs.size(); i = next.fetch_add(1)) {
      try {
        results[i] = run_python(programs[i], options);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        next = programs.size();  // stop handing out work
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n_threads; ++t) threads.emplace_back(work);
  for (std::thread& thread : threads) thread.join();
  if (first_error) std::rethrow_exception(first_error);
  return results;
}

}  // namespace rlf::sandbox
