#include "train/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "model/grad_in_place.h"
#include "model/memory_levers.h"

namespace rlf {
namespace {

double mb(double bytes) { return bytes / 1e6; }

std::string fmt(const char* f, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// The projection shapes of one decoder layer: name -> (in, out).
std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> projections(const ModelConfig& c) {
  const int64_t d = c.hidden_size, hd = c.resolved_head_dim(), i = c.intermediate_size;
  const int64_t q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd;
  return {{"q_proj", {d, q}},    {"k_proj", {d, kv}},  {"v_proj", {d, kv}}, {"o_proj", {q, d}},
          {"gate_proj", {d, i}}, {"up_proj", {d, i}}, {"down_proj", {i, d}}};
}

int64_t dtype_bytes(const TrainConfig& cfg) { return cfg.model.dtype == "bf16" ? 2 : 4; }

}  // namespace

int64_t count_parameters(const ModelConfig& c) {
  const int64_t d = c.hidden_size, hd = c.resolved_head_dim();
  int64_t layer = 2 * d;  // the two norms every family has
  for (const auto& [name, io] : projections(c)) layer += io.first * io.second;
  if (c.attention_bias) layer += c.num_attention_heads * hd + 2 * c.num_key_value_heads * hd + (c.o_bias ? d : 0);
  const int64_t head = c.tie_word_embeddings ? 0 : c.vocab_size * d;
  return c.vocab_size * d + c.num_hidden_layers * layer + d + head;
}

int64_t count_lora_parameters(const ModelConfig& c, const LoraOptions& lora) {
  int64_t n = 0;
  for (const auto& [name, io] : projections(c))
    if (std::find(lora.targets.begin(), lora.targets.end(), name) != lora.targets.end())
      n += lora.rank * (io.first + io.second);
  return n * c.num_hidden_layers;
}

MemoryPlan plan_memory(const TrainConfig& cfg, const ModelConfig& m, int64_t usable_bytes, int64_t prompt_tokens) {
  MemoryPlan p;
  const RlStepOptions& rl = cfg.rl;
  const int64_t episode = rl.env.episode.episode_budget(rl.sampling.max_new_tokens, rl.env.type == "single_turn");
  p.seq_len = std::min<int64_t>(m.max_position_embeddings, prompt_tokens + episode);
  // A token budget's worst case: as many full-length sequences as fit it (at least one).
  p.micro_batch = cfg.trainer.micro_batch_tokens > 0 ? std::max<int64_t>(1, cfg.trainer.micro_batch_tokens / p.seq_len)
                                                      : cfg.trainer.micro_batch_size;
  const int64_t eb = dtype_bytes(cfg), total = count_parameters(m);
  const int64_t trainable = cfg.lora.enabled ? count_lora_parameters(m, cfg.lora.adapter) : total;
  const bool reference = rl.kl_beta > 0 || rl.kl_target > 0;
  const MemoryLevers lv = with_machine_memory(cfg.memory, usable_bytes);
  const int64_t tokens = p.micro_batch * p.seq_len;
  const bool fused = cfg.model.fast_cpu_path && eb == 4 && cfg.model.device == "cpu";
  const int64_t kept = layer_activation_bytes(m, tokens, p.seq_len, eb, fused) * m.num_hidden_layers;
  p.checkpoint_every = lv.checkpoint == CheckpointMode::Layers ? lv.checkpoint_every
                       : lv.checkpoint == CheckpointMode::Auto && lv.auto_activation_bytes > 0 &&
                               kept >= lv.auto_activation_bytes
                           ? lv.checkpoint_every
                           : 0;
  p.logprob_recompute = lv.logprob_recompute == LeverMode::On ||
                        (lv.logprob_recompute == LeverMode::Auto && tokens * m.vocab_size >= lv.auto_logits);
  const double activations =
      p.checkpoint_every == 0
          ? static_cast<double>(kept)
          : static_cast<double>(layer_activation_bytes(m, tokens, p.seq_len, eb, fused)) * p.checkpoint_every +
                static_cast<double>(tokens) * m.hidden_size * eb *
                    ((m.num_hidden_layers + p.checkpoint_every - 1) / p.checkpoint_every);
  const double masters = eb == 2 ? 4.0 : 0.0;
  // The vocabulary-chunked classifier sums a large fp32 table's gradient into
  // .grad, and the embedding's then joins it there (model/grad_in_place.h).
  const bool in_place = eb == 4 && p.logprob_recompute && m.vocab_size * m.hidden_size >= kInPlaceGradElements;
  p.parts = {
      {"weights", mb(static_cast<double>(total) * eb * (reference ? 2 : 1)),
       fmt("%.0f M parameters", total / 1e6) + (reference ? " x 2 (a reference model)" : "")},
      {"gradients", mb(static_cast<double>(trainable) * eb), fmt("%.1f M trainable", trainable / 1e6)},
      {"optimizer", mb(static_cast<double>(trainable) * (8 + masters)),
       eb == 2 ? "AdamW moments and fp32 masters" : "AdamW moments"},
      {"activations", mb(activations),
       p.checkpoint_every ? "checkpointed every " + std::to_string(p.checkpoint_every) + " layer(s)" : "every layer kept"},
      {"log-probs", mb(static_cast<double>(logprob_bytes(m, tokens, p.logprob_recompute, lv.logprob_chunk_rows))),
       p.logprob_recompute ? "vocabulary chunks recomputed" : "[tokens, vocabulary] logits kept"},
      {"grad_buffers", mb(cfg.lora.enabled || in_place ? 0.0 : static_cast<double>(m.vocab_size) * m.hidden_size * 4 *
                                                                  (m.tie_word_embeddings ? 2 : 1)),
       cfg.lora.enabled ? "frozen classifier"
       : in_place       ? "summed into .grad in place (model/grad_in_place.h)"
                        : "the classifier's and embedding's [V, D] gradients before they sum"},
      {"kv_cache", mb(2.0 * m.num_hidden_layers * m.num_key_value_heads * m.resolved_head_dim() * eb *
                      std::min(rl.max_batch_rows, rl.prompts_per_step * rl.group_size) * p.seq_len),
       std::to_string(std::min(rl.max_batch_rows, rl.prompts_per_step * rl.group_size)) + " rows"},
  };
  auto part = [&](const char* name) {
    for (const auto& x : p.parts)
      if (x.name == name) return x.mb;
    return 0.0;
  };
  const double fixed = part("weights") + part("gradients") + part("optimizer");
  p.update_peak_mb = fixed + part("activations") + part("log-probs") + part("grad_buffers");
  p.rollout_peak_mb = fixed + part("kv_cache");
  return p;
}

std::string MemoryPlan::table() const {
  std::string out = "memory estimate (micro-batch " + std::to_string(micro_batch) + " x " + std::to_string(seq_len) +
                    " tokens):\n";
  for (const auto& x : parts)
    out += "  " + x.name + std::string(13 - std::min<size_t>(12, x.name.size()), ' ') + fmt("%9.0f MB  ", x.mb) +
           x.basis + "\n";
  out += fmt("  update peak  %9.0f MB\n  rollout peak %9.0f MB\n", update_peak_mb, rollout_peak_mb);
  return out;
}

Json MemoryPlan::to_json() const {
  Json parts_json = Json::object();
  for (const auto& x : parts) parts_json[x.name] = x.mb;
  return Json{{"seq_len", seq_len},
              {"micro_batch", micro_batch},
              {"logprob_recompute", logprob_recompute},
              {"checkpoint_every", checkpoint_every},
              {"parts_mb", parts_json},
              {"update_peak_mb", update_peak_mb},
              {"rollout_peak_mb", rollout_peak_mb},
              {"peak_mb", peak_mb()}};
}

namespace {
// The sequence length plan_memory assumes (prompt + the episode's budget).
int64_t planned_seq_len(const TrainConfig& c, const ModelConfig& m, int64_t prompt_tokens) {
  return plan_memory(c, m, 0, prompt_tokens).seq_len;
}
}  // namespace

std::vector<std::string> memory_advice(const TrainConfig& cfg, const ModelConfig& model, double limit_mb,
                                       int64_t usable_bytes, int64_t prompt_tokens) {
  std::vector<std::string> out;
  TrainConfig c = cfg;
  std::string sets;
  auto fits = [&](const std::string& more) {
    sets += more;
    const double peak = plan_memory(c, model, usable_bytes, prompt_tokens).peak_mb();
    out.push_back(sets.substr(1) + fmt(" (peak %.0f MB)", peak));
    return peak <= limit_mb;
  };
  if (plan_memory(c, model, usable_bytes, prompt_tokens).peak_mb() <= limit_mb) return out;
  c.memory.logprob_recompute = LeverMode::On;
  c.memory.checkpoint = CheckpointMode::Layers;
  if (fits(" --set trainer.logprob_recompute=on --set trainer.checkpoint_activations=layers")) return out;
  if (!c.lora.enabled) {
    c.lora.enabled = true;
    if (fits(" --set lora.enabled=true")) return out;
  }
  if (c.model.dtype != "bf16") {
    c.model.dtype = "bf16";
    if (fits(" --set model.dtype=bf16")) return out;
  }
  while (c.trainer.micro_batch_tokens > 0 && c.trainer.micro_batch_tokens / 2 >= planned_seq_len(c, model, prompt_tokens)) {
    c.trainer.micro_batch_tokens /= 2;
    if (fits(" --set trainer.micro_batch_tokens=" + std::to_string(c.trainer.micro_batch_tokens))) return out;
  }
  while (c.trainer.micro_batch_tokens == 0 && c.trainer.micro_batch_size > 1) {
    c.trainer.micro_batch_size /= 2;
    if (fits(" --set algorithm.micro_batch_size=" + std::to_string(c.trainer.micro_batch_size))) return out;
  }
  return out;
}

}  // namespace rlf
