// The `format` reward: whether a completion has a required layout, checked
// with a PCRE2 regular expression — a named preset or the user's pattern.
//
// Presets (full match unless said otherwise; '.' spans lines):
//   think_answer  \s*<think>.*?</think>\s*<answer>.*?</answer>\s*
//   think         \s*<think>.*?</think>.*   (a reasoning block first)
//   boxed         search for \boxed{
//   gsm8k         search for a final "#### <number>" line
// A user `pattern` is matched against the whole completion (match = "full")
// or anywhere in it (match = "search").
//
// Score: correct_score on a match, else incorrect_score. Explanation:
// "format ok (think_answer)", "format mismatch (think_answer): no </think> tag",
// "format mismatch: pattern /.../ does not match the whole completion".
// A regex engine error on one completion (match limit) is a missing score.
#pragma once

#include <string>
#include <vector>

#include "rewards/regex.h"
#include "rewards/reward.h"
#include "rewards/reward_options.h"

namespace rlf {

struct FormatRewardOptions {
  std::string preset;             // "" | think_answer | think | boxed | gsm8k (exactly one of preset, pattern)
  std::string pattern;            // a PCRE2 pattern (UTF-8, Unicode classes)
  std::string match;              // "full" | "search"; "" = the preset's own, else "full"
  bool case_insensitive = false;  // pattern only: Unicode case folding
  bool dotall = true;             // pattern only: '.' also matches newlines
  bool multiline = false;         // pattern only: '^' and '$' match at every line
  double correct_score = 1.0;     // score when the format matches
  double incorrect_score = 0.0;   // score when it does not
};

void validate(const FormatRewardOptions& options);
FormatRewardOptions read_format_options(OptionReader& reader);

// The names of the presets, for messages and docs.
const std::vector<std::string>& format_preset_names();

class FormatReward : public Reward {
 public:
  explicit FormatReward(FormatRewardOptions options = {});
  std::string name() const override { return "format"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;

 private:
  // Why `text` does not match (the first missing tag of a tag preset).
  std::string mismatch_reason(const std::string& text) const;

  FormatRewardOptions options_;
  TextPattern regex_;
  bool full_ = true;
  std::string label_;              // preset name, or "" for a user pattern
  std::vector<std::string> tags_;  // tags the preset needs, in order (for explanations)
};

}  // namespace rlf
