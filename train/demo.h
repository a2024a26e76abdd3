// The embedded default run (`rlf demo`, the README's main command): a complete
// RL run that needs no input. rlf generates everything itself:
//   - a task: two-digit addition problems ("What is 37 + 48?"), split into
//     training problems and held-out problems that no training step sees;
//   - a policy: a small Llama-shaped model with random weights and a
//     character-level tokenizer (tokenizer/char_vocab.h), saved as a Hugging
//     Face directory in OUT/init;
//   - a warm start: SFT on worked answers ("37 + 48 = 85. #### 85") for just
//     long enough that the policy is weak but not hopeless;
// then GRPO against the exact-match reward on "#### n", and prints held-out
// greedy pass@1 before and after RL, next to a control: the same SFT policy
// trained for the RL phase's wall time with SFT alone. Everything but the
// control's step count (a wall-time budget) is seeded: the same seed and
// thread count give the same run.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "train/train_run.h"

namespace rlf {

struct DemoOptions {
  std::filesystem::path out_dir = "runs/demo";  // init/ (the initial policy) and the run's files
  uint64_t seed = 0;                            // seeds the model, the task, SFT and RL
  std::vector<std::string> overrides;           // "key=value" applied to the run config (as `rlf train --set`)
  bool quiet = false;                           // no progress bars or table
};

// The run config the demo trains with (documented in docs/config.md), with
// model.path = `model_dir` and run.out_dir = `out_dir`.
Json demo_config(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir, uint64_t seed);

// Writes the initial policy (random weights + char tokenizer) into `dir`.
void write_demo_policy(const std::filesystem::path& dir, uint64_t seed);

// Builds the policy, runs SFT + GRPO, returns the run summary.
TrainRunSummary run_demo(const DemoOptions& options);

}  // namespace rlf
