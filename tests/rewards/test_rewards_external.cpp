// The external reward against small Python scorers (/usr/bin/python3):
// normal replies, then a timeout, a crash, garbage output and a wrong number
// of scores — each marks only that group's samples missing with the reason,
// the scorer is restarted for the next group, and no process is left behind.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "rewards/external_reward.h"
#include "tests/rewards/reward_test_util.h"
#include "tests/support/test_env.h"
#include "util/fs.h"

namespace rlf {
namespace {

using test::error_of;
using test::make_group;

// Behaviour is chosen by the completions: SLEEP, CRASH, GARBAGE, SHORT, BADTOKENS,
// EXIT_AFTER (reply, then exit), NULL (a null score with a reason).
const char* kScorer = R"PY(
import json, os, sys, time
for line in sys.stdin:
    req = json.loads(line)
    cs = req["completions"]
    if "SLEEP" in cs:
        time.sleep(30)
    if "CRASH" in cs:
        sys.stderr.write("boom: crashing on purpose\n"); sys.stderr.flush(); os._exit(3)
    if "GARBAGE" in cs:
        print("this is not json", flush=True); continue
    if "STRAY" in cs:
        print("debug: scoring", len(cs), "completions", flush=True)
        print(json.dumps({"id": req["id"] - 1, "scores": [0.0] * len(cs)}), flush=True)  # a late reply to an old request
    if "SHORT" in cs:
        print(json.dumps({"scores": [1.0]}), flush=True); continue
    scores = [None if c == "NULL" else float(len(c)) for c in cs]
    reasons = ["cannot judge" if c == "NULL" else None for c in cs]
    tokens = [[0.5] * (n + (c == "BADTOKENS")) for c, n in zip(cs, req["n_tokens"])]
    print(json.dumps({"id": req["id"], "scores": scores, "reasons": reasons, "token_rewards": tokens,
                      "explanations": ["len %d of %s" % (len(c), req["reference"]) for c in cs]}), flush=True)
    if "EXIT_AFTER" in cs:
        sys.exit(0)
)PY";

class ExternalRewardTest : public ::testing::Test {
 protected:
  ExternalRewardOptions options_for(const std::string& source) {
    std::string path = (dir_ / ("scorer" + std::to_string(n_scripts_++) + ".py")).string();
    std::ofstream(path) << source;
    ExternalRewardOptions o;
    o.command = {"/usr/bin/python3", "-u", path};
    o.timeout_s = 5.0;
    o.echo_stderr = false;
    o.shutdown_grace_s = 0.5;
    return o;
  }

  // Pids of this process's children (from /proc: field 4 of stat is the ppid).
  static std::vector<pid_t> children() {
    std::vector<pid_t> out;
    DIR* proc = opendir("/proc");
    while (dirent* e = readdir(proc)) {
      pid_t pid = pid_t(std::atoi(e->d_name));
      if (pid <= 0) continue;
      std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
      std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
      size_t close = text.rfind(')');
      if (close == std::string::npos) continue;
      char state = 0;
      int ppid = 0;
      if (sscanf(text.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid()) out.push_back(pid);
    }
    closedir(proc);
    return out;
  }

  // True while `pid` is a live process (not gone, not a zombie).
  static bool alive(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    size_t close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
  }

  void expect_normal_group(ExternalReward& reward) {
    auto r = reward.score(make_group({"ab", "NULL", "abcd"}, {{"id", 1}}, "ref"));
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].score, 2.0);
    EXPECT_EQ(r[0].explanation, "len 2 of ref");
    EXPECT_EQ(r[0].token_rewards, (std::vector<float>{0.5f, 0.5f}));
    EXPECT_FALSE(r[1].score);
    EXPECT_EQ(r[1].missing_reason, "external scorer: cannot judge");
    EXPECT_EQ(r[2].score, 4.0);
  }

  test::TempDir dir_;
  int n_scripts_ = 0;
};

TEST_F(ExternalRewardTest, NormalRepliesThenEveryFailureRecovers) {
  {
    ExternalReward reward(options_for(kScorer));
    expect_normal_group(reward);
    pid_t first = reward.scorer_pid();
    EXPECT_EQ(reward.n_starts(), 1);

    // Timeout: the scorer sleeps; the group is missing, the scorer is killed.
    ExternalRewardOptions slow = options_for(kScorer);
    slow.timeout_s = 0.5;
    ExternalReward impatient(slow);
    auto r = impatient.score(make_group({"SLEEP", "x"}));
    for (const RewardResult& x : r) {
      EXPECT_FALSE(x.score);
      EXPECT_EQ(x.missing_reason, "external scorer: no reply within 0.5 s (option timeout_s)");
    }
    EXPECT_EQ(impatient.scorer_pid(), -1);
    expect_normal_group(impatient);
    EXPECT_EQ(impatient.n_starts(), 2);

    // Crash mid-run: the exit status and the last stderr line are the reason.
    r = reward.score(make_group({"a", "CRASH"}));
    EXPECT_EQ(r[0].missing_reason, "external scorer: exited with status 3 (stderr: boom: crashing on purpose)");
    EXPECT_EQ(r[1].missing_reason, r[0].missing_reason);
    EXPECT_FALSE(alive(first));
    expect_normal_group(reward);
    EXPECT_EQ(reward.n_starts(), 2);

    // Stray stdout lines (a debug print, a reply with another id) before the reply are skipped: nothing is lost.
    r = reward.score(make_group({"STRAY", "abc"}));
    EXPECT_EQ(r[0].score, 5.0);
    EXPECT_EQ(r[1].score, 3.0);
    EXPECT_EQ(reward.n_starts(), 2);
    expect_normal_group(reward);

    // Garbage and no reply: the timeout, saying what was skipped; the next group is scored.
    r = impatient.score(make_group({"GARBAGE"}));
    EXPECT_EQ(r[0].missing_reason,
              "external scorer: no reply within 0.5 s (option timeout_s); 1 stdout line(s) that are not the reply "
              "were skipped");
    expect_normal_group(impatient);
    EXPECT_EQ(impatient.n_starts(), 3);
    expect_normal_group(reward);
    EXPECT_EQ(reward.n_starts(), 2);

    // The wrong number of scores.
    r = reward.score(make_group({"SHORT", "b"}));
    EXPECT_EQ(r[0].missing_reason, "external scorer: malformed reply: reply has 1 scores for 2 completions");
    EXPECT_EQ(r[1].missing_reason, r[0].missing_reason);
    expect_normal_group(reward);
    EXPECT_EQ(reward.n_starts(), 3);

    // A per-sample problem (token rewards of the wrong length) touches only that sample.
    r = reward.score(make_group({"BADTOKENS", "ok"}));
    EXPECT_FALSE(r[0].score);
    EXPECT_EQ(r[0].missing_reason, "external scorer: token_rewards #0 must be a list of 9 finite numbers (got 10)");
    EXPECT_EQ(r[1].score, 2.0);
    EXPECT_EQ(reward.n_starts(), 3);

    // A scorer that exits between groups is restarted before the next request: nothing is lost.
    r = reward.score(make_group({"EXIT_AFTER"}));
    EXPECT_EQ(r[0].score, 10.0);
    expect_normal_group(reward);
    EXPECT_EQ(reward.n_starts(), 4);
    EXPECT_EQ(children().size(), 2u);  // the two live scorers
  }
  EXPECT_TRUE(children().empty()) << "a scorer was left behind (or not reaped)";
}

TEST_F(ExternalRewardTest, AnExitIsNoticedAtOnceEvenWhenAChildKeepsStdoutOpen) {
  // The scorer starts a process that inherits its stdout, then dies: no EOF
  // arrives, but its exit is reported at once with its status, not after timeout_s.
  const char* masked = R"PY(
import json, os, subprocess, sys
for line in sys.stdin:
    req = json.loads(line)
    if "CRASH" in req["completions"]:
        subprocess.Popen(["sleep", "30"])
        sys.stderr.write("crashing with a child holding stdout\n"); sys.stderr.flush()
        os._exit(4)
    print(json.dumps({"id": req["id"], "scores": [1.0] * len(req["completions"])}), flush=True)
)PY";
  {
    ExternalRewardOptions o = options_for(masked);
    o.timeout_s = 20;
    ExternalReward reward(o);
    auto r = reward.score(make_group({"CRASH", "x"}));
    // Noticed at the exit: after timeout_s the reason would be "no reply within 20 s".
    EXPECT_EQ(r[0].missing_reason,
              "external scorer: exited with status 4 (stderr: crashing with a child holding stdout)");
    EXPECT_EQ(reward.score(make_group({"ok"}))[0].score, 1.0);
    EXPECT_EQ(reward.n_starts(), 2);
  }
  EXPECT_TRUE(children().empty()) << "the scorer's child was left behind";
}

TEST_F(ExternalRewardTest, FloodsOfStrayLinesAndEndlessLinesAreBounded) {
  const char* flood = R"PY(
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if "FLOOD" in req["completions"]:
        for i in range(20000):
            sys.stdout.write("debug line %d\n" % i)
    if "ENDLESS" in req["completions"]:
        sys.stdout.write("x" * (1 << 21)); sys.stdout.flush(); continue
    print(json.dumps({"id": req["id"], "scores": [1.0] * len(req["completions"])}), flush=True)
)PY";
  ExternalRewardOptions o = options_for(flood);
  o.max_reply_bytes = 1 << 20;
  ExternalReward reward(o);
  // 20,000 debug lines, then the reply: every line skipped, the group scored.
  auto r = reward.score(make_group({"FLOOD", "x"}));
  EXPECT_EQ(r[0].score, 1.0) << r[0].missing_reason;
  // A line with no end: cut off at max_reply_bytes, the group missing, the scorer restarted.
  r = reward.score(make_group({"ENDLESS"}));
  EXPECT_FALSE(r[0].score);
  EXPECT_NE(r[0].missing_reason.find("reply line longer than 1048576 bytes"), std::string::npos) << r[0].missing_reason;
  EXPECT_EQ(reward.score(make_group({"ok"}))[0].score, 1.0);
  EXPECT_EQ(reward.n_starts(), 2);
}

TEST_F(ExternalRewardTest, TheDocumentedExampleScorerWorks) {
  std::string doc = read_file(test::source_path("docs/rewards.md"));
  size_t marker = doc.find("<!-- scorer-example");
  ASSERT_NE(marker, std::string::npos);
  size_t begin = doc.find("```python\n", marker) + 10, end = doc.find("```", begin);
  ExternalReward reward(options_for(doc.substr(begin, end - begin)));
  auto r = reward.score(make_group({"it is 42", "no idea"}, {}, "42"));
  EXPECT_EQ(r[0].score, 1.0);
  EXPECT_EQ(r[0].explanation, "mentions 42");
  EXPECT_EQ(r[1].score, 0.0);
  EXPECT_EQ(r[1].explanation, "does not mention 42");
}

TEST_F(ExternalRewardTest, AScorerServingOneRequestPerProcessIsRestartedEachGroup) {
  ExternalReward reward(options_for(
      "import json, sys\n"
      "req = json.loads(sys.stdin.readline())\n"
      "print(json.dumps({'scores': [len(c) for c in req['completions']]}))\n"));
  for (int k = 0; k < 3; ++k) {
    auto r = reward.score(make_group({"abc", "de"}));
    EXPECT_EQ(r[0].score, 3.0) << r[0].missing_reason;
    EXPECT_EQ(r[1].score, 2.0);
  }
  EXPECT_GE(reward.n_starts(), 3);
}

TEST_F(ExternalRewardTest, TimeoutHoldsWhenTheScorerDoesNotReadItsInput) {
  ExternalRewardOptions o = options_for("import time\ntime.sleep(60)\n");
  o.timeout_s = 0.5;
  ExternalReward reward(o);
  auto r = reward.score(make_group({std::string(1 << 20, 'x')}));  // far more than a pipe buffer
  EXPECT_EQ(r[0].missing_reason, "external scorer: no reply within 0.5 s (option timeout_s)");
}

TEST_F(ExternalRewardTest, ShutdownKillsTheWholeProcessGroup) {
  // The scorer starts a grandchild, ignores stdin EOF and SIGTERM: only SIGKILL ends them. The grandchild
  // is found by a token on its command line (in the scorer's own PID namespace its pid is another).
  const std::string token = test::unique_token("rlf-grandchild");
  ExternalRewardOptions o = options_for(
      "import json, signal, subprocess, sys, time\n"
      "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
      "p = subprocess.Popen(['sh', '-c', 'sleep 1000; true', '" + token + "'])\n"
      "line = sys.stdin.readline()\n"
      "print(json.dumps({'scores': [1]}), flush=True)\n"
      "while True: time.sleep(1)\n");
  auto reward = std::make_unique<ExternalReward>(o);
  EXPECT_EQ(reward->score(make_group({"a"}))[0].score, 1.0);
  pid_t scorer = reward->scorer_pid();
  EXPECT_FALSE(test::wait_until_present(token, 5.0).empty());
  reward.reset();  // closes stdin, waits shutdown_grace_s = 0.5 s, then SIGKILLs the scorer and all it started
  EXPECT_FALSE(alive(scorer));
  EXPECT_TRUE(test::wait_until_gone(token, 1.0).empty()) << "the scorer's child survived";
  EXPECT_TRUE(children().empty());
}

// Python's json.dumps writes NaN, Infinity and -Infinity by default: the
// reply is read at once (not skipped as a stray line until timeout_s), those
// samples are missing with a reason naming the value, the others are scored,
// and the scorer keeps running.
TEST_F(ExternalRewardTest, NanAndInfinityScoresAreMissingWithTheReasonAtOnce) {
  ExternalRewardOptions o = options_for(R"PY(
import json, sys
special = {"NAN": float("nan"), "INF": float("inf"), "-INF": -float("inf")}
for line in sys.stdin:
    req = json.loads(line)
    cs = req["completions"]
    scores = [special.get(c, float(len(c))) for c in cs]
    tokens = [[float("nan") if c == "TOKNAN" else 0.25] * n for c, n in zip(cs, req["n_tokens"])]
    print(json.dumps({"id": req["id"], "scores": scores, "token_rewards": tokens}), flush=True)
)PY");
  o.timeout_s = 10;  // far longer than a reply takes: a reply skipped as stray would show as a timeout
  ExternalReward reward(o);
  for (int round = 0; round < 2; ++round) {
    auto r = reward.score(make_group({"ab", "NAN", "INF", "-INF", "TOKNAN"}));
    ASSERT_EQ(r.size(), 5u);
    EXPECT_EQ(r[0].score, 2.0) << r[0].missing_reason;
    EXPECT_EQ(r[0].token_rewards, (std::vector<float>{0.25f, 0.25f}));
    EXPECT_EQ(r[1].missing_reason, "external scorer: score #1 is NaN (a score must be a finite number, or null with a reason)");
    EXPECT_EQ(r[2].missing_reason, "external scorer: score #2 is Infinity (a score must be a finite number, or null with a reason)");
    EXPECT_EQ(r[3].missing_reason, "external scorer: score #3 is -Infinity (a score must be a finite number, or null with a reason)");
    EXPECT_FALSE(r[1].score || r[2].score || r[3].score);
    EXPECT_FALSE(r[4].score);
    EXPECT_EQ(r[4].missing_reason, "external scorer: token_rewards #4 must be a list of 6 finite numbers (entry 0 is NaN)");
  }
  EXPECT_EQ(reward.n_starts(), 1);  // never killed for a timeout
}

TEST_F(ExternalRewardTest, ACommandThatCannotStartIsAClearError) {
  ExternalRewardOptions o;
  o.command = {"/nonexistent/scorer", "--flag"};
  EXPECT_EQ(error_of([&] { ExternalReward r(o); }),
            "external scorer: cannot start '/nonexistent/scorer --flag': No such file or directory; check the "
            "command (argv[0] is looked up in PATH)");
}

TEST(ExternalProtocol, RequestLineAndReplyParsing) {
  RewardGroup g = make_group({"x\n\xff"}, {{"task", "t"}}, "42", 64);
  g.prompt = "Q?";
  Json request = Json::parse(external_request(g, 9, true));
  EXPECT_EQ(request["protocol"], 1);
  EXPECT_EQ(request["id"], 9);
  EXPECT_EQ(request["prompt"], "Q?");
  EXPECT_EQ(request["reference"], "42");
  EXPECT_EQ(request["record"]["task"], "t");
  EXPECT_EQ(request["max_new_tokens"], 64);
  EXPECT_EQ(request["completions"][0], "x\n\xEF\xBF\xBD");  // invalid UTF-8 replaced, never an error
  EXPECT_EQ(request["finish_reasons"][0], "stop");
  EXPECT_EQ(request["n_tokens"][0], 3);
  EXPECT_TRUE(Json::parse(external_request(g, 9, false))["record"].is_null());

  RewardGroup two = make_group({"a", "b"});
  auto r = parse_external_reply(R"({"scores": [0.5, "high"], "explanations": ["fine", null]})", two, 3);
  EXPECT_EQ(r[0].score, 0.5);
  EXPECT_EQ(r[0].explanation, "fine");
  EXPECT_EQ(r[1].missing_reason, "external scorer: score #1 is not a number: \"high\"");
  r = parse_external_reply(R"({"scores": [NaN, -Infinity], "id": 3})", two, 3);  // as Python's json.dumps writes them
  EXPECT_EQ(r[0].missing_reason, "external scorer: score #0 is NaN (a score must be a finite number, or null with a reason)");
  EXPECT_FALSE(r[1].score);
  EXPECT_TRUE(is_external_reply(R"({"scores": [NaN, -Infinity], "id": 3})", 3));
  EXPECT_EQ(error_of([&] { parse_external_reply(R"({"scores": [1, 2], "id": NaN})", two, 3); }),
            "reply id NaN does not match request id 3");
  EXPECT_EQ(error_of([&] { parse_external_reply(R"({"scores": [1, 2], "id": 4})", two, 3); }),
            "reply id 4 does not match request id 3");
  EXPECT_EQ(error_of([&] { parse_external_reply(R"([1, 2])", two, 3); }),
            "reply must be a JSON object with 'scores', got array: [1, 2]");
  EXPECT_EQ(error_of([&] { parse_external_reply(R"({"score": [1, 2]})", two, 3); }),
            "reply has no 'scores' list: {\"score\": [1, 2]}");
  EXPECT_EQ(error_of([&] { parse_external_reply(R"({"scores": [1, 2], "explanations": ["a"]})", two, 3); }),
            "'explanations' has 1 entries for 2 completions");
}

}  // namespace
}  // namespace rlf
