// Peak memory of the training log-probs alone: token log-probs (with the
// logged entropy, as GRPO asks) of hidden states [B, T, D] under a tied
// classifier of V rows, then backward, with the logits recomputed per chunk
// in backward or kept (CausalLM::set_logprob_recompute). One mode per
// process, since peak RSS only grows:
//
//   build/bench/bench_logprob_memory --recompute 1 [--fast 1] [--batch 4]
//       [--seq 512] [--hidden 896] [--vocab 151936] [--entropy-grad 0]
//       [--chunk-rows 0]
//
// prints one JSON line: the mode, peak RSS (MB) after building the model and
// at the end, and the seconds of log-probs + backward.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "model/loader.h"
#include "model/transformer.h"

namespace {

double peak_rss_mb() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 4, seq = 512, hidden = 896, vocab = 151936, chunk_rows = 0;
  bool again = true, fast = true, entropy_grad = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int64_t v = std::atoll(argv[i + 1]);
    if (k == "--batch") batch = v;
    else if (k == "--seq") seq = v;
    else if (k == "--hidden") hidden = v;
    else if (k == "--vocab") vocab = v;
    else if (k == "--recompute") again = v != 0;
    else if (k == "--chunk-rows") chunk_rows = v;
    else if (k == "--fast") fast = v != 0;
    else if (k == "--entropy-grad") entropy_grad = v != 0;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  rlf::ModelConfig c = rlf::ModelConfig::preset("stories260K");
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.num_attention_heads = 14;
  c.num_key_value_heads = 2;
  c.head_dim = 64;
  c.intermediate_size = 64;
  c.num_hidden_layers = 1;
  c.tie_word_embeddings = true;
  auto m = rlf::make_random_model(c, 0, torch::kFloat32, torch::kCPU);
  m->set_fast_cpu_path(fast);
  m->set_logprob_recompute(again, chunk_rows);
  torch::manual_seed(0);
  auto h = torch::randn({batch, seq, hidden}).requires_grad_(true);
  auto targets = torch::randint(0, vocab, {batch, seq}, torch::kInt64);
  const double base = peak_rss_mb();
  const auto t0 = std::chrono::steady_clock::now();
  auto [lp, ent] = m->token_logprobs_entropy(h, targets, entropy_grad);
  auto loss = lp.mean();
  if (entropy_grad) loss = loss + 0.01 * ent.mean();
  loss.backward();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"recompute\": %d, \"fast\": %d, \"entropy_grad\": %d, \"batch\": %lld, \"seq\": %lld, \"hidden\": %lld, "
              "\"vocab\": %lld, \"peak_rss_mb_model\": %.0f, \"peak_rss_mb\": %.0f, \"seconds\": %.2f, \"check\": %.9g}\n",
              again, fast, entropy_grad, static_cast<long long>(batch), static_cast<long long>(seq),
              static_cast<long long>(hidden), static_cast<long long>(vocab), base, peak_rss_mb(), s,
              h.grad().abs().sum().item<double>());
  return 0;
}
