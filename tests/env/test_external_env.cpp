// External environments over JSON lines against a small Python program
// (/usr/bin/python3): reset and steps, an error reply ending one episode,
// stray stdout lines, NaN / Infinity in replies, a timeout, and a crash — which ends the episode
// concerned, makes the episodes the dead process served fail at their next
// step, and is followed by a fresh process for new episodes. No process is
// left behind.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "env/external_env.h"
#include "tests/support/test_env.h"
#include "util/fs.h"

namespace rlf {
namespace {

using test::error_of;

const char* kEnv = R"PY(
import json, os, sys, time
turns = {}
for line in sys.stdin:
    m = json.loads(line)
    i, kind = m["id"], m["type"]
    if kind == "reset":
        turns[m["episode"]] = 0
        print(json.dumps({"id": i, "observation": "Play: " + m["task"]["prompt"] + " seed " + str(m["seed"] % 10)}), flush=True)
    elif kind == "step":
        text = m["text"]
        if "ERROR" in text:
            print(json.dumps({"id": i, "error": "illegal move " + text}), flush=True); continue
        if "SLEEP" in text: time.sleep(30)
        if "CRASH" in text:
            sys.stderr.write("env crashed\n"); sys.stderr.flush(); os._exit(3)
        if "STRAY" in text: print("debug: a print on stdout", flush=True)
        if "BADREWARD" in text:
            print(json.dumps({"id": i, "reward": "high"}), flush=True); continue
        if "NANREWARD" in text:  # json.dumps writes NaN / Infinity by default
            print(json.dumps({"id": i, "reward": float("nan") if "INF" not in text else -float("inf")}), flush=True); continue
        if "NANEXTRA" in text:
            print(json.dumps({"id": i, "observation": " x", "reward": 0.25, "debug": [float("nan")]}), flush=True); continue
        turns[m["episode"]] += 1
        n = turns[m["episode"]]
        print(json.dumps({"id": i, "observation": " ok%d" % n, "reward": 0.5 * n, "done": n >= 2,
                          "feedback": "turn %d" % n, "tool_call": True}), flush=True)
    elif kind == "close":
        turns.pop(m["episode"], None)
)PY";

class ExternalEnvTest : public ::testing::Test {
 protected:
  ExternalEnvOptions options(double timeout_s = 5.0) {
    std::string path = (dir_ / "env.py").string();
    std::ofstream(path) << kEnv;
    ExternalEnvOptions o;
    o.command = {"/usr/bin/python3", "-u", path};
    o.timeout_s = timeout_s;
    o.echo_stderr = false;
    o.shutdown_grace_s = 0.5;
    return o;
  }
  static PromptExample task() {
    PromptExample t;
    t.id = "t1";
    t.prompt = "count to two";
    t.record = {{"x", 1}};
    t.where = "tasks #1";
    return t;
  }
  static PolicyTurn turn(const std::string& text, int64_t k = 0) {
    PolicyTurn p;
    p.turn = k;
    p.text = text;
    p.stop = "eos";
    return p;
  }
  test::TempDir dir_;
};

TEST_F(ExternalEnvTest, ResetStepsAndDone) {
  ExternalEnvironment env(options());
  std::string first;
  auto s = env.reset(task(), 1234, &first);
  EXPECT_EQ(first, "Play: count to two seed 4");
  EnvStep a = s->step(turn("one"));
  EXPECT_EQ(a.observation, " ok1");
  EXPECT_DOUBLE_EQ(*a.reward, 0.5);
  EXPECT_FALSE(a.done);
  EXPECT_TRUE(a.tool_call);
  EXPECT_EQ(a.feedback, "turn 1");
  EnvStep b = s->step(turn("two", 1));
  EXPECT_TRUE(b.done);
  EXPECT_DOUBLE_EQ(*b.reward, 1.0);
  EXPECT_EQ(env.n_starts(), 1);
}

TEST_F(ExternalEnvTest, AnErrorReplyEndsOnlyThatEpisode) {
  ExternalEnvironment env(options());
  std::string first;
  auto s1 = env.reset(task(), 1, &first), s2 = env.reset(task(), 2, &first);
  EXPECT_EQ(error_of([&] { s1->step(turn("ERROR")); }), "external environment: illegal move ERROR");
  EXPECT_EQ(s2->step(turn("fine")).observation, " ok1");
  EXPECT_NE(error_of([&] { s2->step(turn("BADREWARD")); }).find("'reward' must be a finite number or null"),
            std::string::npos);
  EXPECT_EQ(env.n_starts(), 1);
}

// A reply with NaN or Infinity (Python's json.dumps default) is read at once,
// not skipped as a stray line until timeout_s: a NaN reward ends only that
// episode with a reason naming the value; NaN in a field rlf does not use is
// harmless; the program is never restarted.
TEST_F(ExternalEnvTest, NanOrInfinityInARewardIsNamedAtOnceAndEndsOnlyThatEpisode) {
  ExternalEnvironment env(options(10.0));  // a reply skipped as stray would show as a timeout
  std::string first;
  auto s1 = env.reset(task(), 1, &first), s2 = env.reset(task(), 2, &first), s3 = env.reset(task(), 3, &first);
  EXPECT_EQ(error_of([&] { s1->step(turn("NANREWARD", 3)); }),
            "external environment: 'reward' must be a finite number or null, got NaN (turn 3)");
  EXPECT_EQ(error_of([&] { s2->step(turn("NANREWARD INF")); }),
            "external environment: 'reward' must be a finite number or null, got -Infinity (turn 0)");
  EnvStep ok = s3->step(turn("NANEXTRA"));
  EXPECT_EQ(ok.observation, " x");
  EXPECT_DOUBLE_EQ(*ok.reward, 0.25);
  EXPECT_EQ(s3->step(turn("one", 1)).observation, " ok1");
  EXPECT_EQ(env.n_stray_lines(), 0);
  EXPECT_EQ(env.n_starts(), 1);
}

TEST_F(ExternalEnvTest, StrayLinesAreSkipped) {
  ExternalEnvironment env(options());
  std::string first;
  auto s = env.reset(task(), 1, &first);
  EXPECT_EQ(s->step(turn("STRAY")).observation, " ok1");
  EXPECT_EQ(env.n_stray_lines(), 1);
  EXPECT_EQ(env.n_starts(), 1);
}

TEST_F(ExternalEnvTest, ACrashEndsItsEpisodesAndAFreshProcessServesNewOnes) {
  ExternalEnvironment env(options());
  std::string first;
  auto a = env.reset(task(), 1, &first), b = env.reset(task(), 2, &first);
  EXPECT_EQ(error_of([&] { a->step(turn("CRASH")); }), "external environment: exited with status 3 (stderr: env crashed)");
  EXPECT_EQ(error_of([&] { b->step(turn("one")); }),
            "external environment: the program was restarted after a failure in another episode; this episode's state "
            "was lost with it");
  auto c = env.reset(task(), 3, &first);
  EXPECT_EQ(c->step(turn("one")).observation, " ok1");
  EXPECT_EQ(env.n_starts(), 2);
}

TEST_F(ExternalEnvTest, ATimeoutEndsTheEpisodeAndSaysSo) {
  ExternalEnvironment env(options(0.5));
  std::string first;
  auto s = env.reset(task(), 1, &first);
  EXPECT_EQ(error_of([&] { s->step(turn("SLEEP")); }), "external environment: no reply within 0.5 s (option timeout_s)");
  auto fresh = env.reset(task(), 2, &first);
  EXPECT_EQ(fresh->step(turn("one")).observation, " ok1");
}

TEST_F(ExternalEnvTest, TheDocumentedExampleEnvironmentWorks) {
  // docs/environments.md's complete example: the first ```python block, run as written.
  const std::string doc = read_file(test::source_path("docs/environments.md"));
  const size_t b = doc.find("```python\n"), e = doc.find("```", b + 10);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  const std::string path = (dir_ / "doc_env.py").string();
  std::ofstream(path) << doc.substr(b + 10, e - b - 10);
  ExternalEnvOptions o = options();
  o.command = {"/usr/bin/python3", path};
  ExternalEnvironment env(o);
  PromptExample t = task();
  t.record = {{"word", "grape"}};
  std::string first;
  auto s = env.reset(t, 7, &first);
  EXPECT_NE(first.find("5-letter word"), std::string::npos) << first;
  EnvStep a = s->step(turn("gripe"));
  EXPECT_FALSE(a.done);
  EXPECT_TRUE(a.reward.has_value());
  EnvStep w = s->step(turn("Grape!", 1));
  EXPECT_TRUE(w.done);
  EXPECT_DOUBLE_EQ(*w.reward, 1.0);
  s.reset();  // close: a notification
  auto s2 = env.reset(t, 8, &first);
  EXPECT_FALSE(s2->step(turn("house")).done);
  EXPECT_EQ(env.n_stray_lines(), 0) << "the example should not reply to close";
  EXPECT_EQ(env.n_starts(), 1);
}

TEST_F(ExternalEnvTest, ACommandThatCannotStartIsAClearError) {
  ExternalEnvOptions o = options();
  o.command = {"/nonexistent/env-program"};
  EXPECT_NE(error_of([&] { ExternalEnvironment env(o); }).find("external environment: cannot start '/nonexistent/env-program'"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf
