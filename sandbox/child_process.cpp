// clone(CLONE_VM | CLONE_VFORK | namespaces) from a thread owned by the
// ChildProcess. The started processes run on small stacks of their own in
// rlf's memory, so they call no allocator and touch only the Plan the parent
// thread built for them. Each containment is tried in turn (Attempt); a
// failed attempt reports its step and errno through the Plan.
//
//   parent thread ──clone(NEWPID...)──► init (PID 1): namespaces, /proc,
//     (blocked until the init ends)       ──clone──► program: chdir, fds, exec
//                                          signals ready, reaps until the program ends
//   parent thread ──clone──► program (process_group: no init)
#include "sandbox/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace rlf {

const char* containment_name(Containment c) {
  switch (c) {
    case Containment::pid_namespace: return "pid_namespace";
    case Containment::pid_namespace_shared_proc: return "pid_namespace_shared_proc";
    case Containment::process_group: return "process_group";
  }
  return "?";
}

struct ChildProcess::Plan {
  // Built by the parent thread before clone().
  std::vector<std::string> paths;  // execve candidates for argv[0]
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* working_dir = nullptr;
  int fds[3] = {-1, -1, -1};
  int ready_fd = -1;        // eventfd the init writes once the program runs
  int lifeline_read = -1;   // its write end is held by rlf only: it hangs up when rlf is gone
  int lifeline_write = -1;
  bool with_init = false;
  bool user_ns = false;
  bool mount_proc = false;
  std::string uid_map, gid_map;  // "<id> <id> 1\n"
  char* program_stack_top = nullptr;
  pid_t first_pid = 0;      // the first process's pid in rlf's namespace (CLONE_PARENT_SETTID)
  // Written by the started processes.
  int err = 0;
  const char* step = nullptr;      // the step that failed
  bool program_failed = false;     // ... and it is the program's (exec, working_dir), not the containment's
  std::atomic<bool> running{false};        // the init saw the program exec
  std::atomic<bool> program_ended{false};  // the init reaped the program ...
  std::atomic<int> program_status{0};      // ... with this wait status
};

namespace {

using Plan = ChildProcess::Plan;

constexpr size_t kStackBytes = 128 << 10;

struct Attempt {
  int flags;        // CLONE_NEW* flags (0: no namespace, no init)
  bool mount_proc;  // a private /proc
  Containment containment;
};

// ---- the started processes (no allocation, no locks: they share rlf's memory) ----

[[noreturn]] void child_fail(Plan& p, const char* step, bool program = false) {
  p.err = errno;
  p.step = step;
  p.program_failed = program;
  _exit(127);
}

bool write_file(const char* path, const char* data, size_t n) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, data, n) == static_cast<ssize_t>(n);
  int e = errno;
  close(fd);
  errno = e;
  return ok;
}

// Handlers of rlf's must never run here (they would run on rlf's data):
// every handled signal back to its default, and the ones a program expects
// at their default even when rlf ignores them (exec keeps other ignored ones).
void reset_signals() {
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction sa;
    if (sigaction(sig, nullptr, &sa) != 0 || sa.sa_handler == SIG_DFL) continue;
    const bool reset_ignored = sig == SIGPIPE || sig == SIGINT || sig == SIGTERM || sig == SIGHUP ||
                               sig == SIGQUIT || sig == SIGCHLD || sig == SIGUSR1 || sig == SIGUSR2;
    if (sa.sa_handler == SIG_IGN && !reset_ignored) continue;
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = 0;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

// SIGKILL when the parent thread ends; if rlf died before it was armed, every
// copy of the lifeline's write end is closed and its read end hangs up.
void die_with_parent(Plan& p) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_fail(p, "set the parent-death signal");
  close(p.lifeline_write);
  pollfd lifeline{p.lifeline_read, POLLIN, 0};
  if (poll(&lifeline, 1, 0) > 0 && (lifeline.revents & POLLHUP)) _exit(127);
  close(p.lifeline_read);
}

// The program's own start: working directory, descriptors, exec.
int program_main(void* arg) {
  Plan& p = *static_cast<Plan*>(arg);
  if (!p.with_init) {
    reset_signals();
    die_with_parent(p);
    if (setpgid(0, 0) != 0) child_fail(p, "setpgid");
  }
  if (p.working_dir && chdir(p.working_dir) != 0) child_fail(p, "chdir", true);
  for (int target = 0; target < 3; ++target) {
    if (p.fds[target] == target) {
      if (fcntl(target, F_SETFD, 0) != 0) child_fail(p, "keep a standard descriptor");
    } else if (dup2(p.fds[target], target) < 0) {
      child_fail(p, "dup2 a standard descriptor");
    }
  }
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
    for (int fd = 3; fd < 65536; ++fd) close(fd);  // kernels before 5.9
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int first_err = 0;
  for (const std::string& path : p.paths) {
    execve(path.c_str(), p.argv.data(), p.envp.data());
    // As execvp: a candidate that exists but cannot run is the error to report.
    if (first_err == 0 || errno == EACCES) first_err = errno;
  }
  errno = first_err ? first_err : ENOENT;
  child_fail(p, "exec", true);
}

// PID 1 of the new namespace: sets it up, starts the program, reaps until the
// program ends (orphans of its descendants included), then exits, and the
// kernel kills whatever is left in the namespace. Every signal stays blocked
// (they were blocked when it was cloned): nothing but SIGKILL reaches it.
int init_main(void* arg) {
  Plan& p = *static_cast<Plan*>(arg);
  reset_signals();
  prctl(PR_SET_NAME, "rlf-init", 0, 0, 0);
  die_with_parent(p);
  // A process group of its own (the program's too): a Ctrl-C at rlf's terminal is rlf's to handle.
  if (setpgid(0, 0) != 0) child_fail(p, "setpgid");
  if (p.user_ns) {
    if (!write_file("/proc/self/setgroups", "deny", 4)) child_fail(p, "write /proc/self/setgroups");
    if (!write_file("/proc/self/uid_map", p.uid_map.data(), p.uid_map.size())) child_fail(p, "write /proc/self/uid_map");
    if (!write_file("/proc/self/gid_map", p.gid_map.data(), p.gid_map.size())) child_fail(p, "write /proc/self/gid_map");
  }
  if (p.mount_proc) {
    // Our mounts stay ours (slave: the host's later mounts still show here).
    if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) child_fail(p, "make / a slave mount");
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      child_fail(p, "mount a private /proc");
  }
  const pid_t program = clone(program_main, p.program_stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, &p);
  if (program < 0) child_fail(p, "start the program");
  if (p.step) _exit(127);  // it failed before exec (its step and errno are in the plan)
  p.running.store(true);
  const uint64_t one = 1;
  (void)!write(p.ready_fd, &one, sizeof(one));
  syscall(SYS_close_range, 0u, ~0u, 0u);  // nothing of rlf's stays open here
  for (;;) {
    int status = 0;
    const pid_t pid = wait4(-1, &status, 0, nullptr);
    if (pid == program) {
      p.program_status.store(status);
      p.program_ended.store(true);
      _exit(0);
    }
    if (pid < 0 && errno != EINTR) _exit(0);
  }
}

// ---- the parent side -----------------------------------------------------------

std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// execve candidates for argv[0]: itself when it has a '/', else each PATH directory's entry.
std::vector<std::string> exec_candidates(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return {name};
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& e : env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  std::vector<std::string> out;
  size_t begin = 0;
  for (;;) {
    const size_t end = path.find(':', begin);
    const std::string dir = path.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    out.push_back((dir.empty() ? std::string(".") : dir) + "/" + name);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return out;
}

std::vector<Attempt> attempts() {
  std::vector<Attempt> out;
  const bool root = geteuid() == 0;
  if (root) out.push_back({CLONE_NEWPID | CLONE_NEWNS, true, Containment::pid_namespace});
  out.push_back({CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS, true, Containment::pid_namespace});
  if (root) out.push_back({CLONE_NEWPID, false, Containment::pid_namespace_shared_proc});
  out.push_back({CLONE_NEWUSER | CLONE_NEWPID, false, Containment::pid_namespace_shared_proc});
  out.push_back({0, false, Containment::process_group});
  return out;
}

std::string attempt_name(const Attempt& a) {
  const std::string ns = (a.flags & CLONE_NEWUSER) ? "a user + PID namespace" : "a PID namespace";
  return a.mount_proc ? ns + " with a private /proc" : ns;
}

// Memory for a started process's stack (unmapped when the mapping goes).
struct Stack {
  void* base = MAP_FAILED;
  Stack() { base = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0); }
  ~Stack() {
    if (base != MAP_FAILED) munmap(base, kStackBytes);
  }
  char* top() const { return static_cast<char*>(base) + kStackBytes; }
};

// Runs one attempt. Returns the first process's pid once the program runs
// (for an init, the clone returns only when the init has ended: the program
// ran and is over); 0 with *why set when the attempt failed.
pid_t try_start(Plan& p, const Attempt& a, std::string* why) {
  p.err = 0;
  p.step = nullptr;
  p.program_failed = false;
  p.with_init = a.flags != 0;
  p.user_ns = (a.flags & CLONE_NEWUSER) != 0;
  p.mount_proc = a.mount_proc;
  p.first_pid = 0;
  int lifeline[2];
  if (pipe2(lifeline, O_CLOEXEC) != 0) {
    *why = str("cannot create a pipe: ", std::strerror(errno));
    return 0;
  }
  p.lifeline_read = lifeline[0];
  p.lifeline_write = lifeline[1];
  Stack first, program;
  if (first.base == MAP_FAILED || program.base == MAP_FAILED) {
    *why = str("cannot map a stack: ", std::strerror(errno));
    close(lifeline[0]);
    close(lifeline[1]);
    return 0;
  }
  p.program_stack_top = program.top();
  // No handler of rlf's may run in a started process before it resets them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  const pid_t pid = clone(p.with_init ? init_main : program_main, first.top(),
                          CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID | SIGCHLD | a.flags, &p, &p.first_pid);
  const int clone_err = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(lifeline[0]);
  close(lifeline[1]);
  if (pid < 0) {
    *why = str("clone(", attempt_name(a), "): ", std::strerror(clone_err));
    return 0;
  }
  if (p.step == nullptr && (!p.with_init || p.running.load())) return pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *why = p.step ? str(attempt_name(a), ": ", p.step, ": ", std::strerror(p.err))
                : str(attempt_name(a), ": its init ended before the program started");
  return 0;
}

}  // namespace

ChildProcess::ChildProcess(const ChildSpec& spec) : plan_(std::make_unique<Plan>()) {
  check(!spec.argv.empty(), "cannot start a program: the command is empty");
  check(spec.stdin_fd >= 0 && spec.stdout_fd >= 0 && spec.stderr_fd >= 0, "cannot start '", command_text(spec.argv),
        "': its standard descriptors are not set");
  ready_fd_ = eventfd(0, EFD_CLOEXEC);
  check(ready_fd_ >= 0, "cannot start '", command_text(spec.argv), "': eventfd: ", std::strerror(errno));
  parent_ = std::thread([this, &spec] { run_parent_thread(spec); });
  uint64_t n = 0;
  while (read(ready_fd_, &n, sizeof(n)) < 0 && errno == EINTR) {
  }
  close(ready_fd_);
  ready_fd_ = -1;
  if (error_.empty()) {
    if (pid_ <= 0) pid_ = plan_->first_pid;  // an init's (CLONE_PARENT_SETTID: known before it ran)
    return;
  }
  parent_.join();
  fail(error_);
}

void ChildProcess::run_parent_thread(const ChildSpec& spec) {
  Plan& p = *plan_;
  p.paths = exec_candidates(spec.argv[0], spec.env);
  for (const std::string& a : spec.argv) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  for (const std::string& e : spec.env) p.envp.push_back(const_cast<char*>(e.c_str()));
  p.envp.push_back(nullptr);
  p.working_dir = spec.working_dir.empty() ? nullptr : spec.working_dir.c_str();
  p.fds[0] = spec.stdin_fd;
  p.fds[1] = spec.stdout_fd;
  p.fds[2] = spec.stderr_fd;
  p.ready_fd = ready_fd_;
  p.uid_map = str(geteuid(), " ", geteuid(), " 1\n");
  p.gid_map = str(getegid(), " ", getegid(), " 1\n");
  const std::string command = command_text(spec.argv);
  std::string notes;
  const uint64_t one = 1;
  for (const Attempt& a : attempts()) {
    if (a.flags != 0) {
      // The init tells the constructor once the program runs (the clone
      // below returns only when the init has ended); pid_ must be set first.
      pid_ = -1;
      containment_ = a.containment;
      note_ = notes;
    }
    std::string why;
    const pid_t pid = try_start(p, a, &why);
    if (pid > 0) {
      if (a.flags == 0) {  // no init: the program runs now
        pid_ = pid;
        containment_ = a.containment;
        note_ = notes;
        (void)!write(ready_fd_, &one, sizeof(one));
      }
      break;
    }
    if (p.program_failed) {  // the program cannot start in any containment
      error_ = str("cannot start '", command, "': ", std::strerror(p.err),
                   std::strcmp(p.step, "exec") == 0 ? "; check the command (argv[0] is looked up in PATH)"
                                                    : str(" (working_dir '", spec.working_dir, "')"));
      break;
    }
    notes += (notes.empty() ? "" : "; ") + why;
    if (a.flags == 0) error_ = str("cannot start '", command, "': ", why);
  }
  if (!error_.empty()) {
    (void)!write(ready_fd_, &one, sizeof(one));
    return;
  }
  // The first process's parent-death signal fires when this thread ends: it waits for kill().
  std::unique_lock<std::mutex> lk(m_);
  cv_.wait(lk, [&] { return released_; });
}

ChildProcess::~ChildProcess() { kill(); }

bool ChildProcess::ended(siginfo_t* info) const {
  std::memset(info, 0, sizeof(*info));
  if (pid_ <= 0 || waitid(P_PID, static_cast<id_t>(pid_), info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info->si_pid != pid_)
    return false;
  if (containment_ != Containment::process_group && plan_->program_ended.load()) {
    const int status = plan_->program_status.load();
    info->si_code = WIFEXITED(status) ? CLD_EXITED : CLD_KILLED;
    info->si_status = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
  }
  return true;
}

void ChildProcess::kill() {
  std::unique_lock<std::mutex> lk(m_);
  if (pid_ > 0) {
    // The init takes its namespace with it; a group leader's group is signalled as one.
    if (containment_ == Containment::process_group) ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  released_ = true;
  lk.unlock();
  cv_.notify_all();
  if (parent_.joinable() && parent_.get_id() != std::this_thread::get_id()) parent_.join();
}

}  // namespace rlf
