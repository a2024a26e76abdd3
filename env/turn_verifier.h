// Judges one policy turn of a task with a reward (a [[reward]]-style table,
// e.g. {type = "math", answer_format = "gsm8k"}): right when the reward's
// score is > 0.5. Environments that give feedback on wrong answers
// ("try_again", "reflect_retry") use it after every answer turn; the run's
// own rewards still score the episode's last turn as usual.
#pragma once

#include <memory>
#include <string>

#include "data/examples.h"
#include "rewards/reward.h"
#include "util/json_util.h"

namespace rlf {

struct TurnVerdict {
  bool right = false;
  std::string explanation;  // the reward's words ("expected 46, got 45"), or why it has no score
};

class TurnVerifier {
 public:
  // Builds the reward now (an unknown type or option is an error naming `where`).
  TurnVerifier(const Json& reward_table, const std::string& where);
  TurnVerdict judge(const PromptExample& task, const std::string& answer) const;
  // Start-up check of a dataset record (the reward's own).
  void check_record(const PromptExample& task) const;

 private:
  std::shared_ptr<Reward> reward_;  // shared by every session of one environment (one thread at a time)
};

}  // namespace rlf
