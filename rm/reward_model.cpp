#include "rm/reward_model.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "algorithms/reward_model_loss.h"
#include "util/error.h"

namespace rlf {

CausalLM make_reward_model(CausalLMImpl& base, int64_t num_labels, uint64_t seed, const std::vector<std::string>& names) {
  check(num_labels > 0, "a reward model needs num_labels > 0 (got ", num_labels, ")");
  check(names.empty() || static_cast<int64_t>(names.size()) == num_labels, "make_reward_model: ", names.size(),
        " names for ", num_labels, " outputs");
  ModelConfig config = base.config().with_labels(num_labels);
  config.label_names = names;
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

std::vector<int32_t> reward_model_tokens(const Tokenizer& tokenizer, const std::string& prompt,
                                         const std::string& response, bool add_special) {
  return reward_model_input(tokenizer, prompt, response, add_special).tokens;
}

namespace {

// Runs the model over `seqs` (not empty) in right-padded micro-batches sorted
// by length, without gradient; fn(hidden [B, T, D], rows) sees each batch,
// rows[k] the index in `seqs` of row k.
template <typename Fn>
void for_each_padded_batch(CausalLMImpl& model, const std::vector<std::vector<int32_t>>& seqs, int64_t micro_batch_size,
                           Fn&& fn) {
  check(micro_batch_size > 0, "micro-batch size must be > 0 (got ", micro_batch_size, ")");
  check(model.config().is_classifier(), "scoring: the model is a ", model.config().architecture,
        ", not a reward model");
  torch::NoGradGuard ng;
  std::vector<size_t> order(seqs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seqs[a].size() < seqs[b].size(); });
  for (size_t i0 = 0; i0 < order.size(); i0 += static_cast<size_t>(micro_batch_size)) {
    const size_t n = std::min(order.size() - i0, static_cast<size_t>(micro_batch_size));
    size_t T = 0;
    std::vector<size_t> rows(order.begin() + static_cast<std::ptrdiff_t>(i0),
                             order.begin() + static_cast<std::ptrdiff_t>(i0 + n));
    for (size_t r : rows) {
      check(!seqs[r].empty(), "scoring: sequence ", r, " is empty");
      T = std::max(T, seqs[r].size());
    }
    const auto B = static_cast<int64_t>(n), TT = static_cast<int64_t>(T);
    auto ids = torch::zeros({B, TT}, torch::kInt64);
    auto mask = torch::zeros({B, TT}, torch::kBool);
    auto pos = torch::arange(TT, torch::kInt64).repeat({B, 1});
    auto ia = ids.accessor<int64_t, 2>();
    auto ma = mask.accessor<bool, 2>();
    for (int64_t k = 0; k < B; ++k) {
      const auto& s = seqs[rows[static_cast<size_t>(k)]];
      for (size_t t = 0; t < s.size(); ++t) ia[k][static_cast<int64_t>(t)] = s[t], ma[k][static_cast<int64_t>(t)] = true;
    }
    const auto dev = model.device();
    fn(model.forward_hidden(ids.to(dev), pos.to(dev), nullptr, mask.to(dev)), rows);
  }
}

// hidden [B, T, D] at one position per row -> [B, D].
torch::Tensor hidden_at(const torch::Tensor& hidden, const std::vector<int64_t>& at) {
  const int64_t B = hidden.size(0), D = hidden.size(2);
  const auto idx = torch::tensor(at, torch::kInt64).to(hidden.device());
  return hidden.gather(1, idx.view({B, 1, 1}).expand({B, 1, D})).squeeze(1);
}

}  // namespace

std::vector<std::vector<float>> score_sequences(CausalLMImpl& model, const std::vector<std::vector<int32_t>>& seqs,
                                                int64_t micro_batch_size, const std::vector<int64_t>* context_lengths,
                                                torch::Tensor* context) {
  check(!context_lengths || (context && context_lengths->size() == seqs.size()),
        "score_sequences: one context length per sequence and somewhere to put the features");
  const int64_t L = model.config().num_labels;
  std::vector<std::vector<float>> out(seqs.size());
  if (context_lengths) *context = torch::zeros({static_cast<int64_t>(seqs.size()), model.config().hidden_size});
  for_each_padded_batch(model, seqs, micro_batch_size, [&](const torch::Tensor& hidden, const std::vector<size_t>& rows) {
    std::vector<int64_t> last, ctx;
    for (size_t r : rows) {
      last.push_back(static_cast<int64_t>(seqs[r].size()) - 1);
      if (!context_lengths) continue;
      const int64_t c = (*context_lengths)[r];
      check(c >= 1 && c <= static_cast<int64_t>(seqs[r].size()), "score_sequences: context length ", c, " outside [1, ",
            seqs[r].size(), "]");
      ctx.push_back(c - 1);
    }
    const auto sc = model.scores(hidden_at(hidden, last)).to(torch::kCPU, torch::kFloat32).contiguous();
    const float* p = sc.data_ptr<float>();
    for (size_t k = 0; k < rows.size(); ++k) out[rows[k]].assign(p + k * L, p + (k + 1) * L);
    if (context_lengths) {
      std::vector<int64_t> idx(rows.begin(), rows.end());
      context->index_copy_(0, torch::tensor(idx, torch::kInt64),
                           hidden_at(hidden, ctx).to(torch::kCPU, torch::kFloat32));
    }
  });
  return out;
}

std::vector<std::vector<float>> score_positions(CausalLMImpl& model, const std::vector<std::vector<int32_t>>& seqs,
                                                const std::vector<std::vector<int64_t>>& positions, int64_t label,
                                                int64_t micro_batch_size) {
  check(positions.size() == seqs.size(), "score_positions: ", positions.size(), " position lists for ", seqs.size(),
        " sequences");
  check(label >= 0 && label < model.config().num_labels, "score_positions: label ", label, " but the model has ",
        model.config().num_labels, " output(s)");
  std::vector<std::vector<float>> out(seqs.size());
  for_each_padded_batch(model, seqs, micro_batch_size, [&](const torch::Tensor& hidden, const std::vector<size_t>& rows) {
    const auto all = model.scores(hidden).select(2, label).to(torch::kCPU, torch::kFloat32).contiguous();  // [B, T]
    for (size_t k = 0; k < rows.size(); ++k) {
      const auto row = all[static_cast<int64_t>(k)];
      for (int64_t t : positions[rows[k]]) {
        check(t >= 0 && t < static_cast<int64_t>(seqs[rows[k]].size()), "score_positions: position ", t,
              " outside sequence ", rows[k], " of ", seqs[rows[k]].size(), " tokens");
        out[rows[k]].push_back(row[t].item<float>());
      }
    }
  });
  return out;
}

LoadedModel load_reward_model(const std::filesystem::path& dir, const LoadOptions& options) {
  LoadedModel m = load_model(dir, options);
  check(m.config.is_classifier(), dir.string(), ": the model is a ", m.config.architecture,
        ", not a reward model (a *ForSequenceClassification directory, e.g. what `rlf train` with trainer.kind = \"rm\" "
        "writes)");
  return m;
}

std::string RewardReadout::describe() const {
  if (gating) return "gating over " + Json(gating->attributes()).dump();
  if (!direction.empty()) return "direction " + Json(direction).dump();
  return "label " + std::to_string(label);
}

void RewardReadout::check_fits(int64_t num_labels, const std::string& what) const {
  if (gating)
    check(static_cast<int64_t>(gating->attributes().size()) == num_labels, what, ": the gating layer weighs ",
          gating->attributes().size(), " attributes but the model has ", num_labels, " outputs");
  else if (!direction.empty())
    check(static_cast<int64_t>(direction.size()) == num_labels, what, ": option 'direction' has ", direction.size(),
          " weights but the model has ", num_labels, " outputs");
  else
    check(label >= 0 && label < num_labels, what, ": option 'label' = ", label, " but the model has ", num_labels,
          " output(s)");
}

std::vector<double> RewardReadout::apply(const std::vector<std::vector<float>>& scores, const torch::Tensor& context) const {
  std::vector<double> out(scores.size(), 0.0);
  if (scores.empty()) return out;
  if (gating) {
    const auto N = static_cast<int64_t>(scores.size()), K = static_cast<int64_t>(scores[0].size());
    auto s = torch::empty({N, K}, torch::kFloat32);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t k = 0; k < K; ++k) s[i][k] = scores[static_cast<size_t>(i)][static_cast<size_t>(k)];
    const auto r = gating->reward(context, s).to(torch::kFloat64).contiguous();
    for (int64_t i = 0; i < N; ++i) out[static_cast<size_t>(i)] = r[i].item<double>();
    return out;
  }
  for (size_t i = 0; i < scores.size(); ++i) {
    if (direction.empty()) {
      out[i] = scores[i][static_cast<size_t>(label)];
    } else {
      for (size_t k = 0; k < direction.size(); ++k) out[i] += direction[k] * scores[i][k];
    }
  }
  return out;
}

RewardModelInput reward_model_input(const Tokenizer& tokenizer, const std::string& prompt, const std::string& response,
                                    bool add_special) {
  RewardModelInput in;
  in.tokens = tokenizer.encode(prompt, add_special);
  in.prompt_tokens = static_cast<int64_t>(in.tokens.size());
  auto r = tokenizer.encode(response, false);
  in.tokens.insert(in.tokens.end(), r.begin(), r.end());
  return in;
}

std::vector<double> reward_model_rewards(CausalLMImpl& model, const std::vector<RewardModelInput>& inputs,
                                         const RewardReadout& readout, int64_t micro_batch_size,
                                         std::vector<std::vector<float>>* scores) {
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int64_t> ctx;
  for (const RewardModelInput& in : inputs) {
    seqs.push_back(in.tokens);
    // A gating layer reads the prompt's last token (the first token when the prompt is empty).
    ctx.push_back(std::max<int64_t>(1, in.prompt_tokens));
  }
  torch::Tensor context;
  auto sc = score_sequences(model, seqs, micro_batch_size, readout.needs_context() ? &ctx : nullptr,
                            readout.needs_context() ? &context : nullptr);
  auto out = readout.apply(sc, context);
  if (scores) *scores = std::move(sc);
  return out;
}

Json RewardModelPairMetrics::to_json() const {
  Json j = {{"pairs", n_pairs}, {"accuracy", accuracy}, {"margin", margin},       {"loss", loss},
            {"ece", ece},       {"score_mean", score_mean}, {"score_std", score_std}, {"readout", readout}};
  if (!attributes.empty()) {
    Json a = Json::object();
    for (const auto& [name, v] : attributes)
      a[name] = {{"rated", v.rated}, {"pearson", v.pearson}, {"spearman", v.spearman}, {"pair_accuracy", v.pair_accuracy}};
    j["attributes"] = a;
  }
  return j;
}

RewardModelPairMetrics measure_reward_model(CausalLMImpl& model, const Tokenizer& tokenizer,
                                            const std::vector<PreferenceExample>& pairs, bool add_special,
                                            int64_t micro_batch_size, const RewardReadout& readout) {
  RewardModelPairMetrics m;
  m.readout = readout.describe();
  if (pairs.empty()) return m;
  const ModelConfig& config = model.config();
  readout.check_fits(config.num_labels, "reward model");
  std::vector<RewardModelInput> inputs;
  for (const PreferenceExample& p : pairs) {
    inputs.push_back(reward_model_input(tokenizer, p.prompt, p.chosen, add_special));
    inputs.push_back(reward_model_input(tokenizer, p.prompt, p.rejected, add_special));
  }
  std::vector<std::vector<float>> scores;
  const auto rewards = reward_model_rewards(model, inputs, readout, micro_batch_size, &scores);
  const auto P = static_cast<int64_t>(pairs.size());
  std::vector<double> c(P), r(P), margins(P);
  for (int64_t i = 0; i < P; ++i) {
    c[i] = rewards[2 * i], r[i] = rewards[2 * i + 1];
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
  // Outputs against the ratings the pairs carry, by the model's label names.
  for (int64_t k = 0; k < config.num_labels; ++k) {
    const std::string name = config.label_name(k);
    std::vector<double> x, y;
    int64_t right = 0;
    for (int64_t i = 0; i < P; ++i) {
      const PreferenceExample& p = pairs[static_cast<size_t>(i)];
      for (int side = 0; side < 2; ++side) {
        const auto& rated = side == 0 ? p.chosen_ratings : p.rejected_ratings;
        if (const auto it = rated.find(name); it != rated.end())
          x.push_back(scores[static_cast<size_t>(2 * i + side)][static_cast<size_t>(k)]), y.push_back(it->second);
      }
      right += scores[static_cast<size_t>(2 * i)][static_cast<size_t>(k)] >
               scores[static_cast<size_t>(2 * i + 1)][static_cast<size_t>(k)];
    }
    if (x.empty()) continue;
    RewardModelPairMetrics::Attribute a;
    a.rated = static_cast<int64_t>(x.size());
    a.pearson = algo::pearson_correlation(x, y);
    a.spearman = algo::spearman_correlation(x, y);
    a.pair_accuracy = static_cast<double>(right) / static_cast<double>(P);
    m.attributes[name] = a;
  }
  return m;
}

}  // namespace rlf
