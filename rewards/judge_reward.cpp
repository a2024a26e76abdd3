#include "rewards/judge_reward.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "net/chat_client.h"
#include "util/error.h"

namespace rlf {

namespace {

const char* kRubricSystem =
    "You are a strict grader. Judge the response to the task against the rubric. Explain briefly, then end your "
    "reply with a line \"Score: N\", N a number from the scale given.";
const char* kPairwiseSystem =
    "You are a strict grader. Compare the two responses to the task against the criteria. Explain briefly, then end "
    "your reply with a line \"Winner: A\", \"Winner: B\" or \"Winner: tie\".";
const char* kRankingSystem =
    "You are a strict grader. Rank the numbered responses to the task against the criteria, best first. Explain "
    "briefly, then end your reply with a line \"Ranking: i > j > ...\" listing every response number once.";
const char* kChecklistSystem =
    "You are a strict grader. Answer the question about the response to the task with \"Yes\" or \"No\" first, "
    "then at most one sentence.";

// The completion as the judge sees it: the last turn, or every turn of a multi-turn episode.
std::string response_text(const RewardSample& s) {
  if (s.turns.empty()) return s.completion;
  std::string out;
  for (const TranscriptPart& t : s.turns) out += "[" + t.role + "] " + t.text + "\n";
  return out;
}

std::string task_block(const RewardGroup& g, const RewardSample& s) {
  std::string out = "Task:\n" + g.prompt + "\n\nResponse:\n" + response_text(s) + "\n";
  if (!g.reference.empty()) out += "\nReference answer:\n" + g.reference + "\n";
  return out;
}

// Numbers in a reply: optional sign, digits, optional decimals.
std::vector<std::pair<size_t, double>> numbers_in(const std::string& s) {
  std::vector<std::pair<size_t, double>> out;
  for (size_t i = 0; i < s.size();) {
    const bool sign = (s[i] == '-' || s[i] == '+') && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]));
    if (!sign && !std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      continue;
    }
    size_t j = i + (sign ? 1 : 0);
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
      ++j;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    }
    out.emplace_back(i, std::strtod(s.substr(i, j - i).c_str(), nullptr));
    i = j;
  }
  return out;
}

ChatClientOptions client_options(const JudgeRewardOptions& o) {
  ChatClientOptions c;
  c.base_url = o.base_url, c.model = o.model, c.api_key = o.api_key, c.timeout_s = o.timeout_s;
  c.max_retries = o.max_retries, c.backoff_s = o.backoff_s, c.max_concurrency = o.max_concurrency;
  c.max_tokens = o.max_tokens, c.temperature = o.temperature, c.cache_dir = o.cache_dir;
  return c;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The sample of a group that pairwise judging compares with: a hash of the prompt and the completions.
size_t reference_index(const RewardGroup& g) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0xFF) * 1099511628211ULL;
  };
  mix(g.prompt);
  for (const RewardSample& s : g.samples) mix(s.completion);
  return static_cast<size_t>(h % g.samples.size());
}

}  // namespace

std::optional<double> parse_judge_winner(const std::string& reply) {
  const std::string low = lower(reply);
  const size_t at = low.rfind("winner:");
  if (at == std::string::npos) return std::nullopt;
  size_t i = at + 7;
  while (i < low.size() && !std::isalpha(static_cast<unsigned char>(low[i]))) ++i;
  size_t j = i;
  while (j < low.size() && std::isalpha(static_cast<unsigned char>(low[j]))) ++j;
  const std::string word = low.substr(i, j - i);
  if (word == "a") return 1.0;
  if (word == "b") return 0.0;
  if (word == "tie") return 0.5;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> parse_judge_ranking(const std::string& reply, int64_t n) {
  const size_t at = lower(reply).rfind("ranking:");
  const std::string tail = at == std::string::npos ? reply : reply.substr(at + 8);
  std::vector<int64_t> order;
  for (const auto& [pos, v] : numbers_in(tail)) {
    if (v != std::floor(v) || v < 1 || v > static_cast<double>(n)) return std::nullopt;
    order.push_back(static_cast<int64_t>(v));
  }
  if (static_cast<int64_t>(order.size()) != n) return std::nullopt;
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < n; ++k)
    if (sorted[static_cast<size_t>(k)] != k + 1) return std::nullopt;
  return order;
}

std::optional<double> parse_judge_score(const std::string& reply) {
  const auto nums = numbers_in(reply);
  if (nums.empty()) return std::nullopt;
  const size_t at = lower(reply).rfind("score:");
  if (at != std::string::npos)
    for (const auto& [pos, v] : nums)
      if (pos > at) return v;
  return nums.back().second;
}

std::optional<bool> parse_judge_yes_no(const std::string& reply) {
  size_t i = 0;
  while (i < reply.size() && !std::isalpha(static_cast<unsigned char>(reply[i]))) ++i;
  size_t j = i;
  while (j < reply.size() && std::isalpha(static_cast<unsigned char>(reply[j]))) ++j;
  const std::string word = lower(reply.substr(i, j - i));
  if (word == "yes") return true;
  if (word == "no") return false;
  return std::nullopt;
}

JudgeRewardOptions read_judge_options(OptionReader& r, const ReadEnvironment& read_env) {
  JudgeRewardOptions o;
  o.base_url = r.get_string("base_url", "");
  o.model = r.get_string("model", "");
  o.api_key_env = r.get_string("api_key_env", "");
  o.mode = r.get_string("mode", o.mode);
  o.swap = r.get_bool("swap", o.swap);
  o.rubric = r.get_string("rubric", "");
  o.checklist = r.get_strings("checklist", {});
  o.min_score = r.get_double("min_score", o.min_score);
  o.max_score = r.get_double("max_score", o.max_score);
  o.system_prompt = r.get_string("system_prompt", "");
  o.timeout_s = r.get_double("timeout_s", o.timeout_s);
  o.max_retries = r.get_int("max_retries", o.max_retries);
  o.backoff_s = r.get_double("backoff_s", o.backoff_s);
  o.max_concurrency = r.get_int("max_concurrency", o.max_concurrency);
  o.max_tokens = r.get_int("max_tokens", o.max_tokens);
  o.temperature = r.get_double("temperature", o.temperature);
  o.cache_dir = r.get_string("cache_dir", "");
  check(!o.base_url.empty(), "option 'base_url' is required (an OpenAI-compatible endpoint, e.g. "
        "\"http://127.0.0.1:8000/v1\")");
  check(!o.model.empty(), "option 'model' is required (the judge model's name at the endpoint)");
  check(o.mode == "pointwise" || o.mode == "pairwise" || o.mode == "ranking",
        "option 'mode' must be \"pointwise\", \"pairwise\" or \"ranking\" (got \"", o.mode, "\")");
  if (o.mode == "pointwise") {
    check(o.rubric.empty() != o.checklist.empty(), "give exactly one of the options 'rubric' (a score on a scale) and "
          "'checklist' (yes/no items)");
  } else {
    check(!o.rubric.empty() && o.checklist.empty(), "mode = \"", o.mode, "\" compares responses against the criteria "
          "of option 'rubric' (required; 'checklist' is for mode = \"pointwise\")");
  }
  check(!o.swap || o.mode == "pairwise", "option 'swap' applies to mode = \"pairwise\"");
  for (const std::string& item : o.checklist) check(!item.empty(), "option 'checklist' has an empty item");
  check(std::isfinite(o.min_score) && std::isfinite(o.max_score) && o.max_score > o.min_score,
        "options 'min_score' < 'max_score' must be finite (got ", o.min_score, ", ", o.max_score, ")");
  client_options(o).validate("");
  if (!o.api_key_env.empty()) {
    std::optional<std::string> key = read_env ? read_env(o.api_key_env) : std::nullopt;
    check(key && !key->empty(), "option 'api_key_env' names the environment variable ", o.api_key_env,
          ", which is not set (export it, or leave api_key_env out for an endpoint without a key)");
    o.api_key = *key;
  }
  return o;
}

JudgeReward::JudgeReward(JudgeRewardOptions options)
    : options_(std::move(options)), client_(std::make_unique<ChatClient>(client_options(options_))) {}

JudgeReward::~JudgeReward() = default;

std::vector<RewardResult> JudgeReward::score(const RewardGroup& group) {
  if (group.samples.empty()) return {};
  if (options_.mode == "pairwise") return score_pairwise(group);
  if (options_.mode == "ranking") return score_ranking(group);
  return score_pointwise(group);
}

std::vector<RewardResult> JudgeReward::score_pairwise(const RewardGroup& group) {
  const std::string system = options_.system_prompt.empty() ? kPairwiseSystem : options_.system_prompt;
  const size_t G = group.samples.size(), ref = reference_index(group);
  auto ask = [&](const RewardSample& a, const RewardSample& b) {
    std::string user = "Task:\n" + group.prompt + "\n\nResponse A:\n" + response_text(a) + "\n\nResponse B:\n" +
                       response_text(b) + "\n";
    if (!group.reference.empty()) user += "\nReference answer:\n" + group.reference + "\n";
    user += "\nCriteria:\n" + options_.rubric + "\n";
    return std::vector<ChatMessage>{{"system", system}, {"user", user}};
  };
  std::vector<std::vector<ChatMessage>> requests;
  std::vector<size_t> who;  // the candidate of each request
  std::vector<bool> swapped;
  for (size_t i = 0; i < G; ++i) {
    if (i == ref) continue;
    requests.push_back(ask(group.samples[i], group.samples[ref])), who.push_back(i), swapped.push_back(false);
    if (options_.swap)
      requests.push_back(ask(group.samples[ref], group.samples[i])), who.push_back(i), swapped.push_back(true);
  }
  const std::vector<ChatResult> replies = client_->complete_many(requests);
  std::vector<RewardResult> out(G);
  out[ref].score = 0.5;
  out[ref].explanation = "judge: the group's reference response (pairwise)";
  std::vector<double> sum(G, 0.0), n(G, 0.0);
  std::vector<std::string> failed(G);
  for (size_t k = 0; k < requests.size(); ++k) {
    const size_t i = who[k];
    const ChatResult& c = replies[k];
    const auto v = c.ok ? parse_judge_winner(c.content) : std::nullopt;
    if (!c.ok) failed[i] = "judge: " + c.error;
    else if (!v) failed[i] = "judge: no \"Winner: A|B|tie\" in the reply: " + c.content.substr(0, 200);
    if (!failed[i].empty()) continue;
    sum[i] += swapped[k] ? 1.0 - *v : *v, n[i] += 1;
    out[i].explanation += (out[i].explanation.empty() ? "" : "\n---\n") + c.content;
  }
  for (size_t i = 0; i < G; ++i) {
    if (i == ref) continue;
    if (!failed[i].empty()) {
      out[i].missing_reason = failed[i];
      out[i].explanation.clear();
      continue;
    }
    out[i].score = sum[i] / n[i];
  }
  return out;
}

std::vector<RewardResult> JudgeReward::score_ranking(const RewardGroup& group) {
  const std::string system = options_.system_prompt.empty() ? kRankingSystem : options_.system_prompt;
  const int64_t G = static_cast<int64_t>(group.samples.size());
  std::vector<RewardResult> out(static_cast<size_t>(G));
  if (G == 1) {
    out[0].score = 1.0;
    out[0].explanation = "judge: a group of one (ranked first)";
    return out;
  }
  std::string user = "Task:\n" + group.prompt + "\n";
  for (int64_t k = 0; k < G; ++k)
    user += "\nResponse " + std::to_string(k + 1) + ":\n" + response_text(group.samples[static_cast<size_t>(k)]) + "\n";
  if (!group.reference.empty()) user += "\nReference answer:\n" + group.reference + "\n";
  user += "\nCriteria:\n" + options_.rubric + "\n";
  const std::vector<ChatMessage> messages = {{"system", system}, {"user", user}};
  const ChatResult c = client_->complete_many({messages}).at(0);
  const auto order = c.ok ? parse_judge_ranking(c.content, G) : std::nullopt;
  if (!order) {
    const std::string why = !c.ok ? "judge: " + c.error
                                  : "judge: no ranking of responses 1.." + std::to_string(G) + " in the reply: " +
                                        c.content.substr(0, 200);
    for (RewardResult& r : out) r.missing_reason = why;
    return out;
  }
  for (int64_t rank = 0; rank < G; ++rank) {
    RewardResult& r = out[static_cast<size_t>((*order)[static_cast<size_t>(rank)] - 1)];
    r.score = static_cast<double>(G - 1 - rank) / static_cast<double>(G - 1);
    r.explanation = "ranked " + std::to_string(rank + 1) + " of " + std::to_string(G) + ": " + c.content;
  }
  return out;
}

std::vector<RewardResult> JudgeReward::score_pointwise(const RewardGroup& group) {
  const bool checklist = !options_.checklist.empty();
  const std::string system = !options_.system_prompt.empty() ? options_.system_prompt
                             : checklist                      ? kChecklistSystem
                                                              : kRubricSystem;
  std::vector<std::vector<ChatMessage>> requests;
  for (const RewardSample& s : group.samples) {
    const std::string task = task_block(group, s);
    if (checklist) {
      for (const std::string& item : options_.checklist)
        requests.push_back({{"system", system}, {"user", task + "\nQuestion: " + item}});
    } else {
      requests.push_back({{"system", system},
                          {"user", task + "\nRubric:\n" + options_.rubric + "\n\nScale: " + str(options_.min_score) +
                                       " to " + str(options_.max_score) + "."}});
    }
  }
  const std::vector<ChatResult> replies = client_->complete_many(requests);
  std::vector<RewardResult> out(group.samples.size());
  const size_t per = checklist ? options_.checklist.size() : 1;
  for (size_t i = 0; i < out.size(); ++i) {
    RewardResult& r = out[i];
    if (!checklist) {
      const ChatResult& c = replies[i];
      if (!c.ok) {
        r.missing_reason = "judge: " + c.error;
        continue;
      }
      const auto v = parse_judge_score(c.content);
      if (!v || *v < options_.min_score || *v > options_.max_score) {
        r.missing_reason = str("judge: no score in [", options_.min_score, ", ", options_.max_score,
                               "] in the reply: ", c.content.substr(0, 200));
        continue;
      }
      r.score = (*v - options_.min_score) / (options_.max_score - options_.min_score);
      r.explanation = c.content;
      continue;
    }
    int64_t yes = 0;
    std::string failed, verdicts;
    for (size_t k = 0; k < per && failed.empty(); ++k) {
      const ChatResult& c = replies[i * per + k];
      const auto v = c.ok ? parse_judge_yes_no(c.content) : std::nullopt;
      if (!c.ok) failed = "judge: item " + std::to_string(k + 1) + ": " + c.error;
      else if (!v) failed = "judge: item " + std::to_string(k + 1) + ": no yes/no in the reply: " + c.content.substr(0, 200);
      else yes += *v ? 1 : 0, verdicts += (verdicts.empty() ? "" : "; ") + options_.checklist[k] + ": " + (*v ? "yes" : "no");
    }
    if (!failed.empty()) {
      r.missing_reason = failed;
      continue;
    }
    r.score = static_cast<double>(yes) / static_cast<double>(per);
    r.explanation = verdicts;
  }
  return out;
}

RewardFactories judge_reward_factories(ReadEnvironment read_env) {
  return {{"judge", [read_env](OptionReader& reader) -> std::unique_ptr<Reward> {
             JudgeRewardOptions o = read_judge_options(reader, read_env);
             reader.finish();
             return std::make_unique<JudgeReward>(std::move(o));
           }}};
}

}  // namespace rlf
