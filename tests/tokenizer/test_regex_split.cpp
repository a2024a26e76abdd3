// The regex splitter against Python `tokenizers` (Oniguruma): 141 Hub split
// patterns x 19 inputs plus edge cases, with the pieces tokenizers produced
// (shared/tokenizers/vectors/split-regex).
#include <gtest/gtest.h>

#include <set>

#include "tests/support/test_env.h"
#include "tokenizer/regex_split.h"
#include "util/json_util.h"

namespace rlf {
namespace {

std::vector<std::string> split_text(const Regex& re, const std::string& text, SplitBehavior behavior, bool invert) {
  std::vector<std::string> out;
  for (auto [b, e] : split_by_matches(text.size(), re.find_all(text), behavior, invert))
    out.push_back(text.substr(b, e - b));
  return out;
}

// Patterns where PCRE2 cannot express Oniguruma's behaviour; each with the reason.
const std::set<std::string> kExempt = {
    // (?i:ss) matches "ß" in Oniguruma (full case folding, one character
    // matching two); PCRE2 only folds character by character.
    "edge-ci-full-fold",
};

TEST(RegexSplit, HubPatternsMatchTokenizersOracle) {
  Json patterns = read_json_file(test::shared_path("tokenizers/vectors/split-regex/splitRegexPatterns.json").string());
  Json oracle = read_json_file(test::shared_path("tokenizers/vectors/split-regex/splitRegexOracle.json").string());
  const Json& defaults = patterns["defaults"];
  const Json& expected_all = oracle["tokens"];
  std::map<std::string, std::string> by_id;
  int n_cases = 0, n_failed = 0;
  auto run_case = [&](const std::string& key, const std::string& pattern, const Json& inputs, SplitBehavior behavior,
                      bool invert) {
    ASSERT_TRUE(expected_all.contains(key)) << key;
    const Json& expected = expected_all[key];
    Regex re(pattern, key);
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::string input = inputs[k].get<std::string>();
      auto got = split_text(re, input, behavior, invert);
      auto want = expected[k].get<std::vector<std::string>>();
      ++n_cases;
      if (got != want && !kExempt.count(key)) {
        ++n_failed;
        std::string g, w;
        for (auto& s : got) g += "[" + s + "]";
        for (auto& s : want) w += "[" + s + "]";
        ADD_FAILURE() << key << " pattern " << Json(pattern).dump() << " as PCRE2 " << Json(re.pcre2_pattern()).dump()
                      << "\n input " << Json(input).dump() << "\n got  " << g << "\n want " << w;
      }
    }
  };
  for (const Json& p : patterns["patterns"]) {
    std::string key = p.contains("name") ? p["name"].get<std::string>() : p["id"].get<std::string>();
    by_id[p["id"].get<std::string>()] = p["pattern"].get<std::string>();
    const Json& inputs = p.contains("inputs") ? p["inputs"] : defaults["inputs"];
    run_case(key, p["pattern"].get<std::string>(), inputs, SplitBehavior::Removed, true);
  }
  for (const Json& c : patterns["additionalCases"]) {
    SplitBehavior behavior = parse_split_behavior(c.value("behavior", std::string("Removed")), "case");
    run_case(c["name"].get<std::string>(), by_id.at(c["patternId"].get<std::string>()), c["inputs"], behavior,
             c.value("invert", true));
  }
  EXPECT_GT(n_cases, 141 * 19 / 2);
  EXPECT_EQ(n_failed, 0);
}

TEST(RegexSplit, BehaviorsOnLiteralMatches) {
  std::string text = "a--b-c";
  auto matches = find_literal(text, "-");
  auto pieces = [&](SplitBehavior b, bool invert) {
    std::vector<std::string> out;
    for (auto [s, e] : split_by_matches(text.size(), matches, b, invert)) out.push_back(text.substr(s, e - s));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces(SplitBehavior::Removed, false), (V{"a", "b", "c"}));
  EXPECT_EQ(pieces(SplitBehavior::Isolated, false), (V{"a", "-", "-", "b", "-", "c"}));
  EXPECT_EQ(pieces(SplitBehavior::MergedWithPrevious, false), (V{"a-", "-", "b-", "c"}));
  EXPECT_EQ(pieces(SplitBehavior::MergedWithNext, false), (V{"a", "-", "-b", "-c"}));
  EXPECT_EQ(pieces(SplitBehavior::Contiguous, false), (V{"a", "--", "b", "-", "c"}));
  EXPECT_EQ(pieces(SplitBehavior::Removed, true), (V{"-", "-", "-"}));
}

TEST(RegexSplit, BadPatternNamesContext) {
  try {
    Regex re("(unclosed", "tokenizer.json: pre_tokenizer.pattern.Regex");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json: pre_tokenizer.pattern.Regex: cannot compile regex '(unclosed'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rlf
