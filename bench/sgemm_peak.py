#!/usr/bin/env python3
"""This CPU's fp32 matrix-product rate, the bound under rlf's and PyTorch's
training steps: torch.mm (OpenBLAS on Debian's torch) of n x n matrices,
median of --repeats calls after one warm-up, as GFLOP/s (2 n^3 per product).
Prints one JSON line with the CPU's model name and vector flags.

  OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/sgemm_peak.py [--sizes 1024 2048 4096] [--repeats 5]
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
    a = p.parse_args()
    if a.repeats < 1 or any(n < 1 for n in a.sizes):
        p.error("--sizes and --repeats must be positive")
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
    print(json.dumps({"sgemm_gflops": gflops, "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
                      "torch_threads": a.torch_threads, "torch": torch.__version__, "cpu": cpu_info()}))


if __name__ == "__main__":
    main()
