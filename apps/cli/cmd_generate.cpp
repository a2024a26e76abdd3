// rlf generate: sample completions from a model, like llama2.c's run.c for
// one prompt, or for every prompt of a JSONL file with n samples each. With
// --best-of N: N samples per prompt, scored by the --reward components (a
// type name or an inline [[reward]] table as JSON; the weighted total picks),
// and only each prompt's best is printed — best-of-n inference, and a cheap
// probe of how far a reward can be over-optimised.
#include <iostream>

#include <charconv>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "rewards/registry.h"
#include "rollout/engine.h"
#include "rollout/policy.h"
#include "setup/run_setup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf::cli {

namespace {

struct PromptItem {
  std::string text;
  SamplingParams params;
  int64_t n = 1;
  std::string reference;  // "answer"/"reference" of a JSONL record (rewards that compare with one)
  Json record = Json::object();
};

std::vector<PromptItem> read_prompts(const std::string& path, const PromptItem& defaults) {
  std::vector<PromptItem> items;
  auto lines = split_lines(read_file_maybe_gz(path));
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = "'" + path + "' line " + std::to_string(i + 1);
    Json j = parse_json(lines[i], where);
    PromptItem item = defaults;
    if (j.is_string()) {
      item.text = j.get<std::string>();
    } else {
      check(j.is_object(), where, ": expected a JSON object with a \"prompt\" field");
      if (j.contains("prompt")) item.text = json_require<std::string>(j, "prompt", where);
      else if (j.contains("question")) item.text = json_require<std::string>(j, "question", where);
      else fail(where, ": missing field \"prompt\"");
      item.n = json_get_or<int64_t>(j, "n", item.n, where);
      item.record = j;
      for (const char* key : {"reference", "answer"})
        if (j.contains(key) && j.at(key).is_string() && item.reference.empty()) item.reference = j.at(key).get<std::string>();
      item.params.max_new_tokens = json_get_or<int64_t>(j, "max_new_tokens", item.params.max_new_tokens, where);
      item.params.temperature = json_get_or<double>(j, "temperature", item.params.temperature, where);
      if (j.contains("seed")) item.params.seed = json_require<uint64_t>(j, "seed", where);
    }
    items.push_back(std::move(item));
  }
  check(!items.empty(), "'", path, "' holds no prompts");
  return items;
}

int run_generate(const Args& args) {
  const std::string dtype = command_dtype(args, DtypeUse::Decoding);
  configure_threads(args, dtype, args.str("device"));
  Policy policy = load_run_policy(policy_spec_of(args, dtype));

  PromptItem defaults;
  SamplingParams& sp = defaults.params;
  sp.temperature = args.number("temperature");
  sp.top_k = args.integer("top-k");
  sp.top_p = args.number("top-p");
  sp.min_p = args.number("min-p");
  sp.max_new_tokens = args.integer("max-new-tokens");
  sp.stop_strings = args.list("stop");
  for (const auto& s : args.list("stop-id")) {
    int64_t id = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
    check(ec == std::errc() && p == s.data() + s.size() && id >= 0 && id < policy.model()->config().vocab_size,
          "--stop-id '", s, "' must be a token id: an integer in [0, ", policy.model()->config().vocab_size, ")");
    sp.stop_token_ids.push_back(static_cast<int32_t>(id));
  }
  if (args.given("seed")) sp.seed = static_cast<uint64_t>(args.integer("seed"));
  sp.ignore_eos = args.flag("ignore-eos");
  defaults.n = args.integer("n");
  const int64_t best_of = args.given("best-of") ? args.integer("best-of") : 0;
  check(best_of == 0 || !args.list("reward").empty(), "rlf generate: --best-of N needs a --reward to pick with (a type, "
        "e.g. --reward self_certainty, or a [[reward]] table as JSON)");
  check(best_of > 0 || args.list("reward").empty(), "rlf generate: --reward scores the samples of --best-of N; give both");
  // Rewards before the samples: a bad table fails before anything is generated.
  RewardSet rewards;
  if (best_of > 0) {
    Json tables = Json::array();
    for (const std::string& r : args.list("reward"))
      tables.push_back(!r.empty() && r[0] == '{' ? parse_json(r, "--reward") : Json{{"type", r}});
    rewards = make_reward_set(tables, "--reward",
                              run_reward_factories(read_process_env, std::make_shared<CausalLM>(policy.model())));
    defaults.n = best_of;
  }

  std::vector<PromptItem> items;
  check(args.given("prompt") != args.given("prompts"), "rlf generate: give exactly one of --prompt TEXT or --prompts FILE.jsonl");
  if (args.given("prompt")) {
    defaults.text = args.str("prompt");
    items.push_back(defaults);
  } else {
    items = read_prompts(args.str("prompts"), defaults);
  }
  if (best_of > 0)
    for (auto& it : items) it.n = best_of;

  std::vector<GenerationRequest> requests;
  for (const auto& it : items) {
    GenerationRequest r;
    r.prompt_ids = policy.tokenizer->encode(it.text, /*add_special=*/!args.flag("no-bos"));
    if (r.prompt_ids.empty()) {
      check(policy.tokenizer->bos_id().has_value(), "the prompt encodes to no tokens and the tokenizer has no BOS token");
      r.prompt_ids.push_back(*policy.tokenizer->bos_id());
    }
    r.n = it.n;
    r.params = it.params;
    requests.push_back(std::move(r));
  }

  EngineOptions eo;
  eo.max_batch_rows = args.integer("max-batch");
  eo.eos_token_ids = policy.eos_token_ids;
  eo.seed = static_cast<uint64_t>(args.integer("seed"));
  RolloutEngine engine(policy.model(), policy.tokenizer, eo);
  auto results = engine.generate(requests);

  if (best_of > 0) {
    // Each prompt's samples as one reward group; the best weighted total is printed.
    std::vector<std::vector<size_t>> of(items.size());
    for (size_t k = 0; k < results.size(); ++k) of[results[k].request_index].push_back(k);
    for (size_t q = 0; q < items.size(); ++q) {
      RewardGroup g;
      g.prompt = items[q].text;
      g.reference = items[q].reference;
      g.record = items[q].record;
      g.max_new_tokens = items[q].params.max_new_tokens;
      for (size_t k : of[q]) {
        RewardSample x;
        x.completion = results[k].text;
        x.completion_ids = results[k].completion_ids;
        x.prompt_ids = results[k].prompt_ids;
        x.finish_reason = finish_reason_name(results[k].finish_reason);
        g.samples.push_back(std::move(x));
      }
      const GroupScores scores = rewards.score(g);
      const auto totals = scores.totals(RewardAggregation::sum_then_normalize);
      size_t best = 0;
      bool any = false;
      for (size_t i = 0; i < totals.size(); ++i)
        if (totals[i] && (!any || *totals[i] > *totals[best])) best = i, any = true;
      const auto& s = results[of[q][best]];
      if (args.flag("json")) {
        Json j;
        j["request"] = q;
        j["prompt"] = items[q].text;
        j["best_of"] = best_of;
        j["sample"] = s.sample_index;
        j["text"] = s.text;
        j["score"] = any ? Json(*totals[best]) : Json(nullptr);
        Json all = Json::array();
        for (const auto& t : totals) all.push_back(t ? Json(*t) : Json(nullptr));
        j["scores"] = all;
        j["explanation"] = scores.describe(best);
        j["finish_reason"] = finish_reason_name(s.finish_reason);
        std::cout << json_line(j) << "\n";
      } else {
        std::cout << "=== prompt " << q << ": best of " << best_of << " (sample " << s.sample_index << ", "
                  << scores.describe(best) << ")\n" << items[q].text << s.text << "\n";
      }
    }
    return 0;
  }

  for (const auto& s : results) {
    const std::string& prompt = items[s.request_index].text;
    if (args.flag("json")) {
      Json j;
      j["request"] = s.request_index;
      j["sample"] = s.sample_index;
      j["prompt"] = prompt;
      j["text"] = s.text;
      j["prompt_ids"] = s.prompt_ids;
      j["completion_ids"] = s.completion_ids;
      j["logprobs"] = s.logprobs;
      j["finish_reason"] = finish_reason_name(s.finish_reason);
      j["stop"] = s.stop;
      std::cout << json_line(j) << "\n";
    } else {
      if (results.size() > 1) std::cout << "=== prompt " << s.request_index << " sample " << s.sample_index << " ("
                                        << finish_reason_name(s.finish_reason) << ")\n";
      std::cout << prompt << s.text << "\n";
    }
  }
  return 0;
}

}  // namespace

CommandSpec make_generate_command() {
  CommandSpec c;
  c.name = "generate";
  c.summary = "sample completions from a model (a Hugging Face directory or a llama2.c .bin)";
  c.options = {
      {"model", OptKind::String, "", "model: a Hugging Face directory or a llama2.c checkpoint (.bin)", "PATH"},
      {"tokenizer", OptKind::String, "", "tokenizer.json, a directory with one, or a llama2.c tok*.bin (default: the model's)", "PATH"},
      {"adapter", OptKind::String, "", "a LoRA adapter directory in the PEFT layout (a LoRA run's checkpoints/step-N/adapter, "
       "or peft's save_pretrained) applied to --model", "DIR"},
      {"prompt", OptKind::String, "", "prompt text", "TEXT"},
      {"prompts", OptKind::String, "", "JSONL file of prompts ({\"prompt\": ..., optional n, max_new_tokens, temperature, seed})", "FILE"},
      {"n", OptKind::Int, "1", "samples per prompt", "N", 1, 65536},
      {"best-of", OptKind::Int, "1", "sample N per prompt and print only the one the --reward total ranks best", "N", 1, 65536},
      {"reward", OptKind::List, "", "with --best-of: a reward type (self_certainty, math, ...) or a [[reward]] table as "
       "JSON, e.g. '{\"type\": \"reward_model\", \"model\": \"DIR\"}'", "TYPE|JSON"},
      {"temperature", OptKind::Float, "1.0", "sampling temperature; 0 = greedy", "T", 0, 100},
      {"top-k", OptKind::Int, "0", "keep the k most likely tokens; 0 = off", "K", 0, 1e9},
      {"top-p", OptKind::Float, "1.0", "nucleus sampling mass; 1 = off", "P", 1e-9, 1},
      {"min-p", OptKind::Float, "0.0", "drop tokens below min-p times the top probability; 0 = off", "P", 0, 0.999999},
      {"max-new-tokens", OptKind::Int, "256", "completion length limit in tokens", "N", 1, 1e7},
      {"stop", OptKind::List, "", "stop string (excluded from the output)", "TEXT"},
      {"stop-id", OptKind::List, "", "extra token id that ends a completion", "ID"},
      {"seed", OptKind::Int, "0", "random seed (same seed and options: same output)", "N", 0, 9.2e18},
      {"ignore-eos", OptKind::Flag, "false", "keep generating past EOS", ""},
      {"no-bos", OptKind::Flag, "false", "do not add the tokenizer's BOS/special tokens to the prompt", ""},
      {"max-batch", OptKind::Int, "64", "sequences decoded together", "N", 1, 65536},
      {"pack-weights", OptKind::String, "on", "on|off: fp32 CPU decoding multiplies by a packed copy of the weights (off: no copy, less memory)", "ON|OFF"},
      {"dtype", OptKind::String, "auto", "compute dtype: auto (bf16 on a GPU, fp32 on a CPU: the fast ones for decoding), fp32 or bf16", "DTYPE"},
      {"json", OptKind::Flag, "false", "print one JSON object per completion (ids, log-probs, finish reason)", ""},
  };
  c.run = [](const Args& a) {
    check(a.given("model"), "rlf generate: --model PATH is required");
    return run_generate(a);
  };
  return c;
}

}  // namespace rlf::cli
