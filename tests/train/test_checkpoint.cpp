// Checkpoints: a save/perturb/load round trip restores parameters, fp32
// masters, moments, generator state and the caller's state bit for bit (so a
// resumed step equals the uninterrupted one); a save interrupted at any stage
// never affects load_latest; a corrupt newest checkpoint is a clear error.
#include <gtest/gtest.h>

#include <fstream>

#include "model/loader.h"
#include "tests/support/test_env.h"
#include "train/checkpoint.h"
#include "util/fs.h"

namespace rlf {
namespace {

namespace fs = std::filesystem;

struct TrainRun {
  CausalLM model{nullptr};
  std::unique_ptr<Optimizer> opt;
  torch::Generator gen = make_cpu_generator(1234);

  explicit TrainRun(torch::ScalarType dtype) {
    ModelConfig c = ModelConfig::preset("stories260K");
    c.num_hidden_layers = 1;
    model = make_random_model(c, 5, dtype, torch::kCPU);
    OptimizerOptions o;
    o.weight_decay = 0.01;
    opt = std::make_unique<Optimizer>(*model, o);
  }

  CheckpointTargets targets() { return {model.get(), opt.get(), {{"data", &gen}}}; }

  // One training step on a batch drawn from `gen`.
  void train_step() {
    torch::Tensor ids = torch::randint(3, 500, {2, 10}, gen, torch::kInt64);
    torch::Tensor logits = model->forward(ids.slice(1, 0, 9)).to(torch::kFloat32);
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(2)}),
                                                              ids.slice(1, 1).reshape({-1}));
    opt->zero_grad();
    loss.backward();
    ASSERT_TRUE(opt->step(1e-2, loss.item<double>()).applied);
  }

  // Copies of every parameter, master and moment.
  std::vector<torch::Tensor> snapshot() const {
    std::vector<torch::Tensor> out;
    for (const auto& s : opt->states()) {
      out.push_back(s.param.detach().clone());
      if (s.master.defined()) out.push_back(s.master.clone());
      out.push_back(s.exp_avg.clone());
      out.push_back(s.exp_avg_sq.clone());
    }
    return out;
  }
};

bool bitwise_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].scalar_type() != b[i].scalar_type() || !torch::equal(a[i], b[i])) return false;
  }
  return true;
}

TrainerState state_at(int64_t step) {
  TrainerState s;
  s.step = step;
  s.scheduler_step = step;
  s.counters = {{"rollout_seed", 0x8000000000000005ULL}, {"samples_seen", static_cast<uint64_t>(step) * 16}};
  s.data_cursor = {{"epoch", 1}, {"index", 17 + step}};
  s.extra = {{"best_reward", 0.625}};
  return s;
}

using test::error_of;

TEST(Checkpoint, RoundTripIsBitwiseAndResumesTheSameStep) {
  test::TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  TrainRun run(torch::kBFloat16);
  run.train_step();
  run.train_step();
  const fs::path saved = save_checkpoint(dir, state_at(2), run.targets());
  EXPECT_EQ(saved, dir / "step-2");
  EXPECT_EQ(read_file(dir / "latest"), "step-2\n");
  EXPECT_TRUE(fs::exists(dir / "step-2" / "model" / "config.json"));
  const auto at_save = run.snapshot();
  ASSERT_TRUE(run.opt->states()[0].master.defined());

  // Perturb: one more step (moves weights, moments, step count and the generator).
  run.train_step();
  const auto after_step3 = run.snapshot();
  ASSERT_FALSE(bitwise_equal(at_save, after_step3));
  EXPECT_EQ(run.opt->step_count(), 3);

  std::optional<TrainerState> st = load_latest(dir, run.targets());
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(bitwise_equal(at_save, run.snapshot()));
  EXPECT_EQ(run.opt->step_count(), 2);
  EXPECT_EQ(st->step, 2);
  EXPECT_EQ(st->scheduler_step, 2);
  EXPECT_EQ(st->counters.at("rollout_seed"), 0x8000000000000005ULL);
  EXPECT_EQ(st->counters.at("samples_seen"), 32u);
  EXPECT_EQ(st->data_cursor, Json({{"epoch", 1}, {"index", 19}}));
  EXPECT_EQ(st->extra["best_reward"].get<double>(), 0.625);

  // The resumed step 3 (same generator draws) equals the uninterrupted one.
  run.train_step();
  EXPECT_TRUE(bitwise_equal(after_step3, run.snapshot()));

  // The model directory is a normal Hugging Face directory holding the saved weights.
  load_latest(dir, run.targets());
  LoadedModel m = load_model(dir / "step-2" / "model", {.dtype = "bf16"});
  auto restored = run.model->named_parameters();
  for (auto& p : m.model->named_parameters()) EXPECT_TRUE(torch::equal(p.value(), restored[p.key()])) << p.key();
}

TEST(Checkpoint, Fp32RunWithoutOptimizerOrGenerators) {
  test::TempDir tmp;
  TrainRun run(torch::kFloat32);
  run.train_step();
  std::vector<torch::Tensor> params;
  for (auto& p : run.model->parameters()) params.push_back(p.detach().clone());
  save_checkpoint(tmp.path(), state_at(1), {run.model.get(), nullptr, {}});
  EXPECT_FALSE(fs::exists(tmp / "step-1" / "optimizer.safetensors"));
  EXPECT_FALSE(fs::exists(tmp / "step-1" / "rng.safetensors"));
  run.train_step();
  load_latest(tmp.path(), {run.model.get(), nullptr, {}});
  std::vector<torch::Tensor> now;
  for (auto& p : run.model->parameters()) now.push_back(p.detach());
  EXPECT_TRUE(bitwise_equal(params, now));
  // Asking for optimizer state the checkpoint does not have is an error.
  EXPECT_EQ(error_of([&] { load_latest(tmp.path(), run.targets()); }),
            "loading checkpoint '" + (tmp / "step-1").string() + "': " + (tmp / "step-1" / "trainer.json").string() +
                ": the checkpoint has no optimizer state but an optimizer was given");
}

TEST(Checkpoint, ACompanionModelAndItsOptimizerRoundTripAndMustMatch) {
  test::TempDir tmp;
  const fs::path dir = tmp.path();
  TrainRun policy(torch::kFloat32), critic(torch::kFloat32);
  policy.train_step();
  critic.train_step();
  critic.train_step();
  CheckpointTargets t = policy.targets();
  t.companions["value"] = CompanionTarget{critic.model.get(), critic.opt.get()};
  const fs::path saved = save_checkpoint(dir, state_at(1), t);
  EXPECT_TRUE(fs::exists(saved / "value/model/model.safetensors"));
  EXPECT_TRUE(fs::exists(saved / "value/optimizer.safetensors"));
  const auto p1 = policy.snapshot(), c1 = critic.snapshot();
  const int64_t critic_steps = critic.opt->step_count();
  policy.train_step();
  critic.train_step();
  ASSERT_EQ(load_latest(dir, t)->step, 1);
  EXPECT_TRUE(bitwise_equal(p1, policy.snapshot()));
  EXPECT_TRUE(bitwise_equal(c1, critic.snapshot()));
  EXPECT_EQ(critic.opt->step_count(), critic_steps);
  // A corrupt companion file fails the manifest check, before anything is restored.
  {
    std::fstream f(saved / "value/optimizer.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x5a');
  }
  EXPECT_NE(error_of([&] { load_checkpoint(saved, t); }).find("value/optimizer.safetensors' fails its CRC-32 check"),
            std::string::npos);
  save_checkpoint(dir, state_at(1), t);
  // Restoring without the companion (or with one that was not saved) is an error naming them.
  EXPECT_NE(error_of([&] { load_checkpoint(saved, policy.targets()); }).find("saved companion models [\"value\"] differ"),
            std::string::npos);
  save_checkpoint(dir, state_at(2), policy.targets());
  EXPECT_NE(error_of([&] { load_checkpoint(dir / "step-2", t); }).find("differ from the ones to restore [\"value\"]"),
            std::string::npos);
}

TEST(Checkpoint, KeepsTheLastK) {
  test::TempDir tmp;
  TrainRun run(torch::kFloat32);
  CheckpointOptions o;
  o.keep_last = 2;
  for (int64_t s = 1; s <= 5; ++s) save_checkpoint(tmp.path(), state_at(s), run.targets(), o);
  std::vector<fs::path> all = list_checkpoints(tmp.path());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], tmp / "step-4");
  EXPECT_EQ(all[1], tmp / "step-5");
  EXPECT_EQ(read_file(tmp / "latest"), "step-5\n");
  EXPECT_FALSE(load_latest(tmp / "nothing-here", run.targets()).has_value());
}

TEST(Checkpoint, InterruptedSavesNeverAffectLoadLatest) {
  test::TempDir tmp;
  const fs::path dir = tmp.path();
  TrainRun run(torch::kBFloat16);
  run.train_step();
  save_checkpoint(dir, state_at(1), run.targets());
  const auto at_1 = run.snapshot();
  run.train_step();

  // A failure after each stage of saving step 2, before the rename (a full
  // disk, say): nothing changes and no temporary is left behind.
  for (const char* fail_at : {"tmp_dir", "model", "optimizer", "rng", "manifest", "trainer_json"}) {
    CheckpointOptions o;
    o.on_stage = [&](const std::string& stage) {
      if (stage == fail_at) throw std::runtime_error("simulated failure");
    };
    EXPECT_THROW(save_checkpoint(dir, state_at(2), run.targets(), o), Error) << fail_at;
    EXPECT_FALSE(fs::exists(dir / ".tmp-step-2")) << fail_at;
    EXPECT_EQ(find_latest_checkpoint(dir), dir / "step-1") << fail_at;
  }
  // A crash (no unwinding) leaves the temporary directory: one with a truncated file changes nothing.
  fs::copy(dir / "step-1", dir / ".tmp-step-2", fs::copy_options::recursive);
  fs::resize_file(dir / ".tmp-step-2" / "model" / "model.safetensors", 100);
  const auto before_load = run.snapshot();
  ASSERT_EQ(load_latest(dir, run.targets())->step, 1);
  EXPECT_TRUE(bitwise_equal(at_1, run.snapshot()));
  EXPECT_FALSE(bitwise_equal(before_load, run.snapshot()));

  // A crash between the rename and the update of `latest`: step-2 is complete
  // and is the one loaded, although `latest` still names step-1.
  run.train_step();
  const auto at_2 = run.snapshot();
  CheckpointOptions o;
  o.on_stage = [&](const std::string& stage) {
    if (stage == "renamed") throw std::runtime_error("simulated crash");
  };
  EXPECT_THROW(save_checkpoint(dir, state_at(2), run.targets(), o), Error);
  EXPECT_FALSE(fs::exists(dir / ".tmp-step-2"));  // renamed into step-2
  EXPECT_EQ(read_file(dir / "latest"), "step-1\n");
  run.train_step();
  ASSERT_EQ(load_latest(dir, run.targets())->step, 2);
  EXPECT_TRUE(bitwise_equal(at_2, run.snapshot()));

  // A step directory without trainer.json (not written by save) is ignored.
  fs::create_directories(dir / "step-7" / "model");
  EXPECT_EQ(find_latest_checkpoint(dir), dir / "step-2");

  // Saving the same step again replaces it.
  save_checkpoint(dir, state_at(2), run.targets());
  EXPECT_EQ(list_checkpoints(dir).size(), 2u);
  EXPECT_EQ(read_file(dir / "latest"), "step-2\n");
}

TEST(Checkpoint, CorruptNewestCheckpointIsAClearError) {
  test::TempDir tmp;
  const fs::path dir = tmp.path();
  TrainRun run(torch::kBFloat16);
  save_checkpoint(dir, state_at(1), run.targets());
  run.train_step();
  save_checkpoint(dir, state_at(2), run.targets());
  const fs::path step2 = dir / "step-2";
  const std::string prefix = "loading checkpoint '" + step2.string() + "': ";
  const std::string suffix =
      " (the previous checkpoint is '" + (dir / "step-1").string() + "': delete '" + step2.string() + "' to resume from it)";

  // A truncated weights file.
  const fs::path weights = step2 / "model" / "model.safetensors";
  const auto size = fs::file_size(weights);
  const std::string original = read_file(weights);
  fs::resize_file(weights, size - 8);
  run.train_step();
  const auto before = run.snapshot();
  EXPECT_EQ(error_of([&] { load_latest(dir, run.targets()); }),
            prefix + "'" + weights.string() + "' has " + std::to_string(size - 8) + " bytes but " +
                std::to_string(size) + " were written (truncated or modified)" + suffix);
  EXPECT_TRUE(bitwise_equal(before, run.snapshot()));  // nothing was restored

  // A flipped byte (same size): the CRC catches it.
  std::string flipped = original;
  flipped[flipped.size() - 3] ^= 0x40;
  { std::ofstream(weights, std::ios::binary | std::ios::trunc) << flipped; }
  EXPECT_EQ(error_of([&] { load_latest(dir, run.targets()); }),
            prefix + "'" + weights.string() + "' fails its CRC-32 check (corrupted)" + suffix);

  // A broken trainer.json.
  { std::ofstream(weights, std::ios::binary | std::ios::trunc) << original; }
  ASSERT_EQ(load_latest(dir, run.targets())->step, 2);
  { std::ofstream(step2 / "trainer.json", std::ios::trunc) << "{\"format\": \"rlf-train-checkpoint\", "; }
  const std::string err = error_of([&] { load_latest(dir, run.targets()); });
  EXPECT_EQ(err.rfind(prefix + "'" + (step2 / "trainer.json").string() + "': malformed JSON at byte 36", 0), 0u) << err;
  EXPECT_NE(err.find(suffix), std::string::npos) << err;

  // A missing file listed in the manifest.
  save_checkpoint(dir, state_at(3), run.targets());
  fs::remove(dir / "step-3" / "rng.safetensors");
  EXPECT_EQ(error_of([&] { load_latest(dir, run.targets()); }),
            "loading checkpoint '" + (dir / "step-3").string() + "': '" + (dir / "step-3" / "rng.safetensors").string() +
                "' is missing (the previous checkpoint is '" + step2.string() + "': delete '" +
                (dir / "step-3").string() + "' to resume from it)");

  // Different generators than were saved.
  save_checkpoint(dir, state_at(4), run.targets());
  torch::Generator other = make_cpu_generator(1);
  CheckpointTargets t = run.targets();
  t.generators = {{"sampling", &other}};
  EXPECT_EQ(error_of([&] { load_checkpoint(dir / "step-4", t); }),
            "loading checkpoint '" + (dir / "step-4").string() + "': " + (dir / "step-4" / "trainer.json").string() +
                ": saved generators [\"data\"] differ from the ones to restore [\"sampling\"]");
}

}  // namespace
}  // namespace rlf

namespace rlf {
namespace {

TEST(Checkpoint, ModelDirectoryLoadsLikeAnyModel) {
  // A real model (stories260K) with its llama2.c tokenizer: CKPT/model is what
  // `rlf generate --model CKPT/model` opens (load_model + the tokenizer beside it).
  const fs::path src = test::shared_path("models/stories260K/stories260K.bin");
  test::TempDir tmp;
  LoadedModel lm = load_model(src);
  CheckpointOptions o;
  o.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  save_checkpoint(tmp.path(), state_at(1), {lm.model.get(), nullptr, {}}, o);
  LoadedModel back = load_model(tmp / "step-1" / "model");
  EXPECT_EQ(back.format, "hf");
  EXPECT_EQ(back.tokenizer, tmp / "step-1" / "model" / "tok512.bin");
  torch::Tensor ids = torch::tensor({{1, 403, 407, 261, 378}}, torch::kInt64);
  EXPECT_TRUE(torch::equal(lm.model->forward(ids), back.model->forward(ids)));
}

}  // namespace
}  // namespace rlf
