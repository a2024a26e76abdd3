// LoRA adapters (model/lora.h): the forward function with and without
// merging, gradients only for the adapters, the PEFT layout against the
// `peft` library (the oracle venv), and the errors for adapters that do not fit.
#include <gtest/gtest.h>

#include <fstream>

#include "model/loader.h"
#include "model/lora.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "rm/reward_model.h"
#include "tests/model/oracle_logits.h"
#include "tests/support/tensors.h"
#include "tests/support/test_env.h"
#include "util/json_util.h"

namespace rlf {
namespace {

using test::max_diff;

using test::json_to_tensor;

CausalLM small_model(uint64_t seed = 7) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  return make_random_model(c, seed, torch::kFloat32, torch::kCPU);
}

torch::Tensor some_ids() {
  return torch::tensor({{1, 5, 9, 23, 7, 64, 3, 99}, {2, 44, 81, 6, 11, 90, 33, 4}}, torch::kInt64);
}

// Adapters on every projection with non-zero B, so they change the function.
LoraOptions all_targets(int64_t rank = 4, double alpha = 8) {
  LoraOptions o;
  o.rank = rank;
  o.alpha = alpha;
  o.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};  // a Llama's
  return o;
}

void randomise_adapters(CausalLMImpl& m, uint64_t seed) {
  torch::NoGradGuard ng;
  auto gen = at::detail::createCPUGenerator(seed);
  for (auto& p : m.named_parameters())
    if (is_lora_parameter(p.key()))
      p.value().copy_(at::normal(0.0, 0.05, p.value().sizes(), gen, torch::TensorOptions().dtype(torch::kFloat32)));
}

torch::Tensor logits_of(CausalLMImpl& m, bool fast) {
  torch::NoGradGuard ng;
  m.set_fast_cpu_path(fast);
  auto out = m.forward(some_ids());
  m.set_fast_cpu_path(true);
  return out;
}

TEST(Lora, FreshAdaptersLeaveTheFunctionAndTrainAlone) {
  CausalLM m = small_model();
  const auto before = logits_of(*m, true), before_slow = logits_of(*m, false);
  add_lora(*m, LoraOptions{}, 1);
  EXPECT_TRUE(has_lora(*m));
  EXPECT_EQ(max_diff(logits_of(*m, true), before), 0.0);  // B = 0
  EXPECT_EQ(max_diff(logits_of(*m, false), before_slow), 0.0);

  int64_t adapters = 0;
  for (const auto& p : m->named_parameters()) {
    EXPECT_EQ(p.value().requires_grad(), is_lora_parameter(p.key())) << p.key();
    adapters += is_lora_parameter(p.key());
  }
  EXPECT_EQ(adapters, 2 * 2 * 2);  // 2 layers × q_proj, v_proj × A, B
  auto params = m->named_parameters();
  ASSERT_TRUE(params.contains("model.layers.1.self_attn.q_proj.lora_A.weight"));
  EXPECT_EQ(params["model.layers.1.self_attn.q_proj.lora_A.weight"].sizes(), (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(params["model.layers.1.self_attn.v_proj.lora_B.weight"].sizes(),
            (std::vector<int64_t>{m->config().num_key_value_heads * m->config().resolved_head_dim(), 8}));
  // A is PEFT's kaiming-uniform(a = sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)).
  const auto a = params["model.layers.0.self_attn.q_proj.lora_A.weight"];
  EXPECT_LE(a.abs().max().item<double>(), 1.0 / std::sqrt(64.0));
  EXPECT_GT(a.abs().max().item<double>(), 0.5 / std::sqrt(64.0));

  // One backward: gradients exist for the adapters only (B's first, A's is zero while B = 0).
  auto loss = m->forward(some_ids()).logsumexp(-1).mean();
  loss.backward();
  for (const auto& p : m->named_parameters()) {
    if (!is_lora_parameter(p.key())) {
      EXPECT_FALSE(p.value().grad().defined()) << p.key();
    } else {
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
      if (p.key().find("lora_B") != std::string::npos) EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0);
    }
  }
}

TEST(Lora, UnmergedMergedAndFoldedForwardsAgree) {
  CausalLM m = small_model();
  const auto base = logits_of(*m, true);
  add_lora(*m, all_targets(), 2);
  randomise_adapters(*m, 3);
  const auto fast = logits_of(*m, true), slow = logits_of(*m, false);
  EXPECT_GT(max_diff(fast, base), 1e-3);  // the adapters matter
  EXPECT_LT(max_diff(fast, slow), 2e-5);

  // Merged inference: W + s·B·A in forwards without autograd, recomputed when an adapter changes.
  set_lora_merged_inference(*m, true);
  EXPECT_LT(max_diff(logits_of(*m, true), fast), 2e-5);
  EXPECT_LT(max_diff(logits_of(*m, false), fast), 2e-5);
  {
    torch::NoGradGuard ng;
    m->named_parameters()["model.layers.0.mlp.up_proj.lora_B.weight"].add_(0.1);
  }
  set_lora_merged_inference(*m, false);
  const auto changed = logits_of(*m, true);
  set_lora_merged_inference(*m, true);
  EXPECT_GT(max_diff(changed, fast), 1e-3);
  EXPECT_LT(max_diff(logits_of(*m, true), changed), 2e-5) << "a stale merged weight";
  set_lora_merged_inference(*m, false);

  // The base view: the adapters off, the same tensors.
  CausalLM view = lora_base_view(*m);
  EXPECT_EQ(max_diff(logits_of(*view, true), base), 0.0);
  EXPECT_EQ(view->named_parameters()["model.layers.0.self_attn.q_proj.weight"].data_ptr(),
            m->named_parameters()["model.layers.0.self_attn.q_proj.weight"].data_ptr());

  // Folding: merge_lora leaves a plain model with the same function.
  merge_lora(*m);
  EXPECT_FALSE(has_lora(*m));
  for (const auto& p : m->named_parameters()) EXPECT_FALSE(is_lora_parameter(p.key())) << p.key();
  EXPECT_LT(max_diff(logits_of(*m, true), changed), 2e-5);
}

// The adapter's function y = W x + b + s·B·A·x in float64 (the model around it
// keeps fp32 softmax and norms): autograd's gradients of A and B against
// central differences; the model-level gradient flows through the same call.
TEST(Lora, AdapterGradientsAreFiniteDifferences) {
  CausalLM m = small_model();
  add_lora(*m, all_targets(2, 4), 4);
  randomise_adapters(*m, 5);
  m->to(torch::kFloat64);
  auto& attn = *m->model->layers->ptr<DecoderLayerImpl>(1)->self_attn;
  auto gen = at::detail::createCPUGenerator(8);
  const auto r = at::normal(0.0, 1.0, {3, attn.o_proj->weight.size(0)}, gen, torch::TensorOptions().dtype(torch::kFloat64));
  const auto xo = at::normal(0.0, 1.0, {3, attn.o_proj->weight.size(1)}, gen, torch::TensorOptions().dtype(torch::kFloat64));
  auto loss = [&] { return (lora_project(attn.o_proj, attn.o_lora, xo) * r).sum(); };
  for (torch::Tensor param : {attn.o_lora.A->weight, attn.o_lora.B->weight}) {
    m->zero_grad();
    loss().backward();
    const auto g = param.grad().flatten().clone();
    const double h = 1e-6;
    for (int64_t i = 0; i < 4; ++i) {
      torch::NoGradGuard ng;
      auto flat = param.view(-1);
      const double v = flat[i].item<double>();
      flat[i] = v + h;
      const double up = loss().item<double>();
      flat[i] = v - h;
      const double down = loss().item<double>();
      flat[i] = v;
      const double fd = (up - down) / (2 * h);
      EXPECT_NEAR(g[i].item<double>(), fd, 1e-6 * std::max(1.0, std::abs(fd))) << "element " << i;
    }
  }
}

TEST(Lora, SavedAdapterHasThePeftLayoutAndLoadsBack) {
  test::TempDir dir;
  CausalLM m = small_model();
  add_lora(*m, all_targets(4, 6), 6);
  randomise_adapters(*m, 7);
  save_lora_adapter(*m, dir / "adapter", "base");
  save_model(*m, dir / "base");
  const Json cfg = read_json_file((dir / "adapter/adapter_config.json").string());
  EXPECT_EQ(cfg["peft_type"], "LORA");
  EXPECT_EQ(cfg["r"], 4);
  EXPECT_EQ(cfg["lora_alpha"], 6);
  EXPECT_EQ(cfg["target_modules"].size(), 7u);
  SafetensorsFile w(dir / "adapter/adapter_model.safetensors");
  EXPECT_TRUE(w.contains("base_model.model.model.layers.1.mlp.gate_proj.lora_B.weight"));
  EXPECT_EQ(w.tensors().size(), 2u * 7 * 2);
  // The base directory is a plain model: no adapter tensors.
  SafetensorsFile b(dir / "base/model.safetensors");
  for (const auto& [name, view] : b.tensors()) EXPECT_FALSE(is_lora_parameter(name)) << name;

  LoadedModel back = load_model(dir / "base");
  EXPECT_FALSE(has_lora(*back.model));
  load_lora_adapter(*back.model, dir / "adapter");
  EXPECT_EQ(lora_options(*back.model).rank, 4);
  EXPECT_EQ(max_diff(logits_of(*back.model, true), logits_of(*m, true)), 0.0);
  // Loading into a model that has the same adapters restores their values.
  randomise_adapters(*back.model, 99);
  load_lora_adapter(*back.model, dir / "adapter");
  EXPECT_EQ(max_diff(logits_of(*back.model, true), logits_of(*m, true)), 0.0);
}

void expect_error(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Lora, AdaptersThatDoNotFitAreRefusedBeforeAnythingChanges) {
  test::TempDir dir;
  LoraOptions bad;
  bad.targets = {"q_proj", "qkv"};
  expect_error([&] { bad.validate(); }, "lora.targets[1] = 'qkv' is not a projection");
  bad.targets = {"q_proj"};
  bad.rank = 0;
  expect_error([&] { bad.validate(); }, "lora.rank = 0");

  CausalLM m = small_model();
  // Phi-3's fused projection on a Llama: named with the Llama's own.
  LoraOptions fused;
  fused.targets = {"qkv_proj"};
  expect_error([&] { add_lora(*m, fused, 1); },
               "lora.targets: LlamaForCausalLM has no 'qkv_proj' projection (its projections: q_proj, k_proj, v_proj, "
               "o_proj, gate_proj, up_proj, down_proj)");
  EXPECT_FALSE(has_lora(*m));
  add_lora(*m, all_targets(), 1);
  randomise_adapters(*m, 2);
  save_lora_adapter(*m, dir / "a", "base");
  expect_error([&] { add_lora(*m, LoraOptions{}, 1); }, "already has LoRA adapters");

  // Another base model: a wider MLP.
  ModelConfig wide = m->config();
  wide.intermediate_size += 8;
  CausalLM other = make_random_model(wide, 1, torch::kFloat32, torch::kCPU);
  const auto before = logits_of(*other, true);
  expect_error([&] { load_lora_adapter(*other, dir / "a"); }, "an adapter for another base model?");
  EXPECT_FALSE(has_lora(*other));
  EXPECT_EQ(max_diff(logits_of(*other, true), before), 0.0);
  // Fewer layers than the adapter.
  ModelConfig one = m->config();
  one.num_hidden_layers = 1;
  CausalLM shallow = make_random_model(one, 1, torch::kFloat32, torch::kCPU);
  expect_error([&] { load_lora_adapter(*shallow, dir / "a"); }, "targets a module this model does not have");
  // Options rlf does not implement, and a directory that is no adapter.
  Json cfg = read_json_file((dir / "a/adapter_config.json").string());
  cfg["use_dora"] = true;
  std::ofstream(dir / "a/adapter_config.json") << cfg.dump();
  expect_error([&] { load_lora_adapter(*small_model(), dir / "a"); }, "use_dora = true (DoRA) is not supported");
  expect_error([&] { load_lora_adapter(*small_model(), dir.path()); }, "is not a LoRA adapter directory");
  // A restore into adapters of another rank changes nothing.
  cfg["use_dora"] = false;
  cfg["lora_bias"] = true;  // peft >= 0.14: a bias on lora_B
  std::ofstream(dir / "a/adapter_config.json") << cfg.dump();
  expect_error([&] { load_lora_adapter(*small_model(), dir / "a"); }, "lora_bias = true is not supported");
  cfg["lora_bias"] = false;
  cfg["target_parameters"] = nullptr;
  std::ofstream(dir / "a/adapter_config.json") << cfg.dump();
  load_lora_adapter(*small_model(), dir / "a");  // peft 0.21's defaults load
  CausalLM r8 = small_model();
  add_lora(*r8, all_targets(8, 16), 3);
  expect_error([&] { load_lora_adapter(*r8, dir / "a"); }, "differ from the model's adapters");
}

// ---- Against peft (the oracle venv) ----------------------------------------

std::string py(const std::string& script) {
  return test::shell_quote(test::oracle_python()) + " " +
         test::shell_quote(test::source_path("tests/oracle/" + script).string());
}

TEST(LoraOracle, PeftAdaptersLoadIntoRlfAndRlfAdaptersLoadIntoPeft) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  const std::string base = (dir / "base").string(), peft_dir = (dir / "peft").string();
  auto made = test::run_command(py("hf_tiny_models.py") + " make llama " + test::shell_quote(base));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  auto adapted = test::run_command(py("peft_lora.py") + " make " + test::shell_quote(base) + " " +
                                   test::shell_quote(peft_dir));
  ASSERT_EQ(adapted.exit_code, 0) << adapted.output;

  // 1. peft's adapter in rlf: the same logits, unmerged (both paths) and merged.
  const Json ref = read_json_file((dir / "peft/peft_logits.json").string());
  const auto ids = json_to_tensor(ref["ids"]).to(torch::kInt64);
  const auto expected = json_to_tensor(ref["logits"]);
  LoadedModel m = load_model(base);
  load_lora_adapter(*m.model, peft_dir);
  EXPECT_EQ(lora_options(*m.model).rank, 4);
  EXPECT_EQ(lora_options(*m.model).targets.size(), 7u);
  auto logits = [&](bool fast) {
    torch::NoGradGuard ng;
    m.model->set_fast_cpu_path(fast);
    return m.model->forward(ids);
  };
  EXPECT_LT(max_diff(logits(true), expected), 2e-5) << "fast path";
  EXPECT_LT(max_diff(logits(false), expected), 2e-5) << "module path";
  set_lora_merged_inference(*m.model, true);
  EXPECT_LT(max_diff(logits(true), expected), 2e-5) << "merged";
  set_lora_merged_inference(*m.model, false);

  // 2. rlf's adapter (changed values) in peft: PeftModel.from_pretrained and merge_and_unload agree with rlf.
  randomise_adapters(*m.model, 11);
  const auto ours = logits(true);
  save_lora_adapter(*m.model, dir / "ours", base);
  std::ofstream(dir / "ids.json") << ref["ids"].dump();
  auto back = test::run_command(py("peft_lora.py") + " logits " + test::shell_quote(base) + " " +
                                test::shell_quote((dir / "ours").string()) + " " +
                                test::shell_quote((dir / "ids.json").string()) + " " +
                                test::shell_quote((dir / "back.json").string()));
  ASSERT_EQ(back.exit_code, 0) << back.output;
  const Json got = read_json_file((dir / "back.json").string());
  EXPECT_LT(max_diff(json_to_tensor(got["logits"]), ours), 2e-5);
  EXPECT_LT(max_diff(json_to_tensor(got["merged_logits"]), ours), 2e-5);

  // 3. A reward model with adapters and its trained score head (SEQ_CLS, modules_to_save = ["score"]).
  {
    CausalLM rm = make_reward_model(*load_model(base).model, 2, 5);
    add_lora(*rm, all_targets(), 6);
    randomise_adapters(*rm, 7);
    {
      torch::NoGradGuard ng;
      rm->score->weight.normal_(0.0, 0.3);
    }
    EXPECT_TRUE(rm->score->weight.requires_grad());
    save_model(*rm, dir / "rm");
    save_lora_adapter(*rm, dir / "rm_adapter", (dir / "rm").string());
    // The head in the adapter wins over the base directory's (as in peft): change the base's.
    {
      torch::NoGradGuard ng;
      CausalLM stale = make_reward_model(*load_model(base).model, 2, 99);
      save_model(*stale, dir / "rm");
    }
    auto s = test::run_command(py("peft_lora.py") + " scores " + test::shell_quote((dir / "rm").string()) + " " +
                               test::shell_quote((dir / "rm_adapter").string()) + " " +
                               test::shell_quote((dir / "ids.json").string()) + " " +
                               test::shell_quote((dir / "rm_scores.json").string()));
    ASSERT_EQ(s.exit_code, 0) << s.output;
    torch::NoGradGuard ng;
    const auto ours_rm = rm->scores(rm->forward_hidden(ids, torch::arange(ids.size(1)).expand_as(ids).contiguous()))
                             .select(1, ids.size(1) - 1);
    const auto theirs = json_to_tensor(read_json_file((dir / "rm_scores.json").string())["scores"]);
    EXPECT_LT(max_diff(theirs, ours_rm), 2e-5) << "peft's SEQ_CLS model on rlf's reward-model adapter";
    // And back into rlf: a fresh classifier from the stale base gets the head and adapters.
    LoadedModel again = load_model(dir / "rm");
    load_lora_adapter(*again.model, dir / "rm_adapter");
    const auto back = again.model->scores(again.model->forward_hidden(ids, torch::arange(ids.size(1)).expand_as(ids).contiguous()))
                          .select(1, ids.size(1) - 1);
    EXPECT_EQ(max_diff(back, ours_rm), 0.0);
  }

  // 4. rlf's merge (rlf convert --merge-lora) read by transformers alone.
  merge_lora(*m.model);
  save_model(*m.model, dir / "merged");
  auto merged = test::run_command(py("hf_tiny_models.py") + " logits " + test::shell_quote((dir / "merged").string()) +
                                  " " + test::shell_quote((dir / "ids.json").string()) + " " +
                                  test::shell_quote((dir / "merged.json").string()));
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_LT(max_diff(json_to_tensor(read_json_file((dir / "merged.json").string())["logits"]), ours), 2e-5);
}

}  // namespace
}  // namespace rlf
