// The seccomp filter every sandboxed process runs under: a deny list on top of
// namespaces and an unprivileged uid (defence in depth, not the only wall).
// Denied calls fail with EPERM (so Python raises PermissionError instead of
// dying): sockets other than AF_UNIX, new namespaces (unshare, setns, clone
// with CLONE_NEW* flags), ptrace and cross-process memory access, mounts,
// kernel keyrings, bpf, perf events, userfaultfd, io_uring, module loading,
// kexec, reboot and clock setting. clone3 fails with ENOSYS so libc falls back
// to clone, whose flags the filter can inspect. System calls of other
// architectures (i386, x32) kill the process.
#pragma once

#include <linux/filter.h>

#include <vector>

namespace rlf::sandbox {

// The compiled BPF program (built once with libseccomp, then shared; safe to
// call from several threads). Throws rlf::Error when libseccomp fails.
const std::vector<sock_filter>& seccomp_program();

}  // namespace rlf::sandbox
