"""Single-stream decoding speed of llama.cpp (llama-cpp-python) on a GGUF
file: a random prompt of --prompt-len tokens, then --new-tokens greedy
decoding steps, one token per llama_decode call, timed; median of --repeats.
One JSON line per thread count in --threads (the peer at its best thread plan
is the fastest line).

    .venv-llama-cpp/bin/python bench/llama_cpp_decode.py --gguf M.gguf --threads 1,2
"""
import argparse
import json
import random
import statistics
import time

import llama_cpp


def run(path, threads, prompt_len, new_tokens, repeats, seed):
    n_ctx = prompt_len + new_tokens + 64
    # n_batch = n_ctx: llama-cpp-python keeps one row of scores per batch slot
    llm = llama_cpp.Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=n_ctx, n_batch=n_ctx,
                          logits_all=False, verbose=False, seed=seed)
    rng = random.Random(seed)
    rates, walls = [], []
    for rep in range(repeats + 1):  # the first is a warm-up
        prompt = [rng.randrange(3, llm.n_vocab()) for _ in range(prompt_len)]
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        t1 = time.perf_counter()
        for _ in range(new_tokens):
            nxt = int(llm.scores[llm.n_tokens - 1].argmax())
            llm.eval([nxt])
        t2 = time.perf_counter()
        if rep > 0:
            rates.append(new_tokens / (t2 - t1))
            walls.append(t2 - t0)
    return {"engine": "llama.cpp", "llama_cpp_python": llama_cpp.__version__, "threads": threads,
            "prompt_len": prompt_len, "new_tokens": new_tokens, "repeats": repeats,
            "decode_tokens_per_s": statistics.median(rates), "decode_tokens_per_s_all": rates,
            "tokens_per_s": new_tokens / statistics.median(walls),
            "system_info": llama_cpp.llama_print_system_info().decode().strip()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--threads", default="2", help="comma-separated thread counts")
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    for t in [int(x) for x in a.threads.split(",")]:
        print(json.dumps(run(a.gguf, t, a.prompt_len, a.new_tokens, a.repeats, a.seed)), flush=True)


if __name__ == "__main__":
    main()
