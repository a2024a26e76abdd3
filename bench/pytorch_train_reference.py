#!/usr/bin/env python3
"""Same-machine PyTorch reference for `rlf bench train`.

Builds llama2.c's model.py Llama (plain torch modules: RMSNorm in fp32, RoPE
via complex multiplication, manual causal attention, SwiGLU, tied embeddings)
at a stories shape with random weights and times full training steps on
random token batches [batch, seq]:

  forward  : logits + token-mean next-token cross entropy
  backward : loss.backward()
  optimizer: clip_grad_norm_(1.0) + torch.optim.AdamW.step() + zero_grad
             (--adamw auto: the fused kernel where this PyTorch has it, the
             CPU from 2.4 on; TRL's default optimizer is the same)

PyTorch at its best on the CPU: by default glibc keeps freed blocks up to
1 GiB for reuse (--malloc reuse, what rlf's main does), the fused AdamW, and
with --attention sdpa F.scaled_dot_product_attention.

Modes (--dtype, repeatable):
  fp32       everything in fp32
  bf16       torch.autocast(cpu, bfloat16) around the forward, fp32 weights
             (llama2.c's train.py; the issue's reference mode)
  bf16-pure  model cast to bf16, AdamW on the bf16 weights (no master copy;
             for comparison with rlf's bf16 matmuls)

Prints one JSON object per mode (one per line) with the same fields as
`rlf bench train --json`: tokens_per_s, ms_per_step, forward_ms, backward_ms,
optimizer_ms, batch, seq, dtype, params, threads.

Run with Debian's interpreter (python3-torch):
  /usr/bin/python3 bench/pytorch_train_reference.py --threads 2 --dtype fp32 --dtype bf16

On a GPU (--device cuda): autocast runs on CUDA, every phase ends with
torch.cuda.synchronize(), AdamW is the fused CUDA kernel (fused=True), and
--attention sdpa swaps the manual attention for
F.scaled_dot_product_attention (flash / memory-efficient kernels), PyTorch at
its best without compilation.
"""
import argparse
import ctypes
import json
import math
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPES = {
    # dim, n_layers, n_heads, n_kv_heads, vocab, max_seq_len (llama2.c's stories models)
    "stories260K": dict(dim=64, n_layers=5, n_heads=8, n_kv_heads=4, vocab_size=512, max_seq_len=512, multiple_of=4),
    "stories15M": dict(dim=288, n_layers=6, n_heads=6, n_kv_heads=6, vocab_size=32000, max_seq_len=256, multiple_of=32),
    "stories42M": dict(dim=512, n_layers=8, n_heads=8, n_kv_heads=8, vocab_size=32000, max_seq_len=1024, multiple_of=32),
    "stories110M": dict(dim=768, n_layers=12, n_heads=12, n_kv_heads=12, vocab_size=32000, max_seq_len=1024, multiple_of=32),
}


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return h.type_as(x) * self.weight


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    t = torch.arange(end).float()
    return torch.polar(torch.ones(end, dim // 2), torch.outer(t, freqs))  # [end, dim/2] complex64


def apply_rotary_emb(xq, xk, freqs_cis):
    # xq [B, T, H, hd] -> pairs as complex numbers, rotated, back to real.
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    f = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * f).flatten(3)
    xk_out = torch.view_as_real(xk_ * f).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, max_seq_len, sdpa=False):
        super().__init__()
        self.sdpa = sdpa
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)
        mask = torch.full((1, 1, max_seq_len, max_seq_len), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x, freqs_cis):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim)
        q, k = apply_rotary_emb(q, k, freqs_cis)
        rep = self.n_heads // self.n_kv_heads
        if rep > 1:
            k = k.repeat_interleave(rep, dim=2)
            v = v.repeat_interleave(rep, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, H, T, hd]
        if self.sdpa:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.wo(out.transpose(1, 2).contiguous().view(B, T, -1))
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + self.mask[:, :, :T, :T]
        scores = F.softmax(scores.float(), dim=-1).type_as(q)
        out = torch.matmul(scores, v).transpose(1, 2).contiguous().view(B, T, -1)
        return self.wo(out)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        hidden = 2 * (4 * a["dim"]) // 3
        hidden = a["multiple_of"] * ((hidden + a["multiple_of"] - 1) // a["multiple_of"])
        self.attention = Attention(a["dim"], a["n_heads"], a["n_kv_heads"], a["max_seq_len"], a.get("sdpa", False))
        self.feed_forward = FeedForward(a["dim"], hidden)
        self.attention_norm = RMSNorm(a["dim"])
        self.ffn_norm = RMSNorm(a["dim"])

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tok_embeddings = nn.Embedding(a["vocab_size"], a["dim"])
        self.layers = nn.ModuleList(Block(a) for _ in range(a["n_layers"]))
        self.norm = RMSNorm(a["dim"])
        self.output = nn.Linear(a["dim"], a["vocab_size"], bias=False)
        self.output.weight = self.tok_embeddings.weight  # tied
        self.register_buffer("freqs_cis", precompute_freqs_cis(a["dim"] // a["n_heads"], a["max_seq_len"]), persistent=False)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, mean=0.0, std=0.02)

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, self.freqs_cis[:T])
        logits = self.output(self.norm(h))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))


def reuse_large_allocations():
    """What rlf's main does (model/huge_pages.h): glibc serves blocks up to
    1 GiB from its heap and keeps them once freed, instead of a fresh mmap,
    page faults and page clearing per large tensor. mallopt applies to every
    later allocation (GLIBC_TUNABLES set before Python starts does the
    same). Returns whether glibc accepted both settings."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(libc.mallopt(m_mmap_threshold, 1 << 30)) and bool(libc.mallopt(m_trim_threshold, 1 << 30))


def cpu_fused_adamw():
    """torch.optim.AdamW(fused=True) runs on the CPU from PyTorch 2.4."""
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 4)


def adamw_kwargs(choice, dev):
    """--adamw: fused (one kernel over all parameters), foreach (per-op
    multi-tensor), single (a loop per parameter), or auto: fused where this
    PyTorch has it for the device (CUDA, and the CPU from 2.4), else
    PyTorch's own default."""
    if choice == "auto":
        return {"fused": True} if dev.type == "cuda" or cpu_fused_adamw() else {}
    if choice == "fused" and dev.type == "cpu" and not cpu_fused_adamw():
        raise SystemExit("--adamw fused: PyTorch %s has no fused AdamW on the CPU (2.4 and later do)" % torch.__version__)
    return {"fused": {"fused": True}, "foreach": {"foreach": True}, "single": {"foreach": False}}[choice]


def bench(mode, args):
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = Transformer(dict(SHAPES[args.shape], sdpa=args.attention == "sdpa")).to(dev)
    if mode == "bf16-pure":
        for prm in model.parameters():  # parameters only: freqs_cis stays complex64
            prm.data = prm.data.to(torch.bfloat16)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                            **adamw_kwargs(args.adamw, dev))
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    vocab = SHAPES[args.shape]["vocab_size"]
    autocast = mode == "bf16"

    def step():
        tokens = torch.randint(vocab, (args.batch, args.seq + 1)).to(dev)
        sync()
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
            loss = model(tokens[:, :-1], tokens[:, 1:])
        loss_v = loss.item()
        t1 = time.perf_counter()
        loss.backward()
        sync()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        t3 = time.perf_counter()
        return dict(forward_ms=1e3 * (t1 - t0), backward_ms=1e3 * (t2 - t1), optimizer_ms=1e3 * (t3 - t2),
                    step_ms=1e3 * (t3 - t0), loss=loss_v)

    for _ in range(args.warmup):
        step()
    times = [step() for _ in range(args.steps)]
    med = lambda k: statistics.median(t[k] for t in times)
    step_ms = med("step_ms")
    return {
        "impl": "pytorch " + torch.__version__ + " eager (llama2.c model.py)",
        "adamw": args.adamw, "adamw_kwargs": adamw_kwargs(args.adamw, dev), "malloc": args.malloc,
        "shape": args.shape, "batch": args.batch, "seq": args.seq, "tokens_per_step": args.batch * args.seq,
        "dtype": mode, "threads": torch.get_num_threads(), "device": args.device, "attention": args.attention,
        "params": sum(p.numel() for p in model.parameters()),
        "steps": args.steps, "warmup": args.warmup,
        "tokens_per_s": args.batch * args.seq / (step_ms / 1e3), "ms_per_step": step_ms,
        "ms_per_step_min": min(t["step_ms"] for t in times), "ms_per_step_max": max(t["step_ms"] for t in times),
        "forward_ms": med("forward_ms"), "backward_ms": med("backward_ms"), "optimizer_ms": med("optimizer_ms"),
        "loss_first": times[0]["loss"], "loss_last": times[-1]["loss"],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shape", default="stories110M", choices=sorted(SHAPES))
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--dtype", action="append", choices=["fp32", "bf16", "bf16-pure"],
                   help="mode(s) to run, repeatable (default: fp32 and bf16)")
    p.add_argument("--steps", type=int, default=5, help="timed steps (medians reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--adamw", default="auto", choices=["auto", "fused", "foreach", "single"],
                   help="AdamW implementation (auto: fused where this PyTorch has it for the device)")
    p.add_argument("--attention", default="manual", choices=["manual", "sdpa"],
                   help="manual (model.py's fallback, as rlf) or F.scaled_dot_product_attention")
    p.add_argument("--malloc", default="reuse", choices=["reuse", "default"],
                   help="reuse: glibc keeps freed blocks up to 1 GiB, as rlf's main does; default: glibc's thresholds")
    args = p.parse_args()
    if args.malloc == "reuse" and not reuse_large_allocations():
        raise SystemExit("--malloc reuse: glibc's mallopt is not available here (use --malloc default)")
    torch.set_num_threads(args.threads)
    for mode in args.dtype or ["fp32", "bf16"]:
        print(json.dumps(bench(mode, args)), flush=True)


if __name__ == "__main__":
    main()
