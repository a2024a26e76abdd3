// Policy: the model being trained together with its tokenizer and decoding
// defaults — the one object the rollout engine and the trainer share.
//
// Ownership: the Policy owns the CausalLM (a shared module holder); the
// RolloutEngine borrows it to sample and the trainer's optimizer updates its
// parameters in place, so rollouts always read the weights the last optimizer
// step wrote and nothing is synchronised. Copies derived from the weights do
// exist: by default an fp32 CPU model packs them into decoding panels for the
// length of each generate or serve call (a second copy of their size, freed
// at the call's end; model/packed_weights.h, none with set_pack_weights(false)),
// and asynchronous rollouts sample with a rollout model of their own
// (train/rollout_pipeline.h).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "model/loader.h"
#include "tokenizer/tokenizer.h"

namespace rlf {

struct Policy {
  LoadedModel loaded;                          // model, config, generation defaults, source
  std::shared_ptr<const Tokenizer> tokenizer;  // never null after load_policy
  std::filesystem::path tokenizer_path;
  std::vector<int32_t> eos_token_ids;          // ids that end a completion (see load_policy)

  CausalLM& model() { return loaded.model; }
};

// Loads the model at `model_path` and its tokenizer: `tokenizer_path` when
// given, else the one stored with the model (tokenizer.json in a HF directory,
// tok*.bin beside a llama2.c checkpoint); none found is an error saying to pass
// --tokenizer.
// EOS ids: generation_config.json's eos_token_id, else config.json's, else the
// tokenizer's EOS. llama2.c models also stop at BOS (id 1), as run.c does: the
// TinyStories data separates stories with BOS.
Policy load_policy(const std::filesystem::path& model_path, const std::filesystem::path& tokenizer_path,
                   const LoadOptions& options);

}  // namespace rlf
