// The real stories260K llama2.c checkpoint: loads, converts to a Hugging Face
// directory with identical logits, and that directory gives the same logits in
// transformers (which checks the q/k RoPE row permutation from outside).
#include <gtest/gtest.h>

#include <fstream>

#include "model/loader.h"
#include "tests/support/test_env.h"
#include "util/json_util.h"

namespace rlf {
namespace {

const std::vector<std::vector<int64_t>> kIds = {{1, 403, 407, 261, 378, 265, 307, 282, 33, 45}};

torch::Tensor ids_tensor() {
  std::vector<int64_t> flat(kIds[0]);
  return torch::tensor(flat, torch::kInt64).view({1, -1});
}

TEST(Llama2cModel, ConvertedDirectoryGivesIdenticalLogits) {
  test::TempDir dir;
  const auto bin = test::shared_path("models/stories260K/stories260K.bin");
  LoadedModel a = load_model(bin);
  EXPECT_EQ(a.format, "llama2c");
  EXPECT_EQ(a.tokenizer.filename(), "tok512.bin");
  SaveOptions so;
  so.tokenizer_source = a.tokenizer;
  save_model(*a.model, dir / "hf", so);
  EXPECT_TRUE(std::filesystem::exists(dir / "hf/config.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "hf/model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir / "hf/tok512.bin"));

  LoadedModel b = load_model(dir / "hf");
  EXPECT_EQ(b.format, "hf");
  torch::NoGradGuard ng;
  auto la = a.model->forward(ids_tensor());
  auto lb = b.model->forward(ids_tensor());
  EXPECT_TRUE(torch::equal(la, lb)) << "max diff " << (la - lb).abs().max().item<double>();
}

TEST(Llama2cModel, TransformersAgreesOnTheConvertedModel) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  LoadedModel a = load_model(test::shared_path("models/stories260K/stories260K.bin"));
  save_model(*a.model, dir / "hf");
  std::ofstream(dir / "ids.json") << Json(kIds).dump();
  auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                             test::shell_quote(test::source_path("tests/oracle/hf_tiny_models.py").string()) +
                             " logits " + test::shell_quote((dir / "hf").string()) + " " +
                             test::shell_quote((dir / "ids.json").string()) + " " +
                             test::shell_quote((dir / "out.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json out = read_json_file((dir / "out.json").string());
  torch::NoGradGuard ng;
  auto mine = a.model->forward(ids_tensor())[0];
  double max_err = 0;
  for (int64_t t = 0; t < mine.size(0); ++t)
    for (int64_t v = 0; v < mine.size(1); ++v)
      max_err = std::max(max_err, std::abs(mine[t][v].item<double>() - out["logits"][0][t][v].get<double>()));
  EXPECT_LT(max_err, 1e-4);
}

TEST(Llama2cModel, Bf16LoadKeepsTheArgmax) {
  LoadOptions lo;
  lo.dtype = "bf16";
  LoadedModel m = load_model(test::shared_path("models/stories260K/stories260K.bin"), lo);
  LoadedModel f = load_model(test::shared_path("models/stories260K/stories260K.bin"));
  torch::NoGradGuard ng;
  auto a = f.model->forward(ids_tensor()).argmax(-1);
  auto b = m.model->forward(ids_tensor()).to(torch::kFloat32).argmax(-1);
  EXPECT_GE((a == b).to(torch::kFloat32).mean().item<double>(), 0.8);
}

TEST(LoadModel, ErrorsNameTheFile) {
  try {
    load_model("/nonexistent/model");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rlf
