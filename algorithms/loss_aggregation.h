// Turns a per-token loss [B, T] into the scalar to call backward() on, with
// normalisers that are GLOBAL over the optimisation step: with gradient
// accumulation the trainer first counts the loss tokens/sequences of every
// micro-batch of the step (count_loss_totals, summed with +=), then calls
// aggregate_loss on each micro-batch with those totals and backward() on each
// result. The accumulated gradient then equals the gradient of the same
// aggregation over the whole step's batch at once: do NOT divide further by
// the number of micro-batches. Formulas: docs/algorithms.md.
//
// mask [B, T]: nonzero on loss tokens; its values are per-token weights
// (1 for a plain 0/1 mask). Tokens with mask == 0 contribute nothing, and
// zero gradient, even when their loss is inf or NaN.
#pragma once

#include <cstdint>
#include <string_view>
#include <string>
#include <vector>

#include <torch/types.h>

namespace rlf::algo {

enum class LossAggregation {
  // "token_mean": sum_{b,t} w*l / N_tokens.  Default of TRL, OpenRLHF, verl,
  // NeMo-RL; DAPO's "token-level policy gradient loss".
  TokenMean,
  // "seq_mean_token_mean": sum_b [sum_t w*l / sum_t w] / N_sequences. The
  // original GRPO objective (each sequence weighs the same). GSPO uses it.
  SeqMeanTokenMean,
  // "seq_mean_token_sum_norm": sum_b [sum_t w*l / max_tokens] / N_sequences.
  // Dr.GRPO: a constant per-sequence normaliser, no length bias.
  SeqMeanTokenSumNorm,
};

LossAggregation parse_loss_aggregation(std::string_view name);
std::string_view loss_aggregation_name(LossAggregation mode);
std::vector<std::string> loss_aggregation_names();  // every name, in the order docs list them

// Normalisers of one optimisation step, over ALL its micro-batches.
struct LossTotals {
  double n_tokens = 0;      // sum of mask weights (= number of loss tokens for a 0/1 mask)
  int64_t n_sequences = 0;  // rows with at least one loss token

  LossTotals& operator+=(const LossTotals& other);
};

// The totals of one micro-batch's mask [B, T].
LossTotals count_loss_totals(const torch::Tensor& mask);

struct AggregationOptions {
  // How per-token losses become one number (see the enum).
  LossAggregation mode = LossAggregation::TokenMean;
  // Constant per-sequence normaliser of seq_mean_token_sum_norm, in tokens:
  // the generation's maximum completion length (Dr.GRPO). Must be > 0 for
  // that mode; ignored by the others.
  int64_t max_tokens = 0;

  // Throws rlf::Error naming the bad field.
  void validate() const;
};

// Scalar loss of one micro-batch, normalised by the step totals. Summing the
// results over the step's micro-batches gives the step's loss. Throws when
// the totals are empty while this micro-batch has loss tokens (the caller
// forgot to count it). With no loss tokens at all it returns a 0 that is
// still connected to the graph, so backward() works and adds nothing.
torch::Tensor aggregate_loss(const torch::Tensor& per_token, const torch::Tensor& mask,
                             const LossTotals& step_totals, const AggregationOptions& options = {});

}  // namespace rlf::algo
