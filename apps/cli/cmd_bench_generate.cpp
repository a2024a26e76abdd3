// rlf bench generate: batched generation throughput (see bench/generate_bench.h).
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "model/cpu_features.h"
#include "bench/generate_bench.h"

namespace rlf::cli {

CommandSpec make_bench_generate_command() {
  CommandSpec c;
  c.name = "bench generate";
  c.summary = "measure batched generation throughput (tokens/s) on a model shape or directory";
  c.options = {
      {"shape", OptKind::String, "stories110M", "stories260K|stories15M|stories42M|stories110M (random weights) or a model path", "SHAPE"},
      {"batch", OptKind::Int, "16", "concurrent sequences", "N", 1, 4096},
      {"dtype", OptKind::String, "auto", "auto (bf16 where native: GPU, AMX, AVX512_BF16; else fp32), fp32 or bf16", "DTYPE"},
      {"new-tokens", OptKind::Int, "128", "tokens generated per sequence", "N", 1, 1e6},
      {"prompt-len", OptKind::Int, "16", "random prompt tokens per sequence", "N", 1, 1e6},
      {"group", OptKind::Int, "1", "samples per prompt (the batch is batch/group prompts; must divide --batch)", "N", 1, 4096},
      {"top-k", OptKind::Int, "0", "sample from the k most likely tokens (0: the whole vocabulary; GRPO jobs often use 50)", "K", 0, 1e9},
      {"share-prompt", OptKind::String, "on", "on|off: a group's samples read one copy of its prompt's KV cache (off: a copy per sample)", "ON|OFF"},
      {"repeats", OptKind::Int, "3", "timed runs (median reported) after one warm-up", "N", 1, 1000},
      {"seed", OptKind::Int, "0", "seed for weights, prompts and sampling", "N", 0, 9.2e18},
      {"fast-cpu", OptKind::String, "on", "on|off: the fp32 CPU inference path (off: LibTorch module path)", "ON|OFF"},
      {"pack-weights", OptKind::String, "on", "on|off: decoding multiplies by the weights packed into column panels (off: unpacked kernels)", "ON|OFF"},
      {"json", OptKind::Flag, "false", "print one JSON object", ""},
  };
  c.run = [](const Args& a) {
    GenerateBenchOptions o;
    o.shape = a.str("shape");
    o.batch = a.integer("batch");
    o.dtype = resolve_dtype(a.str("dtype"), a.str("device"));
    o.device = a.str("device");
    o.new_tokens = a.integer("new-tokens");
    o.prompt_len = a.integer("prompt-len");
    o.group = a.integer("group");
    o.top_k = a.integer("top-k");
    o.share_prompt = on_off_option(a, "share-prompt");
    o.repeats = a.integer("repeats");
    o.seed = static_cast<uint64_t>(a.integer("seed"));
    o.fast_cpu = on_off_option(a, "fast-cpu");
    o.pack_weights = on_off_option(a, "pack-weights");
    const CpuThreadPlan plan = configure_threads(a, o.dtype, o.device);
    Json j = run_generate_bench(o);
    j["cpu"] = cpu_report(plan);
    if (a.flag("json")) {
      std::cout << j.dump() << "\n";
    } else {
      std::cout << j["shape"].get<std::string>() << " " << j["dtype"].get<std::string>() << " batch " << o.batch << ": "
                << j["tokens_per_s"].get<double>() << " tokens/s (" << j["ms_per_step"].get<double>() << " ms/step, "
                << j["params"].get<int64_t>() << " params, " << j["threads"].get<int>() << " threads)\n";
    }
    return 0;
  };
  return c;
}

}  // namespace rlf::cli
