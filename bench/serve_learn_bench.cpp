#include "bench/serve_learn_bench.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "data/synthetic_tasks.h"
#include "feedback/columns_critic.h"
#include "rewards/math/answer_extract.h"
#include "serve/server.h"
#include "train/compare.h"
#include "util/error.h"
#include "util/write_target.h"

namespace rlf {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void ServeLearnBenchOptions::validate() const {
  check(!model.empty(), "--model is required");
  check(!conditions.empty(), "--conditions: name at least one of words, reward");
  for (const std::string& c : conditions)
    check(c == "words" || c == "reward", "--conditions: '", c, "' is not one of words, reward");
  check(rounds >= 1 && round >= 1 && eval >= 1 && max_tokens >= 1, "--rounds, --round, --eval and --max-tokens must be >= 1");
  check(!work_dir.empty(), "--work-dir is required");
}

namespace serve_learn_bench_detail {

int64_t sum_of(const PromptExample& e) { return e.record.at("a").get<int64_t>() + e.record.at("b").get<int64_t>(); }

// The verifier: the "#### n" answer equals a + b.
bool correct(const PromptExample& e, const std::string& text) {
  const auto answer = math::extract_answer(text, math::AnswerFormat::Gsm8k);
  return answer && *answer == std::to_string(sum_of(e));
}

// One /v1/completions request over `problems`; its id and the choices' texts.
struct Served {
  std::string id;
  std::vector<std::string> texts;
};

Served complete(httplib::Client& c, const std::vector<const PromptExample*>& problems, double temperature, uint64_t seed,
                int64_t max_tokens, double* seconds) {
  Json prompts = Json::array();
  for (const PromptExample* p : problems) prompts.push_back(p->raw_prompt);
  Json body = {{"model", "policy"}, {"prompt", prompts}, {"max_tokens", max_tokens}, {"temperature", temperature}};
  if (temperature > 0) body["seed"] = seed;
  const auto t0 = Clock::now();
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  if (seconds) *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  check(r && r->status == 200, "serve-learn bench: /v1/completions failed: ", r ? r->body : std::string("no response"));
  const Json j = Json::parse(r->body);
  Served s{j.at("id").get<std::string>(), std::vector<std::string>(problems.size())};
  for (const Json& ch : j.at("choices")) s.texts.at(ch.at("index").get<size_t>()) = ch.at("text").get<std::string>();
  return s;
}

double pass1(httplib::Client& c, const std::vector<PromptExample>& eval, int64_t max_tokens) {
  int64_t right = 0;
  for (size_t b = 0; b < eval.size(); b += 50) {
    std::vector<const PromptExample*> chunk;
    for (size_t i = b; i < std::min(eval.size(), b + 50); ++i) chunk.push_back(&eval[i]);
    const Served s = complete(c, chunk, 0, 0, max_tokens, nullptr);
    for (size_t i = 0; i < chunk.size(); ++i) right += correct(*chunk[i], s.texts[i]);
  }
  return static_cast<double>(right) / static_cast<double>(eval.size());
}

Json learn_status(httplib::Client& c) {
  auto r = c.Get("/v1/learn");
  check(r && r->status == 200, "serve-learn bench: GET /v1/learn failed");
  return Json::parse(r->body);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Json run_condition(const ServeLearnBenchOptions& o, const std::string& condition, const std::vector<PromptExample>& train,
                   const std::vector<PromptExample>& eval) {
  Policy policy = load_policy(o.model, "", LoadOptions{});
  LearnOptions lo = o.learn;
  lo.batch = o.round;
  lo.max_wait_s = 0;
  CausalLM frozen = lo.distill_coef > 0 && lo.teacher == DistillTeacherKind::Frozen
                        ? load_policy(o.model, "", LoadOptions{}).model()
                        : nullptr;
  const fs::path dir = o.work_dir / condition;
  fs::remove_all(dir);
  ServeLearner learner(policy, frozen, lo, dir);
  EngineOptions eo;
  eo.eos_token_ids = policy.eos_token_ids;
  eo.max_batch_rows = 128;
  ServeOptions so;
  so.port = 0;
  so.model_name = "policy";
  Server server(policy, eo, so, &learner);
  server.bind();
  std::thread serving([&] { server.run(); });
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(600, 0);
  Json out;
  try {
    out["pass1_before"] = pass1(c, eval, o.max_tokens);
    int64_t right = 0, words = 0;
    std::vector<double> request_s;
    for (int64_t r = 0; r < o.rounds; ++r) {
      std::vector<const PromptExample*> batch;
      for (int64_t i = 0; i < o.round; ++i) batch.push_back(&train[static_cast<size_t>(r * o.round + i)]);
      double seconds = 0;
      const Served s = complete(c, batch, 1.0, o.seed * 1000003 + static_cast<uint64_t>(r), o.max_tokens, &seconds);
      request_s.push_back(seconds);
      for (size_t k = 0; k < batch.size(); ++k) {
        const bool ok = correct(*batch[k], s.texts[k]);
        right += ok;
        Json fb = {{"completion_id", s.id}, {"index", k}, {"reward", ok ? 1.0 : 0.0}};
        if (condition == "words" && !ok) {
          const auto& rec = batch[k]->record;
          fb["feedback"] = critique_columns(rec.at("a").get<int64_t>(), rec.at("b").get<int64_t>(), s.texts[k]).text;
          ++words;
        }
        auto res = c.Post("/v1/feedback", fb.dump(), "application/json");
        check(res && res->status == 200, "serve-learn bench: /v1/feedback failed: ", res ? res->body : std::string("no response"));
      }
      const auto deadline = Clock::now() + std::chrono::minutes(10);
      while (learn_status(c).at("version").get<int64_t>() < r + 1 && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const Json st = learn_status(c);
    check(st.at("version").get<int64_t>() == o.rounds, "serve-learn bench: ", condition, ": ", st.at("version"),
          " updates of ", o.rounds, " (", st.at("last_error"), ")");
    out["pass1_after"] = pass1(c, eval, o.max_tokens);
    out["updates"] = st.at("updates");
    out["train_accuracy"] = static_cast<double>(right) / static_cast<double>(o.rounds * o.round);
    out["feedback_with_words"] = words;
    out["update_s_last"] = st.at("last_update_s");
    out["update_s_max"] = st.at("max_update_s");
    out["save_s_max"] = st.at("max_save_s");
    out["request_s_median"] = median(request_s);
    out["last_metrics"] = st.at("last_metrics");
  } catch (...) {
    server.stop();
    serving.join();
    throw;
  }
  server.stop();
  serving.join();
  return out;
}

}  // namespace serve_learn_bench_detail

namespace slb = serve_learn_bench_detail;

Json run_serve_learn_bench(const ServeLearnBenchOptions& o) {
  o.validate();
  ensure_directory(o.work_dir);
  Json out = {{"options", {{"model", o.model.string()}, {"rounds", o.rounds}, {"round", o.round}, {"eval", o.eval},
                           {"max_tokens", o.max_tokens}, {"seed", o.seed}, {"seeds", o.seeds}, {"lr", o.learn.lr},
                           {"distill_coef", o.learn.distill_coef}, {"top_k", o.learn.top_k},
                           {"reward_coef", o.learn.reward_coef}, {"context", o.learn.context}}},
              {"runs", Json::array()},
              {"conditions", Json::object()}};
  std::map<std::string, std::vector<double>> gain, after;
  for (int64_t k = 0; k < o.seeds; ++k) {
    const uint64_t seed = o.seed + static_cast<uint64_t>(k);
    ArithmeticOptions ao;
    ao.n_problems = o.rounds * o.round + o.eval;
    ao.min_digits = ao.max_digits = 2;
    ao.operations = "+";
    std::vector<PromptExample> all = generate_arithmetic(ao, seed);
    const std::vector<PromptExample> eval(all.end() - o.eval, all.end());
    all.resize(static_cast<size_t>(o.rounds * o.round));
    ServeLearnBenchOptions one = o;
    one.seed = seed;
    for (const std::string& c : o.conditions) {
      Json r = slb::run_condition(one, c, all, eval);
      r["seed"] = seed;
      r["condition"] = c;
      gain[c].push_back(r.at("pass1_after").get<double>() - r.at("pass1_before").get<double>());
      after[c].push_back(r.at("pass1_after").get<double>());
      out["runs"].push_back(std::move(r));
    }
  }
  for (const std::string& c : o.conditions) {
    const MeanSe g = mean_se(gain[c]), a = mean_se(after[c]);
    out["conditions"][c] = {{"gain_mean", g.mean}, {"gain_se", g.se}, {"pass1_after_mean", a.mean}, {"pass1_after_se", a.se}};
  }
  if (after.count("words") && after.count("reward")) {
    std::vector<double> diff;
    int64_t ahead = 0;
    for (size_t i = 0; i < after["words"].size(); ++i) {
      diff.push_back(after["words"][i] - after["reward"][i]);
      ahead += diff.back() > 0;
    }
    const MeanSe d = mean_se(diff);
    out["words_vs_reward"] = {{"mean", d.mean}, {"se", d.se}, {"ahead", ahead}, {"n", d.n}};
  }
  return out;
}

}  // namespace rlf
