// Low-rank adapters (LoRA; Hu et al. 2021, arXiv:2106.09685) on the
// projections of every family (q/k/v/o and gate/up/down; Phi-3's fused
// qkv_proj and gate_up_proj), saved and loaded in the PEFT layout.
//
// A projection y = W x + b with an adapter computes
//     y = W x + b + s · B A drop(x),   A [r, in], B [out, r], s = alpha / r
// (alpha / sqrt(r) with rslora). The base stays frozen; only A and B train,
// so the optimizer's state is proportional to the adapters. A starts as
// PEFT's default (kaiming-uniform with a = sqrt(5): U(−1/√in, 1/√in)), B at
// zero, so a fresh adapter leaves the model's function unchanged.
//
// Adapters are registered as children of the base Linear ("lora_A",
// "lora_B"), so the model's parameter names are PEFT's without the
// "base_model.model." prefix: "model.layers.0.self_attn.q_proj.lora_A.weight".
// Everything that walks named_parameters() (optimizer, gradient reduction,
// checksums) sees them; save_model() and load_weights() skip them (the base
// directory stays a plain Hugging Face model) and save_lora_adapter() writes
// them as PEFT does:
//   DIR/adapter_config.json        peft_type LORA, r, lora_alpha, lora_dropout,
//                                  target_modules, use_rslora, base_model_name_or_path
//   DIR/adapter_model.safetensors  "base_model.model.<parameter name>" in the model's dtype
// which `PeftModel.from_pretrained(base, DIR)` loads (oracle test).
//
// The rollout engine and the trainer run the same forward code: the adapter
// is applied unmerged unless merged inference is switched on, in which case
// forwards without autograd use W + s·B·A, computed once per adapter version
// (the merged and unmerged log-probs agree to float rounding).
#pragma once

#include <torch/torch.h>

#include <array>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace rlf {

class CausalLMImpl;
class CausalLM;

// The projections an adapter may sit on.
// q_proj k_proj v_proj o_proj gate_proj up_proj down_proj qkv_proj gate_up_proj
const std::vector<std::string>& lora_projection_names();

struct LoraOptions {
  int64_t rank = 8;                                       // r
  double alpha = 16;                                      // lora_alpha
  double dropout = 0;                                     // on the adapter's input, in updates only
  std::vector<std::string> targets{"q_proj", "v_proj"};   // projections given adapters in every layer
  bool rslora = false;                                    // s = alpha / sqrt(r) instead of alpha / r
  double scale() const;
  // Errors name `prefix` + the key ("lora.rank must be >= 1 ...").
  void validate(const std::string& prefix = "lora.") const;
};

// Shared by every adapter of one model.
struct LoraRuntime {
  LoraOptions options;
  bool merged_inference = false;   // forwards without autograd use W + s·B·A
  torch::Generator dropout_gen;    // dropout masks (checkpointed as "lora_dropout")
};

// One projection's adapter; empty when the projection has none.
struct LoraSlot {
  torch::nn::Linear A{nullptr}, B{nullptr};  // lora_A [r, in], lora_B [out, r]
  std::shared_ptr<LoraRuntime> runtime;
  torch::Tensor merged;                      // cached W + s·B·A (merged inference)
  std::array<int64_t, 3> merged_at{-1, -1, -1};  // versions of W, A, B it was computed from
  bool active() const { return !A.is_empty(); }
};

// base(x) with the slot's adapter (the module path and the autograd fast path).
torch::Tensor lora_project(const torch::nn::Linear& base, LoraSlot& slot, const torch::Tensor& x);
// Without autograd: the weight to multiply by (W, or W + s·B·A when merged
// inference is on), and the unmerged adapter's term added into `out`
// (nothing when merged or without an adapter). out = x·weightᵀ (+ b), then
// lora_add_into(slot, x, out) equals lora_project(base, slot, x) (bf16
// adapters with an fp32 x, the fast path's bf16 decoding: widened to fp32).
const torch::Tensor& lora_inference_weight(const torch::nn::Linear& base, LoraSlot& slot);
void lora_add_into(LoraSlot& slot, const torch::Tensor& x, torch::Tensor& out);

// True for adapter parameter names (".lora_A." / ".lora_B.").
bool is_lora_parameter(const std::string& name);

// Attaches fresh adapters to options.targets in every layer and freezes every
// other parameter but a reward model's score head, which trains beside the
// adapters and is saved with them (PEFT's SEQ_CLS task: modules_to_save =
// ["score"]). `seed` draws A. Errors: an unknown target (naming it and the
// choices), a target the model lacks (q_proj on Phi-3, whose attention has
// one fused qkv_proj: naming the model's projections), adapters already
// attached.
void add_lora(CausalLMImpl& model, const LoraOptions& options, uint64_t seed);

bool has_lora(const CausalLMImpl& model);
// The attached adapters' options; errors without adapters.
const LoraOptions& lora_options(const CausalLMImpl& model);
// Merged inference on or off (no-op without adapters).
void set_lora_merged_inference(CausalLMImpl& model, bool on);

// Writes DIR in the PEFT layout (see above); `base_model` goes to
// base_model_name_or_path. Files are replaced atomically.
void save_lora_adapter(CausalLMImpl& model, const std::filesystem::path& dir, const std::string& base_model);

// Reads a PEFT LoRA adapter directory (rlf's or peft's). Without adapters on
// the model it attaches the file's (its projections and layers, its r and
// alpha) and freezes the base; with adapters it must name the same ones, and
// restores their values. Everything is validated before anything changes:
// not a LoRA adapter, options rlf does not implement (DoRA, bias, lora_bias,
// fan_in_fan_out, rank/alpha patterns, modules_to_save, target_parameters,
// layer replication, ...), a module the model lacks, shapes of
// another base model — each an error naming the file and the tensor.
void load_lora_adapter(CausalLMImpl& model, const std::filesystem::path& dir);
// The same checks, changing nothing.
void check_lora_adapter(CausalLMImpl& model, const std::filesystem::path& dir);
// The checks that need no model: DIR exists and holds adapter_config.json and
// adapter_model.safetensors (a run checks lora.adapter so before it writes anything).
void check_lora_adapter_files(const std::filesystem::path& dir);

// What `rlf generate/eval/export` do with `--adapter DIR` (`what` names the
// option in errors): load DIR onto `model` (loaded from `model_path`) and
// merge it. Without an adapter, when `model_path` is a LoRA checkpoint's base
// (.../step-N/model beside .../step-N/adapter), a note on stderr says so —
// the base alone is not the trained policy.
void apply_lora_adapter(CausalLMImpl& model, const std::filesystem::path& model_path, const std::string& adapter,
                        const std::string& what);

// W ← W + s·B·A (in fp32, stored in W's dtype) for every adapter, then removes
// the adapters: the model is a plain one (what `rlf convert --merge-lora` saves).
void merge_lora(CausalLMImpl& model);

// The model with its adapters switched off, without a copy of the weights:
// another CausalLM whose parameters share the base tensors (frozen). With
// LoRA this is the KL reference.
CausalLM lora_base_view(CausalLMImpl& model);

}  // namespace rlf
