// run_python's status rules, option validation (exact messages), start-up
// checks and the parallel runner.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "sandbox/report_json.h"
#include "sandbox/run_many.h"
#include "sandbox/sandbox.h"
#include "tests/sandbox/sandbox_test_util.h"
#include "tests/support/test_env.h"

namespace rlf::sandbox {
namespace {

using testing::expect_error_containing;

SandboxOptions quick(double timeout_s = 5) {
  SandboxOptions options;
  options.timeout_s = timeout_s;
  return options;
}

TEST(SandboxStatus, OkCapturesStdoutAndStderr) {
  ExecResult r = run_python("import sys\nprint('out', 6 * 7)\nprint('err', file=sys.stderr)\n", quick());
  EXPECT_EQ(r.status, ExecStatus::ok) << r.note << r.stderr_text;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_text, "out 42\n");
  EXPECT_EQ(r.stderr_text, "err\n");
  EXPECT_FALSE(r.output_truncated);
  EXPECT_GT(r.wall_ms, 0);
}

TEST(SandboxStatus, JsonFormKeepsEveryField) {
  ExecResult r = run_python("import sys\nsys.stdout.buffer.write(b'\\xff ok')\nsys.exit(4)\n", quick());
  Json j = to_json(r);
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["exit_code"], 4);
  EXPECT_EQ(j["stdout"].get<std::string>(), "\xff ok");
  EXPECT_EQ(j["output_truncated"], false);
  EXPECT_TRUE(j.contains("wall_ms") && j.contains("stderr") && j.contains("note"));
  // Invalid UTF-8 from the program is replaced when printed, not an error.
  EXPECT_NE(json_line(j).find("\"stdout\":\"\xef\xbf\xbd ok\""), std::string::npos) << json_line(j);
}

TEST(SandboxStatus, UncaughtExceptionAndExitCodeAreFailed) {
  ExecResult r = run_python("raise ValueError('boom')\n", quick());
  EXPECT_EQ(r.status, ExecStatus::failed);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("ValueError: boom"), std::string::npos) << r.stderr_text;

  r = run_python("import sys\nsys.exit(3)\n", quick());
  EXPECT_EQ(r.status, ExecStatus::failed);
  EXPECT_EQ(r.exit_code, 3);

  r = run_python("assert 1 + 1 == 3\n", quick());
  EXPECT_EQ(r.status, ExecStatus::failed);
  EXPECT_NE(r.stderr_text.find("AssertionError"), std::string::npos);

  r = run_python("def f(:\n", quick());
  EXPECT_EQ(r.status, ExecStatus::failed);
  EXPECT_NE(r.stderr_text.find("SyntaxError"), std::string::npos);
}

TEST(SandboxStatus, KilledBySignal) {
  ExecResult r = run_python("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", quick());
  EXPECT_EQ(r.status, ExecStatus::killed);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.note, "killed by signal 9 (Killed)");
}

TEST(SandboxStatus, WallClockTimeout) {
  ExecResult r = run_python("import time\ntime.sleep(60)\n", quick(1.0));
  EXPECT_EQ(r.status, ExecStatus::timeout);
  EXPECT_EQ(r.note, "wall-clock timeout after 1 s");
  EXPECT_GE(r.wall_ms, 1000);
}

TEST(SandboxStatus, CpuTimeLimit) {
  SandboxOptions options = quick(10);
  options.cpu_s = 1;
  ExecResult r = run_python("while True:\n    pass\n", options);
  EXPECT_EQ(r.status, ExecStatus::timeout);
  EXPECT_NE(r.note.find("CPU-time limit of 1 s"), std::string::npos) << r.note;  // not the 10 s wall clock
}

TEST(SandboxStatus, MemoryErrorIsMemory) {
  SandboxOptions options = quick();
  options.memory_mb = 256;
  ExecResult r = run_python("x = bytearray(1 << 30)\n", options);
  EXPECT_EQ(r.status, ExecStatus::memory) << r.stderr_text;
  EXPECT_EQ(r.note, "MemoryError: address-space limit memory_mb=256");
  // The same allocation fits under a larger limit: the limit is what stopped it.
  options.memory_mb = 2048;
  EXPECT_EQ(run_python("x = bytearray(1 << 30)\n", options).status, ExecStatus::ok);
}

TEST(SandboxStatus, ProgramSeesAFreshPrivateWorld) {
  ExecResult r = run_python(
      "import os, socket\n"
      "print(os.getcwd(), os.getpid(), os.getuid() != 0, socket.gethostname())\n"
      "print(sorted(os.listdir('/')))\n"
      "print(sorted(os.listdir('/tmp')))\n",
      quick());
  ASSERT_EQ(r.status, ExecStatus::ok) << r.stderr_text;
  EXPECT_EQ(r.stdout_text,
            "/tmp 2 True sandbox\n"
            "['bin', 'dev', 'etc', 'lib', 'lib32', 'lib64', 'proc', 'sbin', 'tmp', 'usr']\n"
            "['main.py']\n");
}

TEST(SandboxOptionsTest, ValidationNamesTheField) {
  auto expect_invalid = [](auto mutate, const std::string& message) {
    SandboxOptions options;
    mutate(options);
    expect_error_containing([&] { validate(options); }, message);
  };
  expect_invalid([](SandboxOptions& o) { o.timeout_s = 0; }, "SandboxOptions.timeout_s must be > 0 seconds, got 0");
  expect_invalid([](SandboxOptions& o) { o.cpu_s = -1; }, "SandboxOptions.cpu_s must be >= 0 seconds");
  expect_invalid([](SandboxOptions& o) { o.memory_mb = 8; },
                 "SandboxOptions.memory_mb must be in [32, 16777216] MiB");
  expect_invalid([](SandboxOptions& o) { o.max_processes = 0; }, "SandboxOptions.max_processes must be >= 1, got 0");
  expect_invalid([](SandboxOptions& o) { o.max_output_bytes = 0; }, "SandboxOptions.max_output_bytes must be >= 1");
  expect_invalid([](SandboxOptions& o) { o.python = "python3"; },
                 "SandboxOptions.python must be an absolute path, got 'python3'");
  expect_invalid([](SandboxOptions& o) { o.python = "/root/.pyenv/shims/python3"; },
                 "SandboxOptions.python '/root/.pyenv/shims/python3' is not inside the sandbox");
  expect_invalid([](SandboxOptions& o) { o.ro_binds = {"/"}; }, "SandboxOptions.ro_binds: '/' would expose the whole host");
  expect_invalid([](SandboxOptions& o) { o.ro_binds = {"/etc/ssl"}; },
                 "SandboxOptions.ro_binds: '/etc/ssl' overlaps the sandbox's own /etc");
  expect_invalid([](SandboxOptions& o) { o.ro_binds = {"/tmp"}; },
                 "SandboxOptions.ro_binds: '/tmp' would hide the sandbox's own writable /tmp; bind a directory under it");
  expect_invalid([](SandboxOptions& o) { o.ro_binds = {"/opt/definitely-not-here"}; },
                 "SandboxOptions.ro_binds: '/opt/definitely-not-here' does not exist on the host");
  EXPECT_NO_THROW(validate(SandboxOptions{}));
}

TEST(SandboxOptionsTest, MissingInterpreterIsAClearError) {
  SandboxOptions options;
  options.python = "/usr/bin/python-does-not-exist";
  expect_error_containing([&] { run_python("print(1)", options); },
                          "sandbox: Python interpreter '/usr/bin/python-does-not-exist' not found or not executable");
}

TEST(SandboxOptionsTest, ExtraReadOnlyBindIsVisibleAndReadOnly) {
  // A realistic use: a data directory made readable to the programs.
  std::string dir = std::filesystem::weakly_canonical(test::shared_path("data/mbpp")).string();
  std::string marker = testing::unique_marker();
  SandboxOptions options = quick();
  options.ro_binds = {dir};
  ExecResult r = run_python("print(open('" + dir + "/mbpp.jsonl').read(8))\n"
                            "try:\n    open('" + dir + "/" + marker + "', 'w')\n    print('writable')\n"
                            "except OSError as e:\n    print(type(e).__name__)\n",
                            options);
  ASSERT_EQ(r.status, ExecStatus::ok) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "{\"text\":\nOSError\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + marker));
  // Without the bind the directory does not exist in the jail.
  r = run_python("import os\nprint(os.path.exists('" + dir + "'))\n", quick());
  EXPECT_EQ(r.stdout_text, "False\n");
}

TEST(SandboxOptionsTest, AReadOnlyBindUnderTmpIsVisibleInsideTheJailsOwnTmp) {
  // Checkouts and datasets often live under /tmp: such a path is bound inside the jail's /tmp.
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("rlf-bind-" + testing::unique_marker());
  std::filesystem::create_directories(dir / "sub");
  { std::ofstream(dir / "sub" / "data.txt") << "hello from the host"; }
  const std::string d = (dir / "sub").string();
  SandboxOptions options = quick();
  options.ro_binds = {d};
  ExecResult r = run_python("print(open('" + d + "/data.txt').read())\n"
                            "open('/tmp/scratch', 'w').write('x')\n"
                            "try:\n    open('" + d + "/new', 'w')\n    print('writable')\n"
                            "except OSError as e:\n    print(type(e).__name__)\n",
                            options);
  EXPECT_EQ(r.status, ExecStatus::ok) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "hello from the host\nOSError\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "sub" / "new"));
  std::filesystem::remove_all(dir);
}

TEST(RunMany, ResultsComeBackInInputOrder) {
  std::vector<std::string> programs;
  for (int i = 0; i < 24; ++i) {
    programs.push_back(i % 5 == 4 ? "raise SystemExit(" + std::to_string(i) + ")\n"
                                  : "import time\ntime.sleep(0.0" + std::to_string(i % 3) + ")\nprint(" +
                                        std::to_string(i) + ")\n");
  }
  std::vector<ExecResult> results = run_many(programs, quick(), 4);
  ASSERT_EQ(results.size(), programs.size());
  for (int i = 0; i < 24; ++i) {
    if (i % 5 == 4) {
      EXPECT_EQ(results[i].status, ExecStatus::failed) << i;
      EXPECT_EQ(results[i].exit_code, i);
    } else {
      EXPECT_EQ(results[i].status, ExecStatus::ok) << i << results[i].stderr_text;
      EXPECT_EQ(results[i].stdout_text, std::to_string(i) + "\n");
    }
  }
  EXPECT_TRUE(run_many({}, quick(), 2).empty());
  expect_error_containing([] { run_many({"print(1)"}, SandboxOptions{}, -1); },
                          "run_many: n_workers must be >= 0 (0 = one per hardware thread), got -1");
}

}  // namespace
}  // namespace rlf::sandbox
