#include "bench/train_bench.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "bench/bench_model.h"
#include "model/flops.h"
#include "model/loader.h"
#include "model/lora.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/memory_usage.h"

namespace rlf {

void TrainBenchOptions::validate() const {
  check(batch > 0, "bench train: --batch must be > 0, got ", batch);
  check(seq > 0, "bench train: --seq must be > 0, got ", seq);
  check(steps > 0, "bench train: --steps must be > 0, got ", steps);
  check(warmup >= 0, "bench train: --warmup must be >= 0, got ", warmup);
  check(lr >= 0, "bench train: --lr must be >= 0, got ", lr);
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Weights, gradients and optimiser state (masters and moments), in MB: what
// the update needs whatever its activations.
Json memory_parts_mb(CausalLMImpl& model, const Optimizer& opt) {
  double weights = 0, grads = 0, state = 0;
  for (const auto& p : model.parameters()) {
    weights += static_cast<double>(p.nbytes());
    if (p.grad().defined()) grads += static_cast<double>(p.grad().nbytes());
  }
  for (const auto& [name, t] : opt.state_tensors()) state += static_cast<double>(t.nbytes());
  return Json{{"weights", weights / 1e6}, {"gradients", grads / 1e6}, {"optimizer_state", state / 1e6}};
}

struct StepTimes {
  double forward_ms = 0, backward_ms = 0, optimizer_ms = 0, step_ms = 0;
  double logprobs_ms = 0;  // the forward's output head + log-softmax + NLL (part of forward_ms)
  double loss = 0;
};

}  // namespace

Json run_train_bench(const TrainBenchOptions& o) {
  o.validate();
  const torch::ScalarType dtype = parse_dtype(o.dtype);
  check(dtype == torch::kFloat32 || dtype == torch::kBFloat16, "bench train: --dtype must be fp32 or bf16, got '",
        o.dtype, "'");
  const torch::Device device = parse_device(o.device);
  auto [model, source] = make_bench_model(o.shape, o.dtype, o.device, o.seed);
  model->set_fast_cpu_path(o.fast_cpu);
  model->set_memory_levers(with_machine_memory(o.levers, usable_memory_bytes()));
  if (o.lora_rank > 0) {
    LoraOptions lo;
    lo.rank = o.lora_rank;
    lo.alpha = 2.0 * static_cast<double>(o.lora_rank);
    lo.targets = o.lora_targets;
    add_lora(*model, lo, o.seed);
  }
  model->train();
  const ModelConfig& c = model->config();
  check(o.seq <= c.max_position_embeddings, "bench train: --seq ", o.seq, " exceeds the model's context (",
        c.max_position_embeddings, ")");

  OptimizerOptions oo;  // AdamW defaults, clipping at 1.0, fp32 masters for bf16
  Optimizer opt(*model, oo);

  // Random batches: tokens [B, T+1]; inputs are the first T, targets the last T.
  auto gen = at::detail::createCPUGenerator(o.seed + 1);
  auto positions = torch::arange(o.seq, torch::TensorOptions().dtype(torch::kInt64))
                       .unsqueeze(0)
                       .expand({o.batch, o.seq})
                       .contiguous()
                       .to(device);  // [B, T]
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize();
  };

  auto run_step = [&]() {
    auto tokens = at::randint(c.vocab_size, {o.batch, o.seq + 1}, gen, torch::TensorOptions().dtype(torch::kInt64))
                      .to(device);  // [B, T+1]
    auto inputs = tokens.narrow(1, 0, o.seq);
    auto targets = tokens.narrow(1, 1, o.seq);
    StepTimes t;
    opt.zero_grad();
    sync();
    const auto t0 = Clock::now();
    auto hidden = model->forward_hidden(inputs, positions);  // [B, T, D]
    sync();
    const auto t_head = Clock::now();
    auto logp = model->token_logprobs(hidden, targets);  // [B, T] fp32
    auto loss = -logp.mean();                             // token-mean NLL
    t.loss = loss.item<double>();                         // syncs
    t.forward_ms = ms_since(t0);
    t.logprobs_ms = ms_since(t_head);
    const auto t1 = Clock::now();
    loss.backward();
    sync();
    t.backward_ms = ms_since(t1);
    const auto t2 = Clock::now();
    StepResult r = opt.step(o.lr, t.loss);
    sync();
    t.optimizer_ms = ms_since(t2);
    t.step_ms = ms_since(t0);
    check(r.applied, "bench train: optimiser step skipped: ", r.skip_reason);
    return t;
  };

  for (int64_t i = 0; i < o.warmup; ++i) run_step();
  PeakRss steps_peak;
  const double peak_before_steps = steps_peak.peak_mb();  // loading and warm-up
  steps_peak.begin();
  std::vector<double> fwd, head, bwd, optim, total;
  double loss_first = 0, loss_last = 0;
  for (int64_t i = 0; i < o.steps; ++i) {
    StepTimes t = run_step();
    if (i == 0) loss_first = t.loss;
    loss_last = t.loss;
    fwd.push_back(t.forward_ms);
    head.push_back(t.logprobs_ms);
    bwd.push_back(t.backward_ms);
    optim.push_back(t.optimizer_ms);
    total.push_back(t.step_ms);
  }

  int64_t n_params = 0;
  int64_t n_trainable = 0;
  for (const auto& p : model->parameters()) {
    n_params += p.numel();
    if (p.requires_grad()) n_trainable += p.numel();
  }
  const double step_ms = median(total);
  Json j;
  j["shape"] = o.shape;
  j["weights"] = source;
  j["batch"] = o.batch;
  j["seq"] = o.seq;
  j["tokens_per_step"] = o.batch * o.seq;
  j["dtype"] = dtype_name(dtype);
  j["precision"] = dtype == torch::kFloat32 ? "fp32" : "bf16 forward/backward, fp32 master weights and moments";
  j["device"] = device.str();
  j["threads"] = at::get_num_threads();
  j["params"] = n_params;
  j["steps"] = o.steps;
  j["warmup"] = o.warmup;
  j["tokens_per_s"] = static_cast<double>(o.batch * o.seq) / (step_ms / 1e3);
  j["ms_per_step"] = step_ms;
  j["ms_per_step_min"] = *std::min_element(total.begin(), total.end());
  j["ms_per_step_max"] = *std::max_element(total.begin(), total.end());
  j["ms_per_step_all"] = total;
  j["forward_ms"] = median(fwd);
  j["forward_logprobs_ms"] = median(head);  // of forward_ms: output head, log-softmax and the loss
  j["backward_ms"] = median(bwd);
  j["optimizer_ms"] = median(optim);
  j["loss_first"] = loss_first;
  j["loss_last"] = loss_last;
  j["peak_rss_mb_steps"] = steps_peak.peak_mb();  // the timed steps' own peak (warm-up excluded)
  j["peak_rss_mb"] = std::max(peak_before_steps, j["peak_rss_mb_steps"].get<double>());  // the process's
  j["memory_mb"] = memory_parts_mb(*model, opt);
  const MemoryLevers& lv = model->memory_levers();
  const auto& uses = model->memory_lever_uses();
  j["logprob_recompute"] = lever_mode_names().name(lv.logprob_recompute);
  j["checkpoint_activations"] = checkpoint_mode_names().name(lv.checkpoint);
  j["checkpoint_every"] = lv.checkpoint_every;
  // Model FLOP utilisation against a matmul peak measured now, in the model's dtype (model/flops.h).
  if (device.is_cpu()) {
    const double peak = measure_matmul_peak(dtype, 1024, 5);
    const double flops = training_flops(c, static_cast<double>(o.batch * o.seq), static_cast<double>(o.seq), o.lora_rank == 0);
    j["peak_gflops"] = peak / 1e9;
    j["mfu_fwd_bwd"] = flops / ((median(fwd) + median(bwd)) / 1e3 * peak);
    j["mfu_step"] = flops / (step_ms / 1e3 * peak);
  }
  j["logprobs_recomputed"] = uses.recomputed_logprob_calls > 0;  // what auto (or on) did in the steps
  j["layers_checkpointed"] = uses.checkpointed_forwards > 0;
  j["trainable_params"] = n_trainable;
  j["lora_rank"] = o.lora_rank;
  if (o.lora_rank > 0) j["lora_targets"] = o.lora_targets;
  j["fast_cpu_path_used"] = model->fast_cpu_path_applies();  // grad mode on, as in the timed steps
  return j;
}

}  // namespace rlf
