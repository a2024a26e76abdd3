// llama2.c's stories260K greedy from "Once upon a time": run.c's reference
// continuation (quoted in shared/README.md) and rlf's, for the CPU and GPU tests.
#pragma once

#include <filesystem>
#include <string>

#include "rollout/engine.h"
#include "rollout/policy.h"

namespace rlf::test {

inline const char* kStories260KReference =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a "
    "big, red ball. She wanted to play with it, but it was too high.";

// The prompt and 120 greedy tokens of the model at `path`, loaded with `options` (dtype, device).
inline std::string greedy_story(const std::filesystem::path& path, const LoadOptions& options) {
  Policy p = load_policy(path, "", options);
  EngineOptions eo;
  eo.eos_token_ids = p.eos_token_ids;
  RolloutEngine engine(p.model(), p.tokenizer, eo);
  GenerationRequest r;
  r.prompt_ids = p.tokenizer->encode("Once upon a time", /*add_special=*/true);
  r.params.temperature = 0;
  r.params.max_new_tokens = 120;
  return "Once upon a time" + engine.generate({r})[0].text;
}

}  // namespace rlf::test
