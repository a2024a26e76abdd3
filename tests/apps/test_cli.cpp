// The `rlf` command line: the declarative table is consistent, the forms that
// outside acceptance checks call keep working, and bad input fails with one
// clear line and a non-zero exit.
#include <algorithm>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <sstream>

#include <cmath>
#include <tuple>
#include <limits>
#include <cstring>
#include <iomanip>

#include <fstream>
#include <set>

#include "apps/cli/cli.h"
#include "data/preference_dataset.h"
#include "model/loader.h"
#include "model/lora.h"
#include "rm/reward_model.h"
#include "rollout/policy.h"
#include "tests/support/test_env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

std::string rlf_binary() { return test::binary_path("apps/cli/rlf").string(); }

test::CommandResult rlf(const std::string& args) { return test::run_command(test::shell_quote(rlf_binary()) + " " + args); }

TEST(CommandTable, IsConsistent) {
  EXPECT_NO_THROW(cli::validate_command_table());
  std::set<std::string> names;
  for (const auto& c : cli::command_table()) names.insert(c.name);
  for (const char* required : {"generate", "tokenize", "convert", "info", "bench generate", "verify math", "verify code",
                               "exec", "bench tokenize", "bench exec"})
    EXPECT_TRUE(names.count(required)) << required;
}

TEST(CommandTable, ParsesTypedValuesAndRejectsBadOnes) {
  cli::Args a;
  const auto& cmd = cli::parse_command_line({"generate", "--model", "m", "--temperature=0.5", "--max-new-tokens", "7",
                                             "--stop", "x", "--stop", "y", "--json"},
                                            a);
  EXPECT_EQ(cmd.name, "generate");
  EXPECT_EQ(a.number("temperature"), 0.5);
  EXPECT_EQ(a.integer("max-new-tokens"), 7);
  EXPECT_EQ(a.list("stop"), (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(a.flag("json"));
  EXPECT_FALSE(a.given("top-p"));
  EXPECT_EQ(a.number("top-p"), 1.0);  // default
  auto expect_error = [](std::vector<std::string> argv, const std::string& needle) {
    cli::Args args;
    try {
      cli::parse_command_line(argv, args);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({"generate", "--max-new-tokens", "ten"}, "--max-new-tokens expects an integer, got 'ten'");
  expect_error({"generate", "--bogus"}, "unknown option --bogus");
  expect_error({"frobnicate"}, "unknown command 'frobnicate'");
  expect_error({"bench"}, "'rlf bench' needs a subcommand; 'rlf bench' takes: generate, train, tokenize, exec");
  expect_error({"bench", "--threads", "2"}, "'rlf bench' needs a subcommand");
  expect_error({"bench", "frobnicate"}, "unknown command 'rlf bench frobnicate'; 'rlf bench' takes: generate");
  expect_error({"verify"}, "'rlf verify' takes: math, code");
  expect_error({"generate", "--model"}, "--model needs a value");
  expect_error({"info"}, "missing argument MODEL");
}

TEST(Cli, GenerateGreedyPrintsPromptAndContinuationLikeRunC) {
  auto r = rlf("generate --model " + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) +
               " --prompt 'Once upon a time' --temperature 0 --max-new-tokens 40");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("Once upon a time, there was a little girl named Lily.", 0), 0u) << r.output;
  // Without the packed copy of the weights (less memory): the same tokens.
  auto unpacked = rlf("generate --model " +
                      test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) +
                      " --prompt 'Once upon a time' --temperature 0 --max-new-tokens 40 --pack-weights off");
  ASSERT_EQ(unpacked.exit_code, 0) << unpacked.output;
  EXPECT_EQ(unpacked.output, r.output);
  auto bad = rlf("generate --model " + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) +
                 " --prompt x --pack-weights maybe");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("--pack-weights must be on or off (got 'maybe')"), std::string::npos) << bad.output;
}

TEST(Cli, GenerateJsonCarriesIdsLogprobsAndFinishReason) {
  auto r = rlf("generate --model " + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) +
               " --prompt 'Once upon a time' --n 3 --temperature 1 --max-new-tokens 8 --seed 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto lines = split_lines(r.output);
  ASSERT_EQ(lines.size(), 3u) << r.output;
  for (const auto& line : lines) {
    Json j = parse_json(line, "rlf generate --json");
    EXPECT_EQ(j["completion_ids"].size(), j["logprobs"].size());
    EXPECT_TRUE(j["finish_reason"] == "length" || j["finish_reason"] == "stop");
    EXPECT_EQ(j["prompt_ids"][0], 1);  // BOS
  }
  auto again = rlf("generate --model " + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) +
                   " --prompt 'Once upon a time' --n 3 --temperature 1 --max-new-tokens 8 --seed 5 --json");
  EXPECT_EQ(r.output, again.output);  // same seed, same output
}

TEST(Cli, GenerateBestOfPrintsEachPromptsBestSampleByTheReward) {
  test::TempDir dir;
  write_file_atomic(dir / "p.jsonl", "{\"prompt\": \"Once upon a time\"}\n{\"prompt\": \"Tom had a dog\"}\n");
  const std::string model = test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string());
  auto r = rlf("generate --model " + model + " --prompts " + test::shell_quote((dir / "p.jsonl").string()) +
               " --best-of 6 --max-new-tokens 16 --seed 2 --json --reward self_certainty" +
               " --reward '{\"type\": \"format\", \"pattern\": \"Lily\", \"match\": \"search\", \"weight\": 100}'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto lines = split_lines(r.output);
  ASSERT_EQ(lines.size(), 2u) << r.output;
  for (const auto& line : lines) {
    Json j = parse_json(line, "rlf generate --best-of");
    ASSERT_EQ(j["scores"].size(), 6u);
    double best = -1e300;
    for (const auto& x : j["scores"]) best = std::max(best, x.get<double>());
    EXPECT_EQ(j["score"].get<double>(), best) << line;
    // The format reward dominates: the pick mentions Lily whenever any sample scored it.
    if (best >= 100) {
      EXPECT_NE(j["text"].get<std::string>().find("Lily"), std::string::npos) << line;
    }
    EXPECT_NE(j["explanation"].get<std::string>().find("self_certainty="), std::string::npos);
  }
  auto bad = rlf("generate --model " + model + " --prompt x --best-of 2");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--best-of N needs a --reward"), std::string::npos) << bad.output;
  bad = rlf("generate --model " + model + " --prompt x --best-of 2 --reward maths");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("unknown reward type 'maths'"), std::string::npos) << bad.output;
}

TEST(Cli, TokenizeJsonMatchesTheReferenceTokenizer) {
  auto r = rlf("tokenize --tokenizer " + test::shell_quote(test::shared_path("tokenizers/hf/llama3.2").string()) +
               " --text 'Hello world' --add-special --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json j = parse_json(r.output, "rlf tokenize");
  EXPECT_EQ(j["ids"], Json::parse("[128000, 9906, 1917]"));
  EXPECT_EQ(j["tokens"][2], "Ġworld");
}

TEST(Cli, ConvertThenInfo) {
  test::TempDir dir;
  auto c = rlf("convert " + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) + " " +
               test::shell_quote((dir / "hf").string()));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto i = rlf("info " + test::shell_quote((dir / "hf").string()) + " --json");
  ASSERT_EQ(i.exit_code, 0) << i.output;
  Json j = parse_json(i.output, "rlf info");
  EXPECT_EQ(j["architecture"], "LlamaForCausalLM");
  EXPECT_EQ(j["vocab_size"], 512);
  EXPECT_EQ(j["num_hidden_layers"], 5);
  EXPECT_EQ(j["params"], 260032);  // 512*64 + 5 * 45440 + 64
  // --dtype auto (the default) is fp32 on a CPU for the decoding commands.
  EXPECT_EQ(j["dtype"], "fp32") << i.output;
  auto b = rlf("info " + test::shell_quote((dir / "hf").string()) + " --dtype bf16 --json");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  // The JSON is the last line: on a CPU without AVX-512 a warning about bf16's speed comes first (stderr).
  EXPECT_EQ(parse_json(split_lines(b.output).back(), "rlf info --dtype bf16")["dtype"], "bf16") << b.output;
  auto bad = rlf("info " + test::shell_quote((dir / "hf").string()) + " --dtype fp8");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("--dtype must be auto, fp32, bf16 or fp16 (got 'fp8')"), std::string::npos) << bad.output;
}

// The families beyond Llama (model/architecture.h) through the commands:
// `info` names the family and what it makes of the decoder, `convert` writes
// transformers' shards on request and keeps the family, `export --gguf`
// refuses what it does not write, naming llama.cpp's architecture.
TEST(Cli, FamiliesThroughInfoConvertAndExport) {
  test::TempDir dir;
  Json qwen3 = {{"architectures", {"Qwen3ForCausalLM"}}, {"vocab_size", 512}, {"hidden_size", 64},
                {"intermediate_size", 96}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                {"num_key_value_heads", 2}, {"head_dim", 32}, {"max_position_embeddings", 128},
                {"use_sliding_window", true}, {"sliding_window", 8}, {"max_window_layers", 1}};
  const ModelConfig c = ModelConfig::from_hf_json(qwen3, "qwen3");
  save_model(*make_random_model(c, 1, torch::kFloat32, torch::kCPU), dir / "qwen3");
  auto conv = rlf("convert " + test::shell_quote((dir / "qwen3").string()) + " " +
                  test::shell_quote((dir / "sharded").string()) + " --max-shard-size 64KB --dtype bf16");
  ASSERT_EQ(conv.exit_code, 0) << conv.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "sharded/model.safetensors.index.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "sharded/model.safetensors"));
  auto i = rlf("info " + test::shell_quote((dir / "sharded").string()) + " --json");
  ASSERT_EQ(i.exit_code, 0) << i.output;
  Json j = parse_json(i.output, "rlf info");
  EXPECT_EQ(j["family"], "Qwen3");
  EXPECT_EQ(j["qk_norm"], "per_head");
  EXPECT_EQ(j["head_dim"], 32);
  EXPECT_EQ(j["sliding_window"], 8);
  EXPECT_EQ(j["sliding_layers"], 1);
  EXPECT_EQ(j["stored_dtype"], "bfloat16");
  EXPECT_EQ(j["params"], c.n_params());
  EXPECT_EQ(j["gguf_architecture"], "qwen3");
  auto bad_size = rlf("convert " + test::shell_quote((dir / "qwen3").string()) + " " +
                      test::shell_quote((dir / "x").string()) + " --max-shard-size lots");
  EXPECT_EQ(bad_size.exit_code, 1);
  EXPECT_NE(bad_size.output.find("--max-shard-size 'lots': expected a size such as 5GB"), std::string::npos)
      << bad_size.output;
  auto gguf = rlf("export --gguf " + test::shell_quote((dir / "q.gguf").string()) + " " +
                  test::shell_quote((dir / "qwen3").string()) + " --tokenizer " +
                  test::shell_quote(test::shared_path("models/stories260K/tok512.bin").string()));
  EXPECT_EQ(gguf.exit_code, 1);
  EXPECT_NE(gguf.output.find("Qwen3ForCausalLM (llama.cpp's 'qwen3' architecture) is not exported to GGUF yet"),
            std::string::npos)
      << gguf.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "q.gguf"));
}

// A LoRA adapter on stories260K: `generate --adapter` samples what the model
// `convert --merge-lora` writes samples, and an adapter for another base is refused.
TEST(Cli, GenerateWithAnAdapterEqualsTheMergedModel) {
  test::TempDir dir;
  const std::string bin = test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string());
  ASSERT_EQ(rlf("convert " + bin + " " + test::shell_quote((dir / "hf").string())).exit_code, 0);
  {
    LoadedModel m = load_model(dir / "hf");
    LoraOptions o;
    o.rank = 4;
    o.targets = {"q_proj", "v_proj", "down_proj"};
    add_lora(*m.model, o, 3);
    torch::NoGradGuard ng;
    auto gen = at::detail::createCPUGenerator(4);
    for (auto& p : m.model->named_parameters())
      if (is_lora_parameter(p.key()))
        p.value().copy_(at::normal(0.0, 0.1, p.value().sizes(), gen, torch::TensorOptions().dtype(torch::kFloat32)));
    save_lora_adapter(*m.model, dir / "adapter", (dir / "hf").string());
  }
  const std::string args = " --prompt 'Once upon a time' --max-new-tokens 40 --temperature 0.8 --seed 5 --json";
  auto plain = rlf("generate --model " + test::shell_quote((dir / "hf").string()) + args);
  auto adapted = rlf("generate --model " + test::shell_quote((dir / "hf").string()) + " --adapter " +
                     test::shell_quote((dir / "adapter").string()) + args);
  ASSERT_EQ(adapted.exit_code, 0) << adapted.output;
  auto c = rlf("convert " + test::shell_quote((dir / "hf").string()) + " " + test::shell_quote((dir / "merged").string()) +
               " --merge-lora " + test::shell_quote((dir / "adapter").string()));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("with the LoRA adapter"), std::string::npos) << c.output;
  auto merged = rlf("generate --model " + test::shell_quote((dir / "merged").string()) + args);
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  const Json a = parse_json(adapted.output, "adapted"), m = parse_json(merged.output, "merged"),
             p = parse_json(plain.output, "plain");
  // A LoRA checkpoint's base alone is not the trained policy: generate says so.
  std::filesystem::create_directories(dir / "ckpt");
  std::filesystem::copy(dir / "hf", dir / "ckpt/model");
  std::filesystem::copy(dir / "adapter", dir / "ckpt/adapter");
  auto base_only = rlf("generate --model " + test::shell_quote((dir / "ckpt/model").string()) + args);
  ASSERT_EQ(base_only.exit_code, 0) << base_only.output;
  EXPECT_NE(base_only.output.find("is the frozen base of a LoRA checkpoint"), std::string::npos) << base_only.output;
  EXPECT_EQ(a["completion_ids"], m["completion_ids"]);
  EXPECT_NE(a["completion_ids"], p["completion_ids"]) << "the adapter changed nothing";
  // An adapter for another base (a narrower MLP) is refused by name.
  ModelConfig tiny = ModelConfig::preset("stories260K");
  tiny.intermediate_size = 64;
  save_model(*make_random_model(tiny, 1, torch::kFloat32, torch::kCPU), dir / "other");
  auto bad = rlf("convert " + test::shell_quote((dir / "other").string()) + " " + test::shell_quote((dir / "x").string()) +
                 " --merge-lora " + test::shell_quote((dir / "adapter").string()));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("an adapter for another base model?"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "x"));
}

TEST(Cli, EvalRmScoresPreferencePairsAsTheLibraryDoes) {
  test::TempDir dir;
  // A reward model from the pretrained stories260K, and pairs in the generic layout.
  auto c = rlf("convert " + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) + " " +
               test::shell_quote((dir / "lm").string()));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  {
    LoadedModel lm = load_model(dir / "lm");
    SaveOptions so;
    so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
    save_model(*make_reward_model(*lm.model, 1, 5), dir / "rm", so);
  }
  std::string text;
  const char* endings[] = {" and they were happy.", " and it was sad.", " and the sun was warm.", " and he cried."};
  for (int i = 0; i < 12; ++i)
    text += Json{{"prompt", "Once upon a time, Lily saw a dog number " + std::to_string(i)},
                 {"chosen", endings[i % 4]}, {"rejected", endings[(i + 1) % 4]}}
                .dump() +
            "\n";
  write_file_atomic(dir / "pairs.jsonl", text);
  auto r = rlf("eval rm --model " + test::shell_quote((dir / "rm").string()) + " --data " +
               test::shell_quote((dir / "pairs.jsonl").string()) + " --dtype fp32 --json");  // the library below computes in fp32
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json j = parse_json(r.output, "rlf eval rm");
  PreferenceDatasetOptions o;
  o.path = (dir / "pairs.jsonl").string();
  const PreferenceDataset data = PreferenceDataset::load(o);
  Policy rm = load_policy(dir / "rm", "", {});
  const RewardModelPairMetrics m = measure_reward_model(*rm.model(), *rm.tokenizer, data.train(), true, 32);
  EXPECT_EQ(j["pairs"], 12);
  EXPECT_NEAR(j["accuracy"].get<double>(), m.accuracy, 1e-12);
  EXPECT_NEAR(j["margin"].get<double>(), m.margin, 1e-6);
  EXPECT_NEAR(j["ece"].get<double>(), m.ece, 1e-6);
  // A causal LM is refused with one line.
  auto bad = rlf("eval rm --model " + test::shell_quote((dir / "lm").string()) + " --data " +
                 test::shell_quote((dir / "pairs.jsonl").string()));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("not a reward model"), std::string::npos) << bad.output;
  // Rated pairs: each output's correlation with the ratings of its name.
  {
    LoadedModel lm = load_model(dir / "lm");
    SaveOptions so;
    so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
    save_model(*make_reward_model(*lm.model, 2, 5, {"happy", "warm"}), dir / "mo", so);
  }
  std::string rated;
  for (int i = 0; i < 12; ++i)
    rated += Json{{"prompt", "Once upon a time, Lily saw a dog number " + std::to_string(i)},
                  {"chosen", endings[i % 4]},
                  {"rejected", endings[(i + 1) % 4]},
                  {"chosen_ratings", {{"happy", i % 4 == 0 ? 1 : 0}, {"warm", i % 4 == 2 ? 1 : 0}}},
                  {"rejected_ratings", {{"happy", (i + 1) % 4 == 0 ? 1 : 0}}}}
                 .dump() +
             "\n";
  write_file_atomic(dir / "rated.jsonl", rated);
  auto mo = rlf("eval rm --model " + test::shell_quote((dir / "mo").string()) + " --data " +
                test::shell_quote((dir / "rated.jsonl").string()) + " --dtype fp32 --json");  // the library below computes in fp32
  ASSERT_EQ(mo.exit_code, 0) << mo.output;
  const Json jm = parse_json(mo.output, "rlf eval rm (rated)");
  o.path = (dir / "rated.jsonl").string();
  Policy mop = load_policy(dir / "mo", "", {});
  const auto mm = measure_reward_model(*mop.model(), *mop.tokenizer, PreferenceDataset::load(o).train(), true, 32);
  ASSERT_EQ(mm.attributes.size(), 2u);
  EXPECT_EQ(jm["attributes"]["happy"]["rated"], 24);
  EXPECT_EQ(jm["attributes"]["warm"]["rated"], 12);
  EXPECT_NEAR(jm["attributes"]["happy"]["pearson"].get<double>(), mm.attributes.at("happy").pearson, 1e-9);
  EXPECT_NEAR(jm["attributes"]["warm"]["spearman"].get<double>(), mm.attributes.at("warm").spearman, 1e-9);
  EXPECT_EQ(jm["readout"], "label 0");
  // A process reward model on step-labelled solutions.
  write_file_atomic(dir / "steps.jsonl",
                    Json{{"prompt", "Once upon a time"}, {"steps", {" Lily ran", " she was happy"}}, {"labels", {1, 0}}}
                            .dump() +
                        "\n");
  auto prm = rlf("eval rm --process --delimiter . --model " + test::shell_quote((dir / "rm").string()) + " --data " +
                 test::shell_quote((dir / "steps.jsonl").string()) + " --dtype fp32 --json");  // the library below computes in fp32
  ASSERT_EQ(prm.exit_code, 0) << prm.output;
  const Json jp = parse_json(prm.output, "rlf eval rm --process");
  EXPECT_EQ(jp["solutions"], 1);
  EXPECT_EQ(jp["steps"], 2);
  EXPECT_EQ(jp["label_mean"], 0.5);
}

TEST(Cli, MergeAveragesWeightsAndAddsTaskVectors) {
  test::TempDir dir;
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 1;
  SaveOptions so;
  so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  save_model(*make_random_model(c, 1, torch::kFloat32, torch::kCPU), dir / "a", so);
  save_model(*make_random_model(c, 2, torch::kFloat32, torch::kCPU), dir / "b", so);
  auto q = [&](const char* name) { return test::shell_quote((dir / name).string()); };
  auto r = rlf("merge --model " + q("a") + " --model " + q("b") + " --weight 0.25 --weight 0.75 --out " + q("soup"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = rlf("merge --base " + q("a") + " --model " + q("b") + " --weight 2 --out " + q("task"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  LoadedModel a = load_model(dir / "a"), b = load_model(dir / "b"), soup = load_model(dir / "soup"),
              task = load_model(dir / "task");
  EXPECT_FALSE(soup.tokenizer.empty()) << "the tokenizer goes with the merge";
  auto pa = a.model->named_parameters(), pb = b.model->named_parameters(), pt = task.model->named_parameters();
  for (const auto& p : soup.model->named_parameters()) {
    EXPECT_LT((p.value() - (0.25 * pa[p.key()] + 0.75 * pb[p.key()])).abs().max().item<double>(), 1e-6) << p.key();
    EXPECT_LT((pt[p.key()] - (pa[p.key()] + 2.0 * (pb[p.key()] - pa[p.key()]))).abs().max().item<double>(), 1e-6)
        << p.key();
  }
  // Another architecture, or weights that do not match the models: one line, exit 1.
  c.num_hidden_layers = 2;
  save_model(*make_random_model(c, 3, torch::kFloat32, torch::kCPU), dir / "deep", so);
  auto bad = rlf("merge --model " + q("a") + " --model " + q("deep") + " --out " + q("x"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("'num_hidden_layers' is 2 but the first model's is 1"), std::string::npos) << bad.output;
  bad = rlf("merge --model " + q("a") + " --model " + q("b") + " --weight 1 --out " + q("x"));
  EXPECT_NE(bad.output.find("1 weights for 2 models"), std::string::npos) << bad.output;
  bad = rlf("merge --model " + q("a") + " --out " + q("x"));
  EXPECT_NE(bad.output.find("at least two --model"), std::string::npos) << bad.output;
}

TEST(Cli, BenchGenerateReportsTheFields) {
  auto r = rlf("bench generate --shape stories260K --batch 4 --dtype fp32 --new-tokens 8 --repeats 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json j = parse_json(r.output, "rlf bench generate");
  for (const char* k : {"tokens_per_s", "batch", "dtype", "params"}) EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["batch"], 4);
  EXPECT_EQ(j["generated_tokens"], 32);
  EXPECT_GT(j["tokens_per_s"].get<double>(), 0);
  // Each run's own bound and fraction; the reported ones are their medians.
  ASSERT_EQ(j["linear_ms_per_step_runs"].size(), 3u);
  ASSERT_EQ(j["fraction_of_linear_bound_runs"].size(), 3u);
  std::vector<double> bounds = j["linear_ms_per_step_runs"].get<std::vector<double>>();
  std::vector<double> fractions = j["fraction_of_linear_bound_runs"].get<std::vector<double>>();
  for (double b : bounds) EXPECT_GT(b, 0);
  std::sort(bounds.begin(), bounds.end());
  std::sort(fractions.begin(), fractions.end());
  EXPECT_EQ(j["linear_ms_per_step"].get<double>(), bounds[1]);
  EXPECT_EQ(j["fraction_of_linear_bound"].get<double>(), fractions[1]);
  // The step's parts, timed inside it: each >= 0 (the products and attention
  // nest in the forward, and it, the classifier and sampling in the step),
  // and the products' share of each run's step in (0, 1].
  for (const char* k : {"projections", "attention", "layers_other", "classifier", "sampling", "rest"})
    EXPECT_GE(j["step_split_ms"][k].get<double>(), 0.0) << k;
  EXPECT_GT(j["step_split_ms"]["projections"].get<double>(), 0.0);
  std::vector<double> shares = j["products_fraction_of_step_runs"].get<std::vector<double>>();
  ASSERT_EQ(shares.size(), 3u);
  for (double s : shares) EXPECT_TRUE(s > 0.0 && s <= 1.0) << s;
  std::sort(shares.begin(), shares.end());
  EXPECT_EQ(j["products_fraction_of_step"].get<double>(), shares[1]);
}

// --top-k samples as a GRPO job does (the k most likely tokens) and is
// reported; a negative k is refused by name.
TEST(Cli, BenchGenerateTakesTopK) {
  auto r = rlf("bench generate --shape stories260K --batch 4 --group 2 --dtype fp32 --new-tokens 8 --repeats 1 "
               "--top-k 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json j = parse_json(r.output, "rlf bench generate --top-k");
  EXPECT_EQ(j["top_k"], 5);
  EXPECT_EQ(j["generated_tokens"], 32);
  auto bad = rlf("bench generate --shape stories260K --batch 4 --new-tokens 8 --top-k -1 --json");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("top-k"), std::string::npos) << bad.output;
}

// rlf reflexion on stories260K (converted) over 6 arithmetic tasks: three
// attempts, accuracy per attempt, a memory file written and read back; a
// random_init config without a trained model is one clear line. Its rewards
// come from the run set-up every entry point shares, self-certainty included.
TEST(Cli, ReflexionReportsAccuracyPerAttemptAndKeepsItsMemory) {
  test::TempDir dir;
  auto c = rlf("convert " + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) + " " +
               test::shell_quote((dir / "hf").string()));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  std::ofstream(dir / "run.toml") << "[model]\npath = \"" << (dir / "hf").string() << "\"\n"
                                  << "[data]\npreset = \"arithmetic\"\neval_size = 6\n[data.arithmetic]\nn_problems = 20\n"
                                  << "[[reward]]\ntype = \"math\"\nanswer_format = \"gsm8k\"\n"
                                  << "[[reward]]\ntype = \"self_certainty\"\nweight = 0\n"
                                  << "[rollout]\nmax_new_tokens = 8\n[critic]\ntype = \"simple_gt\"\n";
  const std::string memory = (dir / "memory.json").string();
  auto r = rlf("reflexion " + test::shell_quote((dir / "run.toml").string()) + " --attempts 3 --memory " +
               test::shell_quote(memory) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json j = parse_json(r.output, "rlf reflexion");
  EXPECT_EQ(j["n_tasks"], 6);
  ASSERT_EQ(j["attempts"].size(), 3u);
  EXPECT_EQ(j["attempts"][0]["tried"], 6);
  EXPECT_EQ(j["critic"], "simple_gt");
  const int64_t failed_first = 6 - j["attempts"][0]["solved"].get<int64_t>();
  EXPECT_EQ(j["attempts"][0]["reflections"], failed_first);
  EXPECT_TRUE(std::filesystem::exists(memory));
  auto again = rlf("reflexion " + test::shell_quote((dir / "run.toml").string()) + " --attempts 1 --memory " +
                   test::shell_quote(memory) + " --json");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_GE(parse_json(again.output, "again")["memory_size"].get<int64_t>(), failed_first);
  // A lesson pool shared across tasks instead: written as one; the per-task file is not one.
  const std::string pool = (dir / "pool.json").string();
  auto lessons = rlf("reflexion " + test::shell_quote((dir / "run.toml").string()) + " --attempts 2 --lessons 2 --memory " +
                     test::shell_quote(pool) + " --json");
  ASSERT_EQ(lessons.exit_code, 0) << lessons.output;
  EXPECT_EQ(parse_json(lessons.output, "lessons")["memory_kind"], "lessons");
  EXPECT_EQ(read_json_file(pool).at("format"), "rlf-lesson-pool");
  auto wrong = rlf("reflexion " + test::shell_quote((dir / "run.toml").string()) + " --lessons 2 --memory " +
                   test::shell_quote(memory));
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.output.find("not an rlf lesson pool"), std::string::npos) << wrong.output;

  std::ofstream(dir / "random.toml") << "[model]\nrandom_init = \"demo\"\n[run]\nout_dir = \""
                                     << (dir / "nothing").string() << "\"\n"
                                     << "[data]\npreset = \"arithmetic\"\neval_size = 6\n"
                                     << "[[reward]]\ntype = \"math\"\n";
  auto bad = rlf("reflexion " + test::shell_quote((dir / "random.toml").string()));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("exists only after `rlf train`"), std::string::npos) << bad.output;
}

TEST(Cli, ServePrintsItsAddressAnswersAndStopsCleanlyOnSigint) {
  test::TempDir dir;
  const std::string log = (dir / "serve.log").string();
  const std::string script =
      test::shell_quote(rlf_binary()) + " serve --model " +
      test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) + " --port 0 > " +
      test::shell_quote(log) + " 2>&1 & pid=$!\n"
      "for i in $(seq 100); do grep -q 'on http' " + test::shell_quote(log) + " && break; sleep 0.1; done\n"
      "url=$(grep -o 'http://[^ ]*/v1' " + test::shell_quote(log) + ")\n"
      "python3 -c \"import json, sys, urllib.request as u; r = u.urlopen(u.Request(sys.argv[1] + '/completions', "
      "data=json.dumps({'model': 'stories260K', 'prompt': 'Once upon a time', 'max_tokens': 5, 'temperature': 0}).encode(), "
      "headers={'Content-Type': 'application/json'})); print('TEXT=' + json.load(r)['choices'][0]['text'])\" \"$url\"\n"
      "kill -INT $pid; wait $pid; echo EXIT=$?; cat " + test::shell_quote(log) + "\n";
  std::ofstream(dir / "run.sh") << script;
  auto r = test::run_command("bash " + test::shell_quote((dir / "run.sh").string()));
  EXPECT_NE(r.output.find("TEXT=, there was a little"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("EXIT=0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rlf serve: model 'stories260K' on http://127.0.0.1:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stopped after 1 requests"), std::string::npos) << r.output;
}

TEST(Cli, TheAgentExampleTrainsThroughItsAgentProgram) {
  test::TempDir dir;
  const std::string prompts = (dir / "prompts.jsonl").string();
  auto p = test::run_command("python3 " + test::shell_quote(test::source_path("examples/stories_keywords/make_prompts.py").string()) +
                             " " + test::shell_quote(prompts));
  ASSERT_EQ(p.exit_code, 0) << p.output;
  auto r = test::run_command(
      "cd " + test::shell_quote(test::source_path("").string()) + " && " + test::shell_quote(rlf_binary()) +
      " train examples/agent/train.toml --json --set run.steps=2 --set rollout.prompts_per_step=2 --set data.eval_size=4" +
      " --set model.path=" + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) +
      " --set data.path=" + test::shell_quote(prompts) + " --set run.out_dir=" + test::shell_quote((dir / "run").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json j = parse_json(r.output.substr(r.output.rfind("\n{") == std::string::npos ? 0 : r.output.rfind("\n{") + 1), "train");
  EXPECT_EQ(j.at("steps"), 2);
  EXPECT_EQ(j.at("turns_mean"), 2.0);  // every episode: two calls of the agent
  const Json& last = j.at("last_metrics");
  EXPECT_EQ(last.at("episode/ended_by_env"), 2 * 4);
  EXPECT_EQ(last.at("reward/env/missing"), 0.0);
}

TEST(Cli, AWordThatGroupsSubcommandsListsThem) {
  for (const std::string word : {"bench", "verify", "chat-template"}) {
    auto help = rlf(word + " --help");
    EXPECT_EQ(help.exit_code, 0) << help.output;
    EXPECT_NE(help.output.find("usage: rlf " + word + " SUBCOMMAND"), std::string::npos) << help.output;
    for (const cli::CommandSpec* c : cli::subcommands_of(word))
      EXPECT_NE(help.output.find(c->summary), std::string::npos) << c->name << "\n" << help.output;
    auto bare = rlf(word);
    EXPECT_EQ(bare.exit_code, 2) << bare.output;
    EXPECT_EQ(bare.output, help.output);
  }
  EXPECT_EQ(cli::subcommands_of("bench").size(), 5u);
  EXPECT_TRUE(cli::subcommands_of("generate").empty());
  // "eval" is a command of its own and groups "eval rm": its own help, not the list
  auto eval = rlf("eval --help");
  EXPECT_EQ(eval.exit_code, 0);
  EXPECT_NE(eval.output.find("usage: rlf eval [options]"), std::string::npos) << eval.output;
  auto typo = rlf("bench generat --shape stories15M");
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_NE(typo.output.find("unknown command 'rlf bench generat'; 'rlf bench' takes: generate, train"),
            std::string::npos)
      << typo.output;
}

TEST(Cli, BadInputIsOneClearLineAndExitCodeOne) {
  test::TempDir dir;
  std::ofstream(dir / "config.json") << "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 10";
  auto r = rlf("info " + test::shell_quote(dir.path().string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("rlf: error: loading model"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("config.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("malformed JSON"), std::string::npos) << r.output;

  auto missing = rlf("generate --model /nonexistent.bin --prompt x");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("/nonexistent.bin"), std::string::npos) << missing.output;

  auto tok = rlf("tokenize --tokenizer /nonexistent/tokenizer.json --text x --json");
  EXPECT_EQ(tok.exit_code, 1);
  EXPECT_NE(tok.output.find("/nonexistent/tokenizer.json"), std::string::npos) << tok.output;
}

TEST(Cli, BadModelsAreOneClearLine) {
  test::TempDir dir;
  // A model whose weights hold a NaN: generation stops with a clear error, not a stream of token 0.
  auto c = rlf("convert " + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) + " " +
               test::shell_quote((dir / "nan").string()));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  {
    std::string bytes = read_file(dir / "nan/model.safetensors");
    const uint64_t header = *reinterpret_cast<const uint64_t*>(bytes.data());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (size_t at = 8 + header; at + 4 <= bytes.size(); at += 4) std::memcpy(&bytes[at], &nan, 4);  // every weight NaN
    write_file_atomic(dir / "nan/model.safetensors", bytes);
  }
  auto r = rlf("generate --model " + test::shell_quote((dir / "nan").string()) + " --prompt 'Once upon' --max-new-tokens 4");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("non-finite logits"), std::string::npos) << r.output;
  EXPECT_EQ(split_lines(r.output).size(), 1u) << r.output;
  // config.json values that are not sizes: one line naming the file and the field.
  for (const auto& [field, value, message] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"max_position_embeddings", "-5", "'max_position_embeddings' must be > 0 (got -5)"},
           {"num_hidden_layers", "5.5", "field 'num_hidden_layers' must be an integer, got 5.5"}}) {
    std::string config = read_file(dir / "nan/config.json");
    const size_t at = config.find("\"" + field + "\"");
    ASSERT_NE(at, std::string::npos) << field;
    const size_t colon = config.find(':', at), end = config.find_first_of(",}", colon);
    config = config.substr(0, colon + 1) + " " + value + config.substr(end);
    std::filesystem::create_directories(dir / field);
    std::filesystem::copy(dir / "nan/model.safetensors", dir / field / "model.safetensors");
    write_file_atomic(dir / field / "config.json", config);
    auto i = rlf("info " + test::shell_quote((dir / field).string()));
    EXPECT_EQ(i.exit_code, 1) << i.output;
    EXPECT_NE(i.output.find(message), std::string::npos) << i.output;
    EXPECT_NE(i.output.find("config.json"), std::string::npos) << i.output;
    EXPECT_EQ(split_lines(i.output).size(), 1u) << i.output;
  }
}

// Issue 37's probe, rebuilt: commands that write refuse targets that are not
// regular files (a FIFO here; a device node too where mknod is allowed),
// missing directories and their own inputs — before any work, naming the
// option — and a write cut short (RLIMIT_FSIZE, as a full disk) names the
// reason and leaves no temporary.
TEST(Cli, WritersRefuseSpecialTargetsTheirInputsAndNameFailedWrites) {
  test::TempDir dir;
  auto q = [&](const std::string& rel) { return test::shell_quote((dir / rel).string()); };
  ASSERT_EQ(rlf("convert " + test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string()) + " " +
                q("hf")).exit_code, 0);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  const bool device = ::mknod((dir / "full").c_str(), S_IFCHR | 0644, makedev(1, 7)) == 0;  // /dev/full's twin
  const std::string model_bytes = read_file(dir / "hf/model.safetensors");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"export " + q("hf") + " --gguf " + q("fifo"),
       "rlf: error: --gguf: '" + (dir / "fifo").string() + "' is a named pipe (FIFO): rlf writes regular files only"},
      {"export " + q("hf") + " --gguf " + q("new/x.gguf"),
       "rlf: error: --gguf: cannot write '" + (dir / "new/x.gguf").string() + "': directory '" + (dir / "new").string() +
           "' does not exist"},
      {"export " + q("hf") + " --gguf " + q("hf/model.safetensors"),
       "rlf: error: --gguf: '" + (dir / "hf/model.safetensors").string() + "' is in the input directory '" +
           (dir / "hf").string() + "': rlf does not overwrite its own inputs"},
      {"convert " + q("hf") + " " + q("hf"), "rlf: error: OUTPUT_DIR: '" + (dir / "hf").string() + "' is an input"},
      {"merge --model " + q("hf") + " --model " + q("hf") + " --out " + q("hf"),
       "rlf: error: --out: '" + (dir / "hf").string() + "' is an input"},
      {"merge --model " + q("hf") + " --model " + q("hf") + " --out " + q("fifo"),
       "rlf: error: --out: '" + (dir / "fifo").string() + "' is a named pipe (FIFO), not a directory"},
  };
  for (const auto& [args, message] : cases) {
    auto r = rlf(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind(message, 0), 0u) << args << "\n" << r.output;
    EXPECT_EQ(split_lines(r.output).size(), 1u) << r.output;
  }
  if (device) {
    auto r = rlf("export " + q("hf") + " --gguf " + q("full"));
    EXPECT_NE(r.output.find("is a character device: rlf writes regular files only"), std::string::npos) << r.output;
    struct stat st {};
    ASSERT_EQ(::lstat((dir / "full").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced";
  }
  struct stat st {};
  ASSERT_EQ(::lstat((dir / "fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  EXPECT_FALSE(std::filesystem::exists(dir / "new"));
  EXPECT_EQ(read_file(dir / "hf/model.safetensors"), model_bytes);
  // A write cut short: the reason, and nothing left behind.
  std::filesystem::create_directory(dir / "out");
  auto cut = test::run_command("ulimit -f 64; trap '' XFSZ; " + test::shell_quote(rlf_binary()) + " export " + q("hf") +
                          " --gguf " + q("out/m.gguf") + " 2>&1");
  EXPECT_EQ(cut.exit_code, 1) << cut.output;
  EXPECT_NE(cut.output.find("cannot write '" + (dir / "out/m.gguf").string() + "' (writing): File too large"),
            std::string::npos)
      << cut.output;
  EXPECT_TRUE(std::filesystem::is_empty(dir / "out"));
}

TEST(CommandTable, EveryNumericOptionRejectsOutOfRangeValuesWithOneLine) {
  int checked = 0;
  for (const auto& c : cli::command_table()) {
    for (const auto& o : c.options) {
      if (o.kind != cli::OptKind::Int && o.kind != cli::OptKind::Float) continue;
      for (double v : {o.min - 1, o.max * 10 + 1}) {
        std::ostringstream text;
        text << std::fixed << std::setprecision(o.kind == cli::OptKind::Int ? 0 : 3) << v;
        std::vector<std::string> argv;
        std::istringstream words(c.name);
        for (std::string w; words >> w;) argv.push_back(w);
        argv.push_back("--" + o.name);
        argv.push_back(text.str());
        cli::Args a;
        const std::string e = test::error_of([&] { cli::parse_command_line(argv, a); });
        const bool beyond_int64 = o.kind == cli::OptKind::Int && std::abs(v) > 9.2e18;  // not even an integer
        EXPECT_NE(e.find(beyond_int64 ? "--" + o.name + " expects an integer" : "--" + o.name + " " + text.str() +
                                                                                   ": must be in ["),
                  std::string::npos)
            << c.name << ": " << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 60);
  // As a user sees it: one line, exit code 1, no stack trace.
  const std::string model = test::shell_quote(test::shared_path("models/stories260K/stories260K.bin").string());
  for (const std::string& bad : {"generate --model " + model + " --prompt x --n 1000000000",
                                 "generate --model " + model + " --prompt x --max-new-tokens 9223372036854775807",
                                 "generate --model " + model + " --prompt x --stop-id abc",
                                 "generate --model " + model + " --prompt x --dtype fp16",
                                 std::string("exec --timeout 1e10 /dev/null"), "generate --model " + model + " --threads -1"}) {
    auto r = rlf(bad);
    EXPECT_EQ(r.exit_code, 1) << bad << "\n" << r.output;
    EXPECT_EQ(split_lines(r.output).size(), 1u) << bad << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("rlf: error: ", 0), 0u) << r.output;
  }
}

}  // namespace
}  // namespace rlf
