#include "rm/process_reward.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "rm/reward_model.h"
#include "util/error.h"

namespace rlf {

std::vector<int64_t> step_end_positions(const Tokenizer& tokenizer, std::span<const int32_t> ids,
                                        const std::string& delimiter) {
  check(!delimiter.empty(), "step_end_positions: the delimiter is empty");
  std::vector<int64_t> ends;
  std::string text;
  size_t searched = 0;   // occurrences starting before this offset are counted
  int64_t last = -1;     // the last token with text (special tokens such as EOS have none and end no step)
  for (size_t i = 0; i < ids.size(); ++i) {
    if (tokenizer.is_special(ids[i])) continue;
    text += tokenizer.token_bytes(ids[i]);
    last = static_cast<int64_t>(i);
    // Every occurrence completed by this token ends a step here (one end per token).
    bool ends_here = false;
    for (size_t at = text.find(delimiter, searched); at != std::string::npos; at = text.find(delimiter, searched)) {
      searched = at + delimiter.size();
      ends_here = true;
    }
    if (ends_here) ends.push_back(last);
  }
  // The last step: text after the last delimiter.
  if (last >= 0 && searched < text.size() && (ends.empty() || ends.back() != last)) ends.push_back(last);
  return ends;
}

std::vector<std::vector<double>> step_probabilities(CausalLMImpl& model, const std::vector<std::vector<int32_t>>& seqs,
                                                    const std::vector<std::vector<int64_t>>& ends,
                                                    int64_t micro_batch_size) {
  const auto z = score_positions(model, seqs, ends, 0, micro_batch_size);
  std::vector<std::vector<double>> p(z.size());
  for (size_t i = 0; i < z.size(); ++i)
    for (float v : z[i]) p[i].push_back(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
  return p;
}

ProcessInput process_input(const Tokenizer& tokenizer, const StepExample& example, const std::string& delimiter,
                           bool add_special) {
  ProcessInput in;
  in.tokens = tokenizer.encode(example.prompt, add_special);
  in.prompt_tokens = static_cast<int64_t>(in.tokens.size());
  const auto response = tokenizer.encode(example.response(delimiter), false);
  in.tokens.insert(in.tokens.end(), response.begin(), response.end());
  for (int64_t e : step_end_positions(tokenizer, response, delimiter)) in.ends.push_back(in.prompt_tokens + e);
  check(in.ends.size() == example.steps.size(), example.where, ": the solution's tokens give ", in.ends.size(),
        " step ends for ", example.steps.size(), " steps (the delimiter ", Json(delimiter).dump(),
        " must survive tokenization: choose one the tokenizer keeps apart)");
  return in;
}

Json ProcessRewardMetrics::to_json() const {
  return {{"solutions", n_solutions}, {"steps", n_steps}, {"step_accuracy", step_accuracy}, {"bce", bce},
          {"solution_accuracy", solution_accuracy}, {"first_error", first_error}, {"label_mean", label_mean}};
}

ProcessRewardMetrics measure_process_reward(CausalLMImpl& model, const Tokenizer& tokenizer,
                                            const std::vector<StepExample>& examples, const std::string& delimiter,
                                            bool add_special, int64_t micro_batch_size) {
  ProcessRewardMetrics m;
  if (examples.empty()) return m;
  std::vector<std::vector<int32_t>> seqs;
  std::vector<std::vector<int64_t>> ends;
  for (const StepExample& e : examples) {
    ProcessInput in = process_input(tokenizer, e, delimiter, add_special);
    seqs.push_back(std::move(in.tokens));
    ends.push_back(std::move(in.ends));
  }
  const auto p = step_probabilities(model, seqs, ends, micro_batch_size);
  int64_t right_steps = 0, right_solutions = 0, with_error = 0, first_found = 0, labelled_right = 0;
  double bce = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const auto& y = examples[i].labels;
    bool all_good = true, judged_good = true;
    int64_t first_wrong = -1, first_flag = -1;
    for (size_t k = 0; k < y.size(); ++k) {
      const double pk = std::clamp(p[i][k], 1e-12, 1.0 - 1e-12);
      right_steps += (pk > 0.5) == (y[k] > 0.5);
      labelled_right += y[k] > 0.5;
      bce += -(y[k] * std::log(pk) + (1 - y[k]) * std::log(1 - pk));
      if (y[k] <= 0.5 && first_wrong < 0) first_wrong = static_cast<int64_t>(k);
      if (pk <= 0.5 && first_flag < 0) first_flag = static_cast<int64_t>(k);
      all_good = all_good && y[k] > 0.5;
      judged_good = judged_good && pk > 0.5;
    }
    right_solutions += all_good == judged_good;
    if (first_wrong >= 0) ++with_error, first_found += first_flag == first_wrong;
    m.n_steps += static_cast<int64_t>(y.size());
  }
  m.n_solutions = static_cast<int64_t>(examples.size());
  m.step_accuracy = static_cast<double>(right_steps) / static_cast<double>(m.n_steps);
  m.bce = bce / static_cast<double>(m.n_steps);
  m.solution_accuracy = static_cast<double>(right_solutions) / static_cast<double>(m.n_solutions);
  m.label_mean = static_cast<double>(labelled_right) / static_cast<double>(m.n_steps);
  m.first_error = with_error ? static_cast<double>(first_found) / static_cast<double>(with_error) : 0.0;
  return m;
}

ProcessReward::ProcessReward(ProcessRewardOptions options) : options_(std::move(options)) {
  check(!options_.model.empty(), "option 'model' is required: the process reward model's directory (RUN/final of an "
        "rlf train run with trainer.kind = \"rm\" and [process.data])");
  check(!options_.delimiter.empty(), "option 'delimiter' must not be empty (it separates the steps)");
  bounding_ = with_context("option 'bounding'", [&] { return algo::parse_step_bounding(options_.bounding); });
  check(std::isfinite(options_.clip_threshold), "option 'clip_threshold' must be a finite number");
  check(options_.placement == "steps" || options_.placement == "outcome",
        "option 'placement' must be \"steps\" or \"outcome\" (got \"", options_.placement, "\")");
  check(options_.micro_batch_size > 0, "option 'micro_batch_size' must be > 0 (got ", options_.micro_batch_size, ")");
  check(std::filesystem::exists(std::filesystem::path(options_.model) / "config.json"), "option 'model': '",
        options_.model, "' is not a model directory (no config.json)");
  LoadOptions lo;
  lo.dtype = options_.dtype;
  lo.device = options_.device;
  prm_ = load_policy(options_.model, options_.tokenizer, lo);
  const ModelConfig& c = prm_.model()->config();
  check(c.is_classifier(), "option 'model': '", options_.model, "' is a ", c.architecture,
        ", not a reward model (a *ForSequenceClassification directory)");
  prm_.model()->eval();
  for (auto& p : prm_.model()->parameters()) p.set_requires_grad(false);
}

std::vector<RewardResult> ProcessReward::score(const RewardGroup& group) {
  std::vector<RewardResult> out(group.samples.size());
  const int64_t limit = prm_.model()->config().max_position_embeddings;
  const int64_t vocab = prm_.model()->config().vocab_size;
  std::vector<size_t> ok;
  std::vector<std::vector<int32_t>> seqs;
  std::vector<std::vector<int64_t>> ends;  // absolute
  std::vector<int64_t> starts;             // where the completion starts in seqs[k]
  for (size_t i = 0; i < group.samples.size(); ++i) {
    const RewardSample& s = group.samples[i];
    std::vector<int32_t> prompt = s.prompt_ids, completion = s.completion_ids;
    if (prompt.empty() || completion.empty()) {
      prompt = prm_.tokenizer->encode(group.prompt, options_.add_special_tokens);
      completion = prm_.tokenizer->encode(s.completion, false);
    }
    if (std::any_of(completion.begin(), completion.end(), [&](int32_t t) { return t < 0 || t >= vocab; })) {
      out[i].missing_reason = str("process_reward: a completion token is outside the PRM's vocabulary of ", vocab,
                                  " (the PRM must share the policy's tokenizer)");
      continue;
    }
    std::vector<int64_t> e = step_end_positions(*prm_.tokenizer, completion, options_.delimiter);
    // Multi-turn: only steps the policy wrote earn rewards.
    if (!s.policy_mask.empty() && s.policy_mask.size() == completion.size())
      e.erase(std::remove_if(e.begin(), e.end(), [&](int64_t t) { return !s.policy_mask[static_cast<size_t>(t)]; }),
              e.end());
    if (e.empty()) {
      out[i].score = 0.0;
      out[i].explanation = "process reward: no step to score";
      if (options_.placement == "steps") out[i].token_rewards.assign(completion.size(), 0.0f);
      continue;
    }
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), completion.begin(), completion.end());
    if (static_cast<int64_t>(seq.size()) > limit) {
      out[i].missing_reason = str("process_reward: prompt + completion have ", seq.size(),
                                  " tokens, more than the PRM's context of ", limit);
      continue;
    }
    for (int64_t& t : e) t += static_cast<int64_t>(prompt.size());
    ok.push_back(i);
    starts.push_back(static_cast<int64_t>(prompt.size()));
    seqs.push_back(std::move(seq));
    ends.push_back(std::move(e));
  }
  if (seqs.empty()) return out;
  const auto p = step_probabilities(*prm_.model(), seqs, ends, options_.micro_batch_size);
  for (size_t k = 0; k < ok.size(); ++k) {
    RewardResult& r = out[ok[k]];
    const auto rewards = algo::bound_step_rewards(p[k], bounding_, options_.clip_threshold);
    std::string ps;
    for (double v : p[k]) ps += (ps.empty() ? "" : ", ") + str(std::round(v * 1000) / 1000);
    r.explanation = str("process reward: ", p[k].size(), " steps, p = [", ps, "]");
    if (options_.placement == "outcome") {
      double total = 0;
      for (double v : rewards) total += v;
      r.score = total;
      continue;
    }
    r.score = 0.0;
    r.token_rewards.assign(seqs[k].size() - static_cast<size_t>(starts[k]), 0.0f);
    for (size_t j = 0; j < rewards.size(); ++j)
      r.token_rewards[static_cast<size_t>(ends[k][j] - starts[k])] = static_cast<float>(rewards[j]);
  }
  return out;
}

RewardFactories process_reward_factories() {
  return {{"process_reward", [](OptionReader& r) -> std::unique_ptr<Reward> {
             ProcessRewardOptions o;
             o.model = r.get_string("model", "");
             o.tokenizer = r.get_string("tokenizer", o.tokenizer);
             o.delimiter = r.get_string("delimiter", o.delimiter);
             o.bounding = r.get_string("bounding", o.bounding);
             o.clip_threshold = r.get_double("clip_threshold", o.clip_threshold);
             o.placement = r.get_string("placement", o.placement);
             o.micro_batch_size = r.get_int("micro_batch_size", o.micro_batch_size);
             o.add_special_tokens = r.get_bool("add_special_tokens", o.add_special_tokens);
             o.dtype = r.get_string("dtype", o.dtype);
             o.device = r.get_string("device", o.device);
             r.finish();
             return std::make_unique<ProcessReward>(std::move(o));
           }}};
}

}  // namespace rlf
