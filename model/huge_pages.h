// Weights in transparent huge pages. Decoding one sequence streams every
// weight matrix once per token; with 4 KiB pages that is a TLB miss and a
// page-table walk every 4 KiB. On Linux with transparent huge pages in
// "madvise" mode (Debian's default) memory gets 2 MiB pages only where asked
// for with madvise(MADV_HUGEPAGE), which LibTorch's allocator never does.
// Measured on the 2-core Sapphire Rapids machine (2026-11-26): the matrix-
// vector products of a stories110M token (438 MB of weights, 2 threads) took
// 15.9 ms in 4 KiB pages and 12.9 ms in 2 MiB pages.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace rlf {

// An uninitialised CPU tensor in 2 MiB-aligned memory from the C allocator,
// advised for huge pages (where the block is fresh, before its first touch),
// freed with the tensor. With reuse_large_allocations the freed block stays
// in the process, so allocating the same size again costs no page faults:
// the GRPO job of docs/benchmarks.md packed its decoding panels in 1.0-1.2 s
// per rollout from mappings of their own, 0.08 s from reused blocks (Zen 3,
// 2026-11-30), with the same peak resident size. Below 2 MiB, or where the
// allocation fails, an ordinary torch::empty.
torch::Tensor empty_in_huge_pages(at::IntArrayRef sizes, const torch::TensorOptions& options);

// Moves every contiguous CPU parameter of at least 2 MiB of `module` (and its
// submodules) into 2 MiB-aligned memory advised for huge pages, keeping the
// parameter objects (set_data), values and autograd flags. Elsewhere (not
// Linux, THP off) the memory is ordinary and only the copy is spent. Returns
// the bytes moved.
int64_t place_in_huge_pages(torch::nn::Module& module);

// Keeps large freed blocks in the process for reuse. glibc serves a block
// above its mmap threshold (which its own rule raises to 32 MiB at most) with
// a fresh mapping and unmaps it on free, so a training step whose logits
// and their gradients are hundreds of MB ([tokens, vocab] in fp32) pays
// page faults and page clearing on every allocation. This raises the mmap
// and trim thresholds to 1 GiB (mallopt), so such blocks come from the heap
// and stay there once freed: the resident size stays near the peak instead.
// Measured on the 2-core Sapphire Rapids machine (2026-11-26), `rlf bench
// train --shape stories15M --batch 4 --seq 256 --dtype fp32`: 897 -> 1,254
// tokens/s. Call once at program start (the CLI's main does). Returns false
// where it does nothing (not glibc) or glibc refused.
bool reuse_large_allocations();

}  // namespace rlf
