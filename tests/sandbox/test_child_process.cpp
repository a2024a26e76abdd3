// sandbox/child_process.h: programs rlf starts end with the run, everything
// they start included (setsid descendants too), even when rlf is killed with
// SIGKILL; in their own PID namespace they cannot see other programs'
// environments. Descendants are found by a token on their command line (in a
// PID namespace of their own they know themselves by other pids).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "sandbox/child_process.h"
#include "tests/support/test_env.h"

extern char** environ;

namespace rlf {
namespace {

// Whether this machine lets a process make a PID namespace with its own /proc,
// asked of util-linux's unshare (the outside reference): as root directly, else in a user namespace.
bool namespaces_allowed() {
  return test::run_command("unshare --pid --fork --mount-proc true || unshare --user --map-root-user --pid --fork "
                           "--mount-proc true").exit_code == 0;
}

#define REQUIRE_NAMESPACES()                                                                     \
  do {                                                                                           \
    if (!namespaces_allowed()) GTEST_SKIP() << "this system allows no PID namespace here (unshare fails)"; \
  } while (0)

// A program on pipes: write to its stdin, read what it printed.
struct Running {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  std::unique_ptr<ChildProcess> child;
  explicit Running(std::vector<std::string> argv, std::vector<std::string> env = {}, std::string dir = "") {
    EXPECT_EQ(pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
    ChildSpec spec;
    spec.argv = std::move(argv);
    spec.env = std::move(env);
    spec.env.push_back("PATH=/usr/local/bin:/usr/bin:/bin");
    spec.working_dir = std::move(dir);
    spec.stdin_fd = in[0];
    spec.stdout_fd = out[1];
    spec.stderr_fd = 2;
    child = std::make_unique<ChildProcess>(spec);
    close(in[0]);
    close(out[1]);
  }
  ~Running() {
    close(in[1]);
    close(out[0]);
  }
  void close_stdin() {
    close(in[1]);
    in[1] = -1;
  }
  std::string read_all() {
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(out[0], buf, sizeof(buf))) > 0) text.append(buf, size_t(n));
    return text;
  }
  bool wait_ended(siginfo_t* info, double timeout_s = 5) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (!child->ended(info)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
};

// Waits until `token` shows on at least n live processes.
bool wait_for(const std::string& token, size_t n, double timeout_s = 5) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (test::processes_with(token).size() < n)
    if (std::chrono::steady_clock::now() > deadline) return false;
    else std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return true;
}

// sh that starts a setsid'd grandchild carrying `token` and one in its own group, then waits for stdin to close.
std::vector<std::string> spawner(const std::string& token) {
  return {"sh", "-c", "setsid sh -c 'sleep 1000; true' " + token + " & sh -c 'sleep 1000; true' " + token +
                          " & read x; exit 0"};
}

TEST(ChildProcess, RunsInAPidNamespaceWhereTheSystemAllowsOne) {
  REQUIRE_NAMESPACES();
  Running r({"sh", "-c", "echo $$; ls /proc | grep -c '^[0-9]'"});
  EXPECT_EQ(r.child->containment(), Containment::pid_namespace) << r.child->containment_note();
  EXPECT_EQ(r.child->containment_note(), "");
  const std::string out = r.read_all();
  // The program is pid 2 (its init is 1), and its /proc shows the init, sh, ls and grep at most.
  EXPECT_EQ(out.substr(0, 2), "2\n") << out;
  EXPECT_LE(std::stoi(out.substr(2)), 4) << out;
}

TEST(ChildProcess, DescendantsThatCallSetsidEndWhenTheProgramEnds) {
  REQUIRE_NAMESPACES();
  const std::string token = test::unique_token("rlf-setsid");
  Running r(spawner(token));
  ASSERT_TRUE(wait_for(token, 2)) << "the grandchildren did not start";
  r.close_stdin();  // the program exits 0; nothing else asks its descendants to end
  siginfo_t info;
  ASSERT_TRUE(r.wait_ended(&info));
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 0);
  EXPECT_EQ(test::wait_until_gone(token, 3), std::vector<int>{}) << "a descendant outlived the program";
}

TEST(ChildProcess, KillEndsEverythingTheProgramStarted) {
  const std::string token = test::unique_token("rlf-kill");
  Running r(spawner(token));
  ASSERT_TRUE(wait_for(token, 2));
  const pid_t pid = r.child->pid();
  r.child->kill();
  EXPECT_EQ(::kill(pid, 0), -1) << "not reaped";
  if (r.child->containment() == Containment::process_group) {
    GTEST_SKIP() << "no PID namespace here: setsid'd descendants can outlive the program";
  }
  EXPECT_EQ(test::wait_until_gone(token, 3), std::vector<int>{});
}

TEST(ChildProcess, ItLeadsAProcessGroupOfItsOwn) {
  // So a Ctrl-C at rlf's terminal (SIGINT to rlf's foreground group) is rlf's to handle, not the program's.
  const std::string token = test::unique_token("rlf-group");
  Running r({"sh", "-c", "read x; true", token});
  ASSERT_TRUE(wait_for(token, 1));
  for (int pid : test::processes_with(token)) EXPECT_NE(getpgid(pid), getpgrp()) << "pid " << pid;
  EXPECT_NE(getpgid(r.child->pid()), getpgrp());
  r.close_stdin();
}

TEST(ChildProcess, ExitStatusAndSignalAreThePrograms) {
  Running three({"sh", "-c", "exit 3"});
  siginfo_t info;
  ASSERT_TRUE(three.wait_ended(&info));
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 3);
  // A program that signals itself dies of it (under an init it is not PID 1, which would ignore it).
  Running term({"sh", "-c", "kill -TERM $$; sleep 5"});
  ASSERT_TRUE(term.wait_ended(&info));
  EXPECT_EQ(info.si_code, CLD_KILLED);
  EXPECT_EQ(info.si_status, SIGTERM);
}

TEST(ChildProcess, ASiblingCannotReadItsEnvironment) {
  REQUIRE_NAMESPACES();
  const std::string secret = test::unique_token("rlf-secret");
  const std::string token = test::unique_token("rlf-holder");
  Running holder({"sh", "-c", "read x; true", token}, {"SECRET=" + secret});
  ASSERT_TRUE(wait_for(token, 1));
  // Control: from outside (rlf's view) the secret is in its /proc environ.
  const std::vector<int> pids = test::processes_with(token);
  ASSERT_FALSE(pids.empty());
  std::ifstream environ_file("/proc/" + std::to_string(pids[0]) + "/environ");
  const std::string seen((std::istreambuf_iterator<char>(environ_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(seen.find(secret), std::string::npos) << "the control failed: the secret is not where it was put";
  Running sibling({"sh", "-c", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '" + secret + "'; true"});
  EXPECT_EQ(sibling.read_all(), "0\n") << "a sibling read the holder's environment";
  holder.close_stdin();
}

TEST(ChildProcess, OutlivesTheThreadThatAskedForIt) {
  // The parent-death signal follows the thread that cloned: a program started
  // from a short-lived thread (an async rollout's) must not die with it.
  std::unique_ptr<Running> r;
  std::thread([&] { r = std::make_unique<Running>(std::vector<std::string>{"sh", "-c", "read x; exit 4"}); }).join();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  siginfo_t info;
  EXPECT_FALSE(r->child->ended(&info)) << "the program died with the thread that started it";
  r->close_stdin();
  ASSERT_TRUE(r->wait_ended(&info));
  EXPECT_EQ(info.si_status, 4);
}

// Runs `program` under rlf_child_holder (which plays rlf), waits until `n`
// processes carry `token`, kills the holder with SIGKILL and returns what
// still carries the token after a grace period; *said gets the holder's
// stdout (the containment, then the note).
std::vector<int> kill_rlf(const std::vector<std::string>& program, const std::string& token, size_t n, bool deny,
                          std::string* said) {
  test::TempDir dir;
  const std::string out = (dir / "holder.out").string();
  std::vector<std::string> args = {test::binary_path("tests/sandbox/rlf_child_holder").string()};
  if (deny) args.push_back("--deny-namespaces");
  args.insert(args.end(), program.begin(), program.end());
  const pid_t pid = test::spawn_logged(args, out, false);
  EXPECT_TRUE(wait_for(token, n)) << "the program and its children did not start";
  auto lines = [&] {
    std::ifstream text(out);
    *said = std::string((std::istreambuf_iterator<char>(text)), std::istreambuf_iterator<char>());
    return std::count(said->begin(), said->end(), '\n');
  };
  for (int i = 0; i < 500 && lines() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return test::wait_until_gone(token, 3);
}

TEST(ChildProcess, EverythingDiesWithRlfUnderSigkill) {
  REQUIRE_NAMESPACES();
  const std::string token = test::unique_token("rlf-orphan");
  std::string said;
  // The token shows on the holder's, the program's and the setsid'd child's command lines.
  const std::vector<int> left =
      kill_rlf({"sh", "-c", "setsid sh -c 'sleep 1000; true' " + token + " & sleep 1000; true", token}, token, 3,
               false, &said);
  EXPECT_EQ(said.substr(0, said.find('\n')), "pid_namespace") << said;
  EXPECT_EQ(left, std::vector<int>{}) << "processes outlived their rlf";
  test::kill_leftovers(left);
}

TEST(ChildProcess, WithoutNamespacesTheProgramStillDiesWithRlf) {
  // Namespaces denied (a seccomp filter in the holder): the program leads a
  // process group, dies with rlf by its parent-death signal, and says why.
  // (Its own children would be orphaned, not killed: the program here has none.)
  const std::string token = test::unique_token("rlf-fallback");
  std::string said;
  const std::vector<int> left =
      kill_rlf({"python3", "-c", "import time; time.sleep(1000)", token}, token, 2, true, &said);
  EXPECT_EQ(said.substr(0, said.find('\n')), "process_group") << said;
  EXPECT_NE(said.find(" PID namespace with a private /proc): Operation not permitted"), std::string::npos) << said;
  EXPECT_EQ(left, std::vector<int>{}) << "the program outlived its rlf";
  test::kill_leftovers(left);
}

TEST(ChildProcess, ACommandThatCannotStartIsAClearError) {
  ChildSpec spec;
  spec.argv = {"/nonexistent/agent", "--x"};
  spec.stdin_fd = 0, spec.stdout_fd = 1, spec.stderr_fd = 2;
  EXPECT_EQ(test::error_of([&] { ChildProcess c(spec); }),
            "cannot start '/nonexistent/agent --x': No such file or directory; check the command (argv[0] is looked up "
            "in PATH)");
  spec.argv = {"true"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.working_dir = "/nonexistent/dir";
  EXPECT_EQ(test::error_of([&] { ChildProcess c(spec); }),
            "cannot start 'true': No such file or directory (working_dir '/nonexistent/dir')");
  spec.argv = {"no-such-program-rlf"};
  spec.working_dir = "";
  EXPECT_NE(test::error_of([&] { ChildProcess c(spec); }).find("No such file or directory"), std::string::npos);
}

}  // namespace
}  // namespace rlf
