#include "env/turn_verifier.h"

#include "rewards/registry.h"
#include "util/error.h"

namespace rlf {

TurnVerifier::TurnVerifier(const Json& table, const std::string& where) {
  check(table.is_object() && table.contains("type") && table.at("type").is_string(), where,
        ": option 'verifier' must be a reward table with a type, e.g. verifier = { type = \"math\", answer_format = "
        "\"gsm8k\" }");
  reward_ = make_reward(table.at("type").get<std::string>(), table, where + " verifier");
}

TurnVerdict TurnVerifier::judge(const PromptExample& task, const std::string& answer) const {
  RewardGroup g;
  g.prompt = task.prompt;
  g.reference = task.reference;
  g.record = task.record;
  RewardSample s;
  s.completion = answer;
  s.finish_reason = "stop";
  g.samples.push_back(s);
  const RewardResult r = reward_->score(g).at(0);
  TurnVerdict v;
  v.right = is_correct(r.score);
  v.explanation = r.score ? r.explanation : "no score: " + r.missing_reason;
  return v;
}

void TurnVerifier::check_record(const PromptExample& task) const {
  reward_->check_record(task.record, task.reference, task.where);
}

}  // namespace rlf
