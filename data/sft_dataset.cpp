// SFT (prompt, response) pairs from files or synthetic tasks (see sft_dataset.h).
#include "data/sft_dataset.h"

#include <set>

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
    SyntheticSftOptions so;
    so.wrong_fraction = o.wrong_fraction;
    so.seed = o.seed;
    so.style = parse_wrong_style(o.wrong_style);
    so.worked = o.worked;
    so.columns = o.columns;
    so.tool_fraction = o.tool_fraction;
    so.feedback_fraction = o.feedback_fraction;
    so.feedback_text = o.feedback_text;
    so.critique = o.critique;
    so.feedback_prefix = o.feedback_prefix;
    so.draws = o.draws;
    so.calculator = o.calculator;
    ds.examples_ = synthetic_sft_examples(problems.train(), so);
    source = "sft " + preset.name;
  } else {
    check(!o.path.empty(), "sft dataset: path is required (a JSONL or JSONL.gz file of prompt/response records)");
    check(o.wrong_fraction == 0.0, "sft dataset: wrong_fraction applies to the synthetic presets only");
    check(o.wrong_style == "offset", "sft dataset: wrong_style applies to the synthetic presets only");
    check(o.worked, "sft dataset: worked applies to the synthetic presets only");
    check(!o.columns, "sft dataset: columns applies to the synthetic presets only");
    check(o.tool_fraction == 0.0, "sft dataset: tool_fraction applies to the synthetic presets only");
    check(o.feedback_fraction == 0.0, "sft dataset: feedback_fraction applies to the synthetic presets only");
    check(o.draws == 1, "sft dataset: draws applies to the synthetic presets only");
    check(o.feedback_prefix.empty(), "sft dataset: feedback_prefix applies to the synthetic presets only");
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
                    "prompt_template", "shuffle", "seed", "max_records", "on_bad_record", "wrong_fraction", "wrong_style", "worked",
                    "tool_fraction", "tool_call_open", "tool_call_close", "tool_result_open", "tool_result_close",
                    "feedback_fraction", "feedback_text", "feedback_prefix", "draws", "columns", "arithmetic",
                    "countdown"},
                   src);
  SftDatasetOptions o;
  read_shared_dataset_keys(t, src, o);
  o.prompt_field = json_get_or(t, "prompt_field", o.prompt_field, src);
  o.response_field = json_get_or(t, "response_field", o.response_field, src);
  o.wrong_fraction = json_get_or(t, "wrong_fraction", o.wrong_fraction, src);
  check(o.wrong_fraction >= 0.0 && o.wrong_fraction <= 1.0, src, ": wrong_fraction must be in [0, 1] (got ",
        o.wrong_fraction, ")");
  o.wrong_style = json_get_or(t, "wrong_style", o.wrong_style, src);
  check(o.wrong_style == "offset" || o.wrong_style == "drop_carry", src,
        ": wrong_style must be \"offset\" or \"drop_carry\" (got \"", o.wrong_style, "\")");
  o.worked = json_get_or(t, "worked", o.worked, src);
  o.columns = json_get_or(t, "columns", o.columns, src);
  o.tool_fraction = json_get_or(t, "tool_fraction", o.tool_fraction, src);
  check(o.tool_fraction >= 0.0 && o.tool_fraction <= 1.0, src, ": tool_fraction must be in [0, 1] (got ",
        o.tool_fraction, ")");
  o.calculator.call_open = json_get_or(t, "tool_call_open", o.calculator.call_open, src);
  o.calculator.call_close = json_get_or(t, "tool_call_close", o.calculator.call_close, src);
  o.calculator.result_open = json_get_or(t, "tool_result_open", o.calculator.result_open, src);
  o.calculator.result_close = json_get_or(t, "tool_result_close", o.calculator.result_close, src);
  o.feedback_fraction = json_get_or(t, "feedback_fraction", o.feedback_fraction, src);
  check(o.feedback_fraction >= 0.0 && o.feedback_fraction <= 1.0, src, ": feedback_fraction must be in [0, 1] (got ",
        o.feedback_fraction, ")");
  o.feedback_text = json_get_or(t, "feedback_text", o.feedback_text, src);
  o.feedback_prefix = json_get_or(t, "feedback_prefix", o.feedback_prefix, src);
  check(o.feedback_prefix.empty() || o.feedback_prefix.find("{critique}") != std::string::npos, src,
        ": feedback_prefix must contain {critique}, the critic's words on each target (got \"", o.feedback_prefix,
        "\")");
  check(!o.columns || (o.worked && (o.wrong_style == "drop_carry" || o.wrong_fraction == 0) && o.tool_fraction == 0),
        src, ": columns needs worked = true, wrong_style = \"drop_carry\" (with wrong_fraction > 0), and no ",
        "tool_fraction");
  o.draws = json_get_or(t, "draws", o.draws, src);
  check(o.draws >= 1 && o.draws <= 1000, src, ": draws must be in [1, 1000] (got ", o.draws, ")");
  return o;
}

std::vector<SftExample> without_held_out_prompts(const std::vector<SftExample>& examples,
                                                 const std::vector<PromptExample>& held_out) {
  std::set<std::string> prompts, raw;
  for (const PromptExample& e : held_out) {
    prompts.insert(e.prompt);
    if (!e.raw_prompt.empty()) raw.insert(e.raw_prompt);
  }
  std::vector<SftExample> out;
  // The raw text too: a prompt rendered otherwise (another template, a feedback prefix) is the same problem.
  for (const SftExample& e : examples)
    if (!prompts.count(e.prompt) && !raw.count(e.raw_prompt)) out.push_back(e);
  return out;
}

}  // namespace rlf
