// Fault injection: nothing rlf starts outlives `rlf train`. A run with an
// agent environment (agents that leave a setsid'd process behind) and an
// external scorer (which does the same) is killed with SIGKILL while every
// agent is running; then, separately, such a run ends normally. Either way
// no agent, scorer or descendant of theirs may be left (docs/footprint.md).
// Processes are found by a token on their command lines.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/support/test_env.h"

extern char** environ;

namespace rlf {
namespace {

namespace fs = std::filesystem;

// What an agent and the scorer leave behind: a setsid'd process carrying
// TOKEN, which writes READY/<name> once it runs.
//   agent.py TOKEN READY MODE: leaves it, calls the policy once and reports;
//   MODE "hang" writes READY/agent-<episode> and hangs instead of calling.
const char* kAgent = R"PY(
import json, os, subprocess, sys, time, urllib.request
token, ready, mode = sys.argv[1:4]
start = json.loads(sys.stdin.readline())
leftover = os.path.join(ready, "left-" + start["episode"])
subprocess.Popen(["setsid", "sh", "-c", 'touch "$1"; sleep 1000; true', token, leftover])
if mode == "hang":
    open(os.path.join(ready, "agent-" + start["episode"]), "w").close()
    time.sleep(1000)
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"messages": [{"role": "user", "content": start["task"]["prompt"]}]}).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
urllib.request.urlopen(req, timeout=60).read()
print(json.dumps({"reward": 0.5}), flush=True)
)PY";

// scorer.py TOKEN READY: leaves the same behind when it starts, then scores every completion 1.
const char* kScorer = R"PY(
import json, os, subprocess, sys
subprocess.Popen(["setsid", "sh", "-c", 'touch "$1"; sleep 1000; true', sys.argv[1],
                  os.path.join(sys.argv[2], "left-scorer")])
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"id": req["id"], "scores": [1.0] * len(req["completions"])}), flush=True)
)PY";

fs::path write_run(const test::TempDir& dir, const std::string& token, const std::string& mode) {
  fs::create_directories(dir / "ready");
  std::ofstream(dir / "agent.py") << kAgent;
  std::ofstream(dir / "scorer.py") << kScorer;
  const fs::path config = dir / "run.toml";
  std::ofstream(config) << "[model]\npath = \"" << test::shared_path("models/stories260K/stories260K.bin").string()
                        << "\"\n[data]\npreset = \"arithmetic\"\neval_size = 0\n[data.arithmetic]\nn_problems = 20\n"
                           "[env]\ntype = \"agent\"\ncommand = [\"python3\", \""
                        << (dir / "agent.py").string() << "\", \"" << token << "\", \"" << (dir / "ready").string()
                        << "\", \"" << mode << "\"]\ntimeout_s = 120\nmax_turns = 1\necho_stderr = false\n"
                           "[[reward]]\ntype = \"external\"\ncommand = [\"python3\", \""
                        << (dir / "scorer.py").string() << "\", \"" << token << "\", \"" << (dir / "ready").string()
                        << "\"]\n[rollout]\nprompts_per_step = 2\ngroup_size = 2\nmax_new_tokens = 4\n"
                           "[algorithm]\nmicro_batch_size = 4\n[run]\nsteps = 1\nseed = 1\nthreads = 1\n"
                           "tensorboard = false\nout_dir = \""
                        << (dir / "out").string() << "\"\n";
  return config;
}

pid_t start_rlf(const fs::path& config, const fs::path& log) {
  std::vector<std::string> args = {test::binary_path("apps/cli/rlf").string(), "train", config.string(), "--quiet"};
  return test::spawn_logged(args, log, true);
}

std::string log_of(const fs::path& log) {
  std::ifstream in(log);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(ChildCleanup, KillMinus9OfRlfTrainLeavesNothing) {
  test::TempDir dir;
  const std::string token = test::unique_token("rlf-e2e-orphan");
  const fs::path log = dir / "rlf.log";
  const pid_t rlf = start_rlf(write_run(dir, token, "hang"), log);
  // Four running agents (all start at once), each one's leftover, and the scorer's.
  constexpr size_t kReady = 9;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto n_ready = [&] { return static_cast<size_t>(std::distance(fs::directory_iterator(dir / "ready"), {})); };
  while (n_ready() < kReady && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const size_t n_started = n_ready();
  ASSERT_EQ(::kill(rlf, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(rlf, &status, 0), rlf);
  EXPECT_EQ(n_started, kReady) << "not every agent and leftover started: " << log_of(log);
  // Every agent, the scorer, and what they left behind.
  const std::vector<int> descendants = test::wait_until_gone(token, 5);
  const std::vector<int> programs = test::wait_until_gone(dir.path().string(), 5);
  EXPECT_EQ(descendants, std::vector<int>{}) << "descendants outlived rlf";
  EXPECT_EQ(programs, std::vector<int>{}) << "agents or the scorer outlived rlf";
  test::kill_leftovers(descendants);
  test::kill_leftovers(programs);
}

TEST(ChildCleanup, ACleanExitLeavesNothing) {
  test::TempDir dir;
  const std::string token = test::unique_token("rlf-e2e-exit");
  const fs::path log = dir / "rlf.log";
  const pid_t rlf = start_rlf(write_run(dir, token, "normal"), log);
  int status = 0;
  ASSERT_EQ(waitpid(rlf, &status, 0), rlf);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log_of(log);
  const std::vector<int> left = test::wait_until_gone(token, 5);
  EXPECT_EQ(left, std::vector<int>{}) << "descendants of the agents or the scorer outlived the run";
  test::kill_leftovers(left);
}

}  // namespace
}  // namespace rlf
