// Jail setup. Everything after clone() runs in a copy of a possibly
// multi-threaded process, so the child code only makes raw system calls and
// touches memory prepared before the clone (no malloc, no locks, no C++
// exceptions, no glibc wrappers that assume the thread list, e.g. setuid).
#include "sandbox/jail.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "sandbox/seccomp_filter.h"
#include "util/error.h"

namespace rlf::sandbox {
namespace {

namespace fs = std::filesystem;

constexpr int kStatusFd = 3;  // the status pipe's number inside the jail

// A read-only bind of a host path (directory or device node) into the root.
struct Bind {
  std::string source;  // host path
  std::string target;  // absolute path under the new root (before pivot)
  bool is_file = false;
  unsigned long extra_flags = 0;  // MS_NODEV for directories
};

// Everything the child needs, built before clone().
struct Plan {
  std::string root;
  std::string root_options;               // tmpfs options of the (later read-only) root
  std::vector<std::string> dirs;          // created in order under the root
  std::vector<Bind> binds;
  std::vector<std::string> tmp_dirs;      // created inside the jail's /tmp once it is mounted
  std::vector<Bind> tmp_binds;            // read-only binds of host paths under /tmp, made inside the jail's /tmp
  std::vector<std::pair<std::string, std::string>> symlinks;  // target, link path
  std::vector<std::pair<std::string, std::string>> files;     // path, content (root-owned, 0644)
  std::string proc_dir;
  std::string tmp_dir;
  std::string tmp_options;
  std::string program_path;               // under tmp_dir, written after mounting it
  const std::string* source = nullptr;
  std::string python;
  std::vector<const char*> argv;
  std::vector<std::string> env_storage;
  std::vector<const char*> envp;
  std::vector<std::pair<int, rlimit>> limits;
  sock_fprog seccomp{};
  uid_t uid = 0;
};

// ---- child side (async-signal-safe only) -------------------------------------

size_t bounded_len(const char* s, size_t cap) {
  size_t n = 0;
  while (n < cap && s[n]) ++n;
  return n;
}

[[noreturn]] void child_fail(const char* step, const char* detail = nullptr) {
  int err = errno;
  JailRecord record;
  record.kind = JailRecordKind::setup_error;
  record.err = err;
  size_t n = bounded_len(step, sizeof(record.step) - 1);
  std::memcpy(record.step, step, n);
  if (detail) {
    size_t room = sizeof(record.step) - 1 - n;
    if (room > 1) {
      record.step[n++] = ' ';
      size_t m = bounded_len(detail, room - 1);
      std::memcpy(record.step + n, detail, m);
    }
  }
  (void)!write(kStatusFd, &record, sizeof(record));
  _exit(127);
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

void write_new_file(const char* path, const std::string& content) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) child_fail("create", path);
  if (!write_all(fd, content.data(), content.size())) child_fail("write", path);
  close(fd);
}

// Moves the inherited descriptors to 0..3 and closes every other one.
void arrange_fds(const JailPipes& pipes, int null_fd) {
  int high[4] = {fcntl(null_fd, F_DUPFD, 10), fcntl(pipes.stdout_fd, F_DUPFD, 10),
                 fcntl(pipes.stderr_fd, F_DUPFD, 10), fcntl(pipes.status_fd, F_DUPFD, 10)};
  for (int i = 0; i < 4; ++i) {
    if (high[i] < 0 || dup2(high[i], i) < 0) _exit(126);  // no status pipe yet to report on
  }
  if (syscall(SYS_close_range, 4u, ~0u, 0u) != 0) child_fail("close_range");
}

// Read-only bind mounts (the target created first: a file or a directory).
void bind_all(const std::vector<Bind>& binds) {
  for (const Bind& bind : binds) {
    if (bind.is_file) {
      int fd = open(bind.target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) child_fail("create", bind.target.c_str());
      close(fd);
    } else if (mkdir(bind.target.c_str(), 0755) != 0 && errno != EEXIST) {
      child_fail("mkdir", bind.target.c_str());
    }
    if (mount(bind.source.c_str(), bind.target.c_str(), nullptr, MS_BIND, nullptr) != 0)
      child_fail("bind", bind.source.c_str());
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | bind.extra_flags;
    if (mount(nullptr, bind.target.c_str(), nullptr, flags, nullptr) != 0)
      child_fail("remount read-only", bind.target.c_str());
  }
}

void make_private_root(const Plan& plan) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    child_fail("make mounts private");
  if (mount("tmpfs", plan.root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, plan.root_options.c_str()) != 0)
    child_fail("mount root tmpfs on", plan.root.c_str());
  for (const std::string& dir : plan.dirs) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) child_fail("mkdir", dir.c_str());
  }
  bind_all(plan.binds);
  for (const auto& [target, link] : plan.symlinks) {
    if (symlink(target.c_str(), link.c_str()) != 0) child_fail("symlink", link.c_str());
  }
  for (const auto& [path, content] : plan.files) write_new_file(path.c_str(), content);
  // hidepid=2: the program sees only its own processes, not the jail's init (rlf's command line)
  if (mount("proc", plan.proc_dir.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") != 0)
    child_fail("mount /proc");
  if (mount("tmpfs", plan.tmp_dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, plan.tmp_options.c_str()) != 0)
    child_fail("mount /tmp tmpfs");
  for (const std::string& dir : plan.tmp_dirs) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) child_fail("mkdir", dir.c_str());
  }
  bind_all(plan.tmp_binds);
  write_new_file(plan.program_path.c_str(), *plan.source);

  // Swap roots: stack the new root over the old one, then detach the old.
  if (chdir(plan.root.c_str()) != 0) child_fail("chdir", plan.root.c_str());
  if (syscall(SYS_pivot_root, ".", ".") != 0) child_fail("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) child_fail("detach the old root");
  if (chdir("/") != 0) child_fail("chdir /");
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
    child_fail("remount the root read-only");
  if (sethostname("sandbox", 7) != 0) child_fail("sethostname");
}

// In the program's process: drop everything, then exec the interpreter.
[[noreturn]] void exec_program(const Plan& plan) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);  // fails harmlessly on KILL/STOP
  sigset_t none;
  sigemptyset(&none);
  if (sigprocmask(SIG_SETMASK, &none, nullptr) != 0) child_fail("sigprocmask");
  if (syscall(SYS_setsid) < 0) child_fail("setsid");
  for (const auto& [resource, limit] : plan.limits) {
    if (syscall(SYS_prlimit64, 0, resource, &limit, nullptr) != 0) child_fail("setrlimit");
  }
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) child_fail("drop capabilities");
  }
  // Raw system calls: glibc's setuid() would try to signal the parent's threads.
  if (syscall(SYS_setgroups, 0, nullptr) != 0) child_fail("setgroups");
  if (syscall(SYS_setresgid, plan.uid, plan.uid, plan.uid) != 0) child_fail("setresgid");
  if (syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) child_fail("setresuid");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail("no_new_privs");
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &plan.seccomp, 0, 0) != 0) child_fail("seccomp");
  if (chdir("/tmp") != 0) child_fail("chdir /tmp");
  if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) != 0) child_fail("close_range");
  execve(plan.python.c_str(), const_cast<char* const*>(plan.argv.data()),
         const_cast<char* const*>(plan.envp.data()));
  child_fail("execve", plan.python.c_str());
}

[[noreturn]] void run_init(const Plan& plan, const JailPipes& pipes, int null_fd) {
  arrange_fds(pipes, null_fd);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_fail("set the parent-death signal");
  make_private_root(plan);
  long child = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (child < 0) child_fail("fork the program");
  if (child == 0) exec_program(plan);
  close(0);
  close(1);
  close(2);
  // Reap everything; report the program itself. Orphans are reparented here.
  for (;;) {
    int status = 0;
    rusage usage{};
    pid_t pid = wait4(-1, &status, 0, &usage);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) child_fail("wait for the program");
    if (pid != child) continue;
    JailRecord record;
    record.kind = WIFEXITED(status) ? JailRecordKind::exited : JailRecordKind::signaled;
    record.value = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
    record.cpu_us = int64_t(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000 +
                    usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
    record.maxrss_kb = usage.ru_maxrss;
    (void)!write(kStatusFd, &record, sizeof(record));
    _exit(0);  // the kernel now kills whatever is left in the PID namespace
  }
}

// ---- parent side --------------------------------------------------------------

void add_host_path(Plan& plan, const std::string& path, bool is_file_hint) {
  std::error_code ec;
  auto status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status)) return;
  std::string target = plan.root + path;
  if (fs::is_symlink(status)) {
    plan.symlinks.emplace_back(fs::read_symlink(path).string(), target);
  } else if (fs::is_directory(status)) {
    plan.binds.push_back({path, target, false, MS_NODEV});
  } else {
    plan.binds.push_back({path, target, is_file_hint, 0});
  }
}

// Adds the ancestors of `path` (relative to the new root) to plan.dirs.
void add_parent_dirs(Plan& plan, const fs::path& path) {
  fs::path current = plan.root;
  for (const auto& part : path.parent_path().relative_path()) {
    current /= part;
    plan.dirs.push_back(current.string());
  }
}

Plan make_plan(const std::string& source, const SandboxOptions& options, const std::string& mount_dir,
               uid_t uid) {
  Plan plan;
  plan.root = mount_dir;
  plan.root_options = "size=1m,nr_inodes=512,mode=0755";
  plan.uid = uid;
  for (const char* dir : {"/etc", "/dev", "/proc", "/tmp"}) plan.dirs.push_back(mount_dir + dir);
  add_host_path(plan, "/usr", false);
  for (const char* path : {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"}) {
    add_host_path(plan, path, false);
  }
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"}) {
    plan.binds.push_back({dev, mount_dir + dev, true, 0});
  }
  for (const std::string& extra : options.ro_binds) {
    const bool is_dir = fs::is_directory(extra);
    const Bind bind{extra, mount_dir + extra, !is_dir, is_dir ? (unsigned long)MS_NODEV : 0ul};
    if (extra.rfind("/tmp/", 0) == 0) {
      // Under /tmp: made inside the jail's own /tmp tmpfs, after it is mounted.
      fs::path current = mount_dir + "/tmp";
      for (const auto& part : fs::path(extra).parent_path().lexically_relative("/tmp")) {
        if (part == ".") continue;
        current /= part;
        plan.tmp_dirs.push_back(current.string());
      }
      plan.tmp_binds.push_back(bind);
    } else {
      add_parent_dirs(plan, extra);
      plan.binds.push_back(bind);
    }
  }
  std::string id = std::to_string(uid);
  plan.files.emplace_back(mount_dir + "/etc/passwd",
                          "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:" + id + ":" + id +
                              ":sandbox:/tmp:/usr/sbin/nologin\n");
  plan.files.emplace_back(mount_dir + "/etc/group", "root:x:0:\nsandbox:x:" + id + ":\n");
  plan.files.emplace_back(mount_dir + "/etc/hostname", "sandbox\n");
  plan.proc_dir = mount_dir + "/proc";
  plan.tmp_dir = mount_dir + "/tmp";
  plan.tmp_options = str("size=", options.tmp_bytes, ",nr_inodes=4096,mode=0700,uid=", uid, ",gid=", uid);
  plan.program_path = plan.tmp_dir + "/main.py";
  plan.source = &source;

  plan.python = options.python;
  plan.argv = {plan.python.c_str(), "-I", "-B", "/tmp/main.py", nullptr};
  plan.env_storage = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp",
                      "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "USER=sandbox"};
  for (const std::string& var : plan.env_storage) plan.envp.push_back(var.c_str());
  plan.envp.push_back(nullptr);

  auto limit = [&](int resource, rlim_t soft, rlim_t hard) { plan.limits.push_back({resource, {soft, hard}}); };
  double cpu_s = options.cpu_s > 0 ? options.cpu_s : options.timeout_s;
  rlim_t cpu = rlim_t(cpu_s + 0.999);
  limit(RLIMIT_CPU, cpu, cpu + 1);  // SIGXCPU at the soft limit, SIGKILL one second later
  rlim_t bytes = rlim_t(options.memory_mb) << 20;
  limit(RLIMIT_AS, bytes, bytes);
  limit(RLIMIT_NPROC, rlim_t(options.max_processes), rlim_t(options.max_processes));
  limit(RLIMIT_FSIZE, rlim_t(options.max_file_bytes), rlim_t(options.max_file_bytes));
  limit(RLIMIT_NOFILE, rlim_t(options.max_open_files), rlim_t(options.max_open_files));
  limit(RLIMIT_CORE, 0, 0);
  limit(RLIMIT_MEMLOCK, 0, 0);
  limit(RLIMIT_MSGQUEUE, 0, 0);

  const std::vector<sock_filter>& program = seccomp_program();
  plan.seccomp.len = static_cast<unsigned short>(program.size());
  plan.seccomp.filter = const_cast<sock_filter*>(program.data());
  return plan;
}

}  // namespace

pid_t start_jail(const std::string& source, const SandboxOptions& options, const std::string& mount_dir,
                 uid_t uid, const JailPipes& pipes) {
  Plan plan = make_plan(source, options, mount_dir, uid);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  check(null_fd >= 0, "sandbox: cannot open /dev/null: ", std::strerror(errno));
  constexpr unsigned long kFlags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                                   CLONE_NEWUTS | CLONE_NEWCGROUP;
  long pid = syscall(SYS_clone, kFlags | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) run_init(plan, pipes, null_fd);
  int err = errno;
  close(null_fd);
  check(pid > 0, "sandbox: clone() into new namespaces failed: ", std::strerror(err),
        " (the sandbox needs root with CAP_SYS_ADMIN; in a container, allow namespaces)");
  return pid_t(pid);
}

}  // namespace rlf::sandbox
