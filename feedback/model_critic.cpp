#include "feedback/model_critic.h"

#include <chrono>
#include <cmath>

#include "feedback/feedback_prompt.h"
#include "util/hash.h"
#include "util/error.h"

namespace rlf {

namespace {

uint64_t text_hash(const std::string& a, const std::string& b) { return fnv1a64(a + '\xff' + b); }

const ModelCriticOptions& validated(const ModelCriticOptions& o) {
  o.validate("critic.");
  return o;
}

EpisodeOptions producer_options(const ModelCriticOptions& o) {
  EpisodeOptions eo;
  eo.max_batch_rows = o.max_batch_rows;
  eo.add_special_tokens = o.add_special_tokens;
  return eo;
}

}  // namespace

void ModelCriticOptions::validate(const std::string& prefix) const {
  check(max_new_tokens >= 1 && max_new_tokens <= 1 << 20, prefix, "max_new_tokens must be in [1, 1048576] (got ",
        max_new_tokens, ")");
  check(std::isfinite(temperature) && temperature >= 0, prefix, "temperature must be >= 0 (got ", temperature, ")");
  check(prompt.find("{response}") != std::string::npos, prefix,
        "prompt must contain {response} (the answer to critique)");
  check(max_batch_rows >= 1, prefix, "max_batch_rows must be >= 1");
}

ModelCritic::ModelCritic(Policy& model, ModelCriticOptions options)
    : model_(model), options_(validated(options)), producer_(model, env_, producer_options(options_)) {}

std::vector<Critique> ModelCritic::critique(const std::vector<CritiqueRequest>& requests) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Critique> out(requests.size());
  std::vector<TokenPrompt> gen;
  std::vector<size_t> index;  // gen[k] belongs to requests[index[k]]
  const int64_t context = model_.loaded.config.max_position_embeddings;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto fitted = fit_feedback_prompt(options_.prompt, requests[i], "", *model_.tokenizer,
                                      options_.add_special_tokens, options_.max_new_tokens, context);
    if (!fitted) {
      out[i].error = "the critique prompt does not fit the critic's context";
      continue;
    }
    TokenPrompt g;
    g.ids = std::move(fitted->ids);
    g.params.temperature = options_.temperature;
    g.params.max_new_tokens = options_.max_new_tokens;
    g.params.stop_strings = options_.stop;
    g.params.seed = mix_seed(options_.seed ^ text_hash(requests[i].prompt, requests[i].response));
    gen.push_back(std::move(g));
    index.push_back(i);
  }
  if (!gen.empty()) {
    const std::vector<Episode> written = producer_.produce_from_ids(gen, 0);
    for (size_t k = 0; k < written.size(); ++k) {
      Critique& c = out[index[k]];
      c = critique_from_text(written[k].completion_text);
      c.n_generated_tokens = static_cast<int64_t>(written[k].tokens.size()) - written[k].n_prompt;
    }
  }
  const double per = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                     std::max<size_t>(1, requests.size());
  for (Critique& c : out) c.latency_s = per;
  return out;
}

}  // namespace rlf
