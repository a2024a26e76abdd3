// SFT (prompt, response) pairs from files or synthetic tasks (see sft_dataset.h).
#include "data/sft_dataset.h"

#include "data/config_keys.h"
#include "data/jsonl_reader.h"
#include "data/prompt_dataset.h"
#include "data/seeded_rng.h"
#include "util/fs.h"

namespace rlf {


SftDataset SftDataset::load(const SftDatasetOptions& o, const TokenizerChat* tokenizer) {
  const DatasetPreset& preset = find_dataset_preset(o.preset);
  check(preset.name == "generic" || preset.synthetic, "sft dataset: preset '", preset.name,
        "' has no responses; use preset \"generic\" with a file of (prompt, response) records, or \"arithmetic\" / ",
        "\"countdown\"");
  check(o.max_records >= 0, "sft dataset: max_records must be >= 0 (0 = all; got ", o.max_records, ")");
  SftDataset ds;
  std::string source;
  if (preset.synthetic) {
    check(o.path.empty(), "sft dataset: preset '", preset.name, "' generates its own problems; remove path");
    PromptDatasetOptions p;
    p.preset = o.preset;
    p.system_prompt = o.system_prompt;
    p.chat_template = o.chat_template;
    p.prompt_template = o.prompt_template;
    p.seed = o.seed;
    p.arithmetic = o.arithmetic;
    p.countdown = o.countdown;
    PromptDataset problems = PromptDataset::load(p, tokenizer);
    ds.examples_ = synthetic_sft_examples(problems.train(), o.wrong_fraction, o.seed);
    source = "sft " + preset.name;
  } else {
    check(!o.path.empty(), "sft dataset: path is required (a JSONL or JSONL.gz file of prompt/response records)");
    check(o.wrong_fraction == 0.0, "sft dataset: wrong_fraction applies to the synthetic presets only");
    PromptFormatter formatter({o.prompt_template.empty() ? preset.prompt_template : o.prompt_template, o.system_prompt,
                               o.chat_template},
                              tokenizer);
    BadRecords bad(parse_on_bad_record(o.on_bad_record));
    std::vector<JsonlRecord> records = read_jsonl(o.path, bad);
    std::string file_name = fs::path(o.path).filename().string();
    for_each_record(records, bad, [&](const JsonlRecord& r) {
      SftExample e;
      e.where = r.where;
      e.id = str(file_name, ":", r.line);
      e.raw_prompt = require_record_text(r.value, o.prompt_field, r.where);
      e.response = require_record_text(r.value, o.response_field, r.where);
      e.prompt = formatter.render(formatter.user_message(e.raw_prompt, r.value, r.where));
      ds.examples_.push_back(std::move(e));
    });
    source = str("sft '", o.path, "'");
    check(!ds.examples_.empty(), source, ": no usable records (", bad.count(), " skipped",
          bad.examples().empty() ? std::string() : "; first: " + bad.examples()[0], ")");
    ds.n_skipped_ = bad.count();
    ds.skipped_examples_ = bad.examples();
  }
  if (o.shuffle) SeededRng(derive_seed(o.seed, "shuffle")).shuffle(ds.examples_);
  if (o.max_records > 0 && static_cast<size_t>(o.max_records) < ds.examples_.size())
    ds.examples_.resize(static_cast<size_t>(o.max_records));
  size_t n_correct = 0;
  for (const SftExample& e : ds.examples_) n_correct += e.correct;
  ds.summary_ = str(source, ": ", ds.examples_.size(), " pairs (", ds.examples_.size() - n_correct, " wrong), ",
                    ds.n_skipped_, " skipped");
  return ds;
}

SftDatasetOptions sft_dataset_options_from_json(const Json& t, const std::string& src) {
  check_known_keys(t,
                   {"path", "preset", "prompt_field", "response_field", "system_prompt", "chat_template",
                    "prompt_template", "shuffle", "seed", "max_records", "on_bad_record", "wrong_fraction", "arithmetic",
                    "countdown"},
                   src);
  SftDatasetOptions o;
  o.path = json_get_or(t, "path", o.path, src);
  o.preset = json_get_or(t, "preset", o.preset, src);
  o.prompt_field = json_get_or(t, "prompt_field", o.prompt_field, src);
  o.response_field = json_get_or(t, "response_field", o.response_field, src);
  o.system_prompt = json_get_or(t, "system_prompt", o.system_prompt, src);
  o.chat_template = json_get_or(t, "chat_template", o.chat_template, src);
  o.prompt_template = json_get_or(t, "prompt_template", o.prompt_template, src);
  o.shuffle = json_get_or(t, "shuffle", o.shuffle, src);
  check(!t.contains("seed") || !t["seed"].is_number_integer() || t["seed"].is_number_unsigned() ||
            t["seed"].get<int64_t>() >= 0,
        src, ": seed must be a non-negative integer");
  o.seed = json_get_or(t, "seed", o.seed, src);
  o.max_records = json_get_or(t, "max_records", o.max_records, src);
  o.on_bad_record = json_get_or(t, "on_bad_record", o.on_bad_record, src);
  o.wrong_fraction = json_get_or(t, "wrong_fraction", o.wrong_fraction, src);
  if (t.contains("arithmetic")) o.arithmetic = arithmetic_options_from_json(t["arithmetic"], src + " arithmetic");
  if (t.contains("countdown")) o.countdown = countdown_options_from_json(t["countdown"], src + " countdown");
  return o;
}

}  // namespace rlf
