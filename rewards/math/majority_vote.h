// maj@k: majority voting (self-consistency) over the final answers of k
// samples. Samples are clustered by answer equivalence (the math verifier's
// math_equal: "0.5" and "\frac{1}{2}" vote together); the largest cluster of
// a vote wins and the vote is correct when the winner is.
//
// Estimate for one prompt with n samples: the samples, in order, are cut into
// floor(n / k) disjoint blocks of k (a remainder is dropped); each block is
// one vote and maj@k is the share of correct votes. In a block:
//   - samples without an extracted answer do not vote;
//   - the winner is the cluster with most members; a tie goes to the cluster
//     whose first member comes first in the block;
//   - the vote is correct when the winner's first member in the block is a
//     correct sample; a block where no sample has an answer is incorrect.
// Undefined (nullopt) when n < k.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rewards/math/answer_extract.h"

namespace rlf {

inline constexpr int kNoAnswer = -1;  // cluster id of a sample without an answer

// The answer of each completion (nullopt when none is found).
std::vector<std::optional<std::string>> extract_answers(const std::vector<std::string>& completions,
                                                        math::AnswerFormat format);

// A cluster id per answer (0, 1, ... in order of first appearance; kNoAnswer
// for nullopt). An answer joins the first earlier cluster whose first member
// it equals (string equality, else math_equal).
std::vector<int> cluster_answers(const std::vector<std::optional<std::string>>& answers);

// maj@k of one prompt from its samples' cluster ids and correctness (same
// length n), as described above. Throws rlf::Error for k < 1 or mismatched sizes.
std::optional<double> majority_at_k(const std::vector<int>& clusters, const std::vector<bool>& correct, int64_t k);

}  // namespace rlf
