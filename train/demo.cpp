#include "train/demo.h"

#include <cstdio>

#include "model/loader.h"
#include "tokenizer/char_vocab.h"
#include "config/toml_config.h"
#include "train/train_config.h"

namespace rlf {

namespace {

ModelConfig demo_model_config(int64_t vocab_size, int64_t context) {
  ModelConfig c;
  c.vocab_size = vocab_size;
  c.hidden_size = 128;
  c.intermediate_size = 384;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 4;
  c.max_position_embeddings = context;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  c.tie_word_embeddings = true;
  return c;
}

}  // namespace

void write_demo_policy(const std::filesystem::path& dir, uint64_t seed, int64_t context) {
  const std::filesystem::path tok_dir = dir / "tokenizer";
  write_char_tokenizer(tok_dir, printable_ascii());
  ModelConfig c = demo_model_config(3 + static_cast<int64_t>(printable_ascii().size()), context);
  c.validate("demo model");
  CausalLM model = make_random_model(c, seed, torch::kFloat32, torch::kCPU);
  SaveOptions so;
  so.tokenizer_source = tok_dir;
  save_model(*model, dir, so);
}

void ensure_demo_policy(const std::filesystem::path& dir, uint64_t seed, int64_t context) {
  const std::filesystem::path config = dir / "config.json";
  if (std::filesystem::exists(config) &&
      read_json_file(config.string()).value("max_position_embeddings", int64_t{0}) == context)
    return;
  write_demo_policy(dir, seed, context);
}

double demo_wrong_fraction(bool clean) { return clean ? 0.0 : 0.7; }

Json demo_config(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir, uint64_t seed,
                 bool clean) {
  // Training and held-out problems come from one generator call (distinct
  // problems); SFT sees the same training problems, never the held-out ones
  // (run_training drops SFT pairs whose prompt is a held-out prompt).
  Json task = {{"n_problems", 2200}, {"min_digits", 2}, {"max_digits", 2}, {"operations", "+"}};
  Json j = {
      {"model", {{"path", model_dir.string()}, {"dtype", "fp32"}}},
      {"data", {{"preset", "arithmetic"}, {"prompt_template", "{prompt}"}, {"arithmetic", task},
                {"eval_size", 200}, {"seed", seed}}},
      {"reward", Json::array({{{"type", "math"}, {"name", "correct"}, {"answer_format", "gsm8k"}}})},
      {"rollout", {{"prompts_per_step", 16}, {"group_size", 8}, {"max_new_tokens", 32}, {"temperature", 1.0},
                   {"max_batch_rows", 128}}},
      {"algorithm", {{"micro_batch_size", 128}, {"epochs", 1}, {"dynamic_sampling", true}}},
      {"optim", {{"lr", 2e-4}, {"warmup_steps", 10}, {"schedule", "cosine"}, {"lr_min", 2e-5}, {"max_grad_norm", 1.0}}},
      // The sloppy teacher: every sum worked column by column, the carry
      // forgotten on 70% of each carry problem's 10 showings (a habit, not a
      // fixed set of problems the policy could memorise).
      {"sft", {{"data", {{"preset", "arithmetic"}, {"prompt_template", "{prompt}"}, {"arithmetic", task},
                         {"seed", seed}, {"columns", true}, {"draws", 10}, {"wrong_style", "drop_carry"},
                         {"wrong_fraction", demo_wrong_fraction(clean)}}},
               {"steps", 800}, {"batch_size", 64}, {"micro_batch_size", 64}, {"lr", 2e-3}}},
      // The control: the same SFT policy trained for the RL phase's wall time
      // with SFT alone (pass1_control), so the table shows what RL adds.
      {"run", {{"steps", 80}, {"seed", seed}, {"out_dir", out_dir.string()}, {"samples_every", 10},
               {"eval_every", 0}, {"sft_control", true}}},
  };
  return j;
}

std::string demo_verdict(double pass1_after, double pass1_control, bool clean) {
  const double margin = 100 * (pass1_after - pass1_control);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.1f", margin);
  char abs_buf[64];
  std::snprintf(abs_buf, sizeof abs_buf, "%.1f", -margin);
  if (margin >= 5)
    return std::string("RL beats imitation by ") + buf + " points: " +
           (clean ? "the verifier added what more SFT on these demonstrations did not."
                  : "the teacher forgets the carry, SFT copies the habit, the verifier rewards the carry.");
  if (margin <= -5)
    return std::string("More SFT beats RL by ") + abs_buf + " points: " +
           (clean ? "the demonstrations are all right, so imitating them is the better use of the time."
                  : "here imitation was the better use of the time.");
  return std::string("RL and more SFT end within 5 points (") + buf + "): neither is ahead on this run.";
}

TrainRunSummary run_demo(const DemoOptions& options) {
  const std::filesystem::path init = options.out_dir / "init";
  Json j = demo_config(init, options.out_dir, options.seed, options.clean);
  apply_overrides(j, options.overrides, /*allow_new_keys=*/true);  // validated by the schema below
  TrainConfig cfg = train_config_from_json(j, "rlf demo");  // a bad override fails here, before anything is written
  write_demo_policy(init, options.seed);
  TrainRunOptions ro;
  ro.quiet = options.quiet;
  return run_training(cfg, ro);
}

}  // namespace rlf
