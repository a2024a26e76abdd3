// Runs one untrusted Python program in a throw-away sandbox and reports how it
// ended. Each run is its own process tree in fresh mount, PID, network, IPC,
// UTS and cgroup namespaces: the root is an empty tmpfs with /usr bound
// read-only, a small /etc, /dev/{null,zero,random,urandom}, a private /proc and
// a writable, size-capped tmpfs at /tmp (the working directory, holding the
// program as /tmp/main.py). The program runs under a uid of its own (no
// capabilities, no_new_privs, a seccomp deny list) with rlimits on address
// space, CPU time, processes, file size and open files; the parent enforces a
// wall-clock timeout and an output cap. When the program exits (or is killed)
// the namespace's init exits and the kernel kills every process left in it;
// the mounts vanish with the namespace. docs/sandbox.md lists what this does
// and does not protect against.
//
// Needs root (CAP_SYS_ADMIN, CAP_SETUID) on Linux: check_sandbox_supported()
// says so clearly; nothing ever runs unsandboxed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rlf::sandbox {

struct SandboxOptions {
  double timeout_s = 10.0;          // wall-clock limit of one run, seconds (> 0)
  double cpu_s = 0.0;               // CPU-time limit per process, seconds; 0 = timeout_s
  int64_t memory_mb = 512;          // address-space limit per process (RLIMIT_AS), MiB (>= 32)
  int64_t max_processes = 32;       // processes + threads of the program's uid (RLIMIT_NPROC), >= 1
  int64_t max_output_bytes = 1 << 20;  // stdout + stderr together; past it the run is killed
  int64_t max_file_bytes = 16 << 20;   // largest file the program may write (RLIMIT_FSIZE), bytes
  int64_t tmp_bytes = 64 << 20;     // size of the writable /tmp tmpfs (all files together), bytes
  int64_t max_open_files = 256;     // RLIMIT_NOFILE
  std::string python = "/usr/bin/python3";  // interpreter; must live under /usr or a ro_binds path
  std::vector<std::string> ro_binds;  // extra absolute host paths bound read-only at the same place
  std::string host_tmp_dir = "/tmp";  // where the per-run mount-point directory is created
};

// Throws rlf::Error naming the offending field and the fix.
void validate(const SandboxOptions& options);

enum class ExecStatus {
  ok,       // exit code 0
  failed,   // non-zero exit (e.g. an uncaught exception or a failed assert)
  timeout,  // wall-clock or CPU-time limit hit
  memory,   // memory limit hit (MemoryError, or a crash while allocating)
  killed,   // killed by a signal, or by the output / file-size cap
  error,    // the sandbox itself could not be set up (not the program's fault)
};

// The uids [first, last] that this process's sandboxed programs run as (each
// run takes its own, so RLIMIT_NPROC counts only that run). Lets tests scan
// /proc for leftovers.
struct UidRange {
  uint32_t first = 0;
  uint32_t last = 0;
};
UidRange sandbox_uid_range();

// "ok", "failed", ...
const char* status_name(ExecStatus status);

struct ExecResult {
  ExecStatus status = ExecStatus::error;
  int exit_code = -1;             // the program's exit code; -1 when killed by a signal
  int signal = 0;                 // the signal that ended it, 0 when it exited
  std::string stdout_text;        // at most max_output_bytes
  std::string stderr_text;        // at most max_output_bytes
  bool output_truncated = false;  // true when output past the cap was dropped
  std::string note;               // why, for every status but ok/failed ("wall-clock timeout 10 s")
  int64_t wall_ms = 0;            // wall-clock time of the whole run, including setup
  int64_t cpu_ms = 0;             // CPU time of the program and its reaped children
};

// Checks once per interpreter that the sandbox can work on this host (root
// privileges, namespaces, seccomp, the interpreter) by running a tiny program.
// Throws rlf::Error with the reason and a hint; later calls return at once.
void check_sandbox_supported(const SandboxOptions& options);

// Runs `source` as a Python program. Calls check_sandbox_supported first
// (throws rlf::Error when the host cannot sandbox); every other problem is
// reported in the result. Thread-safe: runs may proceed in parallel.
ExecResult run_python(const std::string& source, const SandboxOptions& options);

}  // namespace rlf::sandbox
