#include "rm/reward_model.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "algorithms/reward_model_loss.h"
#include "util/error.h"

namespace rlf {

CausalLM make_reward_model(CausalLMImpl& base, int64_t num_labels, uint64_t seed) {
  check(num_labels > 0, "a reward model needs num_labels > 0 (got ", num_labels, ")");
  const ModelConfig config = base.config().with_labels(num_labels);
  CausalLM rm(config);
  rm->to(base.device(), base.dtype());
  rm->refresh_rope();
  rm->set_fast_cpu_path(base.fast_cpu_path());
  torch::NoGradGuard ng;
  auto src = base.named_parameters();
  for (auto& p : rm->named_parameters()) {
    if (p.key() == "score.weight") {
      auto gen = at::detail::createCPUGenerator(seed);
      const double std = 1.0 / std::sqrt(static_cast<double>(config.hidden_size + 1));
      p.value().copy_(at::normal(0.0, std, p.value().sizes(), gen, torch::TensorOptions().dtype(torch::kFloat32)));
      continue;
    }
    check(src.contains(p.key()), "make_reward_model: the base model has no parameter '", p.key(), "'");
    p.value().copy_(src[p.key()]);
  }
  return rm;
}

torch::Tensor last_token_index(const torch::Tensor& key_mask) {
  auto n = key_mask.to(torch::kInt64).sum(1);
  check(n.min().item<int64_t>() > 0, "last_token_index: a row has no tokens");
  return n - 1;
}

torch::Tensor last_token_scores(CausalLMImpl& model, const torch::Tensor& hidden, const torch::Tensor& key_mask) {
  const auto idx = last_token_index(key_mask).to(hidden.device());
  const int64_t B = hidden.size(0), D = hidden.size(2);
  auto last = hidden.gather(1, idx.view({B, 1, 1}).expand({B, 1, D})).squeeze(1);  // [B, D]
  return model.scores(last);                                                       // [B, L]
}

std::vector<int32_t> reward_model_tokens(const Tokenizer& tokenizer, const std::string& prompt,
                                         const std::string& response, bool add_special) {
  auto ids = tokenizer.encode(prompt, add_special);
  auto r = tokenizer.encode(response, false);
  ids.insert(ids.end(), r.begin(), r.end());
  return ids;
}

std::vector<std::vector<float>> score_sequences(CausalLMImpl& model, const std::vector<std::vector<int32_t>>& seqs,
                                                int64_t micro_batch_size) {
  check(micro_batch_size > 0, "micro-batch size must be > 0 (got ", micro_batch_size, ")");
  check(model.config().is_classifier(), "score_sequences: the model is a ", model.config().architecture,
        ", not a reward model");
  torch::NoGradGuard ng;
  const int64_t L = model.config().num_labels;
  std::vector<std::vector<float>> out(seqs.size());
  std::vector<size_t> order(seqs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seqs[a].size() < seqs[b].size(); });
  for (size_t i0 = 0; i0 < order.size(); i0 += static_cast<size_t>(micro_batch_size)) {
    const size_t n = std::min(order.size() - i0, static_cast<size_t>(micro_batch_size));
    size_t T = 0;
    for (size_t k = 0; k < n; ++k) {
      check(!seqs[order[i0 + k]].empty(), "score_sequences: sequence ", order[i0 + k], " is empty");
      T = std::max(T, seqs[order[i0 + k]].size());
    }
    const auto B = static_cast<int64_t>(n), TT = static_cast<int64_t>(T);
    auto ids = torch::zeros({B, TT}, torch::kInt64);
    auto mask = torch::zeros({B, TT}, torch::kBool);
    auto pos = torch::arange(TT, torch::kInt64).repeat({B, 1});
    auto ia = ids.accessor<int64_t, 2>();
    auto ma = mask.accessor<bool, 2>();
    for (size_t k = 0; k < n; ++k) {
      const auto& s = seqs[order[i0 + k]];
      for (size_t t = 0; t < s.size(); ++t) ia[static_cast<int64_t>(k)][static_cast<int64_t>(t)] = s[t], ma[static_cast<int64_t>(k)][static_cast<int64_t>(t)] = true;
    }
    const auto dev = model.device();
    auto hidden = model.forward_hidden(ids.to(dev), pos.to(dev), nullptr, mask.to(dev));
    auto sc = last_token_scores(model, hidden, mask.to(dev)).to(torch::kCPU).contiguous();
    const float* p = sc.data_ptr<float>();
    for (size_t k = 0; k < n; ++k) out[order[i0 + k]].assign(p + k * L, p + (k + 1) * L);
  }
  return out;
}

LoadedModel load_reward_model(const std::filesystem::path& dir, const LoadOptions& options) {
  LoadedModel m = load_model(dir, options);
  check(m.config.is_classifier(), dir.string(), ": the model is a ", m.config.architecture,
        ", not a reward model (a *ForSequenceClassification directory, e.g. what `rlf train` with trainer.kind = \"rm\" "
        "writes)");
  return m;
}

Json RewardModelPairMetrics::to_json() const {
  return {{"pairs", n_pairs}, {"accuracy", accuracy}, {"margin", margin}, {"loss", loss},
          {"ece", ece},       {"score_mean", score_mean}, {"score_std", score_std}};
}

RewardModelPairMetrics measure_reward_model(CausalLMImpl& model, const Tokenizer& tokenizer,
                                            const std::vector<PreferenceExample>& pairs, bool add_special,
                                            int64_t micro_batch_size, int64_t label) {
  RewardModelPairMetrics m;
  if (pairs.empty()) return m;
  check(label >= 0 && label < model.config().num_labels, "reward model label ", label, " is out of range (the model has ",
        model.config().num_labels, " outputs)");
  std::vector<std::vector<int32_t>> seqs;
  for (const PreferenceExample& p : pairs) {
    seqs.push_back(reward_model_tokens(tokenizer, p.prompt, p.chosen, add_special));
    seqs.push_back(reward_model_tokens(tokenizer, p.prompt, p.rejected, add_special));
  }
  const auto scores = score_sequences(model, seqs, micro_batch_size);
  const auto P = static_cast<int64_t>(pairs.size());
  std::vector<double> c(P), r(P), margins(P);
  for (int64_t i = 0; i < P; ++i) {
    c[i] = scores[2 * i][label], r[i] = scores[2 * i + 1][label];
    margins[i] = c[i] - r[i];
  }
  auto f64 = [](const std::vector<double>& v) { return torch::tensor(v, torch::TensorOptions().dtype(torch::kFloat64)); };
  m.n_pairs = P;
  for (int64_t i = 0; i < P; ++i) m.accuracy += margins[i] > 0 ? 1.0 : 0.0, m.margin += margins[i];
  m.accuracy /= static_cast<double>(P);
  m.margin /= static_cast<double>(P);
  m.loss = algo::bradley_terry_loss(f64(c), f64(r)).mean().item<double>();
  m.ece = algo::pairwise_calibration_error(margins);
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < P; ++i) s += c[i] + r[i], s2 += c[i] * c[i] + r[i] * r[i];
  m.score_mean = s / (2.0 * static_cast<double>(P));
  m.score_std = std::sqrt(std::max(0.0, s2 / (2.0 * static_cast<double>(P)) - m.score_mean * m.score_mean));
  return m;
}

}  // namespace rlf
