// sandbox/child_process.h + three non-blocking pipes + poll against one deadline per exchange;
// every failure path ends in kill_now() (SIGKILL to the program and all it started, then waitpid).
#include "rewards/scorer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "util/error.h"

extern char** environ;

namespace rlf {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kStderrTailBytes = 4096;  // stderr kept for error messages
constexpr double kExitWaitS = 1.0;         // after EOF on stdout: how long to wait for the exit status

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// write() that reports a closed pipe as EPIPE without raising SIGPIPE (which
// would kill the trainer): SIGPIPE is blocked in this thread for the call and
// a SIGPIPE it caused is consumed before unblocking.
ssize_t write_no_sigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  ssize_t written = ::write(fd, data, n);
  int saved_errno = errno;
  if (written < 0 && saved_errno == EPIPE && !was_pending) {
    timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved_errno;
  return written;
}

}  // namespace

bool ScorerProcess::exited() const {
  siginfo_t info;
  return pid_ > 0 && child_->ended(&info);
}

ScorerProcess::ScorerProcess(ScorerProcessOptions options) : options_(std::move(options)) {}

ScorerProcess::~ScorerProcess() {
  try {
    shutdown();
  } catch (...) {
  }
}

void ScorerProcess::start() {
  check(!options_.command.empty(), "the scorer command is empty");
  kill_now();
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {in, out, err}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
  };
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    int e = errno;
    close_all();
    fail("cannot create pipes: ", std::strerror(e));
  }
  ChildSpec spec;
  spec.argv = options_.command;
  spec.working_dir = options_.working_dir;
  spec.stdin_fd = in[0];
  spec.stdout_fd = out[1];
  spec.stderr_fd = err[1];
  // The environment: ours, with options_.env added (replacing same-named variables).
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(options_.env.begin(), options_.env.end(), [&](const auto& kv) {
      return entry.size() > kv.first.size() && entry.compare(0, kv.first.size(), kv.first) == 0 && entry[kv.first.size()] == '=';
    });
    if (!replaced) spec.env.emplace_back(entry);
  }
  for (const auto& [name, value] : options_.env) spec.env.push_back(name + "=" + value);
  try {
    child_ = std::make_unique<ChildProcess>(spec);
  } catch (...) {
    close_all();
    throw;
  }
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(err[1]);
  pid_ = child_->pid();
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];
  for (int fd : {stdin_fd_, stdout_fd_, stderr_fd_}) set_nonblocking(fd);
  stdout_buffer_.clear();
  stderr_tail_.clear();
  stderr_line_.clear();
  ++n_starts_;
  if (options_.note_containment && child_->containment() != Containment::pid_namespace && n_starts_ == 1) {
    std::string msg = str("[", options_.label, " ", pid_, "] runs contained as ", containment_name(child_->containment()),
                          ", not in a PID namespace with a private /proc (", child_->containment_note(), ")",
                          child_->containment() == Containment::process_group
                              ? ": processes it starts that leave its process group may outlive the run"
                              : ": it can see other processes in /proc",
                          "\n");
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
  }
}

void ScorerProcess::close_fds() {
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
}

void ScorerProcess::kill_now() {
  if (pid_ <= 0) return;
  child_->kill();  // the scorer and everything it started
  child_.reset();
  close_fds();
  pid_ = -1;
  stdout_buffer_.clear();
  stderr_line_.clear();
}

void ScorerProcess::shutdown() {
  if (pid_ <= 0) return;
  close_fd(stdin_fd_);  // EOF on the scorer's stdin: a well-behaved scorer exits
  auto deadline = Clock::now() + std::chrono::duration<double>(options_.shutdown_grace_s);
  siginfo_t info;
  while (!child_->ended(&info) && Clock::now() < deadline) {
    read_stderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  read_stderr();
  kill_now();
}

void ScorerProcess::read_stderr() {
  if (stderr_fd_ < 0) return;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(stderr_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) close_fd(stderr_fd_);
    if (n <= 0) return;
    stderr_tail_.append(buffer, size_t(n));
    if (stderr_tail_.size() > kStderrTailBytes) stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
    if (!options_.echo_stderr) continue;
    stderr_line_.append(buffer, size_t(n));
    for (size_t nl = stderr_line_.find('\n'); nl != std::string::npos; nl = stderr_line_.find('\n')) {
      std::string line = str("[", options_.label, " ", pid_, "] ", stderr_line_.substr(0, nl), "\n");
      stderr_line_.erase(0, nl + 1);
      (void)!::write(STDERR_FILENO, line.data(), line.size());
    }
  }
}

std::string ScorerProcess::stderr_hint() const {
  std::string tail = stderr_tail_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.pop_back();
  if (tail.empty()) return "";
  size_t nl = tail.rfind('\n');
  std::string last = nl == std::string::npos ? tail : tail.substr(nl + 1);
  if (last.size() > 200) last = last.substr(0, 200) + "...";
  return " (stderr: " + last + ")";
}

std::string ScorerProcess::exit_description(bool* clean) {
  auto deadline = Clock::now() + std::chrono::duration<double>(kExitWaitS);
  siginfo_t info;
  bool exited = false;
  while (!(exited = child_->ended(&info)) && Clock::now() < deadline) {
    read_stderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  read_stderr();
  if (!exited) return "closed its stdout";
  *clean = info.si_code == CLD_EXITED && info.si_status == 0;
  if (info.si_code == CLD_EXITED) return str("exited with status ", info.si_status);
  return str("was killed by signal ", info.si_status, " (", strsignal(info.si_status), ")");
}

void ScorerProcess::note_stray(const std::string& line) {
  // The first few are shown; after that they are only counted (a flood must not flood rlf's log).
  constexpr int64_t kShown = 10;
  ++n_stray_lines_;
  if (n_stray_lines_ > kShown) return;
  std::string shown = line.size() > 200 ? line.substr(0, 200) + "..." : line;
  std::string msg = str("[", options_.label, " ", pid_, "] skipped a stdout line that is not the reply: ", shown,
                        n_stray_lines_ == kShown ? " (further ones are counted, not shown)" : "", "\n");
  (void)!::write(STDERR_FILENO, msg.data(), msg.size());
}

bool ScorerProcess::notify(const std::string& line, double timeout_s) {
  if (!running() || exited()) return false;
  const std::string message = line + "\n";
  size_t written = 0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (written < message.size()) {
    double left_s = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left_s <= 0) {
      kill_now();
      return false;
    }
    pollfd fd{stdin_fd_, POLLOUT, 0};
    if (::poll(&fd, 1, int(std::min(left_s * 1000.0 + 1.0, 20.0))) < 0 && errno != EINTR) {
      kill_now();
      return false;
    }
    read_stderr();
    ssize_t n = write_no_sigpipe(stdin_fd_, message.data() + written, message.size() - written);
    if (n > 0) written += size_t(n);
    else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      kill_now();
      return false;
    }
  }
  return true;
}

ScorerExchange ScorerProcess::exchange(const std::string& line, double timeout_s, const ReplyPredicate& is_reply) {
  ScorerExchange result;
  auto give_up = [&](const std::string& why) {
    result.ok = false;
    result.error = why + stderr_hint();
    kill_now();
    return result;
  };

  // A helper that ended is replaced before the request is sent. Lines left
  // from earlier requests are stray: they stay buffered and are skipped below.
  siginfo_t info;
  if (running() && child_->ended(&info)) kill_now();
  if (!running()) {
    try {
      start();
    } catch (const std::exception& e) {
      result.error = e.what();
      return result;
    }
  }

  const std::string request = line + "\n";
  size_t written = 0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  bool exited = false;
  for (;;) {
    for (size_t nl = stdout_buffer_.find('\n'); nl != std::string::npos; nl = stdout_buffer_.find('\n')) {
      std::string candidate = stdout_buffer_.substr(0, nl);
      stdout_buffer_.erase(0, nl + 1);
      if (written < request.size() || (is_reply && !is_reply(candidate))) {
        note_stray(candidate);
        ++result.n_stray_lines;
        continue;
      }
      result.ok = true;
      result.reply = std::move(candidate);
      return result;
    }
    if (int64_t(stdout_buffer_.size()) > options_.max_line_bytes) {
      return give_up(str("reply line longer than ", options_.max_line_bytes, " bytes"));
    }
    if (exited) return give_up(exit_description(&result.clean_exit));
    double left_s = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left_s <= 0) return give_up(str("no reply within ", timeout_s, " s (option timeout_s)"));

    pollfd fds[3];
    nfds_t n_fds = 0;
    fds[n_fds++] = {stdout_fd_, POLLIN, 0};
    int stderr_slot = stderr_fd_ >= 0 ? int(n_fds) : -1;
    if (stderr_fd_ >= 0) fds[n_fds++] = {stderr_fd_, POLLIN, 0};
    int stdin_slot = written < request.size() ? int(n_fds) : -1;
    if (stdin_slot >= 0) fds[n_fds++] = {stdin_fd_, POLLOUT, 0};
    // Wake up every 20 ms to notice the helper's own exit: a process it
    // started may hold its stdout open, so EOF alone cannot tell.
    int wait_ms = int(std::min({left_s * 1000.0 + 1.0, 20.0, double(INT_MAX)}));
    if (::poll(fds, n_fds, wait_ms) < 0) {
      if (errno == EINTR) continue;
      return give_up(str("poll failed: ", std::strerror(errno)));
    }
    if (stderr_slot >= 0 && fds[stderr_slot].revents) read_stderr();
    if (stdin_slot >= 0 && fds[stdin_slot].revents) {
      ssize_t n = write_no_sigpipe(stdin_fd_, request.data() + written, request.size() - written);
      if (n > 0) {
        written += size_t(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return give_up("stopped reading its input and " + exit_description(&result.clean_exit));
      }
    }
    // Drain what stdout holds now; once the helper has exited, drain again so
    // a reply written just before it exited is still read.
    std::string read_error = drain_stdout(&exited);
    if (!read_error.empty()) return give_up(read_error);
    if (!exited && child_->ended(&info)) {
      exited = true;
      read_error = drain_stdout(&exited);
      if (!read_error.empty()) return give_up(read_error);
    }
  }
}

std::string ScorerProcess::drain_stdout(bool* eof) {
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(stdout_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      stdout_buffer_.append(buffer, size_t(n));
      if (int64_t(stdout_buffer_.size()) > options_.max_line_bytes) return "";
      continue;
    }
    if (n == 0) *eof = true;
    else if (errno == EINTR) continue;
    else if (errno != EAGAIN) return str("reading its stdout failed: ", std::strerror(errno));
    return "";
  }
}

}  // namespace rlf
