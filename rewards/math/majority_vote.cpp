// Answer clustering and block-wise majority votes.
#include "rewards/math/majority_vote.h"

#include <map>

#include "rewards/math/math_verify.h"
#include "util/error.h"

namespace rlf {

std::vector<std::optional<std::string>> extract_answers(const std::vector<std::string>& completions,
                                                        math::AnswerFormat format) {
  std::vector<std::optional<std::string>> answers;
  answers.reserve(completions.size());
  for (const std::string& text : completions) answers.push_back(math::extract_answer(text, format));
  return answers;
}

std::vector<int> cluster_answers(const std::vector<std::optional<std::string>>& answers) {
  std::vector<int> ids(answers.size(), kNoAnswer);
  std::vector<size_t> first_member;  // cluster id -> index of its first member
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i]) continue;
    for (size_t c = 0; c < first_member.size() && ids[i] == kNoAnswer; ++c) {
      const std::string& rep = *answers[first_member[c]];
      if (*answers[i] == rep || math::math_equal(*answers[i], rep)) ids[i] = int(c);
    }
    if (ids[i] == kNoAnswer) {
      ids[i] = int(first_member.size());
      first_member.push_back(i);
    }
  }
  return ids;
}

std::optional<double> majority_at_k(const std::vector<int>& clusters, const std::vector<bool>& correct, int64_t k) {
  check(k >= 1, "majority_at_k: k = ", k, " must be >= 1");
  check(clusters.size() == correct.size(), "majority_at_k: ", clusters.size(), " cluster ids but ", correct.size(),
        " correctness flags");
  const int64_t n = int64_t(clusters.size());
  if (n < k) return std::nullopt;
  const int64_t n_blocks = n / k;
  int64_t n_right = 0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    // cluster id -> (votes, first member in the block)
    std::map<int, std::pair<int64_t, int64_t>> votes;
    for (int64_t i = b * k; i < (b + 1) * k; ++i) {
      if (clusters[i] == kNoAnswer) continue;
      auto [it, inserted] = votes.try_emplace(clusters[i], 0, i);
      ++it->second.first;
    }
    int64_t best_votes = 0, winner = -1;
    for (const auto& [id, v] : votes) {
      const auto [count, first] = v;
      if (count > best_votes || (count == best_votes && first < winner)) {
        best_votes = count;
        winner = first;
      }
    }
    if (winner >= 0 && correct[winner]) ++n_right;
  }
  return double(n_right) / double(n_blocks);
}

}  // namespace rlf
