// Fault injection: `rlf train` is killed (SIGKILL, by strace's syscall fault
// injection) at every rename and at a spread of fsyncs of a run that saves a
// checkpoint every step; `rlf train --resume` must then finish the run with
// weights bit-identical to an uninterrupted run — so no kill point ever
// leaves the run without a complete checkpoint to continue from (or loses
// one), and resume is exact. strace comes with scripts/setup.sh.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

namespace fs = std::filesystem;

std::string rlf_bin() { return test::shell_quote(test::binary_path("apps/cli/rlf").string()); }

void write_config(const fs::path& path) {
  std::ofstream(path) << "[model]\npath = \"" << test::shared_path("models/stories260K/stories260K.bin").string()
                      << "\"\n"
                         "[data]\npreset = \"arithmetic\"\neval_size = 4\n[data.arithmetic]\nn_problems = 40\n"
                         "[[reward]]\ntype = \"math\"\nanswer_format = \"gsm8k\"\n"
                         "[rollout]\nprompts_per_step = 2\ngroup_size = 2\nmax_new_tokens = 6\n"
                         "[algorithm]\nmicro_batch_size = 4\n[optim]\nlr = 0.001\n"
                         "[run]\nsteps = 3\ncheckpoint_every = 1\nkeep_checkpoints = 1\nseed = 5\nthreads = 1\n";
}

std::string train_cmd(const fs::path& config, const fs::path& out, bool resume) {
  return rlf_bin() + " train " + test::shell_quote(config.string()) + " --quiet --set run.out_dir=" +
         test::shell_quote(out.string()) + (resume ? " --resume" : "");
}

std::string weights(const fs::path& out) { return read_file(out / "checkpoints/step-3/model/model.safetensors"); }

TEST(CrashResume, AKillAtAnyRenameOrFsyncOfASaveLosesNothing) {
  if (test::run_command("strace -o /dev/null true").exit_code != 0)
    FAIL() << "strace is missing or cannot trace here (scripts/setup.sh installs it)";
  test::TempDir dir;
  const fs::path config = dir / "run.toml";
  write_config(config);
  auto straight = test::run_command(train_cmd(config, dir / "straight", false));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  const std::string expected = weights(dir / "straight");

  // How many renames and fsyncs a whole run makes.
  auto traced = test::run_command("strace -f -qq -o " + test::shell_quote((dir / "trace").string()) +
                                  " -e trace=rename,renameat,renameat2,fsync " + train_cmd(config, dir / "count", false));
  ASSERT_EQ(traced.exit_code, 0) << traced.output;
  int64_t n_rename = 0, n_fsync = 0;
  for (const std::string& line : split_lines(read_file(dir / "trace"))) {
    if (line.find("rename") != std::string::npos && line.find("resumed>") == std::string::npos) ++n_rename;
    if (line.find("fsync(") != std::string::npos) ++n_fsync;
  }
  ASSERT_GE(n_rename, 6) << "a run with three checkpoints makes at least two renames per save";
  ASSERT_GE(n_fsync, 6);

  std::vector<std::pair<std::string, int64_t>> kills;
  for (int64_t k = 1; k <= n_rename; ++k) kills.emplace_back("rename,renameat,renameat2", k);
  for (int64_t k : std::set<int64_t>{1, n_fsync / 5, 2 * n_fsync / 5, 3 * n_fsync / 5, 4 * n_fsync / 5, n_fsync})
    if (k >= 1) kills.emplace_back("fsync", k);
  int64_t n_killed = 0;
  for (size_t i = 0; i < kills.size(); ++i) {
    const auto& [calls, k] = kills[i];
    SCOPED_TRACE("SIGKILL at " + calls + " #" + std::to_string(k));
    const fs::path out = dir / ("kill-" + std::to_string(i));
    auto killed = test::run_command("strace -f -qq -o /dev/null -e trace=" + calls + " -e inject=" + calls +
                                    ":signal=SIGKILL:when=" + std::to_string(k) + " " + train_cmd(config, out, false));
    n_killed += killed.exit_code != 0;
    auto resumed = test::run_command(train_cmd(config, out, true));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_EQ(weights(out), expected) << "the resumed run's weights differ from the uninterrupted run's";
    for (const auto& e : fs::directory_iterator(out / "checkpoints"))
      EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << "left behind: " << e.path();
  }
  EXPECT_GE(n_killed, static_cast<int64_t>(kills.size()) - 2) << "most injections should have killed the run";

  // Resuming a finished run (the probe's reproduction: it used to re-save the
  // last step, moving the only checkpoint aside first) and killing it at each
  // of its renames: the checkpoint survives and a further resume is exact.
  for (int64_t k = 1; k <= 4; ++k) {
    SCOPED_TRACE("resume of a finished run, SIGKILL at rename #" + std::to_string(k));
    const fs::path out = dir / ("finished-" + std::to_string(k));
    ASSERT_EQ(test::run_command(train_cmd(config, out, false)).exit_code, 0);
    test::run_command("strace -f -qq -o /dev/null -e trace=rename,renameat,renameat2 -e inject=rename,renameat,renameat2"
                      ":signal=SIGKILL:when=" + std::to_string(k) + " " + train_cmd(config, out, true));
    auto again = test::run_command(train_cmd(config, out, true));
    ASSERT_EQ(again.exit_code, 0) << again.output;
    EXPECT_EQ(again.output.find("starting fresh"), std::string::npos) << again.output;
    EXPECT_EQ(weights(out), expected);
  }
}

}  // namespace
}  // namespace rlf
