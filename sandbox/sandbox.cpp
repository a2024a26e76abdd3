// run_python: the parent side of one sandboxed run. Creates the mount-point
// directory and the pipes, starts the jail, reads stdout/stderr under the
// output cap until EOF or the wall-clock deadline (then SIGKILLs the jail's
// init, which takes the whole PID namespace down), reaps the init, removes the
// mount point, and classifies the outcome.
#include "sandbox/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "sandbox/jail.h"
#include "util/error.h"

namespace rlf::sandbox {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How long to keep draining pipes after the jail was killed.
constexpr auto kDrainAfterKill = std::chrono::seconds(2);

// Uids for sandboxed programs: a range no real account uses. Each run takes
// its own, so RLIMIT_NPROC counts only that run's processes.
constexpr uid_t kUidBase = 1'500'000'000;
constexpr uint32_t kUidsPerProcess = 4096;

uid_t next_uid();

struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    check(pipe2(fds, O_CLOEXEC) == 0, "sandbox: pipe2 failed: ", std::strerror(errno));
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (read >= 0) close(read);
    read = -1;
  }
  void close_write() {
    if (write >= 0) close(write);
    write = -1;
  }
};

// An empty directory on the host: the jail mounts its root over it inside its
// own mount namespace, so nothing the program writes ever lands here.
struct MountPoint {
  std::string path;
  explicit MountPoint(const std::string& parent) {
    std::string pattern = parent + "/rlf-sandbox-XXXXXX";
    check(mkdtemp(pattern.data()) != nullptr, "sandbox: cannot create a directory in '", parent,
          "': ", std::strerror(errno), " (set SandboxOptions.host_tmp_dir to a writable directory)");
    path = pattern;
  }
  ~MountPoint() { rmdir(path.c_str()); }
};

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, end + 1 - begin);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

struct RunState {
  bool timed_out = false;
  bool output_capped = false;
  bool have_record = false;
  JailRecord record;
};

// Classifies a finished run (fills status, exit_code, signal, note).
void classify(const RunState& state, const SandboxOptions& options, ExecResult& result) {
  double cpu_limit_s = options.cpu_s > 0 ? options.cpu_s : options.timeout_s;
  if (state.have_record && state.record.kind == JailRecordKind::setup_error) {
    result.status = ExecStatus::error;
    result.note = str("sandbox setup failed at '", state.record.step, "': ", std::strerror(state.record.err));
    return;
  }
  if (state.output_capped) {
    result.status = ExecStatus::killed;
    result.note = str("output exceeded max_output_bytes=", options.max_output_bytes, "; killed");
    return;
  }
  if (state.timed_out) {
    result.status = ExecStatus::timeout;
    result.note = str("wall-clock timeout after ", options.timeout_s, " s");
    return;
  }
  if (!state.have_record) {
    result.status = ExecStatus::error;
    result.note = "the sandbox's init ended without reporting the program's status";
    return;
  }
  const JailRecord& record = state.record;
  result.cpu_ms = record.cpu_us / 1000;
  std::string last = last_line(result.stderr_text);
  bool memory_error = starts_with(last, "MemoryError");
  if (record.kind == JailRecordKind::exited) {
    result.exit_code = record.value;
    if (record.value == 0) {
      result.status = ExecStatus::ok;
    } else if (memory_error) {
      result.status = ExecStatus::memory;
      result.note = str("MemoryError: address-space limit memory_mb=", options.memory_mb);
    } else if (last.find("[Errno 27] File too large") != std::string::npos) {
      result.status = ExecStatus::killed;
      result.note = str("file size limit max_file_bytes=", options.max_file_bytes, " hit");
    } else {
      result.status = ExecStatus::failed;
    }
    return;
  }
  int sig = record.value;
  result.signal = sig;
  bool cpu_exhausted = double(record.cpu_us) / 1e6 >= cpu_limit_s;
  if (sig == SIGXCPU || (sig == SIGKILL && cpu_exhausted)) {
    result.status = ExecStatus::timeout;
    result.note = str("CPU-time limit of ", cpu_limit_s, " s hit (signal ", sig, ")");
  } else if ((sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS) &&
             (memory_error || result.stderr_text.find("Cannot allocate memory") != std::string::npos ||
              result.stderr_text.find("MemoryError") != std::string::npos)) {
    result.status = ExecStatus::memory;
    result.note = str("crashed (signal ", sig, ") while out of memory, memory_mb=", options.memory_mb);
  } else if (sig == SIGXFSZ) {
    result.status = ExecStatus::killed;
    result.note = str("file size limit max_file_bytes=", options.max_file_bytes, " hit");
  } else {
    result.status = ExecStatus::killed;
    result.note = str("killed by signal ", sig, " (", strsignal(sig), ")");
  }
}

ExecResult run_unchecked(const std::string& source, const SandboxOptions& options) {
  auto start = Clock::now();
  ExecResult result;
  MountPoint mount_point(options.host_tmp_dir);
  Pipe out, err, status;
  pid_t init = start_jail(source, options, mount_point.path, next_uid(),
                          JailPipes{out.write, err.write, status.write});
  out.close_write();
  err.close_write();
  status.close_write();

  RunState state;
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(options.timeout_s));
  bool killed = false;
  auto kill_jail = [&] {
    if (!killed) kill(init, SIGKILL);
    killed = true;
    deadline = Clock::now() + kDrainAfterKill;
  };
  size_t record_bytes = 0;
  int64_t total_output = 0;
  char buffer[65536];
  while (out.read >= 0 || err.read >= 0 || status.read >= 0) {
    auto now = Clock::now();
    if (now >= deadline) {
      if (killed) break;  // pipes still open after the kill: give up draining
      state.timed_out = true;
      kill_jail();
      continue;
    }
    int wait_ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    pollfd fds[3] = {{out.read, POLLIN, 0}, {err.read, POLLIN, 0}, {status.read, POLLIN, 0}};
    int n = poll(fds, 3, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    check(n >= 0, "sandbox: poll failed: ", std::strerror(errno));
    Pipe* pipes[3] = {&out, &err, &status};
    for (int i = 0; i < 3; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buffer, sizeof(buffer));
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        pipes[i]->close_read();
        continue;
      }
      if (i == 2) {
        // Keep the first record (a setup error from the program's process wins over init's report).
        for (ssize_t k = 0; k < got; ++k, ++record_bytes) {
          if (record_bytes < sizeof(JailRecord)) reinterpret_cast<char*>(&state.record)[record_bytes] = buffer[k];
        }
        state.have_record = record_bytes >= sizeof(JailRecord);
        continue;
      }
      std::string& text = i == 0 ? result.stdout_text : result.stderr_text;
      int64_t room = options.max_output_bytes - total_output;
      size_t keep = size_t(std::max<int64_t>(0, std::min<int64_t>(room, got)));
      text.append(buffer, keep);
      total_output += got;
      if (total_output > options.max_output_bytes && !state.output_capped) {
        state.output_capped = true;
        result.output_truncated = true;
        kill_jail();
      }
    }
  }
  if (!killed && (out.read >= 0 || err.read >= 0)) kill_jail();
  int wstatus = 0;
  while (waitpid(init, &wstatus, 0) < 0 && errno == EINTR) {
  }
  result.wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  classify(state, options, result);
  return result;
}

uid_t next_uid() {
  static std::atomic<uint32_t> counter{0};
  return sandbox_uid_range().first + counter.fetch_add(1) % kUidsPerProcess;
}

bool has_prefix_dir(const std::string& path, const std::string& dir) {
  return path == dir || (path.rfind(dir, 0) == 0 && path.size() > dir.size() && path[dir.size()] == '/');
}

}  // namespace

void validate(const SandboxOptions& o) {
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  check(positive(o.timeout_s), "SandboxOptions.timeout_s must be > 0 seconds, got ", o.timeout_s);
  check(std::isfinite(o.cpu_s) && o.cpu_s >= 0, "SandboxOptions.cpu_s must be >= 0 seconds (0 = timeout_s), got ",
        o.cpu_s);
  check(o.memory_mb >= 32 && o.memory_mb <= (int64_t(1) << 24),
        "SandboxOptions.memory_mb must be in [32, 16777216] MiB (Python needs ~32 MiB of address space), got ",
        o.memory_mb);
  check(o.max_processes >= 1, "SandboxOptions.max_processes must be >= 1, got ", o.max_processes);
  check(o.max_output_bytes >= 1, "SandboxOptions.max_output_bytes must be >= 1, got ", o.max_output_bytes);
  check(o.max_file_bytes >= 0, "SandboxOptions.max_file_bytes must be >= 0, got ", o.max_file_bytes);
  check(o.tmp_bytes >= 4096, "SandboxOptions.tmp_bytes must be >= 4096 (it holds the program), got ", o.tmp_bytes);
  check(o.max_open_files >= 8, "SandboxOptions.max_open_files must be >= 8, got ", o.max_open_files);
  check(!o.python.empty() && o.python[0] == '/', "SandboxOptions.python must be an absolute path, got '",
        o.python, "'");
  bool python_visible = has_prefix_dir(o.python, "/usr") || has_prefix_dir(o.python, "/bin");
  for (const std::string& bind : o.ro_binds) {
    check(!bind.empty() && bind[0] == '/' && bind.find("/..") == std::string::npos && bind.find("/./") == std::string::npos,
          "SandboxOptions.ro_binds: '", bind, "' must be a normalized absolute path");
    check(bind != "/", "SandboxOptions.ro_binds: '/' would expose the whole host; bind specific directories");
    for (const char* reserved : {"/proc", "/dev", "/etc", "/usr"}) {
      check(!has_prefix_dir(bind, reserved), "SandboxOptions.ro_binds: '", bind, "' overlaps the sandbox's own ",
            reserved, " (bind a directory elsewhere, e.g. /opt/... or /tmp/...)");
    }
    // Paths under /tmp are bound inside the jail's own /tmp; /tmp itself is the program's scratch space.
    check(bind != "/tmp" && bind != "/tmp/main.py", "SandboxOptions.ro_binds: '", bind,
          "' would hide the sandbox's own writable /tmp; bind a directory under it (e.g. /tmp/data) or elsewhere");
    check(fs::exists(bind), "SandboxOptions.ro_binds: '", bind, "' does not exist on the host");
    python_visible = python_visible || has_prefix_dir(o.python, bind);
  }
  check(python_visible, "SandboxOptions.python '", o.python,
        "' is not inside the sandbox (only /usr and ro_binds are visible); use /usr/bin/python3 or add its "
        "prefix to ro_binds");
  check(o.host_tmp_dir.size() > 1 && o.host_tmp_dir[0] == '/', "SandboxOptions.host_tmp_dir must be an absolute path, got '",
        o.host_tmp_dir, "'");
}

UidRange sandbox_uid_range() {
  uint32_t first = kUidBase + (uint32_t(getpid()) % 100'000) * kUidsPerProcess;
  return {first, first + kUidsPerProcess - 1};
}

const char* status_name(ExecStatus status) {
  switch (status) {
    case ExecStatus::ok: return "ok";
    case ExecStatus::failed: return "failed";
    case ExecStatus::timeout: return "timeout";
    case ExecStatus::memory: return "memory";
    case ExecStatus::killed: return "killed";
    case ExecStatus::error: return "error";
  }
  return "error";
}

void check_sandbox_supported(const SandboxOptions& options) {
  static std::mutex mutex;
  static std::set<std::string> verified;
  std::lock_guard<std::mutex> lock(mutex);
  if (verified.count(options.python)) return;
  validate(options);
  check(access(options.python.c_str(), X_OK) == 0, "sandbox: Python interpreter '", options.python,
        "' not found or not executable (install Debian's python3, or set the python option)");
  check(geteuid() == 0, "sandbox: needs root (CAP_SYS_ADMIN for namespaces and mounts, CAP_SETUID to drop to a "
        "private uid); running as uid ", geteuid(), ". Run as root (in a container: one that allows namespaces)");
  SandboxOptions probe = options;
  probe.timeout_s = std::max(options.timeout_s, 10.0);
  ExecResult result = with_context("sandbox unavailable on this host", [&] {
    return run_unchecked("import sys\nprint('rlf-sandbox-ok', sys.version_info[0])\n", probe);
  });
  check(result.status == ExecStatus::ok && result.stdout_text == "rlf-sandbox-ok 3\n",
        "sandbox unavailable on this host: a trivial program ended with status '", status_name(result.status),
        "' (", result.note, ") stderr: ", result.stderr_text.substr(0, 500),
        " (the sandbox needs root with namespaces, mounts and seccomp allowed)");
  verified.insert(options.python);
}

ExecResult run_python(const std::string& source, const SandboxOptions& options) {
  validate(options);
  check_sandbox_supported(options);
  return run_unchecked(source, options);
}

}  // namespace rlf::sandbox
