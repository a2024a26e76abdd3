#!/usr/bin/env python3
"""This CPU's fp32 matrix-product rate, the bound under rlf's and PyTorch's
training steps: torch.mm (OpenBLAS on Debian's torch) of n x n matrices,
median of --repeats calls after one warm-up, as GFLOP/s (2 n^3 per product).
With --linear N I O [N I O ...] also the three products of a linear layer's
training step at N rows, I inputs, O outputs (forward x W^T, the input
gradient dY W and the weight gradient dY^T x: 2 N I O each), the shapes a
training step actually multiplies. Prints one JSON line with the CPU's model
name and vector flags.

  OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/sgemm_peak.py [--sizes 1024 2048 4096] [--repeats 5]
  OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/sgemm_peak.py --linear 2400 288 32000 2400 288 768
"""
import argparse
import json
import os
import statistics
import time

import torch


def cpu_info():
    name, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and not name:
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    keep = ["avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]
    return {"model": name, "flags": [f for f in keep if f in flags]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--torch-threads", type=int, default=1, help="LibTorch intra-op threads (OpenBLAS reads its own)")
    p.add_argument("--linear", type=int, nargs="+", default=[], metavar="N I O",
                   help="rows, inputs, outputs of linear layers whose training products to time")
    a = p.parse_args()
    if a.repeats < 1 or any(n < 1 for n in a.sizes + a.linear):
        p.error("--sizes, --linear and --repeats must be positive")
    if len(a.linear) % 3:
        p.error("--linear takes triples N I O (got %d numbers)" % len(a.linear))
    torch.set_num_threads(a.torch_threads)
    gflops = {}
    for n in a.sizes:
        x, y = torch.randn(n, n), torch.randn(n, n)
        torch.mm(x, y)
        times = []
        for _ in range(a.repeats):
            t = time.perf_counter()
            torch.mm(x, y)
            times.append(time.perf_counter() - t)
        gflops[str(n)] = round(2 * n ** 3 / statistics.median(times) / 1e9, 1)
    linear = {}
    for k in range(0, len(a.linear), 3):
        n, i, o = a.linear[k:k + 3]
        x, w, dy = torch.randn(n, i), torch.randn(o, i), torch.randn(n, o)
        rates = {}
        for name, f in (("forward", lambda: torch.mm(x, w.t())), ("grad_input", lambda: torch.mm(dy, w)),
                        ("grad_weight", lambda: torch.mm(dy.t(), x))):
            f()
            times = []
            for _ in range(a.repeats):
                t = time.perf_counter()
                f()
                times.append(time.perf_counter() - t)
            rates[name] = round(2 * n * i * o / statistics.median(times) / 1e9, 1)
        linear[f"{n}x{i}->{o}"] = rates
    print(json.dumps({"sgemm_gflops": gflops, "linear_gflops": linear, "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
                      "torch_threads": a.torch_threads, "torch": torch.__version__, "cpu": cpu_info()}))


if __name__ == "__main__":
    main()
