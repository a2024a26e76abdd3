// The process side of the sandbox: builds the jail's plan in the parent (all
// allocation happens here), then clone()s an init process into new mount,
// PID, network, IPC, UTS and cgroup namespaces. The init sets up the root
// (tmpfs + read-only binds, pivot_root), forks the program as an unprivileged
// uid under rlimits, no_new_privs and seccomp, waits for it and writes one
// JailRecord describing how it ended on the status pipe, then exits; the
// kernel then kills everything left in the PID namespace. Setup failures are
// reported as a JailRecord of kind setup_error naming the failed step.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "sandbox/sandbox.h"

namespace rlf::sandbox {

enum class JailRecordKind : int32_t { setup_error = 1, exited = 2, signaled = 3 };

// Fixed-size record on the status pipe (smaller than PIPE_BUF: writes are atomic).
struct JailRecord {
  JailRecordKind kind = JailRecordKind::setup_error;
  int32_t value = 0;      // exit code or signal number
  int32_t err = 0;        // errno of a failed setup step
  int32_t reserved = 0;
  int64_t cpu_us = 0;     // user + system CPU of the program and its reaped children
  int64_t maxrss_kb = 0;  // peak resident set of the program
  char step[96] = {};     // the setup step that failed ("mount /usr read-only")
};

// Descriptors the jail writes to (the parent keeps the read ends).
struct JailPipes {
  int stdout_fd = -1;
  int stderr_fd = -1;
  int status_fd = -1;
};

// Starts the jail for `source`. `mount_dir` is an empty host directory used as
// the mount point of the jail's root (inside its mount namespace only); `uid`
// is the unprivileged uid/gid the program runs as. Returns the init's pid (to
// wait for, or SIGKILL to tear the whole tree down). Throws rlf::Error when
// clone() itself fails.
pid_t start_jail(const std::string& source, const SandboxOptions& options,
                 const std::string& mount_dir, uid_t uid, const JailPipes& pipes);

}  // namespace rlf::sandbox
