// Training checkpoints: everything needed to resume a run bit for bit, written
// so that a kill at any moment leaves the last good checkpoint intact.
//
// Layout of a run's checkpoint directory DIR:
//   DIR/step-N/model/              Hugging Face model directory (save_model):
//                                  `rlf generate --model DIR/step-N/model` loads it
//   DIR/step-N/optimizer.safetensors  "exp_avg.<param>", "exp_avg_sq.<param>",
//                                  "master.<param>" (fp32 masters of bf16/fp16 runs)
//   DIR/step-N/rng.safetensors     "rng.<name>": each torch generator's state (U8)
//   DIR/step-N/<name>/model/, DIR/step-N/<name>/optimizer.safetensors
//                                  a companion model and its optimizer (PPO's critic: "value")
//   DIR/step-N/<name>/model/         a model kept without an optimizer (the distill EMA teacher: "ema");
//                                  trainer.json lists them under "models" (absent in older checkpoints: none)
//   DIR/step-N/trainer.json        format/version, step, scheduler step, optimizer
//                                  step count, counters (uint64 seeds), data
//                                  cursor, extra caller state, and a manifest of
//                                  every other file (bytes, CRC-32); written last
//   DIR/latest                     "step-N\n": the newest checkpoint, for people and tools
//   DIR/.tmp-*                     leftovers of an interrupted save (ignored, removed by the next save)
//
// Save protocol: write everything into DIR/.tmp-step-N, fsync every file and
// directory, rename to DIR/step-N, fsync DIR, then replace DIR/latest
// atomically (temporary file, fsync, rename) and prune old checkpoints. A
// step-N directory therefore only ever exists complete. Saving a step that
// already exists exchanges the two directories atomically (renameat2
// RENAME_EXCHANGE), so there is never a moment without a complete step-N;
// where the file system cannot exchange, the old one is first moved to
// DIR/.tmp-replaced-step-N, and recover_checkpoints() (run by every save and
// load) moves it back if a crash left no complete step-N. No complete
// checkpoint is ever deleted except by keep_last pruning after a save.
//
// Load: the newest complete checkpoint is the step-N directory with the largest
// N that holds a trainer.json (DIR/latest is not trusted: a crash between the
// rename and its update leaves it one behind). It is validated (manifest sizes
// and CRCs, safetensors headers, tensor names/shapes/dtypes) before anything is
// restored; a corrupt newest checkpoint is an error naming the file, never a
// silent fall-back to an older one.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/hf_dir.h"
#include "model/transformer.h"
#include "train/optimizer.h"
#include "util/json_util.h"

namespace rlf {

// Format tag and version written to trainer.json.
constexpr const char* kCheckpointFormat = "rlf-train-checkpoint";
constexpr int kCheckpointVersion = 1;

struct CheckpointOptions {
  int64_t keep_last = 3;                    // complete checkpoints kept after a save; 0 = keep all
  bool verify_checksums = true;             // load: check every file's CRC-32 (reads each file once)
  std::filesystem::path tokenizer_source;   // save: tokenizer directory/file copied into model/ ("" = none)
  std::optional<GenerationDefaults> generation;  // save: generation_config.json of model/
  // save: writes files of the caller's into model/ after the model (e.g. a
  // reward model's gating layer); they are in the manifest like the rest.
  std::function<void(const std::filesystem::path& model_dir)> model_extras;
  // Testing hook: called after each stage of a save ("tmp_dir", "model",
  // "optimizer", "rng", "manifest", "trainer_json", "renamed", "latest").
  // Throwing from it simulates a crash at that point.
  std::function<void(const std::string& stage)> on_stage;
};

// The caller's state that travels with a checkpoint.
struct TrainerState {
  int64_t step = 0;                          // trainer steps completed; names the directory step-N
  int64_t scheduler_step = 0;                // position of the learning-rate schedule
  std::map<std::string, uint64_t> counters;  // seeds and counters (e.g. the rollout engine's next seed)
  Json data_cursor;                          // opaque position of the data loader
  Json extra;                                // any other JSON state
};

// A second model trained beside the policy, with its own optimizer.
struct CompanionTarget {
  CausalLMImpl* model = nullptr;    // required
  Optimizer* optimizer = nullptr;   // required
};

// What a checkpoint saves from and restores into, borrowed from the trainer.
struct CheckpointTargets {
  CausalLMImpl* model = nullptr;                        // required
  Optimizer* optimizer = nullptr;                       // optional (nullptr: not saved / not restored)
  std::map<std::string, torch::Generator*> generators;  // optional, by name (CPU or CUDA generators)
  std::map<std::string, CompanionTarget> companions;    // optional, by name (a plain directory name): saved and
                                                        // restored as a set (a missing or extra one is an error)
  std::map<std::string, CausalLMImpl*> models;          // optional, by name (a plain directory name other than a
                                                        // companion's): models without an optimizer (the distill
                                                        // EMA teacher: "ema"), saved and restored as a set
};

// Writes DIR/step-<state.step> as described above and returns its path.
// Replaces an existing step-N of the same number. Errors name the file.
std::filesystem::path save_checkpoint(const std::filesystem::path& dir, const TrainerState& state,
                                      const CheckpointTargets& targets, const CheckpointOptions& options = {});

// Puts back complete checkpoints an interrupted replacement moved aside
// (DIR/.tmp-replaced-step-N when DIR/step-N is missing or incomplete).
// find_latest_checkpoint, load_latest and save_checkpoint call it.
void recover_checkpoints(const std::filesystem::path& dir);

// Complete checkpoints in `dir` (step-N directories with a trainer.json), oldest first.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir);

// The newest complete checkpoint, or nullopt when there is none (or no `dir`).
std::optional<std::filesystem::path> find_latest_checkpoint(const std::filesystem::path& dir);

// Validates checkpoint directory `ckpt` and restores it into `targets`
// (which must match what was saved: same parameters, same generator names).
// Nothing is modified when validation fails.
TrainerState load_checkpoint(const std::filesystem::path& ckpt, const CheckpointTargets& targets,
                             const CheckpointOptions& options = {});

// find_latest_checkpoint + load_checkpoint; nullopt (nothing touched) when
// `dir` holds no checkpoint. A corrupt newest checkpoint is an error that names
// the previous one.
std::optional<TrainerState> load_latest(const std::filesystem::path& dir, const CheckpointTargets& targets,
                                        const CheckpointOptions& options = {});

// A fresh CPU generator seeded with `seed` (for the trainer to own and pass
// explicitly, instead of the global default generator).
torch::Generator make_cpu_generator(uint64_t seed);

}  // namespace rlf
