// The first correctness test: greedy decoding of llama2.c's real stories260K
// model from "Once upon a time" reproduces llama2.c's run.c output token for
// token (the reference continuation is quoted in shared/README.md).
#include <gtest/gtest.h>

#include "rollout/engine.h"
#include "rollout/policy.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

const char* kReference =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a "
    "big, red ball. She wanted to play with it, but it was too high.";

std::string greedy(const std::filesystem::path& model, const std::string& dtype) {
  LoadOptions lo;
  lo.dtype = dtype;
  Policy p = load_policy(model, "", lo);
  EngineOptions eo;
  eo.eos_token_ids = p.eos_token_ids;
  RolloutEngine engine(p.model(), p.tokenizer, eo);
  GenerationRequest r;
  r.prompt_ids = p.tokenizer->encode("Once upon a time", /*add_special=*/true);
  r.params.temperature = 0;
  r.params.max_new_tokens = 120;
  auto out = engine.generate({r});
  return "Once upon a time" + out[0].text;
}

TEST(Stories260K, GreedyMatchesLlama2cRunC) {
  std::string text = greedy(test::shared_path("models/stories260K/stories260K.bin"), "fp32");
  EXPECT_EQ(text.substr(0, std::string(kReference).size()), kReference) << text;
}

TEST(Stories260K, ConvertedDirectoryGivesTheSameStory) {
  test::TempDir dir;
  auto bin = test::shared_path("models/stories260K/stories260K.bin");
  LoadedModel m = load_model(bin);
  SaveOptions so;
  so.tokenizer_source = m.tokenizer;
  save_model(*m.model, dir / "hf", so);
  EXPECT_EQ(greedy(dir / "hf", "fp32"), greedy(bin, "fp32"));
}

}  // namespace
}  // namespace rlf
