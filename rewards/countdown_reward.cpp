// CountdownReward: countdown_answer + verify_countdown per completion.
#include "rewards/countdown_reward.h"

#include "data/countdown.h"

namespace rlf {

std::vector<RewardResult> CountdownReward::score(const RewardGroup& group) {
  const CountdownProblem problem = countdown_problem_from_record(group.record, "countdown reward");
  std::vector<RewardResult> results;
  for (const RewardSample& s : group.samples) {
    RewardResult r;
    const std::string expression = countdown_answer(s.completion);
    if (expression.empty()) {
      r.score = 0.0;
      r.explanation = "no answer found (expected '#### <expression>')";
    } else {
      const CountdownVerdict v = verify_countdown(expression, problem);
      r.score = v.correct ? 1.0 : 0.0;
      r.explanation = (v.correct ? "correct: " : "") + v.reason;
    }
    results.push_back(std::move(r));
  }
  return results;
}

void CountdownReward::check_record(const Json& record, const std::string& reference, const std::string& where) const {
  countdown_problem_from_record(record, where);
}

}  // namespace rlf
