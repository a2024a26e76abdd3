#include "rm/model_reward.h"

#include <cmath>

#include "rewards/reward_shaping.h"
#include "rm/process_reward.h"
#include "util/error.h"

namespace rlf {

ModelRewardOptions read_model_reward_options(OptionReader& r) {
  ModelRewardOptions o;
  o.model = r.get_string("model", "");
  o.tokenizer = r.get_string("tokenizer", o.tokenizer);
  o.label_given = r.has("label");
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
  readout_.label = options_.label;
  readout_.direction = options_.direction;
  if (options_.direction.empty() && !options_.label_given)
    if (auto g = RewardGating::load(options_.model)) readout_.gating = std::make_shared<const RewardGating>(std::move(*g));
  readout_.check_fits(c.num_labels, "reward model '" + options_.model + "'");
  if (readout_.gating)
    check(readout_.gating->input_dim() == c.hidden_size, "option 'model': the gating layer reads ",
          readout_.gating->input_dim(), " features but the model's hidden size is ", c.hidden_size);
}

std::vector<RewardResult> ModelReward::score(const RewardGroup& group) {
  std::vector<RewardResult> out(group.samples.size());
  if (group.samples.empty()) return out;
  std::vector<RewardModelInput> seqs;
  for (const RewardSample& s : group.samples) {
    std::string text = s.completion;
    if (!s.turns.empty()) {
      text.clear();
      for (const TranscriptPart& t : s.turns) text += t.text;
    }
    seqs.push_back(reward_model_input(*rm_.tokenizer, group.prompt, text, options_.add_special_tokens));
  }
  const int64_t limit = rm_.model()->config().max_position_embeddings;
  std::vector<double> v(seqs.size(), 0.0);
  std::vector<size_t> ok;
  std::vector<RewardModelInput> fit;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i].tokens.empty()) {
      out[i].missing_reason = "reward_model: the prompt and the completion are both empty (no token to score)";
      continue;
    }
    if (static_cast<int64_t>(seqs[i].tokens.size()) > limit) {
      out[i].missing_reason = str("reward_model: prompt + completion have ", seqs[i].tokens.size(),
                                  " tokens, more than the reward model's context of ", limit);
      continue;
    }
    ok.push_back(i);
    fit.push_back(std::move(seqs[i]));
  }
  if (!fit.empty()) {
    const auto r = reward_model_rewards(*rm_.model(), fit, readout_, options_.micro_batch_size);
    for (size_t k = 0; k < ok.size(); ++k) v[ok[k]] = r[k];
  }
  for (size_t i : ok) {
    out[i].score = v[i];
    out[i].explanation = str("reward model score ", v[i]);
  }
  if (options_.normalize == "group") standardize_in_group(out);
  return out;
}

RewardFactories model_reward_factories() {
  RewardFactories f = {{"reward_model", [](OptionReader& reader) -> std::unique_ptr<Reward> {
                          ModelRewardOptions o = read_model_reward_options(reader);
                          reader.finish();
                          return std::make_unique<ModelReward>(std::move(o));
                        }}};
  for (auto& [name, make] : process_reward_factories()) f[name] = make;
  return f;
}

}  // namespace rlf
