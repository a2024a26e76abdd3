// Builds the deny-list filter with libseccomp and exports it as raw BPF, so
// the child process only needs one prctl() (no allocation after fork).
#include "sandbox/seccomp_filter.h"

#include <seccomp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "util/error.h"

namespace rlf::sandbox {
namespace {

// Calls denied outright (EPERM).
constexpr const char* kDenied[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "fanotify_init",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "iopl", "ioperm", "vhangup", "personality",
};

constexpr unsigned long kNamespaceFlags[] = {
    CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET,
    CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
};

void add_rule(scmp_filter_ctx ctx, uint32_t action, const char* name, unsigned n_args = 0,
              const scmp_arg_cmp* args = nullptr) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return;  // not on this architecture
  int rc = seccomp_rule_add_array(ctx, action, nr, n_args, args);
  check(rc == 0, "seccomp: cannot add rule for ", name, ": ", std::strerror(-rc));
}

std::vector<sock_filter> build_program() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  check(ctx != nullptr, "seccomp: seccomp_init failed (is libseccomp usable on this host?)");
  struct Release {
    scmp_filter_ctx ctx;
    ~Release() { seccomp_release(ctx); }
  } release{ctx};
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  check(rc == 0, "seccomp: cannot set the bad-architecture action: ", std::strerror(-rc));
  for (const char* name : kDenied) add_rule(ctx, SCMP_ACT_ERRNO(EPERM), name);
  add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3");
  for (unsigned long flag : kNamespaceFlags) {
    scmp_arg_cmp arg = SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
    add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &arg);
  }
  scmp_arg_cmp not_unix = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
  add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "socket", 1, &not_unix);
  add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "socketpair", 1, &not_unix);

  // Export the BPF through a memfd (libseccomp 2.5 only writes to a descriptor).
  int fd = memfd_create("rlf-seccomp", MFD_CLOEXEC);
  check(fd >= 0, "seccomp: memfd_create failed: ", std::strerror(errno));
  rc = seccomp_export_bpf(ctx, fd);
  off_t size = rc == 0 ? lseek(fd, 0, SEEK_END) : -1;
  std::vector<sock_filter> program(size > 0 ? size_t(size) / sizeof(sock_filter) : 0);
  bool ok = size > 0 && size % sizeof(sock_filter) == 0 &&
            pread(fd, program.data(), size_t(size), 0) == size;
  close(fd);
  check(rc == 0 && ok, "seccomp: cannot export the BPF program (rc ", rc, ")");
  return program;
}

}  // namespace

const std::vector<sock_filter>& seccomp_program() {
  static std::once_flag once;
  static std::vector<sock_filter> program;
  std::call_once(once, [] { program = build_program(); });
  return program;
}

}  // namespace rlf::sandbox
