#include "rm/gating.h"

#include <torch/torch.h>

#include <cmath>

#include "algorithms/reward_model_loss.h"
#include "model/loader.h"
#include "model/safetensors.h"
#include "util/error.h"
#include "util/json_util.h"

namespace rlf {

namespace fs = std::filesystem;

void GatingOptions::validate() const {
  check(hidden >= 0 && hidden <= 65536, "reward_model.gating_hidden must be in [0, 65536] (got ", hidden,
        "; 0 = a linear gating layer)");
  check(steps >= 1, "reward_model.gating_steps must be >= 1 (got ", steps, ")");
  check(std::isfinite(lr) && lr > 0, "reward_model.gating_lr must be > 0 (got ", lr, ")");
  check(std::isfinite(temperature) && temperature > 0, "reward_model.gating_temperature must be > 0 (got ", temperature,
        ")");
}

RewardGating::RewardGating(int64_t input_dim, std::vector<std::string> attributes, const GatingOptions& options)
    : input_dim_(input_dim),
      hidden_(options.hidden),
      temperature_(options.temperature),
      options_(options),
      attributes_(std::move(attributes)) {
  options.validate();
  check(input_dim > 0, "gating: input dimension must be > 0 (got ", input_dim, ")");
  check(!attributes_.empty(), "gating: no attributes to weigh");
  const auto K = static_cast<int64_t>(attributes_.size());
  auto gen = at::detail::createCPUGenerator(options.seed);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  auto normal = [&](int64_t rows, int64_t cols) {
    return at::normal(0.0, 1.0 / std::sqrt(static_cast<double>(cols)), {rows, cols}, gen, f32);
  };
  if (hidden_ > 0) {
    w1_ = normal(hidden_, input_dim);
    b1_ = torch::zeros({hidden_}, f32);
    w2_ = torch::zeros({K, hidden_}, f32);
  } else {
    w2_ = torch::zeros({K, input_dim}, f32);
  }
  b2_ = torch::zeros({K}, f32);
  log_scale_ = torch::zeros({}, f32);
}

torch::Tensor RewardGating::logits(const torch::Tensor& context) const {
  check(context.dim() == 2 && context.size(1) == input_dim_, "gating: context features ", context.sizes(),
        " but the gating layer reads ", input_dim_);
  torch::Tensor h = context.to(torch::kFloat32);
  if (hidden_ > 0) h = torch::relu(torch::addmm(b1_, h, w1_.t()));
  return torch::addmm(b2_, h, w2_.t());
}

torch::Tensor RewardGating::weights(const torch::Tensor& context) const {
  torch::NoGradGuard ng;
  return torch::softmax(logits(context) / temperature_, 1);
}

torch::Tensor RewardGating::reward(const torch::Tensor& context, const torch::Tensor& scores) const {
  torch::NoGradGuard ng;
  check(scores.dim() == 2 && scores.size(1) == static_cast<int64_t>(attributes_.size()), "gating: scores ",
        scores.sizes(), " but the gating layer weighs ", attributes_.size(), " attributes");
  return algo::gated_reward(logits(context), scores.to(torch::kFloat32), log_scale_.exp(), temperature_);
}

GatingFit RewardGating::fit(const torch::Tensor& context, const torch::Tensor& chosen, const torch::Tensor& rejected) {
  const auto K = static_cast<int64_t>(attributes_.size());
  check(context.dim() == 2 && chosen.dim() == 2 && chosen.sizes() == rejected.sizes() && chosen.size(1) == K &&
            context.size(0) == chosen.size(0),
        "gating fit: context ", context.sizes(), ", chosen ", chosen.sizes(), " and rejected ", rejected.sizes(),
        " must be [P, D], [P, K], [P, K] with K = ", K);
  GatingFit out;
  out.pairs = context.size(0);
  if (out.pairs == 0) return out;
  const auto x = context.to(torch::kFloat32), c = chosen.to(torch::kFloat32), r = rejected.to(torch::kFloat32);
  auto evaluate = [&](double& loss, double& acc) {
    torch::NoGradGuard ng;
    const auto z = logits(x);
    const auto s = log_scale_.exp();
    const auto rc = algo::gated_reward(z, c, s, temperature_), rr = algo::gated_reward(z, r, s, temperature_);
    loss = algo::bradley_terry_loss(rc, rr).mean().item<double>();
    acc = (rc > rr).to(torch::kFloat64).mean().item<double>();
  };
  evaluate(out.loss_before, out.accuracy_before);
  std::vector<torch::Tensor> params = {w2_, b2_, log_scale_};
  if (hidden_ > 0) params.push_back(w1_), params.push_back(b1_);
  for (auto& p : params) p.set_requires_grad(true);
  torch::optim::Adam adam(params, torch::optim::AdamOptions(options_.lr));
  for (int64_t i = 0; i < options_.steps; ++i) {
    adam.zero_grad();
    const auto z = logits(x);
    const auto s = log_scale_.exp();
    const auto loss =
        algo::bradley_terry_loss(algo::gated_reward(z, c, s, temperature_), algo::gated_reward(z, r, s, temperature_))
            .mean();
    loss.backward();
    adam.step();
  }
  for (auto& p : params) p.set_requires_grad(false);
  evaluate(out.loss_after, out.accuracy_after);
  return out;
}

void RewardGating::save(const fs::path& model_dir) const {
  std::map<std::string, torch::Tensor> t = {{"gating.w2", w2_}, {"gating.b2", b2_}, {"gating.log_scale", log_scale_}};
  if (hidden_ > 0) t["gating.w1"] = w1_, t["gating.b1"] = b1_;
  std::vector<torch::Tensor> keep;
  std::vector<SafetensorsWriteEntry> entries;
  for (const auto& [name, v] : t) {
    keep.push_back(v.detach().to(torch::kCPU, torch::kFloat32).contiguous());
    SafetensorsWriteEntry e;
    e.name = name;
    e.dtype = DType::F32;
    e.shape = keep.back().sizes().vec();
    e.data = keep.back().data_ptr();
    e.nbytes = static_cast<size_t>(keep.back().numel()) * sizeof(float);
    entries.push_back(std::move(e));
  }
  char tau[64];
  std::snprintf(tau, sizeof tau, "%.17g", temperature_);
  write_safetensors(model_dir / kGatingFile, entries,
                    {{"format", "rlf-gating"},
                     {"hidden", std::to_string(hidden_)},
                     {"temperature", tau},
                     {"attributes", Json(attributes_).dump()}});
}

std::optional<RewardGating> RewardGating::load(const fs::path& model_dir) {
  const fs::path path = model_dir / kGatingFile;
  if (!fs::exists(path)) return std::nullopt;
  const SafetensorsFile file(path);
  const auto& meta = file.header().metadata;
  const std::string src = path.string();
  auto field = [&](const char* key) {
    const auto it = meta.find(key);
    check(it != meta.end(), src, ": metadata has no '", key, "' (not a gating layer rlf wrote)");
    return it->second;
  };
  check(field("format") == "rlf-gating", src, ": metadata format is not 'rlf-gating'");
  RewardGating g;
  g.hidden_ = std::stoll(field("hidden"));
  g.temperature_ = std::stod(field("temperature"));
  g.options_.hidden = g.hidden_;
  g.options_.temperature = g.temperature_;
  g.attributes_ = Json::parse(field("attributes")).get<std::vector<std::string>>();
  auto get = [&](const char* name) { return tensor_from_view(file.view(name)).to(torch::kFloat32).clone(); };
  g.w2_ = get("gating.w2");
  g.b2_ = get("gating.b2");
  g.log_scale_ = get("gating.log_scale");
  if (g.hidden_ > 0) g.w1_ = get("gating.w1"), g.b1_ = get("gating.b1");
  const auto K = static_cast<int64_t>(g.attributes_.size());
  check(K > 0 && g.w2_.dim() == 2 && g.w2_.size(0) == K && g.b2_.numel() == K && g.log_scale_.numel() == 1, src,
        ": tensor shapes do not match ", K, " attributes");
  g.input_dim_ = g.hidden_ > 0 ? g.w1_.size(1) : g.w2_.size(1);
  check(g.hidden_ == 0 || (g.w1_.size(0) == g.hidden_ && g.w2_.size(1) == g.hidden_), src,
        ": tensor shapes do not match hidden = ", g.hidden_);
  check(std::isfinite(g.temperature_) && g.temperature_ > 0, src, ": temperature must be > 0");
  return g;
}

}  // namespace rlf
