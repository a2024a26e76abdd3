// The decoder of every family rlf runs (Llama 2/3, Mistral, Qwen 2/3, Gemma
// 2/3, Phi-3/4, SmolLM 2/3, OLMo 2) as one LibTorch module configured by
// ModelConfig and its Family (model/architecture.h): RMSNorms before, after
// or around attention and MLP (with Gemma's 1 + w), optional q/k norms, RoPE
// per layer (partial, scaled, per-layer base, or none), grouped-query
// attention with optional sliding window, score scale and soft-capping, a
// gated MLP (SiLU or tanh-GELU; fused or separate projections), tied or
// untied embeddings (scaled for Gemma), final logit soft-capping.
//
// Parameter names are Hugging Face's ("model.layers.0.self_attn.q_proj.weight",
// "lm_head.weight"), so a safetensors checkpoint maps onto named_parameters()
// without a renaming table.
//
// One forward code path serves the rollout engine (with a KVCache) and the
// trainer (without): the log-probs a rollout returns and the ones the trainer
// recomputes come from the same functions.
//
// Shapes: B batch rows, T tokens per row in this call, S key positions,
// D hidden size, H query heads, K kv heads, G = H / K, hd head dim, rd rotary
// dims, V vocab.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>

#include "model/config.h"
#include "model/cpu_kernels.h"
#include "model/kv_cache.h"
#include "model/step_clock.h"
#include "model/memory_levers.h"
#include "model/lora.h"
#include "model/packed_weights.h"
#include "model/rope.h"

namespace rlf {

class RMSNormImpl : public torch::nn::Module {
 public:
  // `unit_offset`: multiplies by 1 + weight (Gemma; weights start at 0).
  // `scale_fp32`: the weight multiplies the fp32 normalised values before
  // the cast back (Gemma, OLMo 2); otherwise after it (Llama).
  RMSNormImpl(int64_t dim, double eps, bool unit_offset = false, bool scale_fp32 = false);
  torch::Tensor forward(const torch::Tensor& x);  // computed in fp32, returned in x's dtype
  // What the normalised values are multiplied by: weight, or 1 + weight in fp32 (with autograd).
  torch::Tensor scale() const;
  double eps() const { return eps_; }
  torch::Tensor weight;

 private:
  double eps_;
  bool unit_offset_, scale_fp32_;
};
TORCH_MODULE(RMSNorm);

// What every layer's attention needs for one forward call, computed once.
struct AttentionContext {
  std::vector<std::pair<torch::Tensor, torch::Tensor>> rope;  // per RoPE table: cos, sin [B, T, rd]
  torch::Tensor positions;                 // [B, T] int64
  std::map<int64_t, torch::Tensor> blocked;  // per window (0 = none): [B, 1, 1, T, S] bool, true where a
                                             // query may NOT see a key
  std::map<int64_t, torch::Tensor> empty;    // per window, when some query sees no key (padding past a window):
                                             // [B, 1, 1, T, 1] bool, true for those queries (their output is 0)
  int64_t n_keys = 0;         // S: with a cache, 1 + the largest position; else T
  // With a cache whose rows share prefixes (KVCache::set_prefix): the rows'
  // own slots for this call's tokens (positions minus the row's prefix length).
  torch::Tensor slots;        // [B, T] int64; undefined = no row has a prefix
  // A padding-free forward (forward_hidden's `tokens`): the layers' inputs
  // are [1, N, D], the N real tokens of the [B, T] grid concatenated; each
  // attention puts its queries, keys and values back on the grid, one
  // sequence per row, so no query sees another sequence's keys.
  torch::Tensor tokens;       // [N] int64: each token's flat index b*T + t in the grid; undefined = the grid itself
  int64_t grid_rows = 0, grid_cols = 0;  // B, T of the grid (with `tokens`)
};

// A padding-free forward's rows x [.., C] (N of them, in the order of
// `tokens` [N]) placed at those flat indices of a [cells, C] grid of zeros,
// with autograd (the gradient flows back to x's rows).
torch::Tensor tokens_to_grid(const torch::Tensor& x, const torch::Tensor& tokens, int64_t cells);

// One projection of a layer with its adapter slot (what LoRA, decoding's
// weight packing and the benchmarks walk).
struct Projection {
  std::string name;            // "q_proj", "qkv_proj", "gate_up_proj", ...
  std::string module;          // within the layer: "self_attn.q_proj", "mlp.down_proj"
  torch::nn::Linear* linear;   // the base projection
  LoraSlot* lora;              // its adapter (empty without)
};

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const ModelConfig& config, int64_t layer);
  // x [B, T, D]. With a cache, this call's keys/values are written into
  // layer `layer` of it at ctx.positions (ctx.slots with shared prefixes) and
  // queries attend to cached positions [0, S); without one, keys are this
  // call's tokens. ctx.blocked[window] masks what a query may not see.
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx, KVCache* cache, int64_t layer);
  // The query, key and value projections of x (before q/k norms and RoPE):
  // [.., H*hd], [.., K*hd], [.., K*hd], split from qkv_proj when fused.
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> project_qkv(const torch::Tensor& x);

  // Separate q/k/v, or Phi-3's fused qkv_proj (the others null).
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, qkv_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};  // Qwen 3, Gemma 3 (per head), OLMo 2 (whole); null without
  LoraSlot q_lora, k_lora, v_lora, qkv_lora, o_lora;  // adapters (model/lora.h); empty by default

  QkNorm qk_norm = QkNorm::None;
  LayerAttention spec;          // this layer's window and RoPE table
  double scale = 0;             // scores multiplier
  double softcap = 0;           // Gemma 2's attn_logit_softcapping (0 = off)
  int64_t n_heads, n_kv_heads, head_dim;
};
TORCH_MODULE(Attention);

class MLPImpl : public torch::nn::Module {
 public:
  explicit MLPImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x);  // down(act(gate(x)) * up(x))
  // gate and up projections (each [.., I]), split from gate_up_proj when fused.
  std::pair<torch::Tensor, torch::Tensor> project_gate_up(const torch::Tensor& x);
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, gate_up_proj{nullptr}, down_proj{nullptr};
  LoraSlot gate_lora, up_lora, gate_up_lora, down_lora;  // adapters (model/lora.h); empty by default
  cpu::GluActivation act = cpu::GluActivation::Silu;
  int64_t intermediate_size;
};
TORCH_MODULE(MLP);

// y = h + mlp_out(mlp(mlp_in(h))), h = x + attn_out(attn(attn_in(x))): the
// norms the family has (model/architecture.h NormPlacement), under their
// Hugging Face names; the absent ones null.
class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const ModelConfig& config, int64_t layer);
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx, KVCache* cache, int64_t layer);
  // The projections this layer has, attention's then the MLP's.
  std::vector<Projection> projections();
  Attention self_attn{nullptr};
  MLP mlp{nullptr};
  RMSNorm attn_in{nullptr}, attn_out{nullptr}, mlp_in{nullptr}, mlp_out{nullptr};
};
TORCH_MODULE(DecoderLayer);

// "model." prefix in Hugging Face checkpoints.
class DecoderStackImpl : public torch::nn::Module {
 public:
  explicit DecoderStackImpl(const ModelConfig& config);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};
};
TORCH_MODULE(DecoderStack);

class CausalLMImpl : public torch::nn::Module {
 public:
  explicit CausalLMImpl(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }
  torch::ScalarType dtype() const;
  torch::Device device() const;
  DecoderLayerImpl& layer(int64_t l) { return *model->layers->ptr<DecoderLayerImpl>(l); }

  // Final-norm hidden states [B, T, D] for input_ids [B, T] (int64) at
  // positions [B, T]. `cache` (optional) must have B rows. `key_mask` (optional,
  // no cache only) [B, T] bool: false for padding tokens.
  //
  // Padding-free (`tokens` given, no cache): only the N tokens at these flat
  // indices b*T + t of the grid (in any order; key_mask true there) are
  // computed, concatenated as one row: returns [1, N, D], the same values
  // as the padded forward's rows at those indices (to float rounding). The
  // projections, MLPs and norms run over the N tokens alone; attention runs
  // per sequence (each grid row its own block of the causal mask), so no
  // token sees another sequence. Fast path and module path alike.
  torch::Tensor forward_hidden(const torch::Tensor& input_ids, const torch::Tensor& positions, KVCache* cache = nullptr,
                               const torch::Tensor& key_mask = {}, const torch::Tensor& tokens = {});

  // Logits [B, T, V] in the model's dtype (soft-capped when the config says
  // so). A classifier (reward model) has no LM head: an error naming what to
  // use instead.
  torch::Tensor logits(const torch::Tensor& hidden);

  // A classifier's score head at every position: [B, T, num_labels] fp32
  // (Hugging Face's *ForSequenceClassification reads the last token's row);
  // a causal LM with a value head: that head's [B, T, 1].
  torch::Tensor scores(const torch::Tensor& hidden);

  // PPO with a value head on the policy's own trunk (value.shared): adds a
  // zero-initialised head "v_head" [1, D] (no bias) beside the LM head, in
  // the model's dtype and device, so scores() gives V(s_t) from the same
  // hidden states as the token log-probs. Its weight is a parameter like any
  // other (optimiser, checkpoints: "v_head.weight" in model.safetensors,
  // which loaders without a value head ignore). Causal LMs only; once.
  void add_value_head();
  bool has_value_head() const { return !v_head.is_empty(); }

  // log p(targets) [B, T] in fp32, computed chunk by chunk over T. Under
  // autograd with logprob recompute on (set_logprob_recompute, or set_memory_levers' auto),
  // each chunk's logits are recomputed in backward (model/recompute.h): what
  // stays for backward is the hidden states, targets and per-position
  // results, and one chunk of [rows, V] logits exists at a time
  // (model/chunked_classifier.h).
  // Otherwise (recompute off, or no gradient needed) chunks of 8192 rows,
  // and at most one [B, T, V] fp32 tensor exists (the one autograd keeps). Columns
  // t < `from` are not computed (no logits): they hold 0, for callers whose
  // loss reads nothing there (the prompts of a batch whose completions all
  // start at or after `from`).
  // Sampling-mask replay: with `keep_ids` [B, T, k] int64 (ids, -1 = none),
  // a position with any id >= 0 gets its log-prob renormalised over those
  // ids (the set the sampler drew from: logit - logsumexp of their logits);
  // a position with none, the whole vocabulary's. Same for every token_logprobs*.
  // Only those ids' logits are computed (model/kept_logits.h), unless an
  // entropy with gradient or selected buckets need the whole vocabulary.
  torch::Tensor token_logprobs(const torch::Tensor& hidden, const torch::Tensor& targets, int64_t from = 0,
                               const torch::Tensor& keep_ids = {});

  // Like token_logprobs, also returning the entropy of each position's
  // distribution [B, T] (fp32; 0 before `from`). With `entropy_grad` false
  // the entropy is computed without autograd (for logging), so it costs no
  // extra memory. With keep_ids and no entropy gradient, a position with
  // ids gets the entropy of the distribution renormalised over them (the one
  // sampled from); otherwise the whole vocabulary's.
  std::pair<torch::Tensor, torch::Tensor> token_logprobs_entropy(const torch::Tensor& hidden,
                                                                 const torch::Tensor& targets, bool entropy_grad,
                                                                 int64_t from = 0, const torch::Tensor& keep_ids = {});

  // Like token_logprobs_entropy (the entropy only when `entropy` is given),
  // also returning the log-probs of the tokens `select_ids` [B, T, k] int64
  // at each position and of a tail bucket for every other token: [B, T, k + 1]
  // fp32 with gradient (algorithms/distill_divergence.h bucket_logprobs; 0
  // before `from`), from the same chunks of logits as the token log-probs.
  torch::Tensor token_logprobs_selected(const torch::Tensor& hidden, const torch::Tensor& targets,
                                        const torch::Tensor& select_ids, torch::Tensor* selected,
                                        torch::Tensor* entropy, bool entropy_grad, int64_t from = 0,
                                        const torch::Tensor& keep_ids = {});

  // Vocabulary-chunked log-probs under autograd (token_logprobs*): `on`
  // (default false: today's numerics, bit for bit) recomputes each chunk's logits in backward instead of
  // keeping them; same values and gradients (to float rounding where the
  // chunking differs), one more classifier matmul per chunk. `chunk_rows`:
  // rows (batch x positions) per chunk, 0 = automatic (with recompute about
  // 2^25 logits per chunk, at least 64 rows; without, 8192 rows).
  void set_logprob_recompute(bool on, int64_t chunk_rows = 0);
  bool logprob_recompute() const { return levers_.logprob_recompute == LeverMode::On; }

  // Activation checkpointing: with `layers_per_segment` k > 0, a forward
  // under autograd without a cache (the policy update) keeps only the input
  // of each segment of k consecutive decoder layers and recomputes the
  // segment's forward in backward (model/recompute.h; LoRA dropout masks
  // replayed). 1 = every layer its own segment; 0 = off (default). Same
  // values and gradients as without it; one more forward of the layers.
  // Module path and fp32 CPU fast path alike.
  void set_checkpoint_layers(int64_t layers_per_segment);
  int64_t checkpoint_layers() const {
    return levers_.checkpoint == CheckpointMode::Layers ? levers_.checkpoint_every : 0;
  }

  // Both levers at once, with their "auto" settings (model/memory_levers.h;
  // a run's [trainer] keys). The model's own default is off and none: today's
  // numerics, bit for bit. Counts what auto decided (memory_lever_uses).
  void set_memory_levers(const MemoryLevers& levers);
  const MemoryLevers& memory_levers() const { return levers_; }
  struct LeverUses {
    int64_t recomputed_logprob_calls = 0;  // token_logprobs* calls that recomputed their chunks
    int64_t checkpointed_forwards = 0;     // forwards whose layers were checkpointed
  };
  const LeverUses& memory_lever_uses() const { return lever_uses_; }

  // Convenience: logits for input_ids [B, T] at positions 0..T-1.
  torch::Tensor forward(const torch::Tensor& input_ids);

  // Re-initialises all weights as a fresh random model (normal(0, 0.02)
  // projections/embeddings, identity norms — ones, zeros for Gemma's 1 + w —
  // zeros for biases).
  void init_random(uint64_t seed);

  // Rebuilds the RoPE tables on the model's current device (call after .to()).
  void refresh_rope();

  // fp32 CPU fast path (model/cpu_fast_forward.cpp). When on (default),
  // forward_hidden on an fp32 CPU model computes the same function with ~12
  // calls per layer instead of ~60 tensor ops: fused fp32 kernels for RMSNorm,
  // RoPE + attention and the gated MLP between the usual matmuls, the same
  // weights. Under NoGradGuard (rollouts, reference and old log-probs) it runs
  // on plain buffers with or without a KV cache; with autograd on (the policy
  // update, no cache) the kernels are autograd functions with hand-written
  // backward passes. Sums run in another order, so results agree with the
  // module path to float rounding (tested, outputs and gradients, every
  // family). A bf16 CPU model decodes on it too (a forward with a KV cache
  // of kv_cache_dtype(), grad mode off): its weights are read as bf16 (half
  // the bytes) and widened in registers, everything else is fp32, so it
  // computes what the fp32 model holding the widened weights computes (to
  // summation order; tested); its other forwards (training, scoring, log-
  // probs without a cache) stay on the module path's bf16 arithmetic. fp16
  // and CUDA always take the module path; off: every forward does.
  void set_fast_cpu_path(bool on) { fast_cpu_path_ = on; }
  bool fast_cpu_path() const { return fast_cpu_path_; }
  // True when a forward_hidden call now (grad mode as it is, with `cache`)
  // would take the fast path (never with a cache while grad mode is on).
  bool fast_cpu_path_applies(KVCache* cache = nullptr) const;
  // The dtype of the KV caches this model decodes with (RolloutEngine's):
  // fp32 for a bf16 model whose decoding takes the fast path (above; twice
  // a bf16 cache's bytes), otherwise the model's dtype. A cache of another
  // dtype than the model's takes the fast path or is an error.
  torch::ScalarType kv_cache_dtype() const;

  // Decoding's packed weights (model/packed_weights.h). pack_for_decoding()
  // packs, afresh, the weight every projection multiplies by (with merged
  // LoRA inference, the merge) and the classifier's, when the fp32 CPU fast
  // path applies (otherwise it does nothing); forwards without autograd then
  // multiply by the panels (cpu::matmul_panels) wherever a weight is still
  // the one packed. release_decoding_weights() frees them. RolloutEngine
  // packs at the start of each generate call and serve loop. With
  // set_pack_weights(false) pack_for_decoding does nothing: decoding keeps
  // the unpacked kernels and needs no second copy of the weights (the
  // panels are as large as the weights while a call runs).
  void pack_for_decoding();
  void set_pack_weights(bool on) { pack_weights_ = on; }
  bool pack_weights() const { return pack_weights_; }
  void release_decoding_weights() { packed_.clear(); }
  const PackedWeights& packed_weights() const { return packed_; }

  // Times the parts of decoding steps into `clock` (model/step_clock.h);
  // null detaches it. The caller keeps the clock alive while attached.
  void set_step_clock(StepClock* clock) { step_clock_ = clock; }

  DecoderStack model{nullptr};
  torch::nn::Linear lm_head{nullptr};  // null when tie_word_embeddings or a classifier
  torch::nn::Linear score{nullptr};    // classifiers only: [num_labels, D], no bias ("score.weight")
  torch::nn::Linear v_head{nullptr};   // add_value_head() only: [1, D], no bias ("v_head.weight")
  std::shared_ptr<LoraRuntime> lora;   // set by add_lora / load_lora_adapter (model/lora.h); null without adapters

 private:
  // One chunk of token_logprobs_impl from its logits [B, n, V] (model
  // dtype): log-probs [B, n], entropy [B, n] (when asked), selected buckets
  // [B, n, k + 1] (when select_ids is defined).
  struct LogprobChunk {
    torch::Tensor logprobs, entropy, selected;
  };
  LogprobChunk logprob_head(const torch::Tensor& logits, const torch::Tensor& targets, const torch::Tensor& select_ids,
                            bool entropy, bool entropy_grad, const torch::Tensor& keep_ids);
  // The same over the whole vocabulary (no keep_ids).
  LogprobChunk logprob_head_full(const torch::Tensor& logits, const torch::Tensor& targets,
                                 const torch::Tensor& select_ids, bool entropy, bool entropy_grad);
  // The same over hidden [B, n, D], `chunk` positions at a time, each chunk's
  // logits recomputed in backward (model/chunked_classifier.h).
  LogprobChunk logprobs_recomputed(const torch::Tensor& hidden, const torch::Tensor& targets,
                                   const torch::Tensor& select_ids, bool entropy, bool entropy_grad, int64_t chunk,
                                   const torch::Tensor& keep_ids);
  // Log-probs renormalised over each position's kept set (keep_ids [B, n, K],
  // -1 = unused): log p(target) = z_target - logsumexp(z over the kept ids),
  // from those ids' logits alone (model/kept_logits.h); the entropy (no
  // gradient) is the kept set's. Positions without a kept set: the whole
  // vocabulary. No entropy gradient, no selected buckets (callers check).
  LogprobChunk logprobs_over_kept_sets(const torch::Tensor& hidden, const torch::Tensor& targets,
                                       const torch::Tensor& keep_ids, bool entropy);
  torch::Tensor softcap_logits(const torch::Tensor& z) const;  // Gemma's final soft-cap (identity without)
  const torch::Tensor& classifier_weight() const;  // lm_head's, or the tied embeddings'
  void require_lm_head() const;                     // errors for a classifier (reward model)
  torch::Tensor token_logprobs_impl(const torch::Tensor& hidden, const torch::Tensor& targets, torch::Tensor* entropy,
                                    bool entropy_grad, int64_t from, const torch::Tensor& select_ids = {},
                                    torch::Tensor* selected = nullptr, const torch::Tensor& keep_ids = {});
  // h after every decoder layer, `layer_fn(l, h)` giving layer l's output:
  // segments recomputed in backward when checkpointing applies (grad mode on).
  using LayerFn = std::function<torch::Tensor(int64_t, const torch::Tensor&)>;
  // `seq_len`: positions per row (h is [B, T, D] or [B·T, D], or a
  // padding-free forward's N tokens); `grid_cells`: the B·T positions
  // attention runs on; `fused`: the fast path's kernels.
  torch::Tensor run_layers(torch::Tensor h, int64_t seq_len, int64_t grid_cells, bool fused, const LayerFn& layer_fn);
  // Layers per checkpointed segment for a forward of h over rows of seq_len (0: none).
  int64_t checkpoint_segment(const torch::Tensor& h, int64_t seq_len, int64_t grid_cells, bool fused) const;
  torch::Tensor forward_hidden_cpu_fast(const torch::Tensor& input_ids, const torch::Tensor& positions, KVCache* cache,
                                        const torch::Tensor& key_mask, int64_t max_pos, const torch::Tensor& tokens);
  // The embeddings of ids (Gemma: times sqrt(hidden_size) in the model's
  // dtype), or, given `as`, widened to it first and scaled in it.
  torch::Tensor embed(const torch::Tensor& ids, c10::optional<torch::ScalarType> as = c10::nullopt);
  // The parameters are all contiguous and of dtype `t` (the fast path's precondition).
  bool parameters_are(torch::ScalarType t) const;
  bool fast_cpu_path_ = true;
  MemoryLevers levers_ = [] {  // set_memory_levers; off by default
    MemoryLevers m;
    m.logprob_recompute = LeverMode::Off;
    m.checkpoint = CheckpointMode::None;
    m.padding_free = LeverMode::Off;
    return m;
  }();
  LeverUses lever_uses_;
  bool pack_weights_ = true;  // set_pack_weights
  PackedWeights packed_;      // pack_for_decoding
  StepClock* step_clock_ = nullptr;  // set_step_clock; not owned
  ModelConfig config_;
  std::vector<RotaryEmbedding> ropes_;  // per RoPE table (ModelConfig::n_rope_tables)
};
TORCH_MODULE(CausalLM);

// Parses "fp32"/"float32"/"bf16"/"bfloat16"/"fp16"/"float16".
torch::ScalarType parse_dtype(const std::string& name);
std::string dtype_name(torch::ScalarType t);  // "fp32", "bf16", "fp16"

// Parses "cpu", "cuda", "cuda:N"; errors when CUDA is requested but unavailable.
torch::Device parse_device(const std::string& name);

}  // namespace rlf
