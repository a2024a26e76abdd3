// Per-request sampling parameters and the token sampler.
//
// The sampler works on one row of fp32 logits at a time, with an RNG owned by
// the sequence (seeded from the request's seed and the sample's index), so a
// sequence's draws never depend on what else is in the batch.
// Filters apply in the order temperature -> top-k -> top-p -> min-p, as in
// Hugging Face transformers and vLLM. The returned log-prob is always the
// policy's log-prob at temperature 1 with no filtering (what the trainer uses).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/seed.h"  // mix_seed, derive_seed

namespace rlf {

struct SamplingParams {
  double temperature = 1.0;       // 0 = greedy (argmax)
  int64_t top_k = 0;              // keep the k most likely tokens; 0 = off
  double top_p = 1.0;             // nucleus: smallest set with mass >= top_p; 1 = off
  double min_p = 0.0;             // drop tokens with p < min_p * p_max; 0 = off
  int64_t max_new_tokens = 256;   // completion length limit (tokens)
  std::vector<int32_t> stop_token_ids;   // extra ids that end a sequence (EOS ids come from the model)
  std::vector<std::string> stop_strings; // text that ends a sequence (excluded from the returned text)
  std::optional<uint64_t> seed;   // unset = derived from the engine's seed and the request's order
  bool ignore_eos = false;        // keep generating past EOS (benchmarks)

  // Throws rlf::Error naming the field (as `prefix` + field: "rollout." in a
  // run config, "--" on the command line; default "sampling: ") and the accepted range.
  void validate(const std::string& prefix = "sampling: ") const;
};

// A small, fast, seedable RNG (xoshiro256**), seeded through splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0);
  uint64_t next();
  double uniform();  // [0, 1)

 private:
  uint64_t s_[4];
};


struct SampledToken {
  int32_t id = 0;
  float logprob = 0;  // log p(id) at temperature 1, unfiltered
};

// Reusable scratch space for sample_token (one per thread).
struct SamplerScratch {
  std::vector<std::pair<float, int32_t>> candidates;
  // After sample_token_id: a filtered draw's kept set (top-k, then top-p,
  // then min-p) is candidates[0, kept) (in no set order); 0 when nothing
  // was filtered (the whole vocabulary) or the draw was greedy.
  size_t kept = 0;
};

// Samples one token from `logits` [n_vocab] (fp32).
SampledToken sample_token(const float* logits, int64_t n_vocab, const SamplingParams& params, Rng& rng,
                          SamplerScratch& scratch);
// The id sample_token draws (the same draws from `rng`), without the log-prob:
// for callers that have the normaliser already (one pass over the vocabulary
// in double fewer).
int32_t sample_token_id(const float* logits, int64_t n_vocab, const SamplingParams& params, Rng& rng,
                        SamplerScratch& scratch);

// Draws an index from unnormalised non-negative weights `probs` [n] summing
// to `total` with one uniform draw (inverse CDF in index order).
int32_t draw_from_weights(const float* probs, int64_t n, double total, Rng& rng);

// log-softmax of logits[id] at temperature 1.
float token_logprob(const float* logits, int64_t n_vocab, int32_t id);

}  // namespace rlf
