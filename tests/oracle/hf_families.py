"""Oracle for rlf's decoder families (model/architecture.h) and RoPE scalings:
today's transformers (5.x) and peft on today's torch (the peer environment,
scripts/peer_venv.sh). One process serves every family, in two phases.

usage:
  hf_families.py make OUT_DIR [NAME...]    # every model when no NAME is given
  hf_families.py check OUT_DIR [NAME...]   # what rlf wrote back

`make` builds, per NAME, a random model at a small shape with the family's
non-trivial choices (see MODELS), and writes into OUT_DIR/NAME/:
  hf/            save_pretrained (safetensors; some models sharded)
  adapter/       a random peft LoRA adapter on every projection (B != 0)
  ref.json       {"ids", "logits" (fp32), "logits_short" (the first SHORT
                  tokens alone: longrope's short factors, a window longer
                  than the sequence), "logits_bf16" (the same weights in
                  bf16), "prompt", "greedy" (model.generate, greedy),
                  "margins" (top-1 minus top-2 logit at each greedy step),
                  "peft_logits" (fp32, base + adapter)}
`check` reads what rlf wrote into OUT_DIR/NAME/ (saved/: rlf's save of the
model; rlf_adapter/: rlf's LoRA adapter; rlf.json: {"lora_logits"}) and
writes OUT_DIR/NAME/check.json: {"saved_logits": transformers on saved/,
"config_type": its config class, "peft_logits": peft on hf/ + rlf_adapter/}.
"""
import json
import os
import sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM

IDS = [[1, 5, 9, 23, 7, 64, 3, 99, 12, 42, 8, 17, 31, 2], [2, 44, 81, 6, 11, 90, 33, 4, 5, 6, 7, 1, 120, 64]]
SHORT = 6           # tokens of the short forward
PROMPT = [3, 17, 42, 8, 99]
NEW_TOKENS = 12
COMMON = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
              initializer_range=0.08)

# name -> (config class name, config kwargs, LoRA targets, max shard size or None).
# Each model is chosen to exercise what its family adds: GQA, head_dim != hidden / heads, tied and untied
# embeddings, windows shorter than the sequence, every RoPE scaling.
DEFAULT_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
PHI_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]
MODELS = {
    # Qwen 3: per-head q/k norms, head_dim 24 (hidden/heads = 16), biases, YaRN, a window of 4 on layers >= 1.
    "qwen3": ("Qwen3Config", dict(num_key_value_heads=2, head_dim=24, tie_word_embeddings=False, attention_bias=True,
                                  use_sliding_window=True, sliding_window=4, max_window_layers=1,
                                  max_position_embeddings=64,
                                  rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
                                                   "original_max_position_embeddings": 16}),
              DEFAULT_TARGETS, "40KB"),
    # Gemma 2: sandwich norms (1 + w), scaled embeddings, GeGLU, query_pre_attn_scalar, alternating windows of 4,
    # attention and final soft-capping small enough to bite, tied embeddings.
    "gemma2": ("Gemma2Config", dict(num_key_value_heads=2, head_dim=24, query_pre_attn_scalar=20, sliding_window=4,
                                    attn_logit_softcapping=2.0, final_logit_softcapping=3.0,
                                    max_position_embeddings=64),
               DEFAULT_TARGETS, None),
    # Gemma 3 (text): q/k norms (1 + w), local RoPE base 10,000 on the sliding layers, linear scaling on the
    # global ones, layer types [sliding, full, sliding], final soft-capping, untied.
    "gemma3": ("Gemma3TextConfig", dict(num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=24,
                                        sliding_window=4, layer_types=["sliding_attention", "full_attention",
                                                                       "sliding_attention"],
                                        final_logit_softcapping=4.0, tie_word_embeddings=False,
                                        max_position_embeddings=64,
                                        rope_parameters={
                                            "full_attention": {"rope_type": "linear", "factor": 2.0,
                                                               "rope_theta": 1000000.0},
                                            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
               DEFAULT_TARGETS, "30KB"),
    # Phi-4-mini: fused qkv_proj and gate_up_proj, partial rotary 0.75, LongRoPE (original 8 < 14 tokens: the
    # long factors; SHORT tokens: the short ones), GQA, tied.
    "phi4mini": ("Phi3Config", dict(num_key_value_heads=2, tie_word_embeddings=True, max_position_embeddings=32,
                                    original_max_position_embeddings=8,
                                    rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                                     "partial_rotary_factor": 0.75,
                                                     "short_factor": [1.0, 1.1, 1.3, 1.6, 2.0, 2.5],
                                                     "long_factor": [1.0, 1.5, 2.5, 4.0, 6.0, 9.0]},
                                    pad_token_id=0, bos_token_id=1, eos_token_id=2),
                 PHI_TARGETS, None),
    # Phi-3-mini: fused projections, a window of 5 on every layer, untied.
    "phi3": ("Phi3Config", dict(sliding_window=5, tie_word_embeddings=False, max_position_embeddings=64,
                                pad_token_id=0, bos_token_id=1, eos_token_id=2),
             PHI_TARGETS, None),
    # SmolLM3: no RoPE on layer 2 (no_rope_layer_interval 3), GQA, biases, tied.
    "smollm3": ("SmolLM3Config", dict(num_key_value_heads=2, no_rope_layer_interval=3, attention_bias=True,
                                      max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2),
                DEFAULT_TARGETS, None),
    # OLMo 2: norms after attention and MLP, q/k norms over whole projections, GQA, untied.
    "olmo2": ("Olmo2Config", dict(num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0,
                                  eos_token_id=2),
              DEFAULT_TARGETS, None),
    # Llama with each remaining RoPE scaling.
    "llama_linear": ("LlamaConfig", dict(num_key_value_heads=2, max_position_embeddings=64,
                                         rope_parameters={"rope_type": "linear", "factor": 3.0,
                                                          "rope_theta": 10000.0}),
                     DEFAULT_TARGETS, None),
    # dynamic NTK: 14 tokens past max_position_embeddings 8 grow the base (SHORT tokens do not).
    "llama_dynamic": ("LlamaConfig", dict(num_key_value_heads=2, max_position_embeddings=8, tie_word_embeddings=True,
                                          rope_parameters={"rope_type": "dynamic", "factor": 4.0,
                                                           "rope_theta": 10000.0}),
                      DEFAULT_TARGETS, None),
    "llama_yarn": ("LlamaConfig", dict(num_key_value_heads=1, head_dim=32, max_position_embeddings=64,
                                       rope_parameters={"rope_type": "yarn", "factor": 8.0, "rope_theta": 10000.0,
                                                        "original_max_position_embeddings": 8, "beta_fast": 16.0,
                                                        "beta_slow": 2.0, "mscale": 0.8, "mscale_all_dim": 0.6}),
                   DEFAULT_TARGETS, None),
    "llama3": ("LlamaConfig", dict(num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=True,
                                   rope_parameters={"rope_type": "llama3", "factor": 8.0, "rope_theta": 500000.0,
                                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                    "original_max_position_embeddings": 16}),
               DEFAULT_TARGETS, None),
    # Mistral and Qwen 2 with their windows on (rlf reads sliding_window for every family that has one).
    "mistral": ("MistralConfig", dict(num_key_value_heads=1, sliding_window=5, max_position_embeddings=64),
                DEFAULT_TARGETS, None),
    "qwen2": ("Qwen2Config", dict(num_key_value_heads=2, use_sliding_window=True, sliding_window=3,
                                  max_window_layers=2, max_position_embeddings=64, tie_word_embeddings=True),
              DEFAULT_TARGETS, None),
}


def config_of(name):
    import transformers
    cls_name, kwargs, _, _ = MODELS[name]
    return getattr(transformers, cls_name)(**{**COMMON, **kwargs})


def logits_of(model, ids):
    with torch.no_grad():
        return model(torch.tensor(ids)).logits.float()


def greedy(model):
    """Greedy continuation of PROMPT and, per step, the margin of the top logit over the next."""
    with torch.no_grad():
        out = model.generate(torch.tensor([PROMPT]), max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                             do_sample=False, output_logits=True, return_dict_in_generate=True,
                             pad_token_id=0, eos_token_id=None)
    margins = []
    for step in out.logits:
        top = torch.topk(step[0].float(), 2).values
        margins.append(float(top[0] - top[1]))
    return out.sequences[0, len(PROMPT):].tolist(), margins


def randomise(model):
    """Norms, biases and the embedding away from their defaults, so every parameter matters."""
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n:
                # Gemma's norms scale by 1 + w (w = 0 is the identity); the others by w.
                base = 0.0 if p.detach().abs().max() == 0 else 1.0
                p.copy_(base + 0.2 * torch.randn_like(p))
            elif n.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))


def make(out_dir, name):
    from peft import LoraConfig, get_peft_model
    torch.manual_seed(1234)
    _, _, targets, shard = MODELS[name]
    cfg = config_of(name)
    cfg._attn_implementation = "eager"
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    randomise(model)
    model.eval()
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    kwargs = {"max_shard_size": shard} if shard else {}
    hf = os.path.join(d, "hf")
    model.save_pretrained(hf, **kwargs)

    # Each reference from a model freshly loaded: transformers' dynamic RoPE
    # keeps the longest sequence a model has seen, so an earlier call would
    # change a later one's frequencies.
    def fresh(dtype=torch.float32):
        m = AutoModelForCausalLM.from_pretrained(hf, dtype=dtype, attn_implementation="eager")
        m.eval()
        return m

    ref = {"ids": IDS, "prompt": PROMPT, "logits": logits_of(fresh(), IDS).tolist(),
           "logits_short": logits_of(fresh(), [r[:SHORT] for r in IDS]).tolist()}
    ref["greedy"], ref["margins"] = greedy(fresh())
    ref["logits_bf16"] = logits_of(fresh(torch.bfloat16), IDS).tolist()
    lora = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=targets, task_type="CAUSAL_LM",
                      init_lora_weights=False)  # random A and B: the adapter changes the function
    peft_model = get_peft_model(fresh(), lora)
    peft_model.eval()
    peft_model.save_pretrained(os.path.join(d, "adapter"))
    ref["peft_logits"] = logits_of(peft_model, IDS).tolist()
    with open(os.path.join(d, "ref.json"), "w") as f:
        json.dump(ref, f)


def check(out_dir, name):
    from peft import PeftModel
    d = os.path.join(out_dir, name)
    out = {}
    saved = os.path.join(d, "saved")
    if os.path.isdir(saved):
        cfg = AutoConfig.from_pretrained(saved)
        out["config_type"] = type(cfg).__name__
        model = AutoModelForCausalLM.from_pretrained(saved, dtype=torch.float32, attn_implementation="eager")
        model.eval()
        out["saved_logits"] = logits_of(model, IDS).tolist()
    adapter = os.path.join(d, "rlf_adapter")
    if os.path.isdir(adapter):
        base = AutoModelForCausalLM.from_pretrained(os.path.join(d, "hf"), dtype=torch.float32,
                                                    attn_implementation="eager")
        model = PeftModel.from_pretrained(base, adapter)
        model.eval()
        out["peft_logits"] = logits_of(model, IDS).tolist()
    with open(os.path.join(d, "check.json"), "w") as f:
        json.dump(out, f)


def main():
    torch.set_num_threads(1)  # tiny models: OpenMP's threads only spin against each other
    if len(sys.argv) < 3 or sys.argv[1] not in ("make", "check"):
        raise SystemExit(__doc__)
    names = sys.argv[3:] or list(MODELS)
    for name in names:
        if name not in MODELS:
            raise SystemExit("unknown model " + name + " (known: " + ", ".join(MODELS) + ")")
        (make if sys.argv[1] == "make" else check)(sys.argv[2], name)


if __name__ == "__main__":
    main()
