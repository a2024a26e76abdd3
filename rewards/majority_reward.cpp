#include "rewards/majority_reward.h"

#include <cmath>
#include <map>

#include "rewards/exact_match.h"
#include "rewards/math/majority_vote.h"
#include "util/error.h"

namespace rlf {

MajorityRewardOptions read_majority_options(OptionReader& r) {
  MajorityRewardOptions o;
  o.answer_format = r.get_string("answer_format", o.answer_format);
  o.min_share = r.get_double("min_share", o.min_share);
  o.correct_score = r.get_double("correct_score", o.correct_score);
  o.incorrect_score = r.get_double("incorrect_score", o.incorrect_score);
  check(std::isfinite(o.min_share) && o.min_share >= 0 && o.min_share <= 1, "option 'min_share' must be in [0, 1] (got ",
        o.min_share, ")");
  check(std::isfinite(o.correct_score) && std::isfinite(o.incorrect_score),
        "options 'correct_score' and 'incorrect_score' must be finite");
  return o;
}

MajorityReward::MajorityReward(MajorityRewardOptions options)
    : options_(std::move(options)), format_(parse_reward_answer_format(options_.answer_format)) {}

std::vector<RewardResult> MajorityReward::score(const RewardGroup& group) {
  std::vector<std::string> texts;
  for (const RewardSample& s : group.samples) texts.push_back(s.completion);
  const auto answers = extract_answers(texts, format_);
  const std::vector<int> clusters = cluster_answers(answers);
  // The winner: most members; ties to the cluster whose first member comes first (cluster ids follow first appearance).
  std::map<int, int64_t> votes;
  for (int c : clusters)
    if (c != kNoAnswer) ++votes[c];
  int winner = kNoAnswer;
  int64_t best = 0;
  for (const auto& [c, n] : votes)
    if (n > best) best = n, winner = c;
  std::vector<RewardResult> out(group.samples.size());
  const double share = group.samples.empty() ? 0.0 : static_cast<double>(best) / static_cast<double>(group.samples.size());
  if (winner == kNoAnswer || share < options_.min_share) {
    const std::string why = winner == kNoAnswer
                                ? std::string("majority: no completion of the group has an answer (no pseudo-label)")
                                : str("majority: the most common answer has ", best, " of ", group.samples.size(),
                                      " votes, below min_share ", options_.min_share, " (no pseudo-label)");
    for (auto& r : out) r.missing_reason = why;
    return out;
  }
  size_t first = 0;
  while (clusters[first] != winner) ++first;
  const std::string label = *answers[first];
  for (size_t i = 0; i < out.size(); ++i) {
    const bool agrees = clusters[i] == winner;
    out[i].score = agrees ? options_.correct_score : options_.incorrect_score;
    const std::string verdict = agrees ? "agrees with" : answers[i] ? "differs from" : "has no answer; not";
    out[i].explanation = str(verdict, " the majority answer ", label, " (", best, " of ", out.size(), " votes)");
  }
  return out;
}

}  // namespace rlf
