#include "rm/model_reward.h"

#include <cmath>

#include "rewards/reward_shaping.h"
#include "rm/reward_model.h"
#include "util/error.h"

namespace rlf {

ModelRewardOptions read_model_reward_options(OptionReader& r) {
  ModelRewardOptions o;
  o.model = r.get_string("model", "");
  o.tokenizer = r.get_string("tokenizer", o.tokenizer);
  o.label = r.get_int("label", o.label);
  o.direction = r.get_doubles("direction", o.direction);
  o.normalize = r.get_string("normalize", o.normalize);
  o.micro_batch_size = r.get_int("micro_batch_size", o.micro_batch_size);
  o.add_special_tokens = r.get_bool("add_special_tokens", o.add_special_tokens);
  o.dtype = r.get_string("dtype", o.dtype);
  o.device = r.get_string("device", o.device);
  check(!o.model.empty(), "option 'model' is required: the reward model's directory (e.g. RUN/final of an rlf train "
        "run with trainer.kind = \"rm\")");
  check(o.label >= 0, "option 'label' must be >= 0 (got ", o.label, ")");
  check(o.normalize == "none" || o.normalize == "group", "option 'normalize' must be \"none\" or \"group\" (got \"",
        o.normalize, "\")");
  check(o.micro_batch_size > 0, "option 'micro_batch_size' must be > 0 (got ", o.micro_batch_size, ")");
  for (double d : o.direction) check(std::isfinite(d), "option 'direction' must hold finite numbers");
  return o;
}

ModelReward::ModelReward(ModelRewardOptions options) : options_(std::move(options)) {
  LoadOptions lo;
  lo.dtype = options_.dtype;
  lo.device = options_.device;
  check(std::filesystem::exists(std::filesystem::path(options_.model) / "config.json"), "option 'model': '",
        options_.model, "' is not a model directory (no config.json)");
  rm_ = load_policy(options_.model, options_.tokenizer, lo);
  const ModelConfig& c = rm_.model()->config();
  check(c.is_classifier(), "option 'model': '", options_.model, "' is a ", c.architecture,
        ", not a reward model (a *ForSequenceClassification directory)");
  rm_.model()->eval();
  for (auto& p : rm_.model()->parameters()) p.set_requires_grad(false);
  if (options_.direction.empty())
    check(options_.label < c.num_labels, "option 'label' = ", options_.label, " but the model has ", c.num_labels,
          " output(s)");
  else
    check(static_cast<int64_t>(options_.direction.size()) == c.num_labels, "option 'direction' has ",
          options_.direction.size(), " weights but the model has ", c.num_labels, " outputs");
}

std::vector<RewardResult> ModelReward::score(const RewardGroup& group) {
  std::vector<RewardResult> out(group.samples.size());
  if (group.samples.empty()) return out;
  std::vector<std::vector<int32_t>> seqs;
  for (const RewardSample& s : group.samples) {
    std::string text = s.completion;
    if (!s.turns.empty()) {
      text.clear();
      for (const TranscriptPart& t : s.turns) text += t.text;
    }
    seqs.push_back(reward_model_tokens(*rm_.tokenizer, group.prompt, text, options_.add_special_tokens));
  }
  const int64_t limit = rm_.model()->config().max_position_embeddings;
  std::vector<double> v(seqs.size(), 0.0);
  std::vector<size_t> ok;
  std::vector<std::vector<int32_t>> fit;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i].empty()) {
      out[i].missing_reason = "reward_model: the prompt and the completion are both empty (no token to score)";
      continue;
    }
    if (static_cast<int64_t>(seqs[i].size()) > limit) {
      out[i].missing_reason = str("reward_model: prompt + completion have ", seqs[i].size(),
                                  " tokens, more than the reward model's context of ", limit);
      continue;
    }
    ok.push_back(i);
    fit.push_back(std::move(seqs[i]));
  }
  if (!fit.empty()) {
    const auto scores = score_sequences(*rm_.model(), fit, options_.micro_batch_size);
    for (size_t k = 0; k < ok.size(); ++k) {
      double s = 0;
      if (options_.direction.empty()) s = scores[k][static_cast<size_t>(options_.label)];
      else
        for (size_t j = 0; j < options_.direction.size(); ++j) s += options_.direction[j] * scores[k][j];
      v[ok[k]] = s;
    }
  }
  for (size_t i : ok) {
    out[i].score = v[i];
    out[i].explanation = str("reward model score ", v[i]);
  }
  if (options_.normalize == "group") standardize_in_group(out);
  return out;
}

RewardFactories model_reward_factories() {
  return {{"reward_model", [](OptionReader& reader) -> std::unique_ptr<Reward> {
             ModelRewardOptions o = read_model_reward_options(reader);
             reader.finish();
             return std::make_unique<ModelReward>(std::move(o));
           }}};
}

}  // namespace rlf
