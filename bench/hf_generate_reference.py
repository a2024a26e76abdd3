#!/usr/bin/env python3
"""Same-machine Hugging Face reference for `rlf bench generate`.

Builds a randomly initialised transformers LlamaForCausalLM at a stories shape
(the same shapes as `rlf bench generate --shape`) and times
`model.generate` on a batch of random prompts: `--batch` sequences of
`--prompt-len` random tokens, exactly `--new-tokens` sampled tokens each
(min_new_tokens = max_new_tokens: EOS ignored, as rlf's benchmark does),
temperature 1, no top-k/top-p. One untimed warm-up, then `--repeats` timed
runs; the median is reported.

Prints one JSON object per dtype with the fields of `rlf bench generate
--json` that mean the same: tokens_per_s (generated tokens / wall time,
prefill included), ms_per_step (wall time / new tokens), batch, dtype,
params, device, attention (transformers' attn_implementation), cache.

  python3 bench/hf_generate_reference.py --device cuda --shape stories110M --batch 64 --dtype bf16
"""
import argparse
import json
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

SHAPES = {
    # hidden, layers, heads, kv heads, intermediate, vocab (llama2.c's stories models)
    "stories15M": (288, 6, 6, 6, 768, 32000),
    "stories42M": (512, 8, 8, 8, 1376, 32000),
    "stories110M": (768, 12, 12, 12, 2048, 32000),
}


def bench(dtype, args):
    torch.manual_seed(args.seed)
    h, n_layers, n_heads, n_kv, inter, vocab = SHAPES[args.shape]
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=h, intermediate_size=inter, num_hidden_layers=n_layers,
                      num_attention_heads=n_heads, num_key_value_heads=n_kv, max_position_embeddings=1024,
                      rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    cfg._attn_implementation = args.attention
    dev = torch.device(args.device)
    model = LlamaForCausalLM(cfg).to(dev, dtype={"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]).eval()
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    gen = torch.Generator().manual_seed(args.seed)

    def run():
        prompts = torch.randint(3, vocab, (args.batch, args.prompt_len), generator=gen).to(dev)
        sync()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(prompts, attention_mask=torch.ones_like(prompts), do_sample=True, temperature=1.0,
                                 top_k=0, top_p=1.0, max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                                 cache_implementation=args.cache)
        sync()
        assert out.shape[1] == args.prompt_len + args.new_tokens
        return time.perf_counter() - t0

    run()
    times = [run() for _ in range(args.repeats)]
    t = statistics.median(times)
    return {
        "impl": "transformers generate (torch " + torch.__version__ + ")",
        "shape": args.shape, "batch": args.batch, "prompt_len": args.prompt_len, "new_tokens": args.new_tokens,
        "dtype": dtype, "device": args.device, "attention": args.attention, "cache": args.cache or "dynamic",
        "params": sum(p.numel() for p in model.parameters()), "repeats": args.repeats,
        "tokens_per_s": args.batch * args.new_tokens / t, "ms_per_step": 1e3 * t / args.new_tokens,
        "s_all": times,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shape", default="stories110M", choices=sorted(SHAPES))
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--dtype", action="append", choices=["fp32", "bf16"], help="repeatable (default bf16)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--attention", default="sdpa", choices=["sdpa", "eager"])
    p.add_argument("--cache", default=None, help="transformers cache_implementation (default: dynamic)")
    args = p.parse_args()
    for dtype in args.dtype or ["bf16"]:
        print(json.dumps(bench(dtype, args)), flush=True)


if __name__ == "__main__":
    main()
