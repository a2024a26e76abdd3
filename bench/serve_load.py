#!/usr/bin/env python3
"""Load generator for `rlf serve` (or any OpenAI-compatible server), with the
official `openai` client: sends --requests completion requests, at most
--concurrency in flight (all at once when they are equal), half of them
streamed, and reports how many succeeded, the wall time, tokens/s and latency
percentiles. Prints one JSON object; exits 1 if any request failed or was lost.

  python bench/serve_load.py --base-url http://127.0.0.1:8000/v1 --model stories260K \\
      --concurrency 1,4,16,64 --requests 64 --max-tokens 64

Used by the serve tests (64 concurrent requests, none may fail) and for the
README's throughput and latency table."""
import argparse
import asyncio
import json
import statistics
import sys
import time

from openai import AsyncOpenAI


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


async def one(client, args, i, sem):
    prompt = ["Once upon a time", "The little dog", "Lily wanted to", "One day, a big"][i % 4]
    async with sem:
        t0 = time.perf_counter()
        first = None
        tokens = 0
        if i % 2 == 1:  # streamed
            stream = await client.completions.create(
                model=args.model, prompt=prompt, max_tokens=args.max_tokens, temperature=1.0, seed=i,
                stream=True, extra_body={"return_token_ids": True, "ignore_eos": args.ignore_eos})
            text, finish = "", None
            async for chunk in stream:
                for c in chunk.choices:
                    if first is None and (c.text or getattr(c, "token_ids", None)):
                        first = time.perf_counter() - t0
                    text += c.text
                    tokens += len(getattr(c, "token_ids", None) or [])
                    finish = c.finish_reason or finish
            if finish is None:
                raise RuntimeError("stream ended without a finish_reason")
        else:
            r = await client.completions.create(
                model=args.model, prompt=prompt, max_tokens=args.max_tokens, temperature=1.0, seed=i,
                extra_body={"ignore_eos": args.ignore_eos})
            tokens = r.usage.completion_tokens
            if r.choices[0].finish_reason not in ("stop", "length"):
                raise RuntimeError(f"bad finish_reason {r.choices[0].finish_reason}")
        return time.perf_counter() - t0, first, tokens


async def run_level(args, concurrency):
    client = AsyncOpenAI(base_url=args.base_url, api_key=args.api_key or "none", max_retries=0,
                         timeout=args.timeout)
    sem = asyncio.Semaphore(concurrency)
    t0 = time.perf_counter()
    results = await asyncio.gather(*[one(client, args, i, sem) for i in range(args.requests)],
                                   return_exceptions=True)
    wall = time.perf_counter() - t0
    await client.close()
    ok = [r for r in results if not isinstance(r, BaseException)]
    errors = [repr(r) + (" caused by " + repr(r.__cause__) if r.__cause__ else "")
              for r in results if isinstance(r, BaseException)]
    lat = [r[0] for r in ok]
    ttft = [r[1] for r in ok if r[1] is not None]
    tokens = sum(r[2] for r in ok)
    return {
        "concurrency": concurrency, "requests": args.requests, "ok": len(ok), "failed": len(errors),
        "errors": errors[:5], "wall_s": wall, "completion_tokens": tokens,
        "tokens_per_s": tokens / wall if wall > 0 else None,
        "requests_per_s": len(ok) / wall if wall > 0 else None,
        "latency_s": {"p50": percentile(lat, 0.5), "p90": percentile(lat, 0.9), "p99": percentile(lat, 0.99),
                      "mean": statistics.fmean(lat) if lat else None},
        "ttft_streamed_s": {"p50": percentile(ttft, 0.5), "p90": percentile(ttft, 0.9)},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key", default="")
    ap.add_argument("--concurrency", default="64", help="comma-separated levels, e.g. 1,4,16,64")
    ap.add_argument("--requests", type=int, default=64, help="requests per level")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--ignore-eos", action="store_true", help="every request runs to max_tokens (fixed work)")
    ap.add_argument("--timeout", type=float, default=300.0, help="per request, seconds")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    out = {"base_url": args.base_url, "model": args.model, "max_tokens": args.max_tokens,
           "ignore_eos": args.ignore_eos, "levels": [asyncio.run(run_level(args, c)) for c in levels]}
    print(json.dumps(out))
    lost = any(l["ok"] != args.requests for l in out["levels"])
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
