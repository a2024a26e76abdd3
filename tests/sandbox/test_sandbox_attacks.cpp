// The attack suite: each program tries to escape or exhaust the host and must
// be contained with the right status. Programs print "ESCAPED <what>" when an
// attack works; after every run the host is checked: no process carrying the
// test's marker or a sandbox uid, no files outside, the mount point removed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sandbox/run_many.h"
#include "sandbox/sandbox.h"
#include "tests/sandbox/sandbox_test_util.h"
#include "tests/support/test_env.h"

namespace rlf::sandbox {
namespace {

namespace fs = std::filesystem;

// Reports each attempt: "blocked <name> <exception>" or "ESCAPED <name>".
constexpr const char* kPrelude = R"PY(
import os, sys
def attempt(name, fn):
    try:
        fn()
        print("ESCAPED", name, flush=True)
    except BaseException as e:
        print("blocked", name, type(e).__name__, flush=True)
)PY";

int count_lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.compare(pos, prefix.size(), prefix) == 0) ++n;
    pos = text.find('\n', pos);
    if (pos == std::string::npos) break;
    ++pos;
  }
  return n;
}

class Attack : public ::testing::Test {
 protected:
  void SetUp() override {
    marker_ = testing::unique_marker();
    options_.timeout_s = 5;
    options_.host_tmp_dir = host_tmp_.path().string();
  }

  // Runs `body` after the prelude (MARK holds the marker) and checks the host.
  ExecResult run(const std::string& body) {
    std::string source = std::string(kPrelude) + "MARK = '" + marker_ + "'\n" + body;
    ExecResult result = run_python(source, options_);
    EXPECT_EQ(result.stdout_text.find("ESCAPED"), std::string::npos) << result.stdout_text;
    EXPECT_EQ(testing::leftover_processes(marker_), std::vector<std::string>{});
    EXPECT_EQ(testing::dir_entries(host_tmp_.path()), std::vector<std::string>{});
    for (const fs::path& dir : {fs::path("/tmp"), test::source_path(""), fs::path("/root"), fs::path("/home")}) {
      EXPECT_FALSE(fs::exists(dir / marker_)) << dir;
    }
    return result;
  }

  std::string marker_;
  test::TempDir host_tmp_;
  SandboxOptions options_;
};

TEST_F(Attack, NetworkIsUnreachable) {
  // A real listener on the host's loopback: reachable from here, not from the jail.
  int server = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(server, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(server, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string port = std::to_string(ntohs(addr.sin_port));

  ExecResult r = run("PORT = " + port + "\n" + R"PY(
import socket
def tcp(family, host, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect((host, port))
attempt("loopback", lambda: tcp(socket.AF_INET, "127.0.0.1", PORT))
attempt("external", lambda: tcp(socket.AF_INET, "1.1.1.1", 80))
attempt("ipv6", lambda: tcp(socket.AF_INET6, "::1", PORT))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53)))
attempt("dns", lambda: socket.getaddrinfo("example.com", 80))
attempt("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
print("interfaces", sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]))
)PY");
  EXPECT_EQ(r.status, ExecStatus::ok) << r.stderr_text;
  EXPECT_EQ(count_lines_starting(r.stdout_text, "blocked "), 7) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("blocked loopback PermissionError"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("interfaces ['lo']"), std::string::npos) << r.stdout_text;
  int client = accept(server, nullptr, nullptr);
  EXPECT_LT(client, 0) << "a connection reached the host's listener";
  close(server);
}

TEST_F(Attack, HostFilesAreInvisible) {
  std::string own_source = test::source_path("tests/sandbox/test_sandbox_attacks.cpp").string();
  std::string project_file = test::source_path("CMakeLists.txt").string();
  std::string project_dir = test::source_path("").string();
  // The targets exist on the host, so a failure to read them is the sandbox's doing.
  for (const std::string& path : {own_source, project_file, std::string("/etc/shadow"), std::string("/root")}) {
    ASSERT_TRUE(fs::exists(path)) << path;
  }
  ExecResult r = run("TARGETS = ['" + own_source + "', '" + project_file + "', '" + project_dir + R"PY(',
           '/etc/shadow', '/root', '/home', '/work', '/proc/1/environ', '/proc/1/root/etc/shadow',
           '/sys/kernel', '/var/log', '/run', '/proc/1/cmdline', '/proc/1/status']
def read(path):
    if os.path.isdir(path):
        if not os.listdir(path):
            raise FileNotFoundError(path)   # an empty mount point shows nothing
    else:
        open(path, 'rb').read(1)
for t in TARGETS:
    attempt("read " + t, lambda t=t: read(t))
print("passwd", open('/etc/passwd').read().count('\n'))
)PY");
  EXPECT_EQ(r.status, ExecStatus::ok) << r.stderr_text;
  // /proc/1 is the jail's init (rlf's own command line and memory use): hidden (procfs hidepid=2).
  EXPECT_EQ(count_lines_starting(r.stdout_text, "blocked "), 14) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("passwd 2"), std::string::npos) << r.stdout_text;  // the jail's own /etc
}

TEST_F(Attack, WritesOutsideTheJailFail) {
  std::string project_dir = test::source_path("").string();
  ExecResult r = run("PROJECT = '" + project_dir + R"PY('
def write(path):
    with open(path, 'w') as f:
        f.write('x')
for d in [PROJECT, '/work', '/root', '/home', '/etc', '/usr', '/usr/lib', '/', '/dev', '/proc', '/dev/shm']:
    attempt("write " + d, lambda d=d: write(d + '/' + MARK))
attempt("write sysctl", lambda: write('/proc/sys/kernel/hostname'))
attempt("chmod python", lambda: os.chmod('/usr/bin/python3', 0o777))
write('/tmp/' + MARK)          # the jail's own /tmp is writable...
write(os.environ['HOME'] + '/' + MARK + '.home')
print("inside", sorted(os.listdir('/tmp')))
)PY");
  EXPECT_EQ(r.status, ExecStatus::ok) << r.stderr_text;
  EXPECT_EQ(count_lines_starting(r.stdout_text, "blocked "), 13) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("inside ['main.py', '" + marker_ + "', '" + marker_ + ".home']"), std::string::npos)
      << r.stdout_text;
  // ...but lives only in the jail's tmpfs: nothing on the host (run() checked /tmp too).
  EXPECT_FALSE(fs::exists("/tmp/" + marker_ + ".home"));
}

TEST_F(Attack, PrivilegeEscalationFails) {
  ExecResult r = run(R"PY(
import ctypes, signal, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    if getattr(libc, name)(*args) != 0:
        raise OSError(ctypes.get_errno(), name)
attempt("setuid 0", lambda: os.setuid(0))
attempt("unshare user", lambda: call("unshare", 0x10000000))
attempt("unshare net", lambda: call("unshare", 0x40000000))
attempt("mount", lambda: call("mount", b"none", b"/tmp", b"tmpfs", 0, None))
attempt("ptrace init", lambda: call("ptrace", 16, 1, None, None))  # PTRACE_ATTACH
attempt("kill init", lambda: os.kill(1, signal.SIGKILL))
attempt("chroot", lambda: call("chroot", b"/tmp"))
def setuid_binary():
    # /usr/bin/su is setuid root on the host; inside, no_new_privs and nosuid keep it unprivileged.
    r = subprocess.run(['/usr/bin/su', 'root', '-c', 'id -u'], capture_output=True, stdin=subprocess.DEVNULL, timeout=5)
    if r.returncode != 0 or r.stdout.strip() != b'0':
        raise PermissionError(r.stderr[:100])
attempt("setuid binary", setuid_binary)
child = os.fork()
if child == 0:
    import time
    time.sleep(30)
    os._exit(0)
os.kill(-1, signal.SIGKILL)    # every process this uid may signal: here only its own child
print("survived kill -1, child", os.waitpid(child, 0)[1] & 0x7f)
)PY");
  EXPECT_EQ(r.status, ExecStatus::ok) << r.stderr_text;
  EXPECT_EQ(count_lines_starting(r.stdout_text, "blocked "), 8) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("survived kill -1, child 9"), std::string::npos) << r.stdout_text;
}

TEST_F(Attack, ForkBombIsContained) {
  options_.timeout_s = 2;
  ExecResult r = run(R"PY(
while True:
    try:
        os.fork()
    except OSError:
        pass
)PY");
  EXPECT_EQ(r.status, ExecStatus::timeout) << r.note << r.stderr_text.substr(0, 500);
  EXPECT_EQ(r.note, "wall-clock timeout after 2 s");
}

TEST_F(Attack, ProcessLimitStopsForks) {
  options_.max_processes = 8;
  ExecResult r = run(R"PY(
import time
kids = []
try:
    for i in range(100):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("stopped after", len(kids), type(e).__name__)
if len(kids) >= 100:
    print("ESCAPED process limit")
)PY");
  EXPECT_EQ(r.status, ExecStatus::ok) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("stopped after 7 BlockingIOError"), std::string::npos) << r.stdout_text;
  // Status ok (not timeout): the sleeping children were killed, not waited for.
}

TEST_F(Attack, MemoryBombsAreMemory) {
  options_.memory_mb = 256;
  ExecResult r = run("x = ' ' * (4 << 30)\n");
  EXPECT_EQ(r.status, ExecStatus::memory) << r.stderr_text;
  r = run("chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))\n");
  EXPECT_EQ(r.status, ExecStatus::memory) << r.stderr_text;
  r = run("chunks = []\nwhile True:\n    chunks.append(list(range(100000)))\n");
  EXPECT_EQ(r.status, ExecStatus::memory) << r.stderr_text;
}

TEST_F(Attack, InfiniteLoopsTimeOut) {
  options_.timeout_s = 1.5;
  ExecResult r = run("while True:\n    pass\n");
  EXPECT_EQ(r.status, ExecStatus::timeout);
  // Ignoring SIGXCPU does not help: the hard CPU limit (or the wall clock) still ends it.
  options_.cpu_s = 1;
  options_.timeout_s = 10;
  r = run("import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass\n");
  EXPECT_EQ(r.status, ExecStatus::timeout) << r.note;
  EXPECT_NE(r.note.find("CPU-time limit of 1 s"), std::string::npos) << r.note;  // not the 10 s wall clock
}

TEST_F(Attack, FloodsOfOutputAreCut) {
  options_.max_output_bytes = 1 << 20;
  ExecResult r = run("while True:\n    sys.stdout.write('x' * 65536)\n");
  EXPECT_EQ(r.status, ExecStatus::killed);
  EXPECT_TRUE(r.output_truncated);
  EXPECT_EQ(r.stdout_text.size(), size_t(1 << 20));
  EXPECT_EQ(r.note, "output exceeded max_output_bytes=1048576; killed");
  r = run("while True:\n    sys.stderr.write('e' * 4096)\n");
  EXPECT_EQ(r.status, ExecStatus::killed);
  EXPECT_EQ(r.stderr_text.size(), size_t(1 << 20));
}

TEST_F(Attack, BigFilesAreCapped) {
  options_.max_file_bytes = 1 << 20;
  ExecResult r = run("open('/tmp/big', 'wb').write(b'x' * (8 << 20))\n");
  EXPECT_EQ(r.status, ExecStatus::killed) << r.stderr_text;
  EXPECT_EQ(r.note, "file size limit max_file_bytes=1048576 hit");
  // Many small files fill the capped /tmp instead.
  options_.tmp_bytes = 4 << 20;
  r = run("for i in range(100):\n    open('/tmp/f%d' % i, 'wb').write(b'x' * (512 << 10))\n");
  EXPECT_EQ(r.status, ExecStatus::failed);
  EXPECT_NE(r.stderr_text.find("No space left on device"), std::string::npos) << r.stderr_text;
}

TEST_F(Attack, OrphansDieWithTheProgram) {
  // Double fork + setsid: the grandchild outlives its parent, holds stdout open
  // and carries the marker in its argv.
  ExecResult r = run(R"PY(
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c', 'import time, signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)', MARK])
    os._exit(0)
os.waitpid(pid, 0)
import time
time.sleep(0.3)
print("parent done", flush=True)
)PY");
  EXPECT_EQ(r.status, ExecStatus::ok) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "parent done\n");
  // Status ok, not timeout: the run was not held up by the grandchild's open stdout.
}

TEST_F(Attack, ParallelAttacksStayContained) {
  options_.timeout_s = 2;
  std::vector<std::string> programs = {
      "while True:\n    pass\n",
      "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
      "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n",
      "print('fine')\n",
  };
  std::vector<ExecResult> results = run_many(programs, options_, 4);
  EXPECT_EQ(results[0].status, ExecStatus::timeout);
  EXPECT_EQ(results[1].status, ExecStatus::timeout);
  EXPECT_EQ(results[2].status, ExecStatus::killed);
  EXPECT_EQ(results[3].status, ExecStatus::ok);
  EXPECT_EQ(results[3].stdout_text, "fine\n");
  EXPECT_EQ(testing::leftover_processes(marker_), std::vector<std::string>{});
  EXPECT_EQ(testing::dir_entries(host_tmp_.path()), std::vector<std::string>{});
}

}  // namespace
}  // namespace rlf::sandbox
