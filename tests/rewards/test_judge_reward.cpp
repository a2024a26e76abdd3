// The reward "judge" against a local stand-in OpenAI-compatible server
// (tests/net/chat_stub_server.py): rubric scores on the configured scale,
// checklist shares, what the judge is sent, failures and unreadable verdicts
// as missing scores of only their completion, the API key read through the
// program's environment lookup, and option errors.
#include <gtest/gtest.h>

#include "rewards/judge_reward.h"
#include "tests/net/chat_stub.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

using test::error_of;

RewardGroup judge_group(const std::vector<std::string>& completions, const std::string& reference = "") {
  RewardGroup g;
  g.prompt = "Write one sentence about a cat.";
  g.reference = reference;
  for (const std::string& c : completions) {
    RewardSample s;
    s.completion = c;
    g.samples.push_back(s);
  }
  return g;
}

std::unique_ptr<Reward> judge(const test::StubServer& server, Json options, ReadEnvironment env = {}) {
  options["base_url"] = server.base_url();
  options["model"] = "stub-judge";
  options["max_retries"] = 0;
  options["timeout_s"] = 5;
  OptionReader reader(options, "judge", "cfg.toml");
  JudgeRewardOptions o = read_judge_options(reader, env);
  reader.finish();
  return std::make_unique<JudgeReward>(o);
}

TEST(JudgeParsing, ScoresAndYesNo) {
  EXPECT_EQ(parse_judge_score("Good, concise. Score: 7"), 7.0);
  EXPECT_EQ(parse_judge_score("3 issues found.\nscore: 8.5/10"), 8.5);
  EXPECT_EQ(parse_judge_score("I would give it 6"), 6.0);
  EXPECT_EQ(parse_judge_score("Score: -2"), -2.0);
  EXPECT_FALSE(parse_judge_score("no verdict").has_value());
  EXPECT_EQ(parse_judge_yes_no("Yes."), true);
  EXPECT_EQ(parse_judge_yes_no("  **NO**, it does not"), false);
  EXPECT_FALSE(parse_judge_yes_no("Maybe").has_value());
  EXPECT_FALSE(parse_judge_yes_no("").has_value());
}

TEST(JudgeParsing, WinnersAndRankings) {
  EXPECT_EQ(parse_judge_winner("B is vague.\nWinner: A"), 1.0);
  EXPECT_EQ(parse_judge_winner("winner: **b**."), 0.0);
  EXPECT_EQ(parse_judge_winner("Winner: A? No. Winner: Tie"), 0.5);
  EXPECT_FALSE(parse_judge_winner("A is better").has_value());
  EXPECT_FALSE(parse_judge_winner("Winner: C").has_value());
  EXPECT_EQ(parse_judge_ranking("1 is wordy.\nRanking: 3 > 1 > 2", 3), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(parse_judge_ranking("2, 1", 2), (std::vector<int64_t>{2, 1}));
  EXPECT_FALSE(parse_judge_ranking("Ranking: 3 > 1 > 1", 3).has_value()) << "not a permutation";
  EXPECT_FALSE(parse_judge_ranking("Ranking: 1 > 2", 3).has_value()) << "one missing";
  EXPECT_FALSE(parse_judge_ranking("Ranking: 1 > 2 > 4", 3).has_value());
  EXPECT_FALSE(parse_judge_ranking("Ranking: 1.5 > 2 > 3", 3).has_value());
}

TEST(JudgeReward, PairwiseAgainstTheGroupsReferenceResponse) {
  test::StubServer server;
  // The first MODE in a request is its response A's: the candidate's when not swapped.
  auto r = judge(server, {{"mode", "pairwise"}, {"rubric", "Which is more vivid?"}});
  const auto g = judge_group({"MODE: reply:Winner:_A", "MODE: reply:Winner:_B", "MODE: reply:Winner:_tie",
                           "MODE: reply:no_verdict"});
  const auto out = r->score(g);
  ASSERT_EQ(out.size(), 4u);
  // Exactly one response is the reference (0.5); each other gets its own verdict as candidate A.
  const double want[] = {1.0, 0.0, 0.5};
  size_t ref = 4;
  for (size_t i = 0; i < 4; ++i)
    if (out[i].explanation.find("reference response") != std::string::npos) ref = i;
  ASSERT_LT(ref, 4u);
  for (size_t i = 0; i < 3; ++i) {
    if (i == ref) continue;
    ASSERT_TRUE(out[i].score) << i;
    EXPECT_DOUBLE_EQ(*out[i].score, want[i]) << i;
  }
  if (ref != 3) {
    EXPECT_FALSE(out[3].score) << "an unreadable verdict is a missing score";
    EXPECT_NE(out[3].missing_reason.find("no \"Winner: A|B|tie\""), std::string::npos);
  }
  EXPECT_EQ(server.count(), 3) << "one request per non-reference response";
  // The same group picks the same reference again (a resumed run judges alike).
  const auto again = r->score(g);
  EXPECT_EQ(again[ref].explanation, out[ref].explanation);
  // swap: each pair is asked twice, the second time with the reference first: its MODE decides there.
  auto sw = judge(server, {{"mode", "pairwise"}, {"rubric", "x"}, {"swap", true}});
  const auto g2 = judge_group({"MODE: reply:Winner:_A", "MODE: reply:Winner:_A"});
  const auto o2 = sw->score(g2);
  // Candidate as A wins (1); reference as A wins, so the candidate loses (1 - 1 = 0): mean 0.5.
  for (size_t i = 0; i < 2; ++i) EXPECT_DOUBLE_EQ(*o2[i].score, 0.5) << i;
}

TEST(JudgeReward, RankingScoresEachResponseByItsPlace) {
  test::StubServer server;
  auto r = judge(server, {{"mode", "ranking"}, {"rubric", "MODE: reply:Ranking:_2_>_3_>_1"}});
  const auto out = r->score(judge_group({"a cat", "a fine cat", "a cat, fine"}));
  EXPECT_DOUBLE_EQ(*out[1].score, 1.0);
  EXPECT_DOUBLE_EQ(*out[2].score, 0.5);
  EXPECT_DOUBLE_EQ(*out[0].score, 0.0);
  EXPECT_EQ(server.count(), 1) << "one request for the whole group";
  auto bad = judge(server, {{"mode", "ranking"}, {"rubric", "MODE: reply:Ranking:_2_>_2_>_1"}});
  for (const auto& x : bad->score(judge_group({"a", "b", "c"}))) {
    EXPECT_FALSE(x.score);
    EXPECT_NE(x.missing_reason.find("no ranking of responses 1..3"), std::string::npos);
  }
  const std::string e = error_of([&] { judge(server, {{"mode", "ranking"}, {"checklist", {"a"}}}); });
  EXPECT_NE(e.find("compares responses against the criteria of option 'rubric'"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { judge(server, {{"mode", "pairs"}, {"rubric", "x"}}); }).find("option 'mode' must be"),
            std::string::npos);
  EXPECT_NE(error_of([&] { judge(server, {{"swap", true}, {"rubric", "x"}}); }).find("option 'swap' applies"),
            std::string::npos);
}

TEST(JudgeReward, RubricScoresAreNormalisedToTheScale) {
  test::StubServer server;
  auto r = judge(server, {{"rubric", "Is it about a cat?"}, {"min_score", 1}, {"max_score", 5}});
  const auto out = r->score(judge_group({"A cat sat. MODE: reply:Fine._Score:_4", "MODE: reply:Score:_1",
                                      "MODE: reply:Score:_9", "MODE: reply:no_idea", "MODE: status:500"}));
  ASSERT_EQ(out.size(), 5u);
  EXPECT_DOUBLE_EQ(*out[0].score, 0.75);  // (4 - 1) / (5 - 1)
  EXPECT_EQ(out[0].explanation, "Fine. Score: 4");
  EXPECT_DOUBLE_EQ(*out[1].score, 0.0);
  EXPECT_FALSE(out[2].score.has_value());  // 9 is off the scale
  EXPECT_NE(out[2].missing_reason.find("no score in [1, 5]"), std::string::npos) << out[2].missing_reason;
  EXPECT_FALSE(out[3].score.has_value());
  EXPECT_FALSE(out[4].score.has_value());
  EXPECT_NE(out[4].missing_reason.find("HTTP 500"), std::string::npos) << out[4].missing_reason;
}

TEST(JudgeReward, TheJudgeSeesTheTaskTheResponseTheReferenceAndTheRubric) {
  test::StubServer server;
  auto r = judge(server, {{"rubric", "Mentions whiskers."}});
  // echo replies with the request itself, which the result quotes (as its explanation, or the reason it has no score).
  const auto out = r->score(judge_group({"The cat licked its whiskers. MODE: echo"}, "Cats have whiskers."));
  const std::string seen = out[0].explanation + out[0].missing_reason;
  for (const char* part : {"Write one sentence about a cat.", "The cat licked its whiskers.", "Reference answer",
                           "Mentions whiskers.", "Scale: 0 to 10", "stub-judge"})
    EXPECT_NE(seen.find(part), std::string::npos) << part << " not in " << seen;
}

TEST(JudgeReward, ChecklistScoreIsTheShareOfYes) {
  test::StubServer server;
  auto r = judge(server, {{"checklist", {"Does it mention a dog?", "Does it mention a hat?", "Is it one sentence?"}}});
  // yes_if:dog answers yes to the items that name "dog".
  const auto out = r->score(judge_group({"A cat sat. MODE: yes_if:dog", "MODE: yes_if:hat",
                                      "MODE: yes_if:zebra", "MODE: reply:Perhaps"}));
  EXPECT_NEAR(*out[0].score, 1.0 / 3.0, 1e-12);
  EXPECT_EQ(out[0].explanation, "Does it mention a dog?: yes; Does it mention a hat?: no; Is it one sentence?: no");
  EXPECT_NEAR(*out[1].score, 1.0 / 3.0, 1e-12);
  EXPECT_EQ(*out[2].score, 0.0);
  EXPECT_FALSE(out[3].score.has_value());
  EXPECT_NE(out[3].missing_reason.find("item 1: no yes/no"), std::string::npos);
  EXPECT_EQ(server.count(), 12);  // one request per (completion, item)
}

TEST(JudgeReward, TheApiKeyComesFromTheNamedVariableAndErrorsNameTheOption) {
  test::StubServer server;
  ReadEnvironment env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "JUDGE_KEY") return std::string("sk-test");
    return std::nullopt;
  };
  auto r = judge(server, {{"rubric", "x"}, {"api_key_env", "JUDGE_KEY"}}, env);
  const auto out = r->score(judge_group({"MODE: echo"}));
  const std::string seen = out[0].explanation + out[0].missing_reason;
  EXPECT_NE(seen.find("Bearer sk-test"), std::string::npos) << seen;
  auto error = [&](Json t) {
    t["type"] = "judge";
    if (!t.contains("base_url")) t["base_url"] = server.base_url();
    if (!t.contains("model")) t["model"] = "m";
    return error_of([&] { make_reward_set(Json::array({t}), "cfg.toml", judge_reward_factories(env)); });
  };
  EXPECT_NE(error({{"rubric", "x"}, {"api_key_env", "NOPE"}}).find("NOPE, which is not set"), std::string::npos);
  EXPECT_NE(error(Json::object()).find("exactly one of the options 'rubric'"), std::string::npos);
  EXPECT_NE(error({{"rubric", "x"}, {"checklist", {"y"}}}).find("exactly one"), std::string::npos);
  EXPECT_NE(error({{"rubric", "x"}, {"min_score", 5}, {"max_score", 5}}).find("'min_score' < 'max_score'"),
            std::string::npos);
  EXPECT_NE(error({{"rubric", "x"}, {"timeout_s", -1}}).find("timeout_s"), std::string::npos);
  EXPECT_NE(error({{"rubric", "x"}, {"base_url", ""}}).find("option 'base_url' is required"), std::string::npos);
  EXPECT_NE(error({{"rubric", "x"}, {"rubrik", "y"}}).find("rubrik"), std::string::npos);
}

}  // namespace
}  // namespace rlf
