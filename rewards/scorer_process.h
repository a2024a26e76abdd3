// A long-running helper process spoken to in lines: one request line on its
// stdin, one reply line on its stdout, within a deadline. Used by the
// `external` reward (rewards/external_reward.h) for user scorers and by
// external environments (env/external_env.h).
//
// Replies are matched to requests: the caller passes a predicate that
// recognises the reply (e.g. JSON carrying the request's id). Any other line
// on stdout — a debug print, a late reply to an earlier request — is a stray
// line: skipped, counted and echoed to stderr, never taken as the reply and
// never a reason to restart the helper.
//
// The child is started by sandbox/child_process.h (vfork semantics: no copy
// of a large trainer's page tables): as PID 1 of a PID namespace of its own
// with a private /proc where the system allows it, else in a process group
// of its own, with SIGKILL as its parent-death signal — so it and everything
// it starts die with rlf, even when rlf is killed with SIGKILL. stdin,
// stdout and stderr are pipes, every other descriptor is closed, signal
// dispositions are the defaults and the signal mask is empty. Its stderr is
// drained while waiting and its tail kept for error messages (and optionally
// echoed to ours).
//
// The helper's own exit is noticed at once (it is polled while waiting), even
// when a process it started keeps its stdout open, and reported with its
// status. Any failure of an exchange (timeout, crash, closed pipe, over-long
// line) kills the child and everything it started with SIGKILL and reaps the
// child, so the next exchange starts a fresh one: no zombies, no stray
// processes, and a broken scorer never blocks the caller past the deadline.
// The destructor closes stdin, gives the child shutdown_grace_s to exit, then
// kills what is left and reaps. Not thread-safe: one caller at a time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/child_process.h"

namespace rlf {

struct ScorerProcessOptions {
  std::vector<std::string> command;  // argv; command[0] is looked up in PATH
  std::string working_dir;           // "" = the current directory
  bool echo_stderr = true;           // copy the child's stderr lines to ours, prefixed "[scorer <pid>] "
  int64_t max_line_bytes = 64 << 20; // longest accepted reply line, bytes
  double shutdown_grace_s = 2.0;     // at shutdown: time to exit after stdin closes, before SIGKILL
  std::string label = "scorer";      // prefix of echoed stderr lines and notes: "[<label> <pid>] "
  std::vector<std::pair<std::string, std::string>> env;  // extra environment variables (NAME, value), replacing
                                                         // inherited ones of the same name
  bool note_containment = true;      // at the first start, say on stderr when the child could not get a PID
                                     // namespace with a private /proc (sandbox/child_process.h)
};

struct ScorerExchange {
  bool ok = false;
  std::string reply;  // the reply line without '\n' (when ok)
  std::string error;  // why there is no reply (when !ok): "no reply within 2 s", "exited with status 3"
  bool clean_exit = false;  // !ok because the child exited with status 0 before replying
  int64_t n_stray_lines = 0;  // lines skipped because the predicate did not accept them
};

// Recognises the reply to the current request among the helper's stdout lines.
using ReplyPredicate = std::function<bool(const std::string& line)>;

class ScorerProcess {
 public:
  explicit ScorerProcess(ScorerProcessOptions options);
  ~ScorerProcess();
  ScorerProcess(const ScorerProcess&) = delete;
  ScorerProcess& operator=(const ScorerProcess&) = delete;

  // Starts the child; throws rlf::Error naming the command when it cannot.
  void start();
  bool running() const { return pid_ > 0; }
  // True when the child was started and has ended since (not yet reaped by kill_now()).
  bool exited() const;
  pid_t pid() const { return pid_; }
  // How many times the child was started (1 after the first start).
  int64_t n_starts() const { return n_starts_; }
  // How the running child is contained (sandbox/child_process.h); process_group when not running.
  Containment containment() const { return child_ ? child_->containment() : Containment::process_group; }

  // Sends `line` + '\n' and waits for the reply, for at most timeout_s in
  // all: the first stdout line `is_reply` accepts (every line when it is
  // null). Lines it rejects are stray (skipped, counted, echoed to stderr).
  // Starts the child first when it is not running. On failure the child is
  // killed (the next call restarts it).
  ScorerExchange exchange(const std::string& line, double timeout_s, const ReplyPredicate& is_reply = nullptr);

  // Stray lines skipped since construction.
  int64_t n_stray_lines() const { return n_stray_lines_; }

  // Sends `line` + '\n' expecting no reply (a notification), within
  // timeout_s; false (the child killed) when it cannot be written in time.
  bool notify(const std::string& line, double timeout_s);

  // Kills the process group at once and reaps the child (no-op when stopped).
  void kill_now();
  // Closes stdin, waits up to shutdown_grace_s, then kill_now().
  void shutdown();

 private:
  void read_stderr();
  // Appends what stdout holds now to stdout_buffer_ (non-blocking); sets
  // *eof at end of file; returns a read error ("" when none).
  std::string drain_stdout(bool* eof);
  // Reports a skipped stdout line on stderr (truncated).
  void note_stray(const std::string& line);
  // Waits briefly for the child to end, then says how it ended; sets
  // *clean when it exited with status 0.
  std::string exit_description(bool* clean);
  std::string stderr_hint() const;  // " (stderr: ...)" with the last stderr line, or ""
  void close_fds();

  ScorerProcessOptions options_;
  std::unique_ptr<ChildProcess> child_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  int64_t n_starts_ = 0;
  int64_t n_stray_lines_ = 0;
  std::string stdout_buffer_;  // bytes read past the last reply (stray lines, checked at the next exchange)
  std::string stderr_line_;    // partial stderr line being echoed
  std::string stderr_tail_;    // last bytes of stderr, for messages
};

}  // namespace rlf
