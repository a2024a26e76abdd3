// `rlf serve --learn`: a served model that learns from what its users write
// (docs/serve.md, docs/feedback.md). The server (serve/server.h) remembers
// each response's choices; POST /v1/feedback
//
//   {"completion_id": "cmpl-...", "index": 0, "feedback": "text", "reward": 1.0}
//
// (index optional, default 0; at least one of feedback and reward) queues
// feedback on one of them. When learn.batch feedback are queued, or the
// oldest has waited learn.max_wait_s, the server drains its batch and the
// learner runs one optimiser step of the one trainer (train/trainer.h) on
// them, as one-episode groups of the served tokens (nothing re-tokenized):
//
//   distill  (written feedback) self-distillation: the teacher is the model
//            reading learn.context — "{prompt}{response}\n\nFeedback:
//            {critique}\n\n" by default, {critique} = the user's words —
//            in front of the served completion; its log-probs on the
//            completion's tokens are the target (train/distillation.h).
//            learn.teacher = "frozen" (default): the model as --model loaded
//            it, which does not drift with the student; "self": the live
//            policy.
//   policy   (a reward) the clipped policy-gradient term with advantage
//            reward_coef * (reward - b), b an exponential moving average of
//            the rewards received before (learn.baseline_decay; 0 at first).
//
// Every update makes a new version (served responses say "rlf-v<N>" in
// system_fingerprint) and, every learn.save_every updates, a checkpoint
// (train/checkpoint.h) at DIR/versions/step-N: weights, AdamW moments,
// learner state; DIR/versions/step-N/model is a model directory `rlf serve
// --model` loads. Feedback is appended to DIR/feedback.jsonl (fsync'd)
// before POST /v1/feedback answers, with everything needed to train on it
// (prompt and completion ids, log-probs, texts), so a kill at any moment
// loses no acknowledged feedback: resume() loads the newest version and
// queues again every feedback it had not consumed. rollback(N) serves
// version N's weights again as a new version (feedback consumed by the
// versions after N is not trained on again). DIR/updates.jsonl has one line
// per update (version, feedback, metrics, seconds).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config_schema.h"
#include "rollout/policy.h"
#include "serve/learning.h"
#include "train/distillation.h"
#include "train/reducer.h"
#include "train/trainer.h"

namespace rlf {

struct LearnOptions {
  int64_t batch = 4;              // feedback per update: an update starts when this many are queued
  double max_wait_s = 10;         // ... or when the oldest queued feedback has waited this long (0 = wait for batch)
  double lr = 1e-5;               // AdamW learning rate (constant)
  double max_grad_norm = 1.0;     // global gradient-norm clip (0 = none)
  int64_t micro_batch_size = 8;   // sequences per forward/backward
  double distill_coef = 1.0;      // weight of self-distillation from the written feedback (0 = off)
  DistillTeacherKind teacher = DistillTeacherKind::Frozen;  // "frozen" (the model as loaded) or "self" (live policy)
  std::string context = "{prompt}{response}\n\nFeedback: {critique}\n\n";  // what the teacher reads first
  int64_t top_k = 0;              // 0: sampled-token k2; k > 0: reverse KL on the teacher's top k + a tail
  double reward_coef = 1.0;       // weight of the policy-gradient term on feedback rewards (0 = off)
  double baseline_decay = 0.9;    // b <- decay * b + (1 - decay) * reward, after each update
  int64_t save_every = 1;         // updates between checkpoints (a kill goes back to the last one, losing no feedback)
  int64_t keep_versions = 5;      // checkpoints kept (the newest ones)
  int64_t remember = 4096;        // responses remembered for feedback (the oldest forgotten first)
  int64_t max_feedback_chars = 8192;  // longer feedback text is a 400
  uint64_t seed = 0;              // the trainer's mini-batch order

  // Throws rlf::Error naming the learn.* key.
  void validate() const;
};

// The [learn] table of a TOML file (every key optional; unknown keys and bad
// values are errors naming them and the file).
LearnOptions learn_options_from_file(const std::filesystem::path& path);
// The keys, their defaults and help: `rlf config learn` prints it (docs/serve.md).
const ConfigSchema& learn_config_schema();

class ServeLearner final : public ServeLearning {
 public:
  // Borrows `policy` (trained in place; the server serves it). `frozen`: the
  // teacher for learn.teacher = "frozen" (the model as loaded; null otherwise).
  // A fresh run (resume = false) needs a `dir` without one and saves version
  // 0, the model as loaded. With `resume` it continues the run in `dir`: loads
  // its newest version (weights, AdamW, state) and queues the feedback that
  // version had not trained on; with `rollback_to` >= 0 it then serves that
  // version's weights as a new version.
  ServeLearner(Policy& policy, CausalLM frozen, LearnOptions options, std::filesystem::path dir, bool resume = false,
               int64_t rollback_to = -1);
  ~ServeLearner() override;

  void remember(const std::string& completion_id, std::vector<ServedChoice> choices) override;
  Json feedback(const std::string& body) override;
  Json status() const override;
  int64_t version() const override;
  bool update_due() const override;
  void update() override;

 private:
  void start_fresh();
  void resume(int64_t rollback_to);

  struct Queued;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlf
