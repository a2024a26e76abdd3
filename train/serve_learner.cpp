#include "train/serve_learner.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include "config/config_binding.h"
#include "config/toml_config.h"
#include "env/scored_group.h"
#include "train/checkpoint.h"
#include "train/loss_terms.h"
#include "train/metrics.h"
#include "train/topk_distill_term.h"
#include "util/error.h"
#include "util/write_target.h"

namespace rlf {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void LearnOptions::validate() const {
  check(batch >= 1 && batch <= 1 << 20, "learn.batch = ", batch, ": must be in [1, 1048576]");
  check(std::isfinite(max_wait_s) && max_wait_s >= 0, "learn.max_wait_s = ", max_wait_s, ": must be >= 0");
  check(std::isfinite(lr) && lr > 0 && lr < 1, "learn.lr = ", lr, ": must be in (0, 1)");
  check(std::isfinite(max_grad_norm) && max_grad_norm >= 0, "learn.max_grad_norm = ", max_grad_norm, ": must be >= 0");
  check(micro_batch_size >= 1, "learn.micro_batch_size = ", micro_batch_size, ": must be >= 1");
  check(std::isfinite(distill_coef) && distill_coef >= 0, "learn.distill_coef = ", distill_coef, ": must be >= 0");
  check(std::isfinite(reward_coef) && reward_coef >= 0, "learn.reward_coef = ", reward_coef, ": must be >= 0");
  check(distill_coef > 0 || reward_coef > 0, "learn.distill_coef and learn.reward_coef are both 0: nothing to learn");
  check(teacher != DistillTeacherKind::Model, "learn.teacher = \"model\": must be one of frozen, self");
  check(teacher != DistillTeacherKind::Ema, "learn.teacher = \"ema\": must be one of frozen, self");
  check(distill_coef == 0 || context.find("{critique}") != std::string::npos,
        "learn.context must contain {critique} (the user's feedback), got \"", context, "\"");
  check(top_k >= 0 && top_k <= 1024, "learn.top_k = ", top_k, ": must be in [0, 1024]");
  check(baseline_decay >= 0 && baseline_decay <= 1, "learn.baseline_decay = ", baseline_decay, ": must be in [0, 1]");
  check(save_every >= 1, "learn.save_every = ", save_every, ": must be >= 1");
  check(keep_versions >= 1, "learn.keep_versions = ", keep_versions, ": must be >= 1");
  check(remember >= 1, "learn.remember = ", remember, ": must be >= 1");
  check(max_feedback_chars >= 1, "learn.max_feedback_chars = ", max_feedback_chars, ": must be >= 1");
}

namespace serve_learner_detail {

// learn.teacher: the distill teachers that read the served model's own weights.
const EnumNames<DistillTeacherKind>& learn_teacher_names() {
  static const EnumNames<DistillTeacherKind> names{
      "learn.teacher", {{DistillTeacherKind::Frozen, "frozen"}, {DistillTeacherKind::Self, "self"}}};
  return names;
}

const ConfigBindings<LearnOptions>& learn_bindings() {
  static const ConfigBindings<LearnOptions> b = {
      field("learn.batch", "", "feedback per update: an update starts when this many are queued", RLF_MEMBER(batch))
          .in(1, 1 << 20),
      field("learn.max_wait_s", "s", "... or when the oldest queued feedback waited this long (0 = wait for batch)",
            RLF_MEMBER(max_wait_s)).in(0, 1e9),
      field("learn.lr", "", "AdamW learning rate (constant)", RLF_MEMBER(lr)).in(1e-12, 1),
      field("learn.max_grad_norm", "", "global gradient-norm clip (0 = none)", RLF_MEMBER(max_grad_norm)).in(0, 1e9),
      field("learn.micro_batch_size", "", "sequences per forward/backward", RLF_MEMBER(micro_batch_size)).in(1, 1e6),
      field("learn.distill_coef", "", "weight of self-distillation from the written feedback (0 = off)",
            RLF_MEMBER(distill_coef)).in(0, 1e6),
      choice("learn.teacher", "", "frozen = the model as --model loaded it; self = the live policy",
             RLF_MEMBER(teacher), learn_teacher_names()),
      field("learn.context", "", "what the teacher reads before the served completion; {critique} = the feedback, "
            "also {prompt} {response}", RLF_MEMBER(context)),
      field("learn.top_k", "", "0: sampled-token k2; k > 0: reverse KL on the teacher's top k tokens + a tail",
            RLF_MEMBER(top_k)).in(0, 1024),
      field("learn.reward_coef", "", "weight of the policy-gradient term on feedback rewards (0 = off)",
            RLF_MEMBER(reward_coef)).in(0, 1e6),
      field("learn.baseline_decay", "", "the reward baseline's moving-average decay", RLF_MEMBER(baseline_decay))
          .in(0, 1),
      field("learn.save_every", "", "updates between checkpoints", RLF_MEMBER(save_every)).in(1, 1e9),
      field("learn.keep_versions", "", "checkpoints kept (the newest)", RLF_MEMBER(keep_versions)).in(1, 1e9),
      field("learn.remember", "", "responses remembered for feedback (oldest forgotten first)", RLF_MEMBER(remember))
          .in(1, 1e9),
      field("learn.max_feedback_chars", "", "longer feedback text is refused (400)", RLF_MEMBER(max_feedback_chars))
          .in(1, 1e9),
      field("learn.seed", "", "the trainer's mini-batch order", RLF_MEMBER(seed)),
  };
  return b;
}

// A critic whose critique of an episode is the user's feedback on it (kept in
// the task record the learner builds for it).
class UserFeedbackCritic final : public Critic {
 public:
  std::string name() const override { return "user feedback"; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& requests) override {
    std::vector<Critique> out(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      out[i].text = requests[i].task->record.value("feedback", std::string());
      out[i].ok = !out[i].text.empty();
      if (!out[i].ok) out[i].error = "no written feedback";
    }
    return out;
  }
};

std::vector<int32_t> ids_of(const Json& j, const char* key) { return j.at(key).get<std::vector<int32_t>>(); }

}  // namespace serve_learner_detail

namespace sld = serve_learner_detail;

LearnOptions learn_options_from_file(const fs::path& path) {
  const std::string source = path.string();
  const Json cfg = read_toml_file(path);
  check(cfg.is_object(), source, ": not a TOML table");
  for (const auto& [k, v] : cfg.items())
    check(k == "learn", source, ": unknown section [", k, "] (a --learn config has one table, [learn]; docs/serve.md)");
  LearnOptions o;
  apply_bindings(sld::learn_bindings(), validate_config(cfg, learn_config_schema(), source), o, source);
  with_context(source, [&] { o.validate(); });
  return o;
}

const ConfigSchema& learn_config_schema() {
  static const ConfigSchema schema = schema_of(sld::learn_bindings());
  return schema;
}

// One queued feedback: the logged record (everything needed to train on it).
struct ServeLearner::Queued {
  int64_t seq = 0;
  Json record;
  Clock::time_point arrived;
};

struct ServeLearner::Impl {
  Policy& policy;
  LearnOptions options;
  fs::path dir;
  LocalReducer reducer;
  sld::UserFeedbackCritic critic;
  std::unique_ptr<DistillTeacher> teacher;
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<JsonlWriter> log;      // DIR/feedback.jsonl
  std::unique_ptr<JsonlWriter> updates;  // DIR/updates.jsonl

  mutable std::mutex m;                  // everything below (the model and trainer: engine thread only)
  std::map<std::string, std::vector<ServedChoice>> served;  // completion id -> its choices
  std::deque<std::string> served_order;  // oldest first, for learn.remember
  std::deque<Queued> queue;
  int64_t next_seq = 0;                  // the next feedback's number (= feedback received)
  int64_t consumed = 0;                  // feedback [0, consumed) trained on by the served version
  std::atomic<int64_t> version{0};
  int64_t updates_done = 0;              // optimiser steps taken (the trainer's step index)
  int64_t saved_version = 0;
  double baseline = 0;
  int64_t n_rewards = 0;
  int64_t failed = 0;
  std::string last_error;
  Clock::time_point retry_after{};
  double last_update_s = 0, max_update_s = 0;  // the optimiser step (teacher, forward, backward, AdamW)
  double last_save_s = 0, max_save_s = 0;      // writing the version's checkpoint
  Json last_metrics = Json::object();

  Impl(Policy& p, CausalLM frozen, LearnOptions o, fs::path d) : policy(p), options(std::move(o)), dir(std::move(d)) {
    options.validate();
    if (options.distill_coef > 0) {
      DistillOptions dopt;
      dopt.enabled = true;
      dopt.coef = options.distill_coef;
      dopt.top_k = options.top_k;
      dopt.teacher = options.teacher;
      dopt.context = options.context;
      check(options.teacher != DistillTeacherKind::Frozen || frozen, "learn.teacher = \"frozen\" needs the model as loaded");
      teacher = std::make_unique<DistillTeacher>(policy, dopt, 0, true, options.micro_batch_size, &critic,
                                                 options.teacher == DistillTeacherKind::Frozen ? frozen : nullptr);
    }
    trainer = std::make_unique<Trainer>(policy.model(), terms(), trainer_options(), reducer);
  }

  std::vector<std::unique_ptr<LossTerm>> terms() const {
    std::vector<std::unique_ptr<LossTerm>> t;
    if (options.reward_coef > 0) t.push_back(std::make_unique<PolicyGradientTerm>(algo::PolicyLossOptions{}, algo::AggregationOptions{}));
    if (options.distill_coef > 0 && options.top_k > 0)
      t.push_back(std::make_unique<TopKDistillTerm>(options.distill_coef, algo::DistillDivergence::ReverseKl, 0.5,
                                                    algo::AggregationOptions{}));
    else if (options.distill_coef > 0)
      t.push_back(std::make_unique<DistillTerm>(options.distill_coef, algo::KlEstimator::K2, algo::AggregationOptions{}));
    return t;
  }

  TrainerOptions trainer_options() const {
    TrainerOptions to;
    to.micro_batch_size = options.micro_batch_size;
    to.seed = options.seed;
    to.log_entropy = false;
    to.optimizer.max_grad_norm = options.max_grad_norm;
    to.lr.lr = options.lr;
    return to;
  }

  void open_logs() {
    JsonlWriterOptions sync;
    sync.resume_step = int64_t{1} << 62;  // keeps every whole record, drops a torn last line
    sync.sync = true;
    log = std::make_unique<JsonlWriter>(dir / "feedback.jsonl", sync);
    JsonlWriterOptions keep;
    keep.resume_step = sync.resume_step;
    updates = std::make_unique<JsonlWriter>(dir / "updates.jsonl", keep);
  }

  // The checkpoint's targets and state.
  CheckpointTargets targets() {
    CheckpointTargets t;
    t.model = policy.model().get();
    t.optimizer = &trainer->optimizer();
    return t;
  }
  TrainerState state(int64_t v) const {
    TrainerState s;
    s.step = v;
    s.scheduler_step = updates_done;
    s.extra = {{"consumed", consumed}, {"baseline", baseline}, {"n_rewards", n_rewards}, {"updates", updates_done}};
    return s;
  }
  void restore(const TrainerState& s) {
    version = s.step;
    saved_version = s.step;
    consumed = s.extra.value("consumed", int64_t{0});
    baseline = s.extra.value("baseline", 0.0);
    n_rewards = s.extra.value("n_rewards", int64_t{0});
    updates_done = s.extra.value("updates", int64_t{0});
  }
  void save(int64_t v) {
    CheckpointOptions co;
    co.keep_last = options.keep_versions;
    co.tokenizer_source = policy.tokenizer_path;
    save_checkpoint(dir / "versions", state(v), targets(), co);
    saved_version = v;
  }

  // The episodes of `batch` as one-episode groups (ScoredGroup: what the teacher reads).
  std::vector<ScoredGroup> groups_of(const std::vector<Queued>& batch, std::vector<PromptExample>& tasks) const {
    std::vector<ScoredGroup> groups(batch.size());
    tasks.assign(batch.size(), PromptExample{});
    for (size_t i = 0; i < batch.size(); ++i) {
      const Json& r = batch[i].record;
      tasks[i].id = "feedback:" + std::to_string(batch[i].seq);
      tasks[i].prompt = r.at("prompt").get<std::string>();
      tasks[i].record = {{"feedback", r.value("feedback", std::string())}};
      tasks[i].where = "feedback #" + std::to_string(batch[i].seq);
      Episode e = Episode::single_turn(static_cast<int64_t>(i), sld::ids_of(r, "prompt_ids"), sld::ids_of(r, "completion_ids"),
                                       r.at("logprobs").get<std::vector<float>>(), r.value("version", int32_t{0}));
      e.segments.back().text = r.at("completion").get<std::string>();
      e.completion_text = e.segments.back().text;
      std::optional<double> reward;
      if (r.contains("reward") && r["reward"].is_number()) reward = r["reward"].get<double>();
      e.reward = reward;
      e.advantage.assign(e.tokens.size(), 0.0f);
      if (reward)
        for (size_t t = static_cast<size_t>(e.n_prompt); t < e.tokens.size(); ++t)
          e.advantage[t] = static_cast<float>(options.reward_coef * (*reward - baseline));
      ScoredGroup& g = groups[i];
      g.group.task = &tasks[i];
      g.group.prompt = tasks[i].prompt;
      g.group.episodes.push_back(std::move(e));
      g.scores.names = {"feedback"};
      g.scores.weights = {1.0};
      RewardResult rr;
      rr.score = reward;
      g.scores.results = {{rr}};
      g.totals = {reward};
      g.slot = static_cast<int64_t>(i);
    }
    return groups;
  }

  // One update on `batch` (the engine thread; nothing decodes). Returns its metrics.
  Json train(const std::vector<Queued>& batch) {
    std::vector<PromptExample> tasks;
    std::vector<ScoredGroup> groups = groups_of(batch, tasks);
    Json metrics = Json::object();
    if (teacher) {
      std::vector<ScoredGroup> with_words;
      for (ScoredGroup& g : groups)
        if (!g.group.task->record["feedback"].get<std::string>().empty()) with_words.push_back(std::move(g));
      const DistillStats st = teacher->add_teacher_logprobs(with_words);
      metrics.update(st.metrics(reducer));
      size_t k = 0;  // put them back where they were
      for (ScoredGroup& g : groups)
        if (g.group.episodes.empty()) g = std::move(with_words[k++]);
    }
    std::vector<Episode> episodes;
    for (ScoredGroup& g : groups) episodes.push_back(std::move(g.group.episodes[0]));
    metrics.update(trainer->update(episodes, updates_done));
    return metrics;
  }

  void update_baseline(const std::vector<Queued>& batch) {
    for (const Queued& q : batch) {
      if (!q.record.contains("reward") || !q.record["reward"].is_number()) continue;
      const double r = q.record["reward"].get<double>();
      baseline = n_rewards == 0 ? r * (1 - options.baseline_decay) : options.baseline_decay * baseline + (1 - options.baseline_decay) * r;
      ++n_rewards;
    }
  }
};

ServeLearner::ServeLearner(Policy& policy, CausalLM frozen, LearnOptions options, fs::path dir, bool resume,
                           int64_t rollback_to)
    : impl_(std::make_unique<Impl>(policy, std::move(frozen), std::move(options), std::move(dir))) {
  check(resume || rollback_to < 0, "--rollback-to needs --resume (it continues a learning run)");
  if (resume) this->resume(rollback_to);
  else start_fresh();
}

void ServeLearner::start_fresh() {
  const fs::path d = impl_->dir;
  check(!fs::exists(d / "feedback.jsonl") && !find_latest_checkpoint(d / "versions"), "--learn-dir '", d.string(),
        "' holds a learning run already: pass --resume to continue it (or --rollback-to N), or choose another directory");
  ensure_directory(d);
  impl_->open_logs();
  impl_->save(0);  // version 0: the model as loaded, a version to roll back to
}

ServeLearner::~ServeLearner() = default;

void ServeLearner::resume(int64_t rollback_to) {
  Impl& s = *impl_;
  auto latest = load_latest(s.dir / "versions", s.targets());
  check(latest.has_value(), "--resume: '", (s.dir / "versions").string(), "' holds no version to resume");
  s.restore(*latest);
  const int64_t newest = latest->step, consumed = s.consumed;
  if (rollback_to >= 0) {
    const fs::path ckpt = s.dir / "versions" / ("step-" + std::to_string(rollback_to));
    check(fs::exists(ckpt / "trainer.json"), "--rollback-to ", rollback_to, ": no such version kept in '",
          (s.dir / "versions").string(), "' (the newest is ", newest, "; learn.keep_versions are kept)");
    s.restore(load_checkpoint(ckpt, s.targets()));
    s.consumed = consumed;  // what later versions trained on is not trained on again
    s.version = newest + 1;
    s.save(newest + 1);
  }
  for (const Json& r : read_jsonl(s.dir / "feedback.jsonl")) {
    const int64_t seq = r.at("step").get<int64_t>();
    s.next_seq = std::max(s.next_seq, seq + 1);
    if (seq >= s.consumed) s.queue.push_back(Queued{seq, r, Clock::now()});
  }
  s.open_logs();
}

void ServeLearner::remember(const std::string& completion_id, std::vector<ServedChoice> choices) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lk(s.m);
  s.served[completion_id] = std::move(choices);
  s.served_order.push_back(completion_id);
  while (static_cast<int64_t>(s.served_order.size()) > s.options.remember) {
    s.served.erase(s.served_order.front());
    s.served_order.pop_front();
  }
}

namespace serve_learner_detail {

// The body of POST /v1/feedback, checked; throws FeedbackError (400).
struct FeedbackBody {
  std::string completion_id;
  int64_t index = 0;
  std::string feedback;
  std::optional<double> reward;
};

FeedbackBody parse_feedback_body(const std::string& body, int64_t max_chars) {
  const Json j = Json::parse(body, nullptr, false);
  if (!j.is_object()) throw FeedbackError(400, "the body must be a JSON object: {\"completion_id\": ..., \"feedback\": \"...\"}");
  for (const auto& [k, v] : j.items())
    if (k != "completion_id" && k != "index" && k != "feedback" && k != "reward")
      throw FeedbackError(400, "unknown field '" + k + "' (fields: completion_id, index, feedback, reward)", k);
  FeedbackBody b;
  if (!j.contains("completion_id") || !j["completion_id"].is_string() || j["completion_id"].get<std::string>().empty())
    throw FeedbackError(400, "'completion_id' must be the id of a response this server gave (a string)", "completion_id");
  b.completion_id = j["completion_id"].get<std::string>();
  if (j.contains("index")) {
    if (!j["index"].is_number_integer() || j["index"].get<int64_t>() < 0)
      throw FeedbackError(400, "'index' must be a choice index (an integer >= 0)", "index");
    b.index = j["index"].get<int64_t>();
  }
  if (j.contains("feedback") && !j["feedback"].is_null()) {
    if (!j["feedback"].is_string()) throw FeedbackError(400, "'feedback' must be a string", "feedback");
    b.feedback = j["feedback"].get<std::string>();
    if (static_cast<int64_t>(b.feedback.size()) > max_chars)
      throw FeedbackError(400, str("'feedback' is longer than learn.max_feedback_chars = ", max_chars), "feedback");
  }
  if (j.contains("reward") && !j["reward"].is_null()) {
    if (!j["reward"].is_number() || !std::isfinite(j["reward"].get<double>()))
      throw FeedbackError(400, "'reward' must be a finite number", "reward");
    b.reward = j["reward"].get<double>();
  }
  if (b.feedback.find_first_not_of(" \t\r\n") == std::string::npos && !b.reward)
    throw FeedbackError(400, "give 'feedback' (text) or 'reward' (a number), or both", "feedback");
  return b;
}

}  // namespace serve_learner_detail

Json ServeLearner::feedback(const std::string& body) {
  Impl& s = *impl_;
  const sld::FeedbackBody b = sld::parse_feedback_body(body, s.options.max_feedback_chars);
  std::lock_guard<std::mutex> lk(s.m);
  auto it = s.served.find(b.completion_id);
  if (it == s.served.end())
    throw FeedbackError(404, "no response '" + b.completion_id + "' is remembered (unknown, from before a restart, or "
                        "older than the last learn.remember responses)", "completion_id");
  if (b.index >= static_cast<int64_t>(it->second.size()))
    throw FeedbackError(400, str("'index' ", b.index, " is out of range: the response has ", it->second.size(), " choices"),
                        "index");
  const ServedChoice& c = it->second[static_cast<size_t>(b.index)];
  Json r = {{"step", s.next_seq},
            {"completion_id", b.completion_id},
            {"index", b.index},
            {"feedback", b.feedback},
            {"reward", b.reward ? Json(*b.reward) : Json(nullptr)},
            {"version", c.version},
            {"prompt", c.prompt},
            {"completion", c.sequence.text},
            {"prompt_ids", c.sequence.prompt_ids},
            {"completion_ids", c.sequence.completion_ids},
            {"logprobs", c.sequence.logprobs}};
  s.log->write(r);  // on disk (fsync'd) before the reply says queued
  s.queue.push_back(Queued{s.next_seq, std::move(r), Clock::now()});
  const int64_t seq = s.next_seq++;
  return Json{{"object", "feedback"}, {"id", "fb-" + std::to_string(seq)}, {"completion_id", b.completion_id},
              {"index", b.index}, {"queued", s.queue.size()}, {"version", s.version.load()}};
}

Json ServeLearner::status() const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lk(s.m);
  return Json{{"object", "learn"},        {"version", s.version.load()},    {"saved_version", s.saved_version},
              {"updates", s.updates_done}, {"feedback_received", s.next_seq}, {"feedback_consumed", s.consumed},
              {"queued", s.queue.size()},  {"failed_updates", s.failed},      {"last_error", s.last_error},
              {"last_update_s", s.last_update_s}, {"max_update_s", s.max_update_s}, {"last_save_s", s.last_save_s},
              {"max_save_s", s.max_save_s},       {"baseline", s.baseline},
              {"remembered", s.served.size()},    {"last_metrics", s.last_metrics}};
}

int64_t ServeLearner::version() const { return impl_->version.load(); }

bool ServeLearner::update_due() const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lk(s.m);
  if (s.queue.empty() || Clock::now() < s.retry_after) return false;
  if (static_cast<int64_t>(s.queue.size()) >= s.options.batch) return true;
  return s.options.max_wait_s > 0 &&
         std::chrono::duration<double>(Clock::now() - s.queue.front().arrived).count() >= s.options.max_wait_s;
}

void ServeLearner::update() {
  Impl& s = *impl_;
  const auto t0 = Clock::now();
  std::vector<Queued> batch;
  {
    std::lock_guard<std::mutex> lk(s.m);
    const size_t n = std::min(s.queue.size(), static_cast<size_t>(s.options.batch));
    batch.assign(s.queue.begin(), s.queue.begin() + static_cast<std::ptrdiff_t>(n));
  }
  if (batch.empty()) return;
  try {
    Json metrics = s.train(batch);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::unique_lock<std::mutex> lk(s.m);
    s.update_baseline(batch);
    s.queue.erase(s.queue.begin(), s.queue.begin() + static_cast<std::ptrdiff_t>(batch.size()));
    s.consumed = batch.back().seq + 1;
    s.updates_done += 1;
    const int64_t v = s.version + 1;
    s.version = v;
    s.last_update_s = seconds, s.max_update_s = std::max(s.max_update_s, seconds);
    s.last_metrics = metrics;
    s.last_error.clear();
    s.retry_after = {};
    std::vector<int64_t> seqs;
    for (const Queued& q : batch) seqs.push_back(q.seq);
    s.updates->write(Json{{"step", v}, {"version", v}, {"feedback", seqs}, {"seconds", seconds}, {"metrics", metrics}});
    lk.unlock();  // feedback keeps arriving while the version is written (save reads engine-thread state only)
    if (v % s.options.save_every == 0) {
      const auto t1 = Clock::now();
      s.save(v);
      const double save_s = std::chrono::duration<double>(Clock::now() - t1).count();
      std::lock_guard<std::mutex> relock(s.m);
      s.last_save_s = save_s, s.max_save_s = std::max(s.max_save_s, save_s);
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lk(s.m);
    s.failed += 1;
    s.last_error = e.what();
    s.retry_after = Clock::now() + std::chrono::seconds(std::min<int64_t>(300, int64_t{5} << std::min<int64_t>(s.failed, 6)));
    std::cerr << "rlf serve --learn: update failed (its feedback stays queued): " << e.what() << "\n";
  }
}

}  // namespace rlf
