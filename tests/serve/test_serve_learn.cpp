// rlf serve --learn (train/serve_learner.h) with stories260K: bad feedback is
// a 400, unknown ids a 404; the version in system_fingerprint increments after
// an update and the served text changes; concurrent requests keep being
// answered while updates run; resume queues the feedback no version trained
// on, and rollback serves an old version's weights again; a SIGKILL of
// `rlf serve --learn` right after its feedback loses none of it; the official
// `openai` client sees the versions (oracle venv).
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cmath>
#include <chrono>
#include <fstream>
#include <thread>

#include "bench/serve_learn_bench.h"
#include "rollout/policy.h"
#include "serve/server.h"
#include "tests/serve/server_thread.h"
#include "tests/support/test_env.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/serve_learner.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

namespace fs = std::filesystem;

Policy stories() { return load_policy(test::shared_path("models/stories260K/stories260K.bin"), "", LoadOptions{}); }

LearnOptions fast_options() {
  LearnOptions o;
  o.batch = 1;       // every feedback is an update
  o.max_wait_s = 0;
  o.lr = 1e-2;       // large enough that one step changes what a 260K model writes
  return o;
}

// A learning server on a free port, on its own thread for the test's lifetime.
struct Learning {
  Policy policy = stories();
  std::unique_ptr<ServeLearner> learner;
  test::ServerThread serving;  // after the policy and the learner: stops first
  Server* server = nullptr;
  int port = 0;

  Learning(const fs::path& dir, LearnOptions lo = fast_options(), bool resume = false, int64_t rollback_to = -1) {
    learner = std::make_unique<ServeLearner>(policy, stories().model(), lo, dir, resume, rollback_to);
    EngineOptions eo;
    eo.eos_token_ids = policy.eos_token_ids;
    ServeOptions so;
    so.port = 0;
    so.model_name = "stories260K";
    server = serving.start(std::make_unique<Server>(policy, eo, so, learner.get()));
    port = serving.port();
  }
  httplib::Client client() const { return serving.client(); }
};

Json post(httplib::Client& c, const std::string& path, const std::string& body, int want_status) {
  auto r = c.Post(path.c_str(), body, "application/json");
  EXPECT_TRUE(r) << "no response for " << body;
  if (!r) return Json();
  EXPECT_EQ(r->status, want_status) << body << " -> " << r->body;
  return Json::parse(r->body, nullptr, false);
}

Json learn_status(httplib::Client& c) {
  auto r = c.Get("/v1/learn");
  EXPECT_TRUE(r && r->status == 200);
  return r ? Json::parse(r->body, nullptr, false) : Json();
}

// Polls GET /v1/learn until the version reaches `v` (or 120 s pass).
Json wait_for_version(httplib::Client& c, int64_t v) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  Json s = learn_status(c);
  while (s.value("version", int64_t{-1}) < v && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s = learn_status(c);
  }
  EXPECT_GE(s.value("version", int64_t{-1}), v) << s.dump();
  return s;
}

const std::string kGreedy = R"({"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 24, "temperature": 0})";

TEST(ServeLearn, FeedbackErrorsVersionsAndTheServedTextChanges) {
  test::TempDir dir;
  Learning L(dir / "learn");
  auto c = L.client();
  const Json first = post(c, "/v1/completions", kGreedy, 200);
  const std::string id = first.at("id");
  EXPECT_EQ(first.at("system_fingerprint"), "rlf-v0");

  // Bad bodies are 400 naming the field, unknown ids 404; nothing is queued by them.
  EXPECT_EQ(post(c, "/v1/feedback", "not json", 400).at("error").at("type"), "invalid_request_error");
  EXPECT_EQ(post(c, "/v1/feedback", R"({"feedback": "x"})", 400).at("error").at("param"), "completion_id");
  EXPECT_EQ(post(c, "/v1/feedback", R"({"completion_id": ")" + id + R"("})", 400).at("error").at("param"), "feedback");
  EXPECT_EQ(post(c, "/v1/feedback", R"({"completion_id": ")" + id + R"(", "reward": "high"})", 400).at("error").at("param"),
            "reward");
  EXPECT_EQ(post(c, "/v1/feedback", R"({"completion_id": ")" + id + R"(", "index": 3, "reward": 1})", 400)
                .at("error").at("param"), "index");
  EXPECT_EQ(post(c, "/v1/feedback", R"({"completion_id": ")" + id + R"(", "rating": 1})", 400).at("error").at("param"),
            "rating");
  EXPECT_EQ(post(c, "/v1/feedback", R"({"completion_id": "cmpl-nope", "feedback": "x"})", 404).at("error").at("code"),
            "not_found");
  EXPECT_EQ(learn_status(c).at("feedback_received"), 0);

  // Feedback (words and a reward) -> an update -> version 1, and greedy text that differs.
  const Json ack = post(c, "/v1/feedback",
                        R"({"completion_id": ")" + id + R"(", "feedback": "Too long; say who the story is about.", "reward": -1})",
                        200);
  EXPECT_EQ(ack.at("object"), "feedback");
  const Json s = wait_for_version(c, 1);
  EXPECT_EQ(s.at("feedback_consumed"), 1);
  EXPECT_EQ(s.at("failed_updates"), 0) << s.dump();
  EXPECT_GT(s.at("last_metrics").value("distill/episodes", 0.0), 0) << s.dump();  // the words reached the teacher
  const Json second = post(c, "/v1/completions", kGreedy, 200);
  EXPECT_EQ(second.at("system_fingerprint"), "rlf-v1");
  EXPECT_NE(second.at("choices")[0].at("text"), first.at("choices")[0].at("text"));

  // What is on disk: the feedback (with the served tokens), the update, versions 0 and 1.
  const auto log = read_jsonl(dir / "learn" / "feedback.jsonl");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].at("completion"), first.at("choices")[0].at("text"));
  EXPECT_EQ(log[0].at("version"), 0);
  EXPECT_FALSE(log[0].at("completion_ids").empty());
  EXPECT_EQ(read_jsonl(dir / "learn" / "updates.jsonl").size(), 1u);
  EXPECT_TRUE(fs::exists(dir / "learn" / "versions" / "step-0" / "model" / "config.json"));
  EXPECT_TRUE(fs::exists(dir / "learn" / "versions" / "step-1" / "model" / "config.json"));
}

TEST(ServeLearn, RequestsKeepBeingAnsweredWhileUpdatesRun) {
  test::TempDir dir;
  Learning L(dir / "learn");
  std::atomic<int> ok{0}, bad{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&, t] {
      auto c = L.client();
      int64_t last = 0;
      for (int k = 0; k < 6; ++k) {
        auto r = c.Post("/v1/completions",
                        R"({"model": "stories260K", "prompt": "Lily", "max_tokens": 16, "seed": )" + std::to_string(t * 10 + k) + "}",
                        "application/json");
        if (!r || r->status != 200) {
          ++bad;
          continue;
        }
        const Json j = Json::parse(r->body);
        const int64_t v = std::stoll(j.at("system_fingerprint").get<std::string>().substr(5));
        if (v < last) ++bad;  // versions never go back
        last = v;
        ++ok;
      }
    });
  // Meanwhile: feedback on fresh completions, each an update.
  auto c = L.client();
  for (int k = 0; k < 4; ++k) {
    const Json j = post(c, "/v1/completions", R"({"model": "stories260K", "prompt": "Tom", "max_tokens": 8})", 200);
    post(c, "/v1/feedback", R"({"completion_id": ")" + j.at("id").get<std::string>() + R"(", "feedback": "Shorter.", "reward": 0.5})", 200);
  }
  for (auto& t : clients) t.join();
  const Json s = wait_for_version(c, 4);
  EXPECT_EQ(ok.load(), 48);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(s.at("feedback_consumed"), 4);
}

// The weights of `p` as one flat tensor (for equality checks).
torch::Tensor flat(Policy& p) {
  std::vector<torch::Tensor> all;
  for (const auto& w : p.model()->parameters()) all.push_back(w.detach().flatten().clone());
  return torch::cat(all);
}

TEST(ServeLearn, ResumeQueuesWhatNoVersionTrainedOnAndRollbackServesAnOldVersion) {
  test::TempDir dir;
  const fs::path d = dir / "learn";
  LearnOptions lo = fast_options();
  lo.batch = 2;
  lo.max_wait_s = 0;
  torch::Tensor v0, v1;
  {
    Learning L(d, lo);
    v0 = flat(L.policy);
    auto c = L.client();
    for (int k = 0; k < 3; ++k) {
      const Json j = post(c, "/v1/completions", kGreedy, 200);
      post(c, "/v1/feedback", R"({"completion_id": ")" + j.at("id").get<std::string>() + R"(", "reward": )" +
                                  std::to_string(k % 2 ? 1 : -1) + "}", 200);
    }
    const Json s = wait_for_version(c, 1);  // two of the three: one update; the third waits for a second
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(learn_status(c).at("version"), 1);
    EXPECT_EQ(learn_status(c).at("queued"), 1);
    v1 = flat(L.policy);
  }
  EXPECT_GT((v1 - v0).abs().max().item<float>(), 1e-4f);  // the update moved the weights
  {
    // A fresh start in a directory that holds a run is refused.
    Policy p = stories();
    EXPECT_NE(test::error_of([&] { ServeLearner(p, stories().model(), lo, d); }).find("--resume"), std::string::npos);
  }
  {
    Learning L(d, lo, /*resume=*/true);
    EXPECT_TRUE(torch::equal(flat(L.policy), v1));
    auto c = L.client();
    const Json s = learn_status(c);
    EXPECT_EQ(s.at("version"), 1);
    EXPECT_EQ(s.at("queued"), 1);
    EXPECT_EQ(s.at("feedback_received"), 3);
    const Json j = post(c, "/v1/completions", kGreedy, 200);
    EXPECT_EQ(j.at("system_fingerprint"), "rlf-v1");
    post(c, "/v1/feedback", R"({"completion_id": ")" + j.at("id").get<std::string>() + R"(", "reward": 1})", 200);
    EXPECT_EQ(wait_for_version(c, 2).at("feedback_consumed"), 4);
  }
  {
    Learning L(d, lo, /*resume=*/true, /*rollback_to=*/0);
    EXPECT_TRUE(torch::equal(flat(L.policy), v0));  // version 0's weights ...
    auto c = L.client();
    EXPECT_EQ(learn_status(c).at("version"), 3);    // ... served as a new version
    EXPECT_EQ(learn_status(c).at("queued"), 0);     // what versions 1-2 trained on is not queued again
    EXPECT_EQ(post(c, "/v1/completions", kGreedy, 200).at("system_fingerprint"), "rlf-v3");
  }
  Policy p = stories();
  EXPECT_NE(test::error_of([&] { ServeLearner(p, stories().model(), lo, d, true, 7); }).find("--rollback-to 7"), std::string::npos);
}

TEST(ServeLearn, DocsServeMdListsTheLearnKeys) {
  const std::string doc = read_file(test::source_path("docs/serve.md"));
  const std::string begin = "<!-- rlf config learn: begin -->\n", end = "<!-- rlf config learn: end -->";
  auto b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), schema_markdown(learn_config_schema()))
      << "docs/serve.md is out of date: regenerate the table with `rlf config learn`";
}

TEST(ServeLearn, OptionsAndConfigErrorsNameTheKey) {
  test::TempDir dir;
  std::ofstream(dir / "bad.toml") << "[learn]\nbatch = 0\n";
  EXPECT_NE(test::error_of([&] { learn_options_from_file(dir / "bad.toml"); }).find("learn.batch"), std::string::npos);
  std::ofstream(dir / "typo.toml") << "[learn]\nbach = 2\n";
  EXPECT_NE(test::error_of([&] { learn_options_from_file(dir / "typo.toml"); }).find("bach"), std::string::npos);
  std::ofstream(dir / "ctx.toml") << "[learn]\ncontext = \"{prompt}{response}\"\n";
  EXPECT_NE(test::error_of([&] { learn_options_from_file(dir / "ctx.toml"); }).find("{critique}"), std::string::npos);
  std::ofstream(dir / "ok.toml") << "[learn]\nbatch = 3\nteacher = \"self\"\nreward_coef = 0\n";
  const LearnOptions o = learn_options_from_file(dir / "ok.toml");
  EXPECT_EQ(o.batch, 3);
  EXPECT_EQ(o.teacher, DistillTeacherKind::Self);
  EXPECT_EQ(o.reward_coef, 0);
}

// `rlf serve --learn` killed (SIGKILL) right after acknowledging feedback,
// while its update may be running: restarted with --resume, every
// acknowledged feedback is either in the version it serves or queued again.
TEST(ServeLearn, KillDuringAnUpdateLosesNoFeedback) {
  test::TempDir dir;
  const fs::path d = dir / "learn";
  std::ofstream(dir / "learn.toml") << "[learn]\nbatch = 1\nmax_wait_s = 0\nlr = 1e-2\n";
  auto start = [&](bool resume, const fs::path& log) {
    std::vector<std::string> args = {test::binary_path("apps/cli/rlf").string(), "serve", "--model",
                                     test::shared_path("models/stories260K/stories260K.bin").string(), "--port",
                                     "0", "--learn", (dir / "learn.toml").string(), "--learn-dir", d.string(),
                                     "--threads", "1"};
    if (resume) args.push_back("--resume");
    return test::spawn_logged(args, log, true);
  };
  // The port the server printed: "... on http://127.0.0.1:PORT/v1 ...".
  auto port_of = [](const fs::path& log) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(log);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const size_t at = text.find("http://127.0.0.1:");
      if (at != std::string::npos && text.find("learning from") != std::string::npos)
        return std::stoi(text.substr(at + 17));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  };
  const pid_t pid = start(false, dir / "1.log");
  const int port = port_of(dir / "1.log");
  ASSERT_GT(port, 0);
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  for (int k = 0; k < 3; ++k) {
    const Json j = post(c, "/v1/completions", kGreedy, 200);
    post(c, "/v1/feedback", R"({"completion_id": ")" + j.at("id").get<std::string>() + R"(", "feedback": "More.", "reward": 1})", 200);
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);  // no chance to finish: the third update is running or about to
  int status = 0;
  waitpid(pid, &status, 0);

  const pid_t again = start(true, dir / "2.log");
  const int port2 = port_of(dir / "2.log");
  ASSERT_GT(port2, 0);
  httplib::Client c2("127.0.0.1", port2);
  c2.set_read_timeout(120, 0);
  const Json s = learn_status(c2);
  EXPECT_EQ(s.at("feedback_received"), 3);
  EXPECT_EQ(s.at("feedback_consumed").get<int64_t>() + s.at("queued").get<int64_t>(), 3) << s.dump();
  EXPECT_EQ(s.at("feedback_consumed"), s.at("version")) << s.dump();  // batch 1: one feedback per version
  wait_for_version(c2, 3);  // and what was queued again is trained on
  ::kill(again, SIGTERM);
  waitpid(again, &status, 0);
}

// rlf bench serve-learn's mechanics: both conditions make the same number of
// updates on the same prompts; only "words" sends the critic's sentences (on
// every wrong answer: stories260K gets no sum right).
TEST(ServeLearn, BenchGivesBothConditionsTheSameUpdates) {
  test::TempDir dir;
  ServeLearnBenchOptions o;
  o.model = test::shared_path("models/stories260K/stories260K.bin");
  o.rounds = 2;
  o.round = 4;
  o.eval = 4;
  o.max_tokens = 8;
  o.seeds = 2;
  o.work_dir = dir / "bench";
  const Json r = run_serve_learn_bench(o);
  ASSERT_EQ(r.at("runs").size(), 4u);
  for (const Json& run : r.at("runs")) {
    EXPECT_EQ(run.at("updates"), 2) << run.dump();
    const int64_t words = run.at("feedback_with_words");
    const int64_t wrong = std::llround((1.0 - run.at("train_accuracy").get<double>()) * 8);
    EXPECT_EQ(words, run.at("condition") == "words" ? wrong : 0) << run.dump();
    EXPECT_GE(run.at("pass1_after").get<double>(), 0.0);
  }
  EXPECT_EQ(r.at("words_vs_reward").at("n"), 2);
  ServeLearnBenchOptions bad = o;
  bad.conditions = {"louder"};
  EXPECT_NE(test::error_of([&] { run_serve_learn_bench(bad); }).find("louder"), std::string::npos);
}

TEST(ServeLearn, TheOpenAIClientSeesTheVersions) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  Learning L(dir / "learn");
  auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                             test::shell_quote(test::source_path("tests/oracle/openai_feedback_check.py").string()) +
                             " http://127.0.0.1:" + std::to_string(L.port) + " stories260K");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace rlf
