// Eval configs: defaults, the sections read (others ignored), --set
// overrides, `rlf eval` flags, default rewards per preset, the countdown
// reward, exact error texts, and docs/eval.md listing every [eval] key.
#include <gtest/gtest.h>

#include "data/synthetic_tasks.h"
#include "rewards/countdown_reward.h"
#include "eval/eval_config.h"
#include "rewards/registry.h"
#include "tests/support/test_env.h"
#include "config/toml_config.h"
#include "util/fs.h"

namespace rlf {
namespace {

using test::error_of;

EvalConfig from_toml(const std::string& text) { return eval_config_from_json(parse_toml(text, "run.toml"), "run.toml"); }

TEST(EvalConfig, MinimalConfigGetsDefaults) {
  EvalConfig c = from_toml("[model]\npath = \"m.bin\"\n[data]\npreset = \"arithmetic\"\n");
  EXPECT_EQ(c.model.path, "m.bin");
  EXPECT_EQ(c.model.tokenizer, "");
  EXPECT_EQ(c.model.device, "cpu");
  EXPECT_EQ(c.model.dtype, "fp32");  // auto: the fast dtype for decoding on a CPU
  EXPECT_TRUE(c.model.pack_weights);
  EXPECT_EQ(from_toml("[model]\npath = \"m.bin\"\ndtype = \"\"\n[data]\npreset = \"arithmetic\"\n").model.dtype, "fp32");
  EXPECT_EQ(from_toml("[model]\npath = \"m.bin\"\ndtype = \"auto\"\ndevice = \"cuda\"\n[data]\npreset = \"arithmetic\"\n")
                .model.dtype,
            "bf16");
  EXPECT_FALSE(from_toml("[model]\npath = \"m.bin\"\npack_weights = false\n[data]\npreset = \"arithmetic\"\n")
                   .model.pack_weights);
  EXPECT_EQ(c.data.preset, "arithmetic");
  EXPECT_EQ(c.rewards, Json::parse(R"([{"type": "math"}])"));
  const EvalOptions d;
  EXPECT_EQ(c.eval.n_samples, d.n_samples);
  EXPECT_FALSE(c.eval.temperature.has_value());
  EXPECT_EQ(c.eval.effective_temperature(), 0.0);
  EXPECT_EQ(c.eval.max_new_tokens, d.max_new_tokens);
  EXPECT_EQ(c.eval.correct_threshold, 0.5);
  EXPECT_TRUE(c.eval.add_special_tokens);
}

TEST(EvalConfig, ReadsEveryEvalKeyAndIgnoresTrainingSections) {
  EvalConfig c = from_toml(R"(
[model]
path = "m"
dtype = "bf16"
[data]
path = "x.jsonl"
preset = "gsm8k"
eval_size = 10
[[reward]]
type = "math"
name = "correct"
[[reward]]
type = "format"
preset = "gsm8k"
weight = 0.1
[eval]
n_samples = 8
temperature = 0.6
top_k = 20
top_p = 0.95
min_p = 0.05
max_new_tokens = 512
stop = ["</answer>"]
max_prompts = 100
seed = 7
accuracy_reward = "correct"
correct_threshold = 0.9
answer_format = "gsm8k"
add_special_tokens = false
max_batch_rows = 32
prompts_per_call = 16
[grpo]
group_size = 8
[optimizer]
lr = 1e-6
)");
  EXPECT_EQ(c.model.dtype, "bf16");
  EXPECT_TRUE(c.model.pack_weights);
  EXPECT_EQ(c.data.eval_size, 10);
  EXPECT_EQ(c.rewards.size(), 2u);
  EXPECT_EQ(c.eval.n_samples, 8);
  EXPECT_EQ(c.eval.temperature, 0.6);
  EXPECT_EQ(c.eval.top_k, 20);
  EXPECT_EQ(c.eval.top_p, 0.95);
  EXPECT_EQ(c.eval.min_p, 0.05);
  EXPECT_EQ(c.eval.max_new_tokens, 512);
  EXPECT_EQ(c.eval.stop, std::vector<std::string>{"</answer>"});
  EXPECT_EQ(c.eval.max_prompts, 100);
  EXPECT_EQ(c.eval.seed, 7u);
  EXPECT_EQ(c.eval.accuracy_reward, "correct");
  EXPECT_EQ(c.eval.correct_threshold, 0.9);
  EXPECT_EQ(c.eval.answer_format, "gsm8k");
  EXPECT_FALSE(c.eval.add_special_tokens);
  EXPECT_EQ(c.eval.max_batch_rows, 32);
  EXPECT_EQ(c.eval.prompts_per_call, 16);
  const SamplingParams p = c.eval.sampling();
  EXPECT_EQ(p.temperature, 0.6);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_EQ(p.max_new_tokens, 512);
}

TEST(EvalConfig, AutoTemperature) {
  EvalConfig c = from_toml("[model]\npath = \"m\"\n[data]\npreset = \"arithmetic\"\n[eval]\nn_samples = 4\n");
  EXPECT_EQ(c.eval.effective_temperature(), 1.0);
  c = from_toml("[model]\npath = \"m\"\n[data]\npreset = \"arithmetic\"\n[eval]\ntemperature = \"auto\"\n");
  EXPECT_EQ(c.eval.effective_temperature(), 0.0);
}

TEST(EvalConfig, ErrorTexts) {
  const std::string base = "[model]\npath = \"m\"\n[data]\npreset = \"arithmetic\"\n";
  EXPECT_EQ(error_of([] { from_toml("[data]\npreset = \"arithmetic\"\n"); }), 
            "run.toml: key 'model.path' is empty (a Hugging Face directory or a llama2.c .bin)");
  EXPECT_EQ(error_of([] { from_toml("[model]\npath = \"m\"\n"); }), 
            "run.toml: missing required key 'data' (the prompt dataset table: path, preset, ... (docs/data.md))");
  EXPECT_EQ(error_of([&] { from_toml(base + "[eval]\nn_sample = 4\n"); }), 
            "run.toml: unknown key 'eval.n_sample' (did you mean 'eval.n_samples'?; valid keys in 'eval': "
            "accuracy_reward, add_special_tokens, answer_format, best_of, correct_threshold, max_batch_rows, max_new_tokens, "
            "max_prompts, min_p, n_samples, prompts_per_call, seed, stop, temperature, top_k, top_p)");
  EXPECT_EQ(error_of([&] { from_toml(base + "[eval]\nn_samples = 0\n"); }),
            "run.toml: eval option n_samples = 0: must be >= 1 (completions per prompt)");
  EXPECT_EQ(error_of([&] { from_toml(base + "[eval]\ntemperature = \"hot\"\n"); }),
            "run.toml: key 'eval.temperature' must be a number >= 0 or \"auto\", got \"hot\"");
  EXPECT_EQ(error_of([&] { from_toml(base + "[eval]\ntemperature = -1\n"); }),
            "run.toml: eval option temperature = -1: must be >= 0 (0 = greedy), or unset for auto");
  EXPECT_EQ(error_of([&] { from_toml(base + "[eval]\ntop_p = 0\n"); }),
            "run.toml: eval option top_p = 0: must be in (0, 1] (1 = off)");
  EXPECT_EQ(error_of([&] { from_toml(base + "[eval]\nseed = -3\n"); }), "run.toml: key 'eval.seed' must be >= 0, got -3");
  EXPECT_EQ(error_of([&] { from_toml(base + "[eval]\nanswer_format = \"latex\"\n"); }), 
            "run.toml: key 'eval.answer_format' must be one of auto, gsm8k, boxed, answer_is, last_number, got "
            "\"latex\"");
  EXPECT_EQ(error_of([] { from_toml("[model]\npath = \"m\"\n[data]\npreset = \"arithmetic\"\nshufle = true\n"); }),
            "run.toml [data]: unknown key 'shufle' (expected one of path, preset, prompt_field, reference_field, "
            "id_field, system_prompt, chat_template, prompt_template, shuffle, seed, eval_fraction, eval_size, "
            "max_records, on_bad_record, arithmetic, countdown, guess)");
  EXPECT_EQ(error_of([] { from_toml("[model]\npath = \"m\"\n[data]\npath = \"x.jsonl\"\n"); }),
            "run.toml: no reward configured and preset 'generic' has no default reward; add a [[reward]] table or "
            "--reward TYPE (bleu, chrf, code, countdown, env, external, format, judge, keywords, length, majority, math, "
            "process_reward, reward_model, rouge_l, self_certainty)");
  EXPECT_EQ(error_of([] { from_toml("[model]\npath = \"\"\n[data]\npreset = \"countdown\"\n"); }),
            "run.toml: key 'model.path' is empty (a Hugging Face directory or a llama2.c .bin)");
}

TEST(EvalConfig, OverridesAddressOnlyEvalSections) {
  test::TempDir dir;
  const auto path = dir / "run.toml";
  write_file_atomic(path, "[model]\npath = \"m\"\n[data]\npreset = \"countdown\"\n[optimizer]\nlr = 1e-6\n");
  EvalConfig c = read_eval_config(path, {"eval.n_samples=8", "eval.temperature=0.7", "data.seed=4"});
  EXPECT_EQ(c.eval.n_samples, 8);
  EXPECT_EQ(c.eval.temperature, 0.7);
  EXPECT_EQ(c.data.seed, 4u);
  EXPECT_EQ(c.rewards, Json::parse(R"([{"type": "countdown"}])"));
  EXPECT_EQ(error_of([&] { read_eval_config(path, {"optimizer.lr=1"}); }),
            "--set 'optimizer.lr=1': eval reads only the sections model, data, reward, env and eval (e.g. --set "
            "eval.n_samples=8)");
  EXPECT_EQ(error_of([&] { read_eval_config(path, {"eval.n_smples=8"}); }),
            path.string() + ": unknown key 'eval.n_smples' (did you mean 'eval.n_samples'?; valid keys in 'eval': "
            "accuracy_reward, add_special_tokens, answer_format, best_of, correct_threshold, max_batch_rows, max_new_tokens, "
            "max_prompts, min_p, n_samples, prompts_per_call, seed, stop, temperature, top_k, top_p)");
}

EvalFlags flags() {
  EvalFlags f;
  f.model = "m.bin";
  f.preset = "arithmetic";
  return f;
}

TEST(EvalFlagsTest, BuildTheSameConfig) {
  EvalFlags f = flags();
  f.rewards = {"math", "countdown"};
  f.eval = {{"n_samples", 4}, {"seed", 3}};
  f.tokenizer = "tok.bin";
  Json j = eval_config_json_from_flags(f);
  EvalConfig c = eval_config_from_json(j, "command line");
  EXPECT_EQ(c.model.path, "m.bin");
  EXPECT_EQ(c.model.tokenizer, "tok.bin");
  EXPECT_EQ(c.data.preset, "arithmetic");
  EXPECT_EQ(c.rewards, Json::parse(R"([{"type": "math"}, {"type": "countdown"}])"));
  EXPECT_EQ(c.eval.n_samples, 4);
  EXPECT_EQ(c.eval.seed, 3u);

  f = flags();
  f.preset = "";
  f.data = "gsm8k.jsonl";
  EXPECT_EQ(error_of([&] { eval_config_from_json(eval_config_json_from_flags(f), "rlf eval"); }),
            "rlf eval: no reward configured and preset 'generic' has no default reward; add a [[reward]] table or "
            "--reward TYPE (bleu, chrf, code, countdown, env, external, format, judge, keywords, length, majority, math, "
            "process_reward, reward_model, rouge_l, self_certainty)");
  f.rewards = {"keywords"};
  c = eval_config_from_json(eval_config_json_from_flags(f), "command line");
  EXPECT_EQ(c.data.preset, "generic");
  EXPECT_EQ(c.data.path, "gsm8k.jsonl");
}

TEST(EvalFlagsTest, ErrorTexts) {
  auto err = [](auto change) {
    EvalFlags f = flags();
    change(f);
    return error_of([&] { eval_config_json_from_flags(f); });
  };
  EXPECT_EQ(err([](EvalFlags& f) { f.model = ""; }), "rlf eval: --model PATH is required (or --config FILE)");
  EXPECT_EQ(err([](EvalFlags& f) { f.preset = "gsm9k"; }),
            "rlf eval: unknown --preset 'gsm9k' (expected generic, gsm8k, math500, arithmetic, countdown, guess)");
  EXPECT_EQ(err([](EvalFlags& f) { f.preset = ""; }),
            "rlf eval: give --data FILE (with --preset gsm8k, math500 or generic) or a synthetic --preset arithmetic "
            "or countdown");
  EXPECT_EQ(err([](EvalFlags& f) { f.preset = "gsm8k"; }),
            "rlf eval: --preset gsm8k needs --data FILE (a JSONL or JSONL.gz file)");
  EXPECT_EQ(err([](EvalFlags& f) { f.data = "x.jsonl"; }),
            "rlf eval: --preset arithmetic generates its own problems; remove --data");
  EXPECT_EQ(err([](EvalFlags& f) { f.rewards = {"maths"}; }),
            "rlf eval: unknown --reward 'maths' (expected one of bleu, chrf, code, countdown, env, external, format, judge, keywords, "
            "length, majority, math, process_reward, reward_model, rouge_l, self_certainty)");
}

TEST(EvalRewards, DefaultsPerPreset) {
  for (const char* p : {"gsm8k", "math500", "arithmetic"})
    EXPECT_EQ(default_reward_tables(p), Json::parse(R"([{"type": "math"}])")) << p;
  EXPECT_EQ(default_reward_tables("countdown"), Json::parse(R"([{"type": "countdown"}])"));
}

TEST(EvalRewards, SetWithCountdownAndErrors) {
  RewardSet set = make_reward_set(Json::parse(R"([{"type": "countdown", "weight": 2}, {"type": "math", "name": "m"}])"),
                                       "run.toml");
  ASSERT_EQ(set.size(), 2u);
  EXPECT_EQ(set.components()[0].name, "countdown");
  EXPECT_EQ(set.components()[0].weight, 2.0);
  EXPECT_EQ(set.components()[1].name, "m");
  EXPECT_EQ(error_of([] { make_reward_set(Json::parse(R"([{"type": "countdown", "target": 3}])"), "run.toml"); }),
            "run.toml [[reward]] #1: reward type 'countdown': unknown option 'target'; valid options: (none) (and name, "
            "type, weight, clip, center, gate, gate_min, constraint_max, lambda_init, lambda_lr)");
  EXPECT_EQ(error_of([] { make_reward_set(Json::parse(R"([{"type": "math"}, {"type": "cd"}])"), "run.toml"); }),
            "run.toml [[reward]] #2: unknown reward type 'cd'; valid types: bleu, chrf, code, countdown, env, external, format, "
            "keywords, length, majority, math, rouge_l");
  EXPECT_EQ(error_of([] { make_reward_set(Json::array(), "run.toml"); }),
            "run.toml: no rewards configured; add at least one [[reward]] table (types: bleu, chrf, code, countdown, env, "
            "external, format, keywords, length, majority, math, rouge_l)");
  EXPECT_EQ(error_of([] { make_reward_set(Json::parse(R"([{"type": "math", "answer_fromat": "x"}])"), "run.toml"); }),
            
            "run.toml [[reward]] #1: reward type 'math': unknown option 'answer_fromat'; valid options: answer_format, "
            "correct_score, incorrect_score, reference_field (and name, type, weight, clip, center, gate, "
            "gate_min, constraint_max, lambda_init, lambda_lr)");
}

TEST(EvalRewards, CountdownRewardVerifiesTheExpression) {
  CountdownOptions o;
  o.n_problems = 2;
  const auto problems = generate_countdown(o, 1);
  const PromptExample& e = problems[0];
  RewardGroup g;
  g.record = e.record;
  g.reference = e.reference;
  for (const std::string& text : {"#### " + e.reference, std::string("#### 1 + 1"), std::string("I give up")}) {
    RewardSample s;
    s.completion = text;
    g.samples.push_back(s);
  }
  CountdownReward reward;
  auto r = reward.score(g);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].score, 1.0) << r[0].explanation;
  EXPECT_EQ(r[1].score, 0.0);
  EXPECT_EQ(r[2].score, 0.0);
  EXPECT_EQ(r[2].explanation, "no answer found (expected '#### <expression>')");
  EXPECT_EQ(error_of([&] { reward.check_record(Json::object(), "", "x.jsonl line 3"); }), 
            "x.jsonl line 3: a countdown record needs 'numbers', a non-empty list of integers");
}

TEST(EvalDocs, ListEveryEvalKey) {
  const std::string doc = read_file(test::source_path("docs/eval.md"));
  for (const SchemaEntry& e : eval_options_schema()) {
    const std::string key = e.key.substr(e.key.find('.') + 1);
    EXPECT_NE(doc.find("`" + key + "`"), std::string::npos) << "docs/eval.md does not list [eval] key " << key;
  }
}

}  // namespace
}  // namespace rlf
