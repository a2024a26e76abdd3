// Every random stream rlf derives from a seed (run.seed, a step's seed, a
// request's seed), named once. Two forms of one function:
//   derive_seed(seed, SeedStream::x)  the seed of a named stream (a salt per stream);
//   derive_seed(seed, item)           the seed of item `item` of a stream (a rollout,
//                                     a sample, an episode): mix(seed ^ mix(item)).
// The salts below are the values rlf has always used: changing one changes
// every run that draws from that stream, so a new stream gets a new salt and
// an existing one never moves.
#pragma once

#include <cstdint>

namespace rlf {

// splitmix64's output step: mixes a 64-bit value.
constexpr uint64_t mix_seed(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

enum class SeedStream : uint64_t {
  MiniBatchOrder = 0xA5A5A5A5ULL,       // the trainer's mini-batch order (then ^ step, mixed): train/trainer.cpp
  SftOrder = 0x5F7ULL,                  // SFT batches, an SFT run and an SFT warm start alike
  PreferenceOrder = 0xD70ULL,           // preference pairs' batches
  ProcessOrder = 0x9F3ULL,              // process-reward solutions' batches
  ProcessEval = 0x3C5ULL,               // a process reward model's held-out evaluation sampling
  RewardHeadInit = 0x5C0ULL,            // a reward model's fresh score head
  GatingFit = 0x6A7EULL,                // reward_model.gating: the gate's fit
  ValueTrainer = 0x7A1BEULL,            // the value model's trainer (its mini-batch order)
  LoraInit = 0x10A0ULL,                 // LoRA A matrices at start
  LoraDropoutInit = 0x10AADULL,         // the LoRA dropout generator's first state
  LoraDropoutStep = 0x10AD0ULL,         // LoRA dropout masks of a step: seed * golden + salt (then + step)
  Refinement = 0x5EF1E5EF1E5ULL,        // refinement generations (^ the step's seed, per episode item)
};

// The seed of stream `s`: seed ^ salt, except LoraDropoutStep's
// seed * 0x9E3779B97F4A7C15 + salt (its historical formula).
constexpr uint64_t derive_seed(uint64_t seed, SeedStream s) {
  const uint64_t salt = static_cast<uint64_t>(s);
  if (s == SeedStream::LoraDropoutStep) return seed * 0x9E3779B97F4A7C15ULL + salt;
  return seed ^ salt;
}

// The seed of item `item` under `seed`: mix(seed ^ mix(item)).
constexpr uint64_t derive_seed(uint64_t seed, uint64_t item) { return mix_seed(seed ^ mix_seed(item)); }

// Environment resets draw items offset by this from the sampling's (episode j: j + kEnvResetItem).
constexpr uint64_t kEnvResetItem = 0x5EEDULL;

}  // namespace rlf
