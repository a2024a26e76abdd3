// The reward "judge": an LLM judge behind any OpenAI-compatible chat endpoint
// (net/chat_client.h: timeouts, retries with back-off, a concurrency limit,
// an on-disk cache), scoring each completion against a rubric or a checklist.
//
//   rubric     one request per completion: the judge reads the task, the
//              completion (multi-turn: the whole transcript), the reference
//              when the dataset has one, and the rubric, and ends its reply
//              with "Score: N" on the scale [min_score, max_score]; the reward
//              is (N - min_score) / (max_score - min_score), in [0, 1]
//              (LLM-as-a-judge, Zheng et al. 2023; rubrics as rewards,
//              Gunjal et al. 2025)
//   checklist  one request per (completion, item): a yes/no question; the
//              reward is the share of items answered yes (checklist feedback,
//              Viswanathan et al. 2025, RLCF)
//   pairwise   (mode = "pairwise", with a rubric) each completion against one
//              reference completion of its own group (Writing-Zero's BRPO, Jia
//              et al. 2025): the judge ends with "Winner: A", "Winner: B" or
//              "Winner: tie"; the reward is 1 for a win, 0 for a loss, 0.5 for a
//              tie (the reference itself gets 0.5). The reference is the group's
//              sample picked by a hash of the prompt and the completions (the
//              same on a resume). swap = true also asks with the two swapped
//              (position bias) and averages.
//   ranking    (mode = "ranking", with a rubric) one request per group with
//              every completion numbered; the judge ends with "Ranking: 3 > 1
//              > 2" (best first); the reward of the completion ranked r of G is
//              (G - r) / (G - 1) (best 1, worst 0). A reply that is not a
//              permutation of 1..G makes the whole group's scores missing.
//
//   [[reward]]
//   type = "judge"
//   base_url = "http://127.0.0.1:8000/v1"   # required
//   model = "judge"                         # required
//   api_key_env = ""                        # environment variable holding the API key ("" = none)
//   mode = "pointwise"                      # "pointwise" (rubric or checklist) | "pairwise" | "ranking"
//   swap = false                            # pairwise: also judge with the order swapped, average
//   rubric = ""                             # the criteria (rubric, pairwise and ranking modes)
//   checklist = []                          # or yes/no items (checklist mode); exactly one of the two
//   min_score = 0.0                         # rubric: the judge's scale
//   max_score = 10.0
//   system_prompt = ""                      # "" = the built-in one of the mode
//   timeout_s = 30.0, max_retries = 3, backoff_s = 0.5, max_concurrency = 4
//   max_tokens = 256, temperature = 0.0
//   cache_dir = ""                          # replies cached on disk: a resumed run does not pay twice
//
// A failed request, or a reply without a readable verdict (rubric: no number,
// or one outside the scale; checklist: neither yes nor no first), makes that
// completion's score missing, with the reason; nothing else is affected.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rewards/registry.h"

namespace rlf {

class ChatClient;  // net/chat_client.h (kept out of this header: its ChatMessage is not the tokenizer's)

struct JudgeRewardOptions {
  std::string base_url;
  std::string model;
  double timeout_s = 30.0;
  int64_t max_retries = 3;
  double backoff_s = 0.5;
  int64_t max_concurrency = 4;
  int64_t max_tokens = 256;
  double temperature = 0.0;
  std::string cache_dir;
  std::string api_key;                // read through api_key_env
  std::string api_key_env;
  std::string mode = "pointwise";
  bool swap = false;
  std::string rubric;
  std::vector<std::string> checklist;
  double min_score = 0.0;
  double max_score = 10.0;
  std::string system_prompt;
};

// The environment as the program reads it (the library reads none).
using ReadEnvironment = std::function<std::optional<std::string>(const std::string& name)>;

JudgeRewardOptions read_judge_options(OptionReader& reader, const ReadEnvironment& read_env);

// The verdict of a rubric reply: the number after the last "Score:" (any
// case), else the last number in the reply; nullopt when there is none.
std::optional<double> parse_judge_score(const std::string& reply);
// A checklist reply: true for "yes", false for "no" (the first word, any
// case, punctuation ignored); nullopt otherwise.
std::optional<bool> parse_judge_yes_no(const std::string& reply);
// A pairwise reply: the word after the last "Winner:" (any case, punctuation
// ignored): 1 for "A", 0 for "B", 0.5 for "tie"; nullopt otherwise.
std::optional<double> parse_judge_winner(const std::string& reply);
// A ranking reply: the numbers after the last "Ranking:" (else in the whole
// reply), best first, 1-based; nullopt unless they are a permutation of 1..n.
std::optional<std::vector<int64_t>> parse_judge_ranking(const std::string& reply, int64_t n);

class JudgeReward final : public Reward {
 public:
  explicit JudgeReward(JudgeRewardOptions options);
  ~JudgeReward() override;
  std::string name() const override { return "judge"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;

 private:
  std::vector<RewardResult> score_pointwise(const RewardGroup& group);
  std::vector<RewardResult> score_pairwise(const RewardGroup& group);
  std::vector<RewardResult> score_ranking(const RewardGroup& group);

  JudgeRewardOptions options_;
  std::unique_ptr<ChatClient> client_;
};

// The type "judge", reading API keys through `read_env`, for make_reward_set's `extra`.
RewardFactories judge_reward_factories(ReadEnvironment read_env);

}  // namespace rlf
