// Preference triples from files or the synthetic arithmetic task (see preference_dataset.h).
#include "data/preference_dataset.h"

#include <cmath>
#include <tuple>

#include "data/config_keys.h"
#include "data/held_out.h"
#include "data/jsonl_reader.h"
#include "data/prompt_dataset.h"
#include "data/seeded_rng.h"
#include "util/fs.h"

namespace rlf {

namespace {

const std::string kAssistant = "\n\nAssistant:";

std::vector<PreferenceExample> synthetic_pairs(const PreferenceDatasetOptions& o, const TokenizerChat* tokenizer) {
  PromptDatasetOptions p;
  p.preset = "arithmetic";
  p.chat_template = o.chat_template;
  p.system_prompt = o.system_prompt;
  p.prompt_template = o.prompt_template;
  p.seed = o.seed;
  p.arithmetic = o.arithmetic;
  PromptDataset problems = PromptDataset::load(p, tokenizer);
  SyntheticSftOptions right, wrong;
  right.worked = wrong.worked = o.worked;
  right.seed = wrong.seed = o.seed;
  wrong.wrong_fraction = 1.0;
  wrong.style = parse_wrong_style(o.wrong_style);
  const auto good = synthetic_sft_examples(problems.train(), right);
  const auto bad = synthetic_sft_examples(problems.train(), wrong);
  std::vector<PreferenceExample> out;
  for (size_t i = 0; i < good.size(); ++i) {
    if (bad[i].correct || bad[i].response == good[i].response) continue;  // drop_carry: no wrong answer for it
    out.push_back({good[i].id, good[i].prompt, good[i].response, bad[i].response, good[i].where});
  }
  return out;
}

// Preset arithmetic with `rated`: the style each prompt asks for decides which attribute wins a pair.
std::vector<PreferenceExample> rated_pairs(const PreferenceDatasetOptions& o, const TokenizerChat* tokenizer) {
  const std::string base =
      o.prompt_template.empty() ? find_dataset_preset("arithmetic").prompt_template : o.prompt_template;
  std::vector<PromptExample> asks[2];  // 0: " Show your work.", 1: " Answer only." (same problems, same order)
  for (int s = 0; s < 2; ++s) {
    PromptDatasetOptions p;
    p.preset = "arithmetic";
    p.chat_template = o.chat_template;
    p.system_prompt = o.system_prompt;
    p.prompt_template = base + (s == 0 ? " Show your work." : " Answer only.");
    p.seed = o.seed;
    p.arithmetic = o.arithmetic;
    asks[s] = PromptDataset::load(p, tokenizer).train();
  }
  // responses[worked ? 0 : 1][wrong ? 1 : 0]
  std::vector<SftExample> responses[2][2];
  for (int w = 0; w < 2; ++w)
    for (int bad = 0; bad < 2; ++bad) {
      SyntheticSftOptions so;
      so.worked = w == 0;
      so.seed = o.seed;
      so.wrong_fraction = bad;
      so.style = parse_wrong_style(o.wrong_style);
      responses[w][bad] = synthetic_sft_examples(asks[0], so);
    }
  SeededRng rng(derive_seed(o.seed, "rated pairs"));
  std::vector<PreferenceExample> out;
  for (size_t i = 0; i < asks[0].size(); ++i) {
    const int ask = static_cast<int>(rng.below(2));        // the style the prompt asks for
    const bool other_style = rng.below(2) == 0;           // rejected: right in the other style, or wrong in this one
    const int rej_style = other_style ? 1 - ask : ask;
    const SftExample& good = responses[ask][0][i];
    const SftExample& bad = responses[rej_style][other_style ? 0 : 1][i];
    if (!other_style && (bad.correct || bad.response == good.response)) continue;  // drop_carry: no wrong answer
    PreferenceExample e{good.id, asks[ask][i].prompt, good.response, bad.response, good.where, {}, {}};
    e.chosen_ratings = {{"correct", 1.0}, {"worked", ask == 0 ? 1.0 : 0.0}, {"short", ask == 0 ? 0.0 : 1.0}};
    e.rejected_ratings = {{"correct", other_style ? 1.0 : 0.0},
                          {"worked", rej_style == 0 ? 1.0 : 0.0},
                          {"short", rej_style == 0 ? 0.0 : 1.0}};
    out.push_back(std::move(e));
  }
  return out;
}

// A record's optional ratings object: attribute -> finite number.
std::map<std::string, double> read_ratings(const Json& record, const std::string& field, const std::string& where) {
  std::map<std::string, double> out;
  if (!record.contains(field) || record[field].is_null()) return out;
  check(record[field].is_object(), where, ": '", field, "' must be an object of attribute -> number");
  for (const auto& [name, v] : record[field].items()) {
    check(v.is_number() && std::isfinite(v.get<double>()), where, ": '", field, ".", name,
          "' must be a finite number");
    out[name] = v.get<double>();
  }
  return out;
}

}  // namespace

PreferenceExample split_shared_dialogue(const std::string& chosen, const std::string& rejected, const std::string& where) {
  size_t common = 0;
  while (common < chosen.size() && common < rejected.size() && chosen[common] == rejected[common]) ++common;
  // The last assistant turn both dialogues open inside their shared prefix.
  const size_t at = chosen.rfind(kAssistant, common >= kAssistant.size() ? common - kAssistant.size() : 0);
  check(at != std::string::npos && at + kAssistant.size() <= common, where,
        ": chosen and rejected share no \"\\n\\nAssistant:\" turn, so no prompt can be split off (preset hh-rlhf)");
  const size_t cut = at + kAssistant.size();
  PreferenceExample e;
  e.prompt = chosen.substr(0, cut);
  e.chosen = chosen.substr(cut);
  e.rejected = rejected.substr(cut);
  e.where = where;
  return e;
}

PreferenceDataset PreferenceDataset::load(const PreferenceDatasetOptions& o, const TokenizerChat* tokenizer) {
  check(o.preset == "generic" || o.preset == "hh-rlhf" || o.preset == "arithmetic", "preference data: unknown preset '",
        o.preset, "' (expected generic, hh-rlhf or arithmetic)");
  check(o.max_records >= 0, "preference data: max_records must be >= 0 (0 = all; got ", o.max_records, ")");
  check(o.eval_size >= 0, "preference data: eval_size must be >= 0 (got ", o.eval_size, ")");
  check(o.wrong_style == "offset" || o.wrong_style == "drop_carry",
        "preference data: wrong_style must be \"offset\" or \"drop_carry\" (got \"", o.wrong_style, "\")");
  PreferenceDataset ds;
  std::vector<PreferenceExample> all;
  std::string source;
  if (o.preset == "arithmetic") {
    check(o.path.empty(), "preference data: preset 'arithmetic' generates its own pairs; remove path");
    all = o.rated ? rated_pairs(o, tokenizer) : synthetic_pairs(o, tokenizer);
    source = "preferences arithmetic";
  } else {
    check(!o.path.empty(), "preference data: path is required (a JSONL or JSONL.gz file of ",
          o.preset == "hh-rlhf" ? "HH-RLHF chosen/rejected records)" : "prompt/chosen/rejected records)");
    check(o.wrong_style == "offset" && o.worked && !o.rated,
          "preference data: wrong_style, worked and rated apply to preset arithmetic only");
    PromptFormatter formatter({o.prompt_template.empty() ? "{prompt}" : o.prompt_template, o.system_prompt,
                               o.chat_template},
                              tokenizer);
    BadRecords bad(parse_on_bad_record(o.on_bad_record));
    std::vector<JsonlRecord> records = read_jsonl(o.path, bad);
    const std::string file_name = fs::path(o.path).filename().string();
    for_each_record(records, bad, [&](const JsonlRecord& r) {
      PreferenceExample e;
      const std::string chosen = require_record_text(r.value, o.chosen_field, r.where);
      const std::string rejected = require_record_text(r.value, o.rejected_field, r.where);
      if (o.preset == "hh-rlhf") {
        e = split_shared_dialogue(chosen, rejected, r.where);
      } else {
        e.prompt = formatter.render(
            formatter.user_message(require_record_text(r.value, o.prompt_field, r.where), r.value, r.where));
        e.chosen = chosen;
        e.rejected = rejected;
      }
      e.chosen_ratings = read_ratings(r.value, "chosen_ratings", r.where);
      e.rejected_ratings = read_ratings(r.value, "rejected_ratings", r.where);
      check(e.chosen != e.rejected, r.where, ": chosen and rejected are the same text (nothing to prefer)");
      check(!e.chosen.empty() && !e.rejected.empty(), r.where, ": an empty response after the shared prompt");
      e.id = str(file_name, ":", r.line);
      e.where = r.where;
      all.push_back(std::move(e));
    });
    source = str("preferences '", o.path, "'");
    ds.n_skipped_ = bad.count();
    check(!all.empty(), source, ": no usable records (", bad.count(), " skipped",
          bad.examples().empty() ? std::string() : "; first: " + bad.examples()[0], ")");
  }
  std::tie(ds.train_, ds.eval_) = split_held_out(std::move(all), o.shuffle, o.seed, o.max_records, o.eval_size, source,
                                                 "pairs", "preference.data.eval_size");
  ds.summary_ = str(source, ": ", ds.train_.size(), " training pairs, ", ds.eval_.size(), " held out, ", ds.n_skipped_,
                    " skipped");
  return ds;
}

PreferenceDatasetOptions preference_dataset_options_from_json(const Json& t, const std::string& src) {
  check_known_keys(t,
                   {"path", "preset", "prompt_field", "chosen_field", "rejected_field", "system_prompt", "chat_template",
                    "prompt_template", "shuffle", "seed", "max_records", "eval_size", "on_bad_record", "wrong_style",
                    "worked", "rated", "arithmetic"},
                   src);
  PreferenceDatasetOptions o;
  read_shared_dataset_keys(t, src, o);
  o.prompt_field = json_get_or(t, "prompt_field", o.prompt_field, src);
  o.chosen_field = json_get_or(t, "chosen_field", o.chosen_field, src);
  o.rejected_field = json_get_or(t, "rejected_field", o.rejected_field, src);
  o.eval_size = json_get_or(t, "eval_size", o.eval_size, src);
  check(o.eval_size >= 0, src, ": eval_size must be >= 0 (got ", o.eval_size, ")");
  o.wrong_style = json_get_or(t, "wrong_style", o.wrong_style, src);
  check(o.wrong_style == "offset" || o.wrong_style == "drop_carry", src,
        ": wrong_style must be \"offset\" or \"drop_carry\" (got \"", o.wrong_style, "\")");
  o.worked = json_get_or(t, "worked", o.worked, src);
  o.rated = json_get_or(t, "rated", o.rated, src);
  check(!o.rated || o.worked, src, ": rated = true shows both styles; remove worked = false");
  check(o.preset == "generic" || o.preset == "hh-rlhf" || o.preset == "arithmetic", src, ": preset must be \"generic\", ",
        "\"hh-rlhf\" or \"arithmetic\" (got \"", o.preset, "\")");
  return o;
}

}  // namespace rlf
