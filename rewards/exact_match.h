// The `math` reward: extracts the final answer from each completion and checks
// it against the reference answer with the math verifier (normalised
// equivalence: "0.5" = "\frac{1}{2}", "1,000" = "1000", ...).
//
// Answer formats: GSM8K "#### n", \boxed{...}, "the answer is n", the last
// number, or "auto" (all of these in that order; see rewards/math/answer_extract.h).
// The reference is group.reference, or the record field `reference_field`;
// a reference written as a worked solution ("... #### 42", "\boxed{42}") is
// reduced to its final answer first.
//
// Score: correct_score when equivalent, else incorrect_score (also when no
// answer is found). Explanation: "correct: expected 42, got 42",
// "expected 42, got 41", "no answer found (format gsm8k)".
#pragma once

#include <string>

#include "rewards/math/answer_extract.h"
#include "rewards/reward.h"
#include "rewards/reward_options.h"

namespace rlf {

struct ExactMatchOptions {
  std::string answer_format = "auto";  // where the answer is: auto | gsm8k | boxed | answer_is | last_number
  std::string reference_field;         // record field holding the reference; "" = the group's reference
  double correct_score = 1.0;          // score of an equivalent answer
  double incorrect_score = 0.0;        // score of a wrong or missing answer
};

// Throws rlf::Error naming the field and the fix.
void validate(const ExactMatchOptions& options);
// Reads the options from a config table (unknown keys are left to reader.finish()).
ExactMatchOptions read_exact_match_options(OptionReader& reader);

// Parses "auto", "gsm8k", "boxed", "answer_is", "last_number" ('-' or '_').
math::AnswerFormat parse_reward_answer_format(const std::string& name);

class ExactMatchReward : public Reward {
 public:
  explicit ExactMatchReward(ExactMatchOptions options = {});
  std::string name() const override { return "math"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;
  void check_record(const Json& record, const std::string& reference, const std::string& where) const override;

 private:
  // The reference answer of a group (throws naming the missing field).
  std::string reference_of(const Json& record, const std::string& reference, const std::string& where) const;

  ExactMatchOptions options_;
  math::AnswerFormat format_;
};

}  // namespace rlf
