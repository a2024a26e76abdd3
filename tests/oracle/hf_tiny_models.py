"""Oracle for rlf's transformer: builds tiny random Hugging Face models and
writes their logits, or reloads a directory rlf saved and writes its logits.

usage:
  hf_tiny_models.py make KIND OUT_DIR      # KIND: llama | llama3 | qwen2 | mistral
  hf_tiny_models.py logits MODEL_DIR IDS_JSON OUT_JSON [DEVICE]   # DEVICE: cpu (default) | cuda

`make` saves the model with save_pretrained (safetensors) and writes
OUT_DIR/oracle_logits.json: {"ids": [[...]], "logits": [[[...]]]} for fixed ids.
"""
import json
import sys

import torch
from transformers import (AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM)

IDS = [[1, 5, 9, 23, 7, 64, 3, 99, 12, 42, 8, 17], [2, 44, 81, 6, 11, 90, 33, 4, 5, 6, 7, 1]]


def make(kind, out_dir):
    torch.manual_seed(1234)
    common = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=256, rms_norm_eps=1e-6)
    if kind == "llama":
        model = LlamaForCausalLM(LlamaConfig(num_key_value_heads=4, tie_word_embeddings=False, **common))
    elif kind == "llama3":
        cfg = LlamaConfig(num_key_value_heads=2, rope_theta=500000.0, tie_word_embeddings=True,
                          rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
                          **common)
        model = LlamaForCausalLM(cfg)
    elif kind == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(num_key_value_heads=2, tie_word_embeddings=False,
                                             rope_theta=1000000.0, **common))
    elif kind == "mistral":
        model = MistralForCausalLM(MistralConfig(num_key_value_heads=1, sliding_window=None, **common))
    else:
        raise SystemExit("unknown kind " + kind)
    # Random (not default-initialised) norms and biases so every parameter matters.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.05 * torch.randn_like(p))
    model.eval()
    model.save_pretrained(out_dir, safe_serialization=True)
    write_logits(model, IDS, out_dir + "/oracle_logits.json")


def write_logits(model, ids, path, device="cpu"):
    with torch.no_grad():
        logits = model(torch.tensor(ids, device=device)).logits.float().cpu()
    with open(path, "w") as f:
        json.dump({"ids": ids, "logits": logits.tolist()}, f)


def main():
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "logits":
        device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
        model = AutoModelForCausalLM.from_pretrained(sys.argv[2], torch_dtype=torch.float32).to(device)
        model.eval()
        with open(sys.argv[3]) as f:
            ids = json.load(f)
        write_logits(model, ids, sys.argv[4], device)


if __name__ == "__main__":
    main()
