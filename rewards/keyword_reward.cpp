// One case-folding PCRE2 search per keyword, bounded by lookarounds for whole words.
#include "rewards/keyword_reward.h"

#include <algorithm>

#include "rewards/regex.h"

namespace rlf {
namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

void validate(const KeywordRewardOptions& options) {
  check(!options.field.empty(), "option 'field' is empty; name the record field holding the keywords");
}

KeywordRewardOptions read_keyword_options(OptionReader& reader) {
  KeywordRewardOptions o;
  o.field = reader.get_string("field", o.field);
  o.case_sensitive = reader.get_bool("case_sensitive", o.case_sensitive);
  o.whole_word = reader.get_bool("whole_word", o.whole_word);
  return o;
}

std::vector<std::string> parse_keywords(const Json& record, const std::string& field, const std::string& where) {
  auto it = record.is_object() ? record.find(field) : record.end();
  check(record.is_object() && it != record.end() && !it->is_null(), where,
        ": keywords reward needs the record field '", field, "' (a list of strings or a comma-separated string)",
        " but the record has none; add it or set the reward's option 'field'");
  std::vector<std::string> raw;
  if (it->is_string()) {
    std::string s = it->get<std::string>();
    for (size_t start = 0;;) {
      size_t comma = s.find(',', start);
      raw.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (it->is_array()) {
    for (const Json& k : *it) {
      check(k.is_string(), where, ": record field '", field, "' must hold strings, got ", k.type_name());
      raw.push_back(k.get<std::string>());
    }
  } else {
    fail(where, ": record field '", field, "' must be a list of strings or a comma-separated string, got ",
         it->type_name());
  }
  std::vector<std::string> out;
  for (const std::string& k : raw) {
    std::string t = trim(k);
    if (!t.empty() && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  check(!out.empty(), where, ": record field '", field, "' holds no keywords");
  return out;
}

KeywordReward::KeywordReward(KeywordRewardOptions options) : options_(std::move(options)) { validate(options_); }

void KeywordReward::check_record(const Json& record, const std::string& reference, const std::string& where) const {
  parse_keywords(record, options_.field, where);
}

std::vector<RewardResult> KeywordReward::score(const RewardGroup& group) {
  std::vector<std::string> keywords = parse_keywords(group.record, options_.field, "keywords reward");
  std::vector<TextPattern> regexes;
  for (const std::string& k : keywords) {
    // (?<!\w) and (?!\w) rather than \b: a keyword may start or end with a non-word character ("C++").
    std::string body = regex_escape(k);
    std::string pattern = options_.whole_word ? "(?<!\\w)" + body + "(?!\\w)" : body;
    regexes.emplace_back(pattern, TextPatternOptions{.case_insensitive = !options_.case_sensitive});
  }
  std::vector<RewardResult> results(group.samples.size());
  for (size_t i = 0; i < group.samples.size(); ++i) {
    std::vector<std::string> missing;
    std::string error;
    for (size_t k = 0; k < keywords.size(); ++k) {
      TextPatternMatch m = regexes[k].search(group.samples[i].completion);
      if (!m.error.empty()) error = m.error;
      if (!m.matched) missing.push_back(keywords[k]);
    }
    RewardResult& r = results[i];
    if (!error.empty()) {
      r.missing_reason = "keyword search failed on this completion: " + error;
      continue;
    }
    size_t n_found = keywords.size() - missing.size();
    r.score = double(n_found) / double(keywords.size());
    r.explanation = missing.empty() ? str("all ", keywords.size(), " keywords present")
                                    : str(n_found, "/", keywords.size(), " keywords present; missing: ",
                                          join_names(missing));
  }
  return results;
}

}  // namespace rlf
