// rlf bench train: training-step throughput (forward + backward + AdamW) on a
// model shape or directory (see bench/train_bench.h).
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "model/cpu_features.h"
#include "bench/train_bench.h"

namespace rlf::cli {

CommandSpec make_bench_train_command() {
  CommandSpec c;
  c.name = "bench train";
  c.summary = "measure training throughput (forward + backward + AdamW, tokens/s) on a model shape or directory";
  c.options = {
      {"shape", OptKind::String, "stories110M", "stories260K|stories15M|stories42M|stories110M (random weights) or a model path", "SHAPE"},
      {"batch", OptKind::Int, "4", "rows per step", "N", 1, 4096},
      {"seq", OptKind::Int, "256", "tokens per row", "N", 2, 1e6},
      {"dtype", OptKind::String, "auto", "auto (bf16 where native: GPU, AMX, AVX512_BF16; else fp32), fp32, or bf16 (bf16 forward/backward with fp32 master weights)", "DTYPE"},
      {"steps", OptKind::Int, "5", "timed steps (medians reported)", "N", 1, 1e6},
      {"warmup", OptKind::Int, "1", "untimed steps before timing", "N", 0, 1e6},
      {"lr", OptKind::Float, "1e-5", "AdamW learning rate", "LR", 1e-12, 1},
      {"seed", OptKind::Int, "0", "seed for weights and token batches", "N", 0, 9.2e18},
      {"fast-cpu", OptKind::String, "on", "on|off: the fp32 CPU fast path (off: LibTorch module path)", "ON|OFF"},
      {"lora-rank", OptKind::Int, "0", "train LoRA adapters of this rank (alpha = 2 x rank), the base frozen; 0 = full fine-tuning", "R", 0, 65536},
      {"lora-targets", OptKind::List, "", "projections given adapters (repeatable; default: all seven)", "NAME"},
      {"logprob-recompute", OptKind::String, "auto", "auto|on|off: vocabulary-chunked log-probs recomputed in backward (trainer.logprob_recompute)", "MODE"},
      {"logprob-chunk-rows", OptKind::Int, "0", "rows per chunk of recomputed log-probs (trainer.logprob_chunk_rows; 0 = about 2^25 logits)", "N", 0, 1e9},
      {"checkpoint", OptKind::String, "auto", "auto|none|layers: activation checkpointing (trainer.checkpoint_activations)", "MODE"},
      {"checkpoint-every", OptKind::Int, "1", "decoder layers per checkpointed segment (trainer.checkpoint_every)", "N", 1, 1e6},
      {"lengths", OptKind::String, "full", "full|mixed: every row --seq tokens, or rollout-like lengths (mostly seq/16..seq/4, a fifth seq/2..seq)", "KIND"},
      {"padding-free", OptKind::String, "auto", "auto|on|off: rows of mixed lengths without padding (trainer.padding_free)", "MODE"},
      {"json", OptKind::Flag, "false", "print one JSON object", ""},
  };
  c.run = [](const Args& a) {
    TrainBenchOptions o;
    o.lora_rank = a.integer("lora-rank");
    if (!a.list("lora-targets").empty()) o.lora_targets = a.list("lora-targets");
    o.shape = a.str("shape");
    o.batch = a.integer("batch");
    o.seq = a.integer("seq");
    o.dtype = resolve_dtype(a.str("dtype"), a.str("device"));
    o.device = a.str("device");
    o.steps = a.integer("steps");
    o.warmup = a.integer("warmup");
    o.lr = a.number("lr");
    o.seed = static_cast<uint64_t>(a.integer("seed"));
    o.fast_cpu = on_off_option(a, "fast-cpu");
    // The run keys' names, with errors naming the flag the user wrote.
    EnumNames<LeverMode> recompute_names = lever_mode_names();
    recompute_names.key = "--logprob-recompute";
    EnumNames<CheckpointMode> checkpoint_names = checkpoint_mode_names();
    checkpoint_names.key = "--checkpoint";
    o.levers.logprob_recompute = recompute_names.parse(a.str("logprob-recompute"));
    o.levers.checkpoint = checkpoint_names.parse(a.str("checkpoint"));
    o.levers.checkpoint_every = a.integer("checkpoint-every");
    o.levers.logprob_chunk_rows = a.integer("logprob-chunk-rows");
    EnumNames<LeverMode> padding_names = padding_free_mode_names();
    padding_names.key = "--padding-free";
    o.levers.padding_free = padding_names.parse(a.str("padding-free"));
    o.lengths = a.str("lengths");
    const CpuThreadPlan plan = configure_threads(a, o.dtype, o.device);
    Json j = run_train_bench(o);
    j["cpu"] = cpu_report(plan);
    if (a.flag("json")) {
      std::cout << j.dump() << "\n";
    } else {
      std::cout << j["shape"].get<std::string>() << " " << j["dtype"].get<std::string>() << " batch " << o.batch
                << " seq " << o.seq << ": " << j["tokens_per_s"].get<double>() << " tokens/s ("
                << j["ms_per_step"].get<double>() << " ms/step = forward " << j["forward_ms"].get<double>()
                << " + backward " << j["backward_ms"].get<double>() << " + optimizer "
                << j["optimizer_ms"].get<double>() << "; " << j["params"].get<int64_t>() << " params, "
                << j["threads"].get<int>() << " threads)\n";
    }
    return 0;
  };
  return c;
}

}  // namespace rlf::cli
