// Starting a program that cannot outlive the run. Every program rlf starts
// outside the code sandbox (agents, external scorers and environments, tool
// servers) starts here; rewards/scorer_process.h is the one caller.
//
// Containment, best first (containment() says which one a child got, and
// containment_note() why not a better one):
//   pid_namespace      the program runs in a PID namespace of its own under
//                      a small init ("rlf-init", PID 1 there), with a private
//                      /proc showing only its own processes (so it cannot
//                      read other programs' environments, such as a sibling
//                      agent's API key). When the program ends, or is
//                      killed, the init ends and the kernel kills everything
//                      the program started, setsid or double-forked
//                      descendants included.
//   pid_namespace_shared_proc   the same, but /proc could not be remounted
//                      (some containers forbid it): descendants die with the
//                      program; other processes' /proc entries stay visible.
//   process_group      no namespace could be made: the program leads a
//                      process group of its own, which kill() ends;
//                      descendants that leave the group (setsid) can outlive it.
// As root the namespaces are made directly (CAP_SYS_ADMIN); otherwise inside
// a user namespace that maps the caller's uid and gid to themselves (what
// Debian allows unprivileged users; files of other users then show as owned
// by "nobody", and setuid programs gain no privileges).
//
// In every mode the first process (the init, or the program itself) has
// SIGKILL as its parent-death signal: it dies with rlf, even when rlf is
// killed with SIGKILL, and the init takes its namespace with it. The kernel
// sends that signal when the *thread* that started the process ends, so
// each ChildProcess owns the thread that starts it, which lives until the
// process is reaped.
//
// Started vfork-style (clone with CLONE_VM, as posix_spawn does: no copy of
// a large trainer's page tables). The init keeps sharing rlf's memory while
// it runs (it only waits for its children on a small stack of its own; `ps`
// shows it as rlf-init with rlf's command line). The program gets stdin,
// stdout and stderr from the spec, every other descriptor closed, default
// signal dispositions and an empty signal mask. docs/footprint.md says what
// rlf starts and creates, and how each ends.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rlf {

enum class Containment { pid_namespace, pid_namespace_shared_proc, process_group };
const char* containment_name(Containment c);

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in the PATH of `env` when it has no '/'; required
  std::vector<std::string> env;   // the program's whole environment, "NAME=value" each
  std::string working_dir;        // "" = ours
  int stdin_fd = -1;              // become the program's 0, 1, 2 (required; ours stay open)
  int stdout_fd = -1;
  int stderr_fd = -1;
};

class ChildProcess {
 public:
  // Starts the program; throws rlf::Error naming the command and what failed
  // ("cannot start 'agent.py': No such file or directory; ...").
  explicit ChildProcess(const ChildSpec& spec);
  ~ChildProcess();  // kill()
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }  // in rlf's PID namespace (the init's, when there is one)
  Containment containment() const { return containment_; }
  // "" for pid_namespace; otherwise why no better containment was possible.
  const std::string& containment_note() const { return note_; }

  // True once the program has ended (its init too, when it has one); it
  // stays unreaped (its pid and process group cannot be reused) until
  // kill(). *info says how the program ended (si_code CLD_EXITED or
  // CLD_KILLED, si_status the exit status or signal), as waitid() would.
  bool ended(siginfo_t* info) const;
  // SIGKILL to the program and everything it started (the namespace, or the
  // process group), then reaps it. Idempotent; safe from any thread.
  void kill();

  struct Plan;  // what the started processes share with rlf (child_process.cpp)

 private:
  void run_parent_thread(const ChildSpec& spec);

  std::unique_ptr<Plan> plan_;
  pid_t pid_ = -1;
  Containment containment_ = Containment::process_group;
  std::string note_;
  int ready_fd_ = -1;   // eventfd: the program runs, or every attempt failed
  std::string error_;   // set when every attempt failed
  std::thread parent_;  // the first process's parent thread (its parent-death signal follows it)
  std::mutex m_;
  std::condition_variable cv_;
  bool released_ = false;  // kill() has reaped it: the parent thread may end
};

}  // namespace rlf
