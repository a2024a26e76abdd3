// Prompt datasets: loading, presets, shuffle and split (see prompt_dataset.h).
#include "data/prompt_dataset.h"

#include <algorithm>
#include <cmath>

#include "data/config_keys.h"
#include "data/jsonl_reader.h"
#include "data/seeded_rng.h"
#include "util/fs.h"

namespace rlf {

namespace {

const std::vector<std::string> kPromptFields = {"prompt", "question", "problem"};
const std::vector<std::string> kReferenceFields = {"answer", "solution", "reference"};

// The field mapping after the preset and explicit options are combined.
struct FieldMap {
  std::string prompt;     // "" = try kPromptFields
  std::string reference;  // "" = try kReferenceFields (optional)
  std::string id;         // "" = none
};

void validate(const PromptDatasetOptions& o, const DatasetPreset& preset) {
  if (preset.synthetic)
    check(o.path.empty(), "dataset: preset '", preset.name, "' generates its own problems; remove path (got '", o.path, "')");
  else
    check(!o.path.empty(), "dataset: path is required for preset '", preset.name, "' (a JSONL or JSONL.gz file)");
  check(o.eval_fraction >= 0.0 && o.eval_fraction < 1.0, "dataset: eval_fraction must be in [0, 1) (got ",
        o.eval_fraction, ")");
  check(o.eval_size >= 0, "dataset: eval_size must be >= 0 (got ", o.eval_size, ")");
  check(o.eval_fraction == 0.0 || o.eval_size == 0, "dataset: set eval_fraction or eval_size, not both");
  check(o.max_records >= 0, "dataset: max_records must be >= 0 (0 = all; got ", o.max_records, ")");
}

PromptExample read_example(const JsonlRecord& r, const FieldMap& fields, const std::string& file_name) {
  PromptExample e;
  e.where = r.where;
  std::string prompt_field = fields.prompt.empty() ? first_present_field(r.value, kPromptFields) : fields.prompt;
  check(!prompt_field.empty(), r.where, ": no prompt field (tried 'prompt', 'question', 'problem'); set prompt_field");
  e.raw_prompt = require_record_text(r.value, prompt_field, r.where);
  if (!fields.reference.empty()) {
    e.reference = require_record_text(r.value, fields.reference, r.where);
  } else if (std::string f = first_present_field(r.value, kReferenceFields); !f.empty()) {
    e.reference = *record_text(r.value, f, r.where);
  }
  e.id = fields.id.empty() ? str(file_name, ":", r.line) : require_record_text(r.value, fields.id, r.where);
  e.record = r.value;
  return e;
}

std::vector<PromptExample> synthetic_examples(const PromptDatasetOptions& o, const DatasetPreset& preset) {
  if (preset.name == "arithmetic") return generate_arithmetic(o.arithmetic, o.seed);
  if (preset.name == "guess") return generate_guess(o.guess, o.seed);
  return generate_countdown(o.countdown, o.seed);
}

}  // namespace

const std::vector<DatasetPreset>& dataset_presets() {
  static const std::vector<DatasetPreset> presets = {
      {"generic", "", "", "", "{prompt}", false},
      {"gsm8k", "question", "answer", "",
       "{prompt}\nSolve it step by step, then write the final answer on its own line as \"#### <number>\".", false},
      {"math500", "problem", "answer", "unique_id",
       "{prompt}\nPlease reason step by step, and put your final answer within \\boxed{}.", false},
      {"arithmetic", "", "", "", "{prompt} End your answer with #### followed by the number.", true},
      {"countdown", "", "", "", "{prompt} End your answer with #### followed by the expression.", true},
      {"guess", "", "", "", "{prompt}", true},
  };
  return presets;
}

const DatasetPreset& find_dataset_preset(const std::string& name) {
  for (const DatasetPreset& p : dataset_presets())
    if (p.name == name) return p;
  fail("dataset: unknown preset '", name, "' (expected generic, gsm8k, math500, arithmetic, countdown or guess)");
}

PromptDataset PromptDataset::load(const PromptDatasetOptions& o, const TokenizerChat* tokenizer) {
  const DatasetPreset& preset = find_dataset_preset(o.preset);
  validate(o, preset);
  FieldMap fields{o.prompt_field.empty() ? preset.prompt_field : o.prompt_field,
                  o.reference_field.empty() ? preset.reference_field : o.reference_field,
                  o.id_field.empty() ? preset.id_field : o.id_field};
  PromptFormatter formatter({o.prompt_template.empty() ? preset.prompt_template : o.prompt_template, o.system_prompt,
                             o.chat_template},
                            tokenizer);
  BadRecords bad(parse_on_bad_record(o.on_bad_record));

  std::vector<PromptExample> examples;
  if (preset.synthetic) {
    examples = synthetic_examples(o, preset);
    for (PromptExample& e : examples) e.prompt = formatter.render(formatter.user_message(e.raw_prompt, e.record, e.where));
  } else {
    std::vector<JsonlRecord> records = read_jsonl(o.path, bad);
    std::string file_name = fs::path(o.path).filename().string();
    for_each_record(records, bad, [&](const JsonlRecord& r) {
      PromptExample e = read_example(r, fields, file_name);
      e.prompt = formatter.render(formatter.user_message(e.raw_prompt, e.record, e.where));
      examples.push_back(std::move(e));
    });
  }
  std::string source = preset.synthetic ? preset.name : str(preset.name, " '", o.path, "'");
  check(!examples.empty(), source, ": no usable records (", bad.count(), " skipped",
        bad.examples().empty() ? std::string() : "; first: " + bad.examples()[0], ")");

  if (o.shuffle) SeededRng(derive_seed(o.seed, "shuffle")).shuffle(examples);
  if (o.max_records > 0 && static_cast<size_t>(o.max_records) < examples.size())
    examples.resize(static_cast<size_t>(o.max_records));

  size_t n = examples.size();
  size_t n_eval = o.eval_size > 0 ? static_cast<size_t>(o.eval_size)
                                  : static_cast<size_t>(std::llround(o.eval_fraction * static_cast<double>(n)));
  check(n_eval < n, source, ": the eval split (", n_eval, " records) leaves no training records out of ", n,
        "; lower eval_size or eval_fraction");
  std::vector<size_t> order = shuffled_indices(n, derive_seed(o.seed, "split"));
  std::vector<bool> is_eval(n, false);
  for (size_t i = 0; i < n_eval; ++i) is_eval[order[i]] = true;

  PromptDataset ds;
  for (size_t i = 0; i < n; ++i) (is_eval[i] ? ds.eval_ : ds.train_).push_back(std::move(examples[i]));
  ds.n_skipped_ = bad.count();
  ds.skipped_examples_ = bad.examples();
  ds.summary_ = str(source, ": ", n, " records (", ds.train_.size(), " train, ", ds.eval_.size(), " eval), ",
                    ds.n_skipped_, " skipped");
  return ds;
}

PromptDatasetOptions prompt_dataset_options_from_json(const Json& t, const std::string& src) {
  check_known_keys(t,
                   {"path", "preset", "prompt_field", "reference_field", "id_field", "system_prompt", "chat_template",
                    "prompt_template", "shuffle", "seed", "eval_fraction", "eval_size", "max_records", "on_bad_record",
                    "arithmetic", "countdown", "guess"},
                   src);
  PromptDatasetOptions o;
  read_shared_dataset_keys(t, src, o);
  o.prompt_field = json_get_or(t, "prompt_field", o.prompt_field, src);
  o.reference_field = json_get_or(t, "reference_field", o.reference_field, src);
  o.id_field = json_get_or(t, "id_field", o.id_field, src);
  o.eval_fraction = json_get_or(t, "eval_fraction", o.eval_fraction, src);
  o.eval_size = json_get_or(t, "eval_size", o.eval_size, src);
  return o;
}

}  // namespace rlf
