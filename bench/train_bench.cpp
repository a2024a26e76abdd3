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
#include "train/phase_memory.h"
#include "util/memory_usage.h"

namespace rlf {

void TrainBenchOptions::validate() const {
  check(batch > 0, "bench train: --batch must be > 0, got ", batch);
  check(seq > 0, "bench train: --seq must be > 0, got ", seq);
  check(steps > 0, "bench train: --steps must be > 0, got ", steps);
  check(warmup >= 0, "bench train: --warmup must be >= 0, got ", warmup);
  check(lr >= 0, "bench train: --lr must be >= 0, got ", lr);
  check(lengths == "full" || lengths == "mixed", "bench train: --lengths must be full or mixed, got '", lengths, "'");
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
  int64_t tokens = 0;      // real tokens (rows' lengths summed)
  bool padding_free = false;
};

// Row lengths of one step (TrainBenchOptions::lengths).
std::vector<int64_t> row_lengths(const TrainBenchOptions& o, at::Generator& gen) {
  std::vector<int64_t> out(static_cast<size_t>(o.batch), o.seq);
  if (o.lengths == "full") return out;
  const auto u = at::rand({o.batch, 2}, gen, torch::kFloat64);
  for (int64_t b = 0; b < o.batch; ++b) {
    const bool longer = u[b][0].item<double>() >= 0.8;
    const double lo = longer ? o.seq / 2.0 : o.seq / 16.0, hi = longer ? o.seq : o.seq / 4.0;
    out[static_cast<size_t>(b)] = std::clamp<int64_t>(static_cast<int64_t>(lo + (hi - lo) * u[b][1].item<double>()), 2, o.seq);
  }
  return out;
}

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
    const std::vector<int64_t> lengths = row_lengths(o, gen);
    auto mask = torch::zeros({o.batch, o.seq}, torch::kBool);
    for (int64_t b = 0; b < o.batch; ++b) mask[b].narrow(0, 0, lengths[static_cast<size_t>(b)]).fill_(true);
    t.tokens = mask.sum().item<int64_t>();
    const bool ragged = t.tokens < o.batch * o.seq;
    t.padding_free = ragged && padding_free_applies(model->memory_levers(), t.tokens, o.batch * o.seq);
    mask = mask.to(device);
    const auto packed = t.padding_free ? mask.reshape({-1}).nonzero().view({-1}) : torch::Tensor();
    opt.zero_grad();
    sync();
    const auto t0 = Clock::now();
    // [B, T, D], or [1, N, D] padding-free
    auto hidden = model->forward_hidden(inputs, positions, nullptr, ragged ? mask : torch::Tensor(), packed);
    sync();
    const auto t_head = Clock::now();
    torch::Tensor loss;  // token-mean NLL over the real tokens
    if (t.padding_free) {
      loss = -model->token_logprobs(hidden, targets.reshape({-1}).index_select(0, packed).view({1, -1})).mean();
    } else {
      auto logp = model->token_logprobs(hidden, targets);  // [B, T] fp32
      loss = ragged ? -(logp * mask).sum() / static_cast<double>(t.tokens) : -logp.mean();
    }
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
  PhasePeak steps_peak(device);
  const double peak_before_steps = steps_peak.rss_peak_mb();  // loading and warm-up
  steps_peak.begin();
  std::vector<double> fwd, head, bwd, optim, total;
  double loss_first = 0, loss_last = 0;
  int64_t real_tokens = 0, padding_free_steps = 0;
  for (int64_t i = 0; i < o.steps; ++i) {
    StepTimes t = run_step();
    real_tokens += t.tokens;
    padding_free_steps += t.padding_free ? 1 : 0;
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
  j["lengths"] = o.lengths;
  const double tokens_per_step = static_cast<double>(real_tokens) / static_cast<double>(o.steps);
  j["real_tokens_per_step"] = tokens_per_step;
  j["padding_free"] = padding_free_mode_names().name(model->memory_levers().padding_free);
  j["padding_free_steps"] = padding_free_steps;
  double total_ms = 0;
  for (double ms : total) total_ms += ms;
  // Full rows: B*T over the median step; mixed lengths: the real tokens over
  // the summed step times (each step has its own lengths).
  j["tokens_per_s"] = o.lengths == "full" ? static_cast<double>(o.batch * o.seq) / (step_ms / 1e3)
                                          : static_cast<double>(real_tokens) / (total_ms / 1e3);
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
  j["peak_rss_mb_steps"] = steps_peak.rss_peak_mb();  // the timed steps' own peak (warm-up excluded)
  if (device.is_cuda()) j["peak_cuda_mb_steps"] = steps_peak.cuda_peak_mb();  // the allocator's, the same steps
  j["peak_rss_mb"] = std::max(peak_before_steps, j["peak_rss_mb_steps"].get<double>());  // the process's
  j["memory_mb"] = memory_parts_mb(*model, opt);
  const MemoryLevers& lv = model->memory_levers();
  const auto& uses = model->memory_lever_uses();
  j["logprob_recompute"] = lever_mode_names().name(lv.logprob_recompute);
  j["checkpoint_activations"] = checkpoint_mode_names().name(lv.checkpoint);
  j["checkpoint_every"] = lv.checkpoint_every;
  // Model FLOP utilisation against a matmul peak measured now, in the model's dtype (model/flops.h).
  if (device.is_cpu()) {
    const double peak = measure_matmul_peak(dtype, 2048, 5);
    // (mixed lengths: the mean step's real tokens, rows of their mean length)
    const double mean_len = tokens_per_step / static_cast<double>(o.batch);
    const double flops = training_flops(c, tokens_per_step, mean_len, o.lora_rank == 0);
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
