// The preset table, and tag-by-tag diagnosis of a mismatch for the tag presets.
#include "rewards/format_reward.h"

#include <algorithm>

namespace rlf {
namespace {

struct Preset {
  std::string name;
  std::string pattern;
  bool full = true;
  std::vector<std::string> tags;
  bool multiline = false;
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> table = {
      {"think_answer", R"(\s*<think>.*?</think>\s*<answer>.*?</answer>\s*)", true,
       {"<think>", "</think>", "<answer>", "</answer>"}},
      {"think", R"(\s*<think>.*?</think>.*)", true, {"<think>", "</think>"}},
      {"boxed", R"(\\boxed\s*\{)", false, {}},
      {"gsm8k", R"(^####\s*-?[0-9][0-9,]*(\.[0-9]+)?\s*$)", false, {}, true},
  };
  return table;
}

const Preset* find_preset(const std::string& name) {
  for (const Preset& p : presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TextPattern compile(const FormatRewardOptions& o) {
  if (const Preset* p = find_preset(o.preset)) return TextPattern(p->pattern, {false, true, p->multiline});
  return with_context("option 'pattern'", [&] {
    return TextPattern(o.pattern, {o.case_insensitive, o.dotall, o.multiline});
  });
}

std::string shorten_pattern(const std::string& s, size_t max_len = 60) {
  return s.size() > max_len ? s.substr(0, max_len) + "..." : s;
}

}  // namespace

const std::vector<std::string>& format_preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Preset& p : presets()) out.push_back(p.name);
    return out;
  }();
  return names;
}

void validate(const FormatRewardOptions& o) {
  check(o.preset.empty() != o.pattern.empty(),
        o.preset.empty() ? "neither option 'preset' nor 'pattern' is set; set one (presets: "
                         : "options 'preset' and 'pattern' are both set; keep one (presets: ",
        join_names(format_preset_names()), ")");
  check(o.preset.empty() || find_preset(o.preset), "option 'preset' is '", o.preset,
        "'; use one of: ", join_names(format_preset_names()));
  check(o.match.empty() || o.match == "full" || o.match == "search", "option 'match' is '", o.match,
        "'; use \"full\" (the whole completion) or \"search\" (anywhere in it)");
  check(o.correct_score != o.incorrect_score, "options 'correct_score' and 'incorrect_score' are both ",
        o.correct_score, "; give a match a different score than a mismatch");
}

FormatRewardOptions read_format_options(OptionReader& reader) {
  FormatRewardOptions o;
  o.preset = reader.get_string("preset", o.preset);
  o.pattern = reader.get_string("pattern", o.pattern);
  o.match = reader.get_string("match", o.match);
  o.case_insensitive = reader.get_bool("case_insensitive", o.case_insensitive);
  o.dotall = reader.get_bool("dotall", o.dotall);
  o.multiline = reader.get_bool("multiline", o.multiline);
  o.correct_score = reader.get_double("correct_score", o.correct_score);
  o.incorrect_score = reader.get_double("incorrect_score", o.incorrect_score);
  return o;
}

FormatReward::FormatReward(FormatRewardOptions options)
    : options_((validate(options), std::move(options))), regex_(compile(options_)) {
  if (const Preset* p = find_preset(options_.preset)) {
    full_ = p->full;
    label_ = p->name;
    tags_ = p->tags;
  }
  if (!options_.match.empty()) full_ = options_.match == "full";
}

std::string FormatReward::mismatch_reason(const std::string& text) const {
  if (!label_.empty()) {
    size_t at = 0;
    for (const std::string& tag : tags_) {
      size_t found = text.find(tag, at);
      if (found == std::string::npos) {
        return str("format mismatch (", label_, "): ",
                   text.find(tag) == std::string::npos ? str("no ", tag, " tag") : str(tag, " out of order"));
      }
      at = found + tag.size();
    }
    if (!tags_.empty()) return str("format mismatch (", label_, "): text outside the tags");
    return str("format mismatch (", label_, "): not found");
  }
  return str("format mismatch: pattern /", shorten_pattern(options_.pattern), "/ ",
             full_ ? "does not match the whole completion" : "not found");
}

std::vector<RewardResult> FormatReward::score(const RewardGroup& group) {
  std::vector<RewardResult> results(group.samples.size());
  for (size_t i = 0; i < group.samples.size(); ++i) {
    const std::string& text = group.samples[i].completion;
    TextPatternMatch m = full_ ? regex_.full_match(text) : regex_.search(text);
    RewardResult& r = results[i];
    if (!m.error.empty()) {
      r.missing_reason = str("format regex failed on this completion: ", m.error);
      continue;
    }
    r.score = m.matched ? options_.correct_score : options_.incorrect_score;
    r.explanation = m.matched ? (label_.empty() ? std::string("format ok") : str("format ok (", label_, ")"))
                              : mismatch_reason(text);
  }
  return results;
}

}  // namespace rlf
