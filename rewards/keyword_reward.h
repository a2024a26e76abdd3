// The `keywords` reward: the fraction of required keywords present in a
// completion. The keywords come from the record field `field` (default
// "keywords"): a list of strings or one comma-separated string; blanks are
// trimmed and duplicates dropped. Matching is case-insensitive (Unicode case
// folding) unless case_sensitive, and by whole words unless whole_word is
// false ("cat" is then found in "concatenate"); a keyword may hold several
// words ("New York").
//
// Score: (keywords present) / (keywords required), in [0, 1].
// Explanation: "all 3 keywords present", "2/3 keywords present; missing: moon".
#pragma once

#include <string>
#include <vector>

#include "rewards/reward.h"
#include "rewards/reward_options.h"

namespace rlf {

struct KeywordRewardOptions {
  std::string field = "keywords";  // record field with the required keywords
  bool case_sensitive = false;     // false: "Paris" matches "paris"
  bool whole_word = true;          // true: a keyword must not be part of a longer word
};

void validate(const KeywordRewardOptions& options);
KeywordRewardOptions read_keyword_options(OptionReader& reader);

// The keywords of a record's field value (list or comma-separated string);
// throws naming `where` and the field when it is missing, of another type, or empty.
std::vector<std::string> parse_keywords(const Json& record, const std::string& field, const std::string& where);

class KeywordReward : public Reward {
 public:
  explicit KeywordReward(KeywordRewardOptions options = {});
  std::string name() const override { return "keywords"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;
  void check_record(const Json& record, const std::string& reference, const std::string& where) const override;

 private:
  KeywordRewardOptions options_;
};

}  // namespace rlf
