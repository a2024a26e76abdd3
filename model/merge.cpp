#include "model/merge.h"

#include <cmath>
#include <map>

#include "model/finite_weights.h"
#include "util/error.h"

namespace rlf {

namespace {

void check_same_config(const ModelConfig& a, const ModelConfig& b, const std::string& what) {
  const Json ja = a.to_hf_json(), jb = b.to_hf_json();
  for (const char* key : {"architectures", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                          "num_attention_heads", "num_key_value_heads", "tie_word_embeddings", "num_labels",
                          "attention_bias", "mlp_bias"}) {
    const Json va = ja.contains(key) ? ja.at(key) : Json(nullptr), vb = jb.contains(key) ? jb.at(key) : Json(nullptr);
    check(va == vb, what, ": '", key, "' is ", vb.dump(), " but the first model's is ", va.dump(),
          " (merged models must share one architecture)");
  }
}

}  // namespace

CausalLM merge_models(const MergeOptions& o, LoadedModel* first_out) {
  check(!o.models.empty(), "merge: no models given");
  std::vector<double> w = o.weights;
  if (w.empty()) w.assign(o.models.size(), 1.0 / static_cast<double>(o.models.size()));
  check(w.size() == o.models.size(), "merge: ", w.size(), " weights for ", o.models.size(),
        " models (give one --weight per --model, or none for a uniform average)");
  for (double x : w) check(std::isfinite(x), "merge: weights must be finite");
  LoadOptions lo;
  lo.dtype = "fp32";
  // Every input finite, and the merge too: a NaN would spread into the file without a word.
  auto load = [&](const std::filesystem::path& path) {
    LoadedModel m = load_model(path, lo);
    with_context("merge: model '" + path.string() + "'", [&] { check_finite_weights(*m.model, "a merge of it"); });
    return m;
  };
  LoadedModel first = load(o.models[0]);
  std::optional<LoadedModel> base;
  if (o.base) {
    base = load(*o.base);
    check_same_config(first.config, base->config, o.base->string());
  }
  // Accumulators in fp64: the base (or zero) plus each weighted term.
  torch::NoGradGuard ng;
  std::map<std::string, torch::Tensor> acc, base_params;  // fp64
  if (base)
    for (auto& p : base->model->named_parameters()) base_params[p.key()] = p.value().to(torch::kFloat64);
  for (auto& p : first.model->named_parameters())
    acc[p.key()] = base ? base_params.at(p.key()).clone() : torch::zeros_like(p.value(), torch::kFloat64);
  for (size_t i = 0; i < o.models.size(); ++i) {
    std::optional<LoadedModel> other;
    if (i > 0) {
      other = load(o.models[i]);
      check_same_config(first.config, other->config, o.models[i].string());
    }
    auto params = (i == 0 ? first : *other).model->named_parameters();
    for (auto& [name, t] : acc) {
      auto x = params[name].to(torch::kFloat64);
      if (base) x = x - base_params.at(name);
      t.add_(x, w[i]);
    }
  }
  CausalLM out = make_random_model(first.config, 0, torch::kFloat32, torch::kCPU);
  for (auto& p : out->named_parameters()) p.value().copy_(acc.at(p.key()).to(torch::kFloat32));
  with_context("merge", [&] { check_finite_weights(*out, "the merged model (beyond fp32's range?)"); });
  if (first_out) *first_out = std::move(first);
  return out;
}

}  // namespace rlf
