// Resolves L_max / L_cache per group, then one closed-form score per completion.
#include "rewards/length_reward.h"

#include <algorithm>
#include <cmath>

namespace rlf {

void validate(const LengthRewardOptions& o) {
  check(o.mode == "overlong" || o.mode == "linear", "option 'mode' is '", o.mode,
        "'; use \"overlong\" (DAPO soft overlong punishment) or \"linear\"");
  check(o.unit == "tokens" || o.unit == "chars", "option 'unit' is '", o.unit, "'; use \"tokens\" or \"chars\"");
  check(o.max_length >= 0, "option 'max_length' is ", o.max_length,
        "; use a positive length, or 0 for the group's max_new_tokens");
  check(o.cache_length >= 0, "option 'cache_length' is ", o.cache_length,
        "; use a positive length, or 0 for max_length / 5");
  check(o.max_length == 0 || o.cache_length < o.max_length, "option 'cache_length' (", o.cache_length,
        ") must be smaller than 'max_length' (", o.max_length, ")");
  check(std::isfinite(o.penalty_factor) && o.penalty_factor >= 0, "option 'penalty_factor' is ", o.penalty_factor,
        "; use a number >= 0");
  check(std::isfinite(o.coef), "option 'coef' must be a finite number");
}

LengthRewardOptions read_length_options(OptionReader& reader) {
  LengthRewardOptions o;
  o.mode = reader.get_string("mode", o.mode);
  o.max_length = reader.get_int("max_length", o.max_length);
  o.cache_length = reader.get_int("cache_length", o.cache_length);
  o.penalty_factor = reader.get_double("penalty_factor", o.penalty_factor);
  o.coef = reader.get_double("coef", o.coef);
  o.unit = reader.get_string("unit", o.unit);
  return o;
}

double dapo_overlong_penalty(int64_t length, int64_t max_length, int64_t cache_length) {
  int64_t expected = max_length - cache_length;  // the longest length without a penalty
  if (length <= expected) return 0.0;
  if (length <= max_length) return double(expected - length) / double(cache_length);
  return -1.0;
}

LengthReward::LengthReward(LengthRewardOptions options) : options_(std::move(options)) { validate(options_); }

RewardResult LengthReward::score_one(int64_t length, int64_t max_length, int64_t cache_length) const {
  RewardResult r;
  const char* unit = options_.unit == "tokens" ? "tokens" : "chars";
  if (options_.mode == "linear") {
    double value = options_.coef * double(std::min(length, max_length)) / double(max_length);
    r.score = value;
    r.explanation = str("length ", length, " of ", max_length, " ", unit, ": ", value);
    return r;
  }
  double value = options_.penalty_factor * dapo_overlong_penalty(length, max_length, cache_length);
  if (value == 0.0) value = 0.0;  // no "-0" in logs
  r.score = value;
  int64_t expected = max_length - cache_length;
  if (length <= expected) {
    r.explanation = str("length ", length, " <= ", expected, " ", unit, ": no penalty");
  } else if (length <= max_length) {
    r.explanation = str("length ", length, " in the overlong cache (", expected, ", ", max_length, "] ", unit,
                        ": ", value);
  } else {
    r.explanation = str("length ", length, " > ", max_length, " ", unit, ": ", value);
  }
  return r;
}

std::vector<RewardResult> LengthReward::score(const RewardGroup& group) {
  int64_t max_length = options_.max_length > 0 ? options_.max_length : group.max_new_tokens;
  check(max_length > 0, "length reward: option 'max_length' is 0 and the group has no max_new_tokens; set max_length");
  int64_t cache_length = options_.cache_length > 0 ? options_.cache_length : std::max<int64_t>(1, max_length / 5);
  check(options_.mode == "linear" || cache_length < max_length, "length reward: cache_length (", cache_length,
        ") must be smaller than max_length (", max_length, ")");
  std::vector<RewardResult> results(group.samples.size());
  for (size_t i = 0; i < group.samples.size(); ++i) {
    const RewardSample& s = group.samples[i];
    if (options_.unit == "tokens" && s.completion_ids.empty() && !s.completion.empty()) {
      results[i].missing_reason = "length reward: the completion has text but no token ids (use unit = \"chars\")";
      continue;
    }
    int64_t length = options_.unit == "tokens" ? int64_t(s.completion_ids.size()) : int64_t(s.completion.size());
    results[i] = score_one(length, max_length, cache_length);
  }
  return results;
}

}  // namespace rlf
