// The first correctness test: greedy decoding of llama2.c's real stories260K
// model from "Once upon a time" reproduces llama2.c's run.c output token for
// token (the reference continuation is quoted in shared/README.md).
#include <gtest/gtest.h>

#include "tests/rollout/stories260k_fixture.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

using test::greedy_story;
using test::kStories260KReference;

std::string greedy(const std::filesystem::path& model, const std::string& dtype) {
  LoadOptions lo;
  lo.dtype = dtype;
  return greedy_story(model, lo);
}

TEST(Stories260K, GreedyMatchesLlama2cRunC) {
  std::string text = greedy(test::shared_path("models/stories260K/stories260K.bin"), "fp32");
  EXPECT_EQ(text.substr(0, std::string(kStories260KReference).size()), kStories260KReference) << text;
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
