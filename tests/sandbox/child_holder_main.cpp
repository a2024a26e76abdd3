// Helper for test_child_process: plays rlf. Starts the program given on its
// command line through sandbox/child_process.h, prints the containment it
// got, then waits forever with the program running; the test kills it with
// SIGKILL and checks what outlives it. With --deny-namespaces it first
// installs a seccomp filter that fails every clone() asking for a new
// namespace with EPERM (what a container without them does), so the
// fallback containment is what runs.
#include <sched.h>
#include <seccomp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "sandbox/child_process.h"

namespace {

bool deny_namespaces() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return false;
  bool ok = true;
  for (unsigned long flag : {CLONE_NEWPID, CLONE_NEWUSER, CLONE_NEWNS}) {
    ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)) == 0;
    ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)) == 0;
  }
  ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) == 0;
  ok = ok && seccomp_load(ctx) == 0;
  seccomp_release(ctx);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  if (argc > 1 && std::strcmp(argv[1], "--deny-namespaces") == 0) {
    if (!deny_namespaces()) {
      std::fprintf(stderr, "cannot install the seccomp filter\n");
      return 2;
    }
    first = 2;
  }
  if (argc <= first) {
    std::fprintf(stderr, "usage: rlf_child_holder [--deny-namespaces] PROGRAM [ARGS...]\n");
    return 2;
  }
  rlf::ChildSpec spec;
  spec.argv.assign(argv + first, argv + argc);
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin"};
  spec.stdin_fd = 0;
  spec.stdout_fd = 2;  // the program's output goes to stderr: stdout says the containment
  spec.stderr_fd = 2;
  rlf::ChildProcess child(spec);
  std::printf("%s\n%s\n", rlf::containment_name(child.containment()), child.containment_note().c_str());
  std::fflush(stdout);
  for (;;) pause();
}
