#include "rollout/policy.h"

#include <algorithm>

#include "util/error.h"

namespace rlf {

Policy load_policy(const std::filesystem::path& model_path, const std::filesystem::path& tokenizer_path,
                   const LoadOptions& options) {
  Policy p;
  p.loaded = load_model(model_path, options);
  p.tokenizer_path = tokenizer_path.empty() ? p.loaded.tokenizer : tokenizer_path;
  check(!p.tokenizer_path.empty(), "no tokenizer found with the model '", model_path.string(),
        "': pass --tokenizer PATH (a tokenizer.json, a directory holding one, or a llama2.c tok*.bin)");
  p.tokenizer = with_context("loading tokenizer '" + p.tokenizer_path.string() + "'",
                             [&] { return std::shared_ptr<const Tokenizer>(load_tokenizer(p.tokenizer_path.string())); });
  check(p.tokenizer->vocab_size() <= p.loaded.config.vocab_size, "tokenizer '", p.tokenizer_path.string(), "' has ",
        p.tokenizer->vocab_size(), " tokens but the model's vocab_size is ", p.loaded.config.vocab_size);

  std::vector<int64_t> eos = p.loaded.generation.eos_token_ids;
  if (eos.empty()) eos = p.loaded.config.eos_token_ids;
  if (eos.empty() && p.tokenizer->eos_id()) eos = {*p.tokenizer->eos_id()};
  if (p.loaded.format == "llama2c") {
    eos = {2};
    if (p.tokenizer->bos_id()) eos.push_back(*p.tokenizer->bos_id());
  }
  for (int64_t id : eos) p.eos_token_ids.push_back(static_cast<int32_t>(id));
  return p;
}

}  // namespace rlf
