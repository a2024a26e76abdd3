// Credit assignment: from an episode's rewards to an advantage on each of
// its policy tokens. Pure functions, no state. Four modes (formulas and
// papers in docs/algorithms.md, "Credit assignment"):
//
//   episode  one return per episode, R_i = outcome + sum of turn rewards +
//            sum of token rewards; the advantage estimator (advantages.h)
//            turns it into A_i, given to every policy token of the episode.
//            Single-turn GRPO is this mode.
//   turn     per-turn returns G_{i,k} = sum_{j >= k} gamma^(j-k) r_{i,j},
//            where r_{i,k} is the environment's reward after turn k plus the
//            token rewards of turn k, and the outcome is added to the last
//            turn. A_{i,k} = (G_{i,k} - b_i) / s_i for every token of turn k,
//            with the estimator's baseline b_i and scale s_i computed on the
//            episode returns G_{i,0} (advantage_baselines).
//   token    per-token returns G_t = r_t + gamma * G_{t'} over the episode's
//            policy tokens (t' the next policy token), where r_t is the token
//            reward, plus the turn reward at a turn's last token and the
//            outcome at the episode's last policy token; A_t = (G_t - b_i) / s_i
//            with b_i, s_i from the episode returns (G at its first policy token).
//   gae      PPO's: the per-token rewards of `token` mode and the critic's
//            values V_t at the episode's policy tokens give GAE(gamma,
//            lambda) advantages and value targets R_t = A_t + V_t (gae.h),
//            across turns (observation tokens are skipped, as in `token`);
//            no group baseline: the critic is the baseline. With
//            `turn_values` the steps are turns instead: the per-turn
//            rewards of `turn` mode and the value at each turn's first
//            policy token; a turn's advantage goes to all its tokens and
//            its target R_k to its first token only (NaN elsewhere: no
//            target).
// With one turn, no token rewards and gamma = 1 the first three modes agree.
// `whiten` then whitens the advantages of every mode over the batch's policy
// tokens (gae.h whiten).
// An episode whose outcome is missing gets advantage 0 on every token and is
// left out of every statistic. Tokens with loss weight 0 always get 0.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "algorithms/advantages.h"

namespace rlf::algo {

enum class CreditMode { Episode, Turn, Token, Gae };
CreditMode parse_credit_mode(std::string_view name);  // "episode", "turn", "token", "gae"
std::string_view credit_mode_name(CreditMode mode);
std::vector<std::string> credit_mode_names();  // every name, in the order docs list them

struct CreditOptions {
  CreditMode mode = CreditMode::Episode;  // see above
  double gamma = 1.0;                     // discount per turn (turn) or per policy token (token, gae), in (0, 1]
  double lambda = 0.95;                   // gae: GAE's lambda, in [0, 1]
  bool turn_values = false;               // gae: one value per turn (at its first policy token), not per token
  bool whiten = false;                    // whiten the advantages over the batch's policy tokens
  AdvantageOptions advantage;             // the estimator giving baselines and scales (not gae)

  // Throws rlf::Error naming the field (algorithm.gamma, ...).
  void validate() const;
};

// One episode's rewards, indexed by its own token positions [T].
struct CreditInput {
  int64_t group = 0;                      // same task = same group
  std::optional<double> outcome;          // outcome reward (unset = missing: no credit at all)
  std::vector<double> turn_rewards;       // [n_turns] the environment's reward after each turn (0 = none)
  std::span<const float> loss_weight;     // [T] > 0 on policy tokens
  std::span<const int32_t> token_turn;    // [T] the turn of each policy token (read where loss_weight > 0)
  std::span<const float> token_reward;    // [T] per-token rewards, or empty
  std::span<const float> value;           // [T] gae: the critic's value before each token (read where loss_weight > 0)
};

// The per-episode return of `episode` mode: outcome + turn rewards + token
// rewards on policy tokens; unset when the outcome is missing.
std::optional<double> episode_return(const CreditInput& episode);

// Per-token advantages, one [T] vector per episode (0 where loss_weight == 0).
// Batch statistics go through `batch_sum` (advantages.h). gae: `returns`
// (when given) receives each episode's value targets R_t, [T] with 0 off
// policy tokens (turn_values: NaN on policy tokens without a target), empty
// for an episode whose outcome is missing.
std::vector<std::vector<float>> assign_credit(std::span<const CreditInput> episodes, const CreditOptions& options,
                                              const BatchSum& batch_sum = {},
                                              std::vector<std::vector<float>>* returns = nullptr);

}  // namespace rlf::algo
