"""A random-weight model at the shape of a model users RL-train
(Qwen3-0.6B, Qwen3-1.7B, Qwen2.5-0.5B, Llama-3.2-1B: their published
config.json), saved as a
Hugging Face directory with a real tokenizer copied beside it, for
bench/real_shapes/grpo_lora.toml. Weights are transformers' own initialisation
(normal(0, 0.02)); written in bf16 (rlf loads them in the dtype it trains in).
The vocabulary is cut to the tokenizer's when the published one is padded
beyond it (Qwen3: 151,936 rows for 151,665 tokens): a trained model never
samples the padding rows, a random one would, and those ids decode to nothing.

    $(bash scripts/peer_venv.sh) bench/real_shapes/make_random.py --shape qwen3-0.6b \
        --tokenizer ../shared/tokenizers/hf/qwen2.5 --out DIR
"""
import argparse
import shutil
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

SHAPES = {
    # Qwen/Qwen3-0.6B config.json (transformers 4.51 layout).
    "qwen3-0.6b": {
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "bos_token_id": 151643,
        "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
        "intermediate_size": 3072, "max_position_embeddings": 40960, "max_window_layers": 28,
        "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
        "tie_word_embeddings": True, "use_sliding_window": False, "vocab_size": 151936},
    # Qwen/Qwen3-1.7B config.json: Qwen3-0.6B's but for its width (filled in below).
    "qwen3-1.7b": {"hidden_size": 2048, "intermediate_size": 6144},
    # Qwen/Qwen2.5-0.5B config.json (q/k/v biases are Qwen 2's default).
    "qwen2.5-0.5b": {
        "architectures": ["Qwen2ForCausalLM"], "bos_token_id": 151643, "eos_token_id": 151643,
        "hidden_act": "silu", "hidden_size": 896, "intermediate_size": 4864, "max_position_embeddings": 32768,
        "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
        "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": None,
        "tie_word_embeddings": True, "use_sliding_window": False, "vocab_size": 151936},
    # meta-llama/Llama-3.2-1B config.json.
    "llama-3.2-1b": {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000,
        "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
        "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
        "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": True, "vocab_size": 128256},
}
SHAPES["qwen3-1.7b"] = {**SHAPES["qwen3-0.6b"], **SHAPES["qwen3-1.7b"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--tokenizer", required=True, help="a directory with tokenizer.json (copied beside the model)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import json
    from tokenizers import Tokenizer
    config = dict(SHAPES[args.shape])
    n_tokens = Tokenizer.from_file(str(Path(args.tokenizer) / "tokenizer.json")).get_vocab_size(with_added_tokens=True)
    config["vocab_size"] = min(config["vocab_size"], n_tokens)
    (out / "config.json").write_text(json.dumps(config))
    torch.manual_seed(args.seed)
    config = AutoConfig.from_pretrained(out)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(out)
    for f in Path(args.tokenizer).iterdir():
        if f.name.startswith(("tokenizer", "special_tokens")):
            shutil.copy(f, out / f.name)
    print(out, sum(p.numel() for p in model.parameters()), "parameters")


if __name__ == "__main__":
    main()
