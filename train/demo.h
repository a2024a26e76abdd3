// The embedded default run (`rlf demo`, the README's main command): a complete
// RL run that needs no input, built to show what RL from a verifier adds to
// imitation. rlf generates everything itself:
//   - a task: two-digit addition problems ("What is 37 + 48?"), split into
//     training problems and held-out problems that no training step sees;
//   - a policy: a small Llama-shaped model with random weights and a
//     character-level tokenizer (tokenizer/char_vocab.h), saved as a Hugging
//     Face directory in OUT/init;
//   - demonstrations from a sloppy teacher: sums worked column by column
//     ("7+8=15, 3+4+1=8. #### 85"), in which the teacher forgets to carry
//     the one on 70% of its showings of a problem that needs a carry
//     ("7+8=15, 3+4=7. #### 75"; data/synthetic_tasks.h: columns, draws);
//   - a warm start: SFT on those demonstrations, which learns the columns and
//     the teacher's habit alike (greedy decoding forgets the carry);
// then GRPO against the exact answer "#### n", and prints held-out greedy
// pass@1 before and after RL, next to a control: the same SFT policy trained
// for the RL phase's wall time by SFT alone, on the same demonstrations.
// Imitation can only copy the habit; the verifier rewards the carry. With
// clean demonstrations (DemoOptions::clean, `rlf demo --clean`) more SFT is
// the better use of the time, and the table says so. Everything but the
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
  bool clean = false;                           // demonstrations all right (no forgotten carries)
};

// The run config the demo trains with (documented in docs/config.md), with
// model.path = `model_dir` and run.out_dir = `out_dir`.
Json demo_config(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir, uint64_t seed,
                 bool clean = false);

// The share of a carry problem's demonstrations that forget the carry (0 with clean).
double demo_wrong_fraction(bool clean);

// One sentence saying what the demo's comparison means: RL against the
// control (both held-out greedy pass@1, in [0, 1]), for the data it ran on.
std::string demo_verdict(double pass1_after, double pass1_control, bool clean);

// Writes the initial policy (random weights + char tokenizer) into `dir`.
void write_demo_policy(const std::filesystem::path& dir, uint64_t seed, int64_t context = 128);
// The same, unless `dir` holds a policy with that context already (written by an earlier run).
void ensure_demo_policy(const std::filesystem::path& dir, uint64_t seed, int64_t context);

// Builds the policy, runs SFT + GRPO, returns the run summary.
TrainRunSummary run_demo(const DemoOptions& options);

}  // namespace rlf
