#include "bench/generate_bench.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <tuple>
#include <vector>

#include "bench/bench_model.h"
#include "model/cpu_bf16_linear.h"
#include "model/cpu_fast_forward.h"
#include "model/loader.h"
#include "model/step_clock.h"
#include "rollout/engine.h"
#include "util/error.h"

namespace rlf {

void GenerateBenchOptions::validate() const {
  check(batch > 0, "bench: --batch must be > 0");
  check(new_tokens > 0, "bench: --new-tokens must be > 0");
  check(prompt_len > 0, "bench: --prompt-len must be > 0");
  check(repeats > 0, "bench: --repeats must be > 0");
  check(group > 0 && batch % group == 0, "bench: --group (", group, ") must divide --batch (", batch, ")");
  check(top_k >= 0, "bench: --top-k must be >= 0 (0 = the whole vocabulary), got ", top_k);
}

namespace {

// The matmul bound of one decoding step: every projection of every layer and
// the classifier at `rows` rows, nothing else, through the path decoding
// takes (on the fp32 CPU fast path the packed panels, pack_for_decoding, as
// the engine packs them, unless `pack` is off; otherwise the module path's
// linear, model/cpu_bf16_linear.h) or, with `blas`, through LibTorch's linear
// (OpenBLAS on the CPU) whatever the path. Returns {median
// ms over `repeats`, bytes of weights read}.
std::pair<double, double> linear_bound(CausalLMImpl& model, int64_t rows, int64_t repeats, bool blas, bool pack) {
  torch::NoGradGuard ng;
  const bool fast = model.fast_cpu_path_applies() && !blas;
  if (fast && pack) model.pack_for_decoding();
  std::vector<torch::Tensor> weights;
  for (int64_t l = 0; l < static_cast<int64_t>(model.model->layers->size()); ++l)
    for (const Projection& p : model.layer(l).projections()) weights.push_back((*p.linear)->weight);
  weights.push_back(model.lm_head ? model.lm_head->weight : model.model->embed_tokens->weight);
  double bytes = 0;
  std::vector<torch::Tensor> inputs, outputs;
  for (const auto& w : weights) {
    bytes += static_cast<double>(w.numel() * w.element_size());
    inputs.push_back(torch::randn({rows, w.size(1)}, w.options()));
    outputs.push_back(torch::empty({rows, w.size(0)}, w.options()));
  }
  auto pass = [&] {
    for (size_t i = 0; i < weights.size(); ++i) {
      if (fast)
        matmul_wt_into(inputs[i], weights[i], torch::Tensor(), outputs[i], model.packed_weights().find(weights[i]));
      else if (blas)
        outputs[i] = torch::nn::functional::linear(inputs[i], weights[i]);
      else
        outputs[i] = linear_layer(inputs[i], weights[i]);
    }
    (void)outputs.back().sum().item<float>();  // synchronise (CUDA)
  };
  pass();  // warm-up
  std::vector<double> ms;
  for (int64_t r = 0; r < std::max<int64_t>(3, repeats); ++r) {
    auto t0 = std::chrono::steady_clock::now();
    pass();
    ms.push_back(1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  model.release_decoding_weights();
  return {ms[ms.size() / 2], bytes};
}

// One timed generate call and, right after it, its step's matmul bound
// through the decoding path and through LibTorch's linear.
struct RunFigures {
  double wall_s = 0, decode_rate = 0, step_ms = 0, prefill_s = 0, pack_s = 0;
  double bound_ms = 0, blas_ms = 0, fraction = 0, weight_bytes = 0;
  // A decoding step's parts, ms (StepClock, EngineStats); `rest` is the
  // step less the others (the engine's bookkeeping between them).
  double projections_ms = 0, attention_ms = 0, layers_other_ms = 0, classifier_ms = 0, sampling_ms = 0, rest_ms = 0;
  int64_t generated = 0;
};

RunFigures time_run(RolloutEngine& engine, const std::vector<GenerationRequest>& requests, CausalLMImpl& model,
                    const GenerateBenchOptions& o) {
  RunFigures f;
  engine.reset_stats();
  StepClock clock;
  model.set_step_clock(&clock);
  auto t0 = std::chrono::steady_clock::now();
  auto out = engine.generate(requests);
  f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  model.set_step_clock(nullptr);
  for (const auto& s : out) f.generated += static_cast<int64_t>(s.completion_ids.size());
  const auto& st = engine.stats();
  f.decode_rate = st.decode_s > 0 ? (st.n_decode_tokens - o.batch) / st.decode_s : 0;
  f.step_ms = st.n_steps > 0 ? 1e3 * st.decode_s / st.n_steps : 0;
  f.prefill_s = st.prefill_s;
  f.pack_s = st.pack_s;
  if (st.n_steps > 0) {
    const double per_step = 1e3 / static_cast<double>(st.n_steps);
    f.projections_ms = clock.projections_s * per_step;
    f.attention_ms = clock.attention_s * per_step;
    f.layers_other_ms = (clock.forward_s - clock.projections_s - clock.attention_s) * per_step;
    f.classifier_ms = st.classifier_s * per_step;
    f.sampling_ms = st.sample_s * per_step;
    f.rest_ms = f.step_ms - (clock.forward_s + st.classifier_s + st.sample_s) * per_step;
  }
  std::tie(f.bound_ms, f.weight_bytes) = linear_bound(model, o.batch, 3, false, o.pack_weights);
  f.blas_ms = linear_bound(model, o.batch, 3, true, false).first;
  f.fraction = f.step_ms > 0 ? f.bound_ms / f.step_ms : 0.0;
  return f;
}

}  // namespace

Json run_generate_bench(const GenerateBenchOptions& o) {
  o.validate();
  const torch::ScalarType dtype = parse_dtype(o.dtype);
  const torch::Device device = parse_device(o.device);
  auto [model, source] = make_bench_model(o.shape, o.dtype, o.device, o.seed);
  model->set_fast_cpu_path(o.fast_cpu);
  model->set_pack_weights(o.pack_weights);
  model->eval();
  const ModelConfig& c = model->config();
  check(o.prompt_len + o.new_tokens <= c.max_position_embeddings, "bench: prompt-len + new-tokens (",
        o.prompt_len + o.new_tokens, ") exceeds the model's context (", c.max_position_embeddings, ")");

  Rng rng(o.seed);
  std::vector<GenerationRequest> requests;
  for (int64_t b = 0; b < o.batch / o.group; ++b) {
    GenerationRequest r;
    r.n = o.group;
    for (int64_t t = 0; t < o.prompt_len; ++t) r.prompt_ids.push_back(static_cast<int32_t>(rng.next() % c.vocab_size));
    r.params.temperature = 1.0;
    r.params.top_k = o.top_k;
    r.params.max_new_tokens = o.new_tokens;
    r.params.ignore_eos = true;
    r.params.seed = static_cast<uint64_t>(b);
    requests.push_back(std::move(r));
  }
  EngineOptions eo;
  eo.max_batch_rows = o.batch;
  eo.share_prompt_cache = o.share_prompt;
  RolloutEngine engine(model, nullptr, eo);
  engine.generate(requests);  // warm-up (allocates the cache, primes kernels)

  // Each timed run is followed by its own matmul bound, so the fraction
  // compares two timings taken moments apart: on a shared machine the bound
  // alone moves by 15 % between runs.
  std::vector<RunFigures> runs;
  for (int64_t r = 0; r < o.repeats; ++r) runs.push_back(time_run(engine, requests, *model, o));
  auto pick = [&](double RunFigures::*field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*field);
    return v;
  };
  const std::vector<double> walls = pick(&RunFigures::wall_s), decode_rates = pick(&RunFigures::decode_rate),
                            step_ms = pick(&RunFigures::step_ms), prefill_s = pick(&RunFigures::prefill_s),
                            pack_s = pick(&RunFigures::pack_s), bound_ms = pick(&RunFigures::bound_ms),
                            blas_ms = pick(&RunFigures::blas_ms), fractions = pick(&RunFigures::fraction);
  const int64_t generated = runs.back().generated;
  const double weight_bytes = runs.back().weight_bytes;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double wall = median(walls);
  int64_t n_params = 0;
  for (const auto& p : model->parameters()) n_params += p.numel();
  Json j;
  j["shape"] = o.shape;
  j["weights"] = source;
  j["batch"] = o.batch;
  j["dtype"] = dtype_name(dtype);
  j["device"] = device.str();
  j["threads"] = at::get_num_threads();
  j["params"] = n_params;
  j["prompt_len"] = o.prompt_len;
  j["new_tokens"] = o.new_tokens;
  j["generated_tokens"] = generated;
  j["wall_s"] = wall;
  j["tokens_per_s"] = generated / wall;
  j["decode_tokens_per_s"] = median(decode_rates);
  j["ms_per_step"] = median(step_ms);
  j["prefill_s"] = median(prefill_s);
  j["pack_s"] = median(pack_s);  // packing the weights for decoding, once per generate call (in wall_s)
  j["repeats"] = o.repeats;
  j["group"] = o.group;
  j["top_k"] = o.top_k;
  j["share_prompt"] = o.share_prompt;
  j["pack_weights"] = o.pack_weights;
  j["kv_cache_mb"] = engine.cache_peak_bytes() / 1e6;
  {
    // The same step's matmuls alone, the bound batched decoding approaches,
    // through the path decoding takes and through LibTorch's linear
    // (OpenBLAS): medians over the runs, and the median of each run's own
    // fraction.
    const double step = median(step_ms), ms = median(bound_ms);
    j["linear_ms_per_step_libtorch"] = median(blas_ms);
    j["fraction_of_libtorch_linear_bound"] = step > 0 ? median(blas_ms) / step : 0.0;
    j["linear_ms_per_step"] = ms;
    j["linear_ms_per_step_runs"] = bound_ms;
    j["linear_bound_tokens_per_s"] = 1e3 * o.batch / ms;
    j["fraction_of_linear_bound"] = median(fractions);
    j["fraction_of_linear_bound_runs"] = fractions;
    j["weight_bytes_per_step"] = weight_bytes;
    // Where the step's time goes (medians over the runs, ms per step; zeros
    // for the parts a path does not time: the clock times the fp32 CPU fast
    // path) and the products' share of the step timed inside it, free of the
    // bound's drift between timings.
    Json split;
    split["projections"] = median(pick(&RunFigures::projections_ms));
    split["attention"] = median(pick(&RunFigures::attention_ms));
    split["layers_other"] = median(pick(&RunFigures::layers_other_ms));
    split["classifier"] = median(pick(&RunFigures::classifier_ms));
    split["sampling"] = median(pick(&RunFigures::sampling_ms));
    split["rest"] = median(pick(&RunFigures::rest_ms));
    j["step_split_ms"] = split;
    std::vector<double> in_step;
    for (const auto& r : runs)
      in_step.push_back(r.step_ms > 0 ? (r.projections_ms + r.classifier_ms) / r.step_ms : 0.0);
    j["products_fraction_of_step_runs"] = in_step;
    j["products_fraction_of_step"] = median(in_step);
    j["weight_gb_per_s"] = step > 0 ? weight_bytes / (step * 1e6) : 0.0;
  }
  j["fast_cpu_path"] = model->fast_cpu_path();
  {
    torch::NoGradGuard no_grad;  // as during generation, with a cache like the engine's
    KVCache probe(model->config(), 1, 1, model->kv_cache_dtype(), model->device());
    j["fast_cpu_path_used"] = model->fast_cpu_path_applies(&probe);
  }
  return j;
}

}  // namespace rlf
