#include "model/lora.h"

#include <cmath>
#include <iostream>
#include <map>
#include <regex>

#include "model/cpu_bf16_linear.h"
#include "model/loader.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"
#include "util/seed.h"
#include "util/write_target.h"

namespace rlf {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPeftPrefix = "base_model.model.";
constexpr const char* kAdapterConfig = "adapter_config.json";
constexpr const char* kAdapterWeights = "adapter_model.safetensors";

// A projection of one layer: its name, the base Linear and its adapter slot.
struct LayerProjection {
  int64_t layer;
  std::string name;     // "q_proj", ...
  std::string module;   // "model.layers.3.self_attn.q_proj"
  torch::nn::Linear* base;
  LoraSlot* slot;
};

// A projection the model has: q/k/v or Phi-3's fused qkv_proj, gate/up or its gate_up_proj.
const char* kProjectionList = "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (Phi-3: qkv_proj, o_proj, "
                              "gate_up_proj, down_proj)";

std::vector<LayerProjection> projections(CausalLMImpl& model) {
  std::vector<LayerProjection> out;
  const int64_t L = static_cast<int64_t>(model.model->layers->size());
  for (int64_t l = 0; l < L; ++l)
    for (const rlf::Projection& p : model.layer(l).projections())
      out.push_back({l, p.name, "model.layers." + std::to_string(l) + "." + p.module, p.linear, p.lora});
  return out;
}

// A reward model's score head trains with its adapters (PEFT's modules_to_save for SEQ_CLS).
constexpr const char* kScoreHead = "score.weight";

void freeze_base(CausalLMImpl& model) {
  for (auto& p : model.named_parameters())
    p.value().set_requires_grad(is_lora_parameter(p.key()) || p.key() == kScoreHead);
}

// Registers an adapter of rank r on `p` (values left to the caller).
void attach(CausalLMImpl& model, const LayerProjection& p, int64_t r, const std::shared_ptr<LoraRuntime>& runtime) {
  auto& base = **p.base;
  const int64_t in = base.weight.size(1), out_f = base.weight.size(0);
  auto opts = [](int64_t i, int64_t o) { return torch::nn::LinearOptions(i, o).bias(false); };
  p.slot->A = base.register_module("lora_A", torch::nn::Linear(opts(in, r)));
  p.slot->B = base.register_module("lora_B", torch::nn::Linear(opts(r, out_f)));
  p.slot->A->to(model.device(), model.dtype());
  p.slot->B->to(model.device(), model.dtype());
  p.slot->runtime = runtime;
  p.slot->merged = torch::Tensor();
  p.slot->merged_at = {-1, -1, -1};
}

std::shared_ptr<LoraRuntime> make_runtime(const LoraOptions& options, uint64_t seed) {
  auto rt = std::make_shared<LoraRuntime>();
  rt->options = options;
  rt->dropout_gen = at::detail::createCPUGenerator(derive_seed(seed, SeedStream::LoraDropoutInit));
  return rt;
}

std::string number_text(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return Json(v).dump();
}

}  // namespace

const std::vector<std::string>& lora_projection_names() {
  static const std::vector<std::string> names{"q_proj",    "k_proj",  "v_proj",  "o_proj",      "gate_proj",
                                              "up_proj",   "down_proj", "qkv_proj", "gate_up_proj"};
  return names;
}

double LoraOptions::scale() const {
  return rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / static_cast<double>(rank);
}

void LoraOptions::validate(const std::string& prefix) const {
  check(rank >= 1 && rank <= 65536, prefix, "rank = ", rank, ": must be in [1, 65536] (typical: 8, 16, 64)");
  check(std::isfinite(alpha) && alpha > 0, prefix, "alpha = ", alpha, ": must be > 0 (the adapter's scale is alpha / rank)");
  check(dropout >= 0 && dropout < 1, prefix, "dropout = ", dropout, ": must be in [0, 1)");
  check(!targets.empty(), prefix, "targets is empty: name at least one of ", kProjectionList);
  const auto& names = lora_projection_names();
  for (size_t i = 0; i < targets.size(); ++i) {
    check(std::find(names.begin(), names.end(), targets[i]) != names.end(), prefix, "targets[", i, "] = '",
          targets[i], "' is not a projection rlf knows (use ", kProjectionList, ")");
    for (size_t j = 0; j < i; ++j)
      check(targets[j] != targets[i], prefix, "targets names '", targets[i], "' twice");
  }
}

bool is_lora_parameter(const std::string& name) {
  return name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos;
}

torch::Tensor lora_project(const torch::nn::Linear& base, LoraSlot& slot, const torch::Tensor& x) {
  if (!slot.active()) return linear_layer(x, base->weight, base->bias);
  if (!torch::GradMode::is_enabled() && slot.runtime->merged_inference)
    return linear_layer(x, lora_inference_weight(base, slot), base->bias);
  torch::Tensor in = x;
  const double p = slot.runtime->options.dropout;
  if (p > 0 && torch::GradMode::is_enabled()) {
    // (bernoulli_ takes the generator's lock itself)
    torch::Tensor keep =
        at::empty(x.sizes(), torch::TensorOptions().dtype(torch::kFloat32)).bernoulli_(1.0 - p, slot.runtime->dropout_gen);
    in = x * keep.to(x.device(), x.scalar_type()) * (1.0 / (1.0 - p));
  }
  // One GEMM adds s·(x Aᵀ) Bᵀ onto the base output (no separate scale and add passes).
  const torch::Tensor y = linear_layer(x, base->weight, base->bias);
  const torch::Tensor h = linear_layer(in, slot.A->weight);
  const int64_t out_f = y.size(-1), r = h.size(-1);
  return torch::addmm(y.reshape({-1, out_f}), h.reshape({-1, r}), slot.B->weight.t(), 1.0,
                      slot.runtime->options.scale())
      .view(y.sizes());
}

const torch::Tensor& lora_inference_weight(const torch::nn::Linear& base, LoraSlot& slot) {
  if (!slot.active() || !slot.runtime->merged_inference) return base->weight;
  const std::array<int64_t, 3> at{base->weight._version(), slot.A->weight._version(), slot.B->weight._version()};
  if (!slot.merged.defined() || slot.merged_at != at) {
    torch::NoGradGuard ng;
    const auto f32 = torch::kFloat32;
    slot.merged = (base->weight.to(f32) + slot.runtime->options.scale() * slot.B->weight.to(f32).mm(slot.A->weight.to(f32)))
                      .to(base->weight.scalar_type())
                      .contiguous();
    slot.merged_at = at;
  }
  return slot.merged;
}

void lora_add_into(LoraSlot& slot, const torch::Tensor& x, torch::Tensor& out) {
  if (!slot.active() || slot.runtime->merged_inference) return;
  // (bf16 adapters on the fast path's fp32 decoding: widened, they are small)
  const torch::Tensor& a = slot.A->weight;
  const torch::Tensor& b = slot.B->weight;
  const auto t = x.scalar_type();
  at::addmm_out(out, out, torch::mm(x, a.to(t).t()), b.to(t).t(), 1.0, slot.runtime->options.scale());
}

void add_lora(CausalLMImpl& model, const LoraOptions& options, uint64_t seed) {
  options.validate();
  check(!has_lora(model), "the model already has LoRA adapters");
  const std::vector<LayerProjection> all = projections(model);
  for (const std::string& t : options.targets) {
    std::string have;
    for (const LayerProjection& p : all)
      if (p.layer == 0) have += (have.empty() ? "" : ", ") + p.name;
    check(std::any_of(all.begin(), all.end(), [&](const LayerProjection& p) { return p.name == t; }), "lora.targets: ",
          model.config().architecture, " has no '", t, "' projection (its projections: ", have, ")");
  }
  auto rt = make_runtime(options, seed);
  auto gen = at::detail::createCPUGenerator(seed);
  torch::NoGradGuard ng;
  for (const LayerProjection& p : all) {
    if (std::find(options.targets.begin(), options.targets.end(), p.name) == options.targets.end()) continue;
    attach(model, p, options.rank, rt);
    const double bound = 1.0 / std::sqrt(static_cast<double>(p.slot->A->weight.size(1)));
    p.slot->A->weight.copy_(at::empty(p.slot->A->weight.sizes(), torch::kFloat32).uniform_(-bound, bound, gen));
    p.slot->B->weight.zero_();
  }
  model.lora = rt;
  freeze_base(model);
}

bool has_lora(const CausalLMImpl& model) { return model.lora != nullptr; }

const LoraOptions& lora_options(const CausalLMImpl& model) {
  check(has_lora(model), "the model has no LoRA adapters");
  return model.lora->options;
}

void set_lora_merged_inference(CausalLMImpl& model, bool on) {
  if (model.lora) model.lora->merged_inference = on;
}

void save_lora_adapter(CausalLMImpl& model, const fs::path& dir, const std::string& base_model) {
  with_context("saving the LoRA adapter to '" + dir.string() + "'", [&] {
    const LoraOptions& o = lora_options(model);
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    const bool classifier = model.config().is_classifier();
    for (auto& p : model.named_parameters())
      if (is_lora_parameter(p.key()) || (classifier && p.key() == kScoreHead))
        tensors.emplace_back(kPeftPrefix + p.key(), p.value());
    ensure_directory(dir);
    write_tensor_file(dir / kAdapterWeights, tensors, {{"format", "pt"}});
    // PEFT's LoraConfig fields (0.13), with the values rlf implements.
    Json c = {{"peft_type", "LORA"},
              {"task_type", classifier ? "SEQ_CLS" : "CAUSAL_LM"},
              {"base_model_name_or_path", base_model},
              {"r", o.rank},
              {"lora_alpha", Json::parse(number_text(o.alpha))},
              {"lora_dropout", o.dropout},
              {"target_modules", o.targets},
              {"use_rslora", o.rslora},
              {"bias", "none"},
              {"fan_in_fan_out", false},
              {"inference_mode", true},
              {"init_lora_weights", true},
              {"use_dora", false},
              {"modules_to_save", classifier ? Json(std::vector<std::string>{"score"}) : Json(nullptr)},
              {"layers_to_transform", nullptr},
              {"layers_pattern", nullptr},
              {"rank_pattern", Json::object()},
              {"alpha_pattern", Json::object()},
              {"revision", nullptr}};
    write_file_atomic(dir / kAdapterConfig, c.dump(2) + "\n");
  });
}

namespace {

// Reads and validates DIR against `model`; with `apply`, attaches or restores.
void read_adapter(CausalLMImpl& model, const fs::path& dir, bool apply) {
  const fs::path cfg_path = dir / kAdapterConfig, w_path = dir / kAdapterWeights;
  const std::string src = cfg_path.string();
  check_lora_adapter_files(dir);
  const Json c = read_json_file(cfg_path.string());
  check(c.is_object(), src, ": not a JSON object");
  check(c.value("peft_type", std::string()) == "LORA", src, ": peft_type is '", c.value("peft_type", std::string()),
        "', rlf loads LoRA adapters (peft_type \"LORA\")");
  auto refuse_if = [&](bool bad, const std::string& what) { check(!bad, src, ": ", what, " is not supported by rlf"); };
  refuse_if(c.value("use_dora", false), "use_dora = true (DoRA)");
  refuse_if(c.value("fan_in_fan_out", false), "fan_in_fan_out = true");
  refuse_if(c.contains("bias") && c["bias"] != "none", "bias = " + c.value("bias", Json()).dump());
  // modules_to_save: a reward model's score head ("score"), nothing else.
  const bool classifier = model.config().is_classifier();
  const Json none = Json::array(), score_only = Json::array({"score"});
  const Json saved_modules = c.contains("modules_to_save") && !c["modules_to_save"].is_null() ? c["modules_to_save"] : none;
  refuse_if(saved_modules != none && !(classifier && saved_modules == score_only),
            "modules_to_save = " + saved_modules.dump() + (classifier ? "" : " on a causal LM"));
  // Newer peft options that change the function (absent, null, false or empty in a plain LoRA adapter).
  for (const char* key : {"lora_bias", "use_qalora", "target_parameters", "layer_replication", "trainable_token_indices",
                          "alora_invocation_tokens", "use_bdlora", "arrow_config"}) {
    const bool set = c.contains(key) && !c[key].is_null() && c[key] != false && !(c[key].is_array() && c[key].empty()) &&
                     !(c[key].is_object() && c[key].empty());
    refuse_if(set, std::string(key) + " = " + (set ? c[key].dump() : ""));
  }
  refuse_if(c.contains("rank_pattern") && !c["rank_pattern"].is_null() && !c["rank_pattern"].empty(), "rank_pattern");
  refuse_if(c.contains("alpha_pattern") && !c["alpha_pattern"].is_null() && !c["alpha_pattern"].empty(),
            "alpha_pattern");
  LoraOptions o;
  o.rank = json_require<int64_t>(c, "r", src);
  o.alpha = json_require<double>(c, "lora_alpha", src);
  o.dropout = json_get_or<double>(c, "lora_dropout", 0.0, src);
  o.rslora = json_get_or<bool>(c, "use_rslora", false, src);

  // The file's tensors decide which projections carry adapters.
  SafetensorsFile file(w_path);
  const std::string wsrc = w_path.string();
  std::map<std::string, const TensorView*> want;  // model parameter name -> view
  const TensorView* score = nullptr;                // a reward model's head (modules_to_save)
  const TensorMap views = file.tensors();
  for (const auto& [key, view] : views) {
    if (classifier && key == std::string(kPeftPrefix) + kScoreHead) {
      score = &view;
      continue;
    }
    std::string name = key;
    check(name.rfind(kPeftPrefix, 0) == 0, wsrc, ": tensor '", key, "' does not start with '", kPeftPrefix,
          "' (not a PEFT causal-LM adapter)");
    name = name.substr(std::string(kPeftPrefix).size());
    const size_t d = name.find(".default.");  // as named inside a PeftModel, before save strips it
    if (d != std::string::npos) name.erase(d, std::string(".default").size());
    check(is_lora_parameter(name), wsrc, ": tensor '", key, "' is not a lora_A or lora_B weight");
    want[name] = &view;
  }
  std::vector<LayerProjection> all = projections(model);
  std::vector<const LayerProjection*> chosen;
  std::vector<std::string> targets;
  for (const LayerProjection& p : all) {
    const bool a = want.count(p.module + ".lora_A.weight") > 0, b = want.count(p.module + ".lora_B.weight") > 0;
    check(a == b, wsrc, ": ", p.module, " has a lora_", a ? "A" : "B", " weight but no lora_", a ? "B" : "A");
    if (!a) continue;
    chosen.push_back(&p);
    if (std::find(targets.begin(), targets.end(), p.name) == targets.end()) targets.push_back(p.name);
    const auto& base_w = (*p.base)->weight;
    const TensorView& va = *want.at(p.module + ".lora_A.weight");
    const TensorView& vb = *want.at(p.module + ".lora_B.weight");
    const std::vector<int64_t> ea{o.rank, base_w.size(1)}, eb{base_w.size(0), o.rank};
    check(va.shape == ea && vb.shape == eb, wsrc, ": the adapter of ", p.module, " has lora_A ", shape_string(va.shape),
          " and lora_B ", shape_string(vb.shape), ", but this model's ", p.name, " (", base_w.size(0), " x ",
          base_w.size(1), ") with r = ", o.rank, " needs ", shape_string(ea), " and ", shape_string(eb),
          ": an adapter for another base model?");
  }
  for (const auto& [name, view] : want) {
    const bool known = std::any_of(all.begin(), all.end(), [&](const LayerProjection& p) {
      return name == p.module + ".lora_A.weight" || name == p.module + ".lora_B.weight";
    });
    check(known, wsrc, ": tensor '", kPeftPrefix, name, "' targets a module this model does not have (",
          model.config().architecture, ", ", model.model->layers->size(), " layers): an adapter for another base model?");
  }
  check(!chosen.empty(), wsrc, ": no adapter tensors");
  if (score) {
    const auto& head = model.score->weight;
    check(score->shape == head.sizes().vec(), wsrc, ": the score head is ", shape_string(score->shape),
          " but this model's is ", shape_string(head.sizes().vec()), ": an adapter for another base model?");
  }
  o.targets = targets;
  o.validate(src + ": ");
  for (const auto& [name, view] : want)
    check(view->dtype == DType::F32 || view->dtype == DType::BF16 || view->dtype == DType::F16, wsrc, ": tensor '",
          kPeftPrefix, name, "' is not a floating-point tensor");

  if (has_lora(model)) {
    const LoraOptions& mine = model.lora->options;
    check(mine.rank == o.rank && mine.scale() == o.scale(), src, ": r = ", o.rank, ", lora_alpha = ", o.alpha,
          " differ from the model's adapters (r = ", mine.rank, ", alpha = ", mine.alpha, ")");
    for (const LayerProjection& p : all)
      check(p.slot->active() == (std::find(chosen.begin(), chosen.end(), &p) != chosen.end()), wsrc,
            ": the adapters sit on other projections than the model's (", p.module, ")");
    if (!apply) return;
  } else {
    if (!apply) return;
    auto rt = make_runtime(o, 0);
    for (const LayerProjection* p : chosen) attach(model, *p, o.rank, rt);
    model.lora = rt;
    freeze_base(model);
  }
  torch::NoGradGuard ng;
  for (const LayerProjection* p : chosen) {
    p->slot->A->weight.copy_(tensor_from_view(*want.at(p->module + ".lora_A.weight")));
    p->slot->B->weight.copy_(tensor_from_view(*want.at(p->module + ".lora_B.weight")));
  }
  if (score) model.score->weight.copy_(tensor_from_view(*score));
}

}  // namespace

void check_lora_adapter_files(const fs::path& dir) {
  check(fs::exists(dir), "'", dir.string(), "' is not a LoRA adapter directory: no such directory");
  check(fs::is_regular_file(dir / kAdapterConfig), "'", dir.string(), "' is not a LoRA adapter directory: it has no ",
        kAdapterConfig);
  check(fs::is_regular_file(dir / kAdapterWeights), "'", dir.string(), "': ", kAdapterWeights,
        " is missing (rlf reads adapters saved as safetensors)");
}

void check_lora_adapter(CausalLMImpl& model, const fs::path& dir) { read_adapter(model, dir, false); }

void load_lora_adapter(CausalLMImpl& model, const fs::path& dir) { read_adapter(model, dir, true); }

void merge_lora(CausalLMImpl& model) {
  check(has_lora(model), "merge: the model has no LoRA adapters");
  const double s = model.lora->options.scale();
  torch::NoGradGuard ng;
  for (const LayerProjection& p : projections(model)) {
    if (!p.slot->active()) continue;
    auto& w = (*p.base)->weight;
    const auto f32 = torch::kFloat32;
    w.copy_((w.to(f32) + s * p.slot->B->weight.to(f32).mm(p.slot->A->weight.to(f32))).to(w.scalar_type()));
    (*p.base)->unregister_module("lora_A");
    (*p.base)->unregister_module("lora_B");
    *p.slot = LoraSlot{};
  }
  model.lora.reset();
  for (auto& p : model.parameters()) p.set_requires_grad(true);
}

void apply_lora_adapter(CausalLMImpl& model, const fs::path& model_path, const std::string& adapter,
                        const std::string& what) {
  if (!adapter.empty()) {
    with_context(what, [&] { load_lora_adapter(model, adapter); });
    merge_lora(model);
    return;
  }
  const fs::path sibling = model_path.parent_path() / "adapter";
  if (model_path.filename() == "model" && fs::is_regular_file(sibling / kAdapterConfig))
    std::cerr << "note: " << model_path.string() << " is the frozen base of a LoRA checkpoint; the trained policy is "
              << "it with " << sibling.string() << " (pass " << what << " " << sibling.string() << ")" << std::endl;
}

CausalLM lora_base_view(CausalLMImpl& model) {
  CausalLM view(model.config());
  view->to(model.device(), model.dtype());
  auto src = model.named_parameters();
  for (auto& p : view->named_parameters()) {
    check(src.contains(p.key()), "lora_base_view: the model lacks '", p.key(), "'");
    torch::NoGradGuard ng;
    p.value().set_data(src[p.key()]);
    p.value().set_requires_grad(false);
  }
  view->refresh_rope();
  view->set_fast_cpu_path(model.fast_cpu_path());
  return view;
}

}  // namespace rlf
