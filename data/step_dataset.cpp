// Step-labelled solutions from files or generated chained sums (see step_dataset.h).
#include "data/step_dataset.h"

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

int64_t power10(int digits) {
  int64_t p = 1;
  for (int i = 0; i < digits; ++i) p *= 10;
  return p;
}

// Chained sums, one addition per step; wrong_fraction of them with one addition off by 1..10.
std::vector<StepExample> chained_sums(const StepDatasetOptions& o, const PromptFormatter& formatter) {
  SeededRng rng(derive_seed(o.seed, "step chains"));
  std::vector<StepExample> out;
  const ArithmeticOptions& a = o.arithmetic;
  for (int64_t i = 0; i < a.n_problems; ++i) {
    std::vector<int64_t> terms;
    std::string question = "What is ";
    for (int64_t k = 0; k < o.n_terms; ++k) {
      const int digits = static_cast<int>(rng.uniform_int(a.min_digits, a.max_digits));
      terms.push_back(rng.uniform_int(digits == 1 ? 0 : power10(digits - 1), power10(digits) - 1));
      question += (k ? " + " : "") + std::to_string(terms.back());
    }
    question += "?";
    // The wrong addition (1 .. n_terms - 1), or 0 for a right solution.
    const bool wrong = rng.uniform01() < o.wrong_fraction;
    const int64_t wrong_at = wrong ? rng.uniform_int(1, o.n_terms - 1) : 0;
    const int64_t offset = (rng.below(2) ? 1 : -1) * rng.uniform_int(1, 10);
    StepExample e;
    int64_t running = terms[0], truth = terms[0];
    bool broken = false;
    for (int64_t k = 1; k < o.n_terms; ++k) {
      int64_t next = running + terms[static_cast<size_t>(k)];
      truth += terms[static_cast<size_t>(k)];
      if (k == wrong_at) {
        next += offset;
        if (next < 0) next = running + terms[static_cast<size_t>(k)] - offset;  // stay a natural number
        broken = true;
      }
      e.steps.push_back(str(running, " + ", terms[static_cast<size_t>(k)], " = ", next));
      e.labels.push_back(broken ? 0.0 : 1.0);
      running = next;
    }
    e.steps.push_back(str("#### ", running));
    e.labels.push_back(broken ? 0.0 : 1.0);
    Json record = {{"question", question}, {"answer", std::to_string(truth)}};
    e.id = str("chain:", i);
    e.where = str("chain #", i);
    e.prompt = formatter.render(formatter.user_message(question, record, e.where));
    e.reference = std::to_string(truth);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::string StepExample::response(const std::string& delimiter) const {
  std::string s;
  for (size_t k = 0; k < steps.size(); ++k) s += (k ? delimiter : "") + steps[k];
  return s;
}

StepDataset StepDataset::load(const StepDatasetOptions& o, const TokenizerChat* tokenizer) {
  check(o.preset == "generic" || o.preset == "arithmetic", "process data: unknown preset '", o.preset,
        "' (expected generic or arithmetic)");
  check(!o.delimiter.empty(), "process data: delimiter must not be empty (it separates the steps)");
  check(o.max_records >= 0, "process data: max_records must be >= 0 (0 = all; got ", o.max_records, ")");
  check(o.eval_size >= 0, "process data: eval_size must be >= 0 (got ", o.eval_size, ")");
  check(o.n_terms >= 2 && o.n_terms <= 8, "process data: n_terms must be in [2, 8] (got ", o.n_terms, ")");
  check(o.wrong_fraction >= 0 && o.wrong_fraction <= 1, "process data: wrong_fraction must be in [0, 1] (got ",
        o.wrong_fraction, ")");
  StepDataset ds;
  std::vector<StepExample> all;
  std::string source;
  if (o.preset == "arithmetic") {
    check(o.path.empty(), "process data: preset 'arithmetic' generates its own solutions; remove path");
    PromptFormatter formatter({o.prompt_template.empty() ? find_dataset_preset("arithmetic").prompt_template
                                                         : o.prompt_template,
                               o.system_prompt, o.chat_template},
                              tokenizer);
    all = chained_sums(o, formatter);
    source = "process arithmetic";
  } else {
    check(!o.path.empty(), "process data: path is required (a JSONL or JSONL.gz file of prompt/steps/labels records)");
    PromptFormatter formatter({o.prompt_template.empty() ? "{prompt}" : o.prompt_template, o.system_prompt,
                               o.chat_template},
                              tokenizer);
    BadRecords bad(parse_on_bad_record(o.on_bad_record));
    std::vector<JsonlRecord> records = read_jsonl(o.path, bad);
    const std::string file_name = fs::path(o.path).filename().string();
    for_each_record(records, bad, [&](const JsonlRecord& r) {
      StepExample e;
      e.prompt = formatter.render(
          formatter.user_message(require_record_text(r.value, o.prompt_field, r.where), r.value, r.where));
      const Json* steps = r.value.contains(o.steps_field) ? &r.value[o.steps_field] : nullptr;
      const Json* labels = r.value.contains(o.labels_field) ? &r.value[o.labels_field] : nullptr;
      check(steps && steps->is_array() && !steps->empty(), r.where, ": '", o.steps_field,
            "' must be a non-empty array of strings");
      const bool no_labels = o.labels_optional && (!labels || labels->is_null());
      check(no_labels || (labels && labels->is_array() && labels->size() == steps->size()), r.where, ": '",
            o.labels_field, "' must be an array of one number per step (", steps->size(), ")");
      for (size_t k = 0; k < steps->size(); ++k) {
        const Json& s = (*steps)[k];
        check(s.is_string() && !s.get<std::string>().empty(), r.where, ": '", o.steps_field, "' #", k,
              " must be a non-empty string");
        check(s.get<std::string>().find(o.delimiter) == std::string::npos, r.where, ": '", o.steps_field, "' #", k,
              " contains the delimiter ", Json(o.delimiter).dump(), " (it would read as two steps)");
        e.steps.push_back(s.get<std::string>());
        if (no_labels) continue;
        const Json& l = (*labels)[k];
        const double v = l.is_boolean() ? (l.get<bool>() ? 1.0 : 0.0) : l.is_number() ? l.get<double>() : NAN;
        check(std::isfinite(v) && v >= 0 && v <= 1, r.where, ": '", o.labels_field, "' #", k,
              " must be a number in [0, 1] or a boolean");
        e.labels.push_back(v);
      }
      if (auto ref = record_text(r.value, o.reference_field, r.where)) e.reference = *ref;
      e.id = str(file_name, ":", r.line);
      e.where = r.where;
      all.push_back(std::move(e));
    });
    source = str("process data '", o.path, "'");
    ds.n_skipped_ = bad.count();
    check(!all.empty(), source, ": no usable records (", bad.count(), " skipped",
          bad.examples().empty() ? std::string() : "; first: " + bad.examples()[0], ")");
  }
  std::tie(ds.train_, ds.eval_) = split_held_out(std::move(all), o.shuffle, o.seed, o.max_records, o.eval_size, source,
                                                 "solutions", "process.data.eval_size");
  size_t n_steps = 0;
  for (const auto* split : {&ds.train_, &ds.eval_})
    for (const StepExample& e : *split) n_steps += e.steps.size();
  ds.summary_ = str(source, ": ", ds.train_.size(), " training solutions, ", ds.eval_.size(), " held out, ", n_steps,
                    " steps, ", ds.n_skipped_, " skipped");
  return ds;
}

StepDatasetOptions step_dataset_options_from_json(const Json& t, const std::string& src) {
  check_known_keys(t,
                   {"path", "preset", "prompt_field", "steps_field", "labels_field", "reference_field", "delimiter",
                    "system_prompt",
                    "chat_template", "prompt_template", "shuffle", "seed", "max_records", "eval_size", "on_bad_record",
                    "n_terms", "wrong_fraction", "arithmetic"},
                   src);
  StepDatasetOptions o;
  read_shared_dataset_keys(t, src, o);
  o.prompt_field = json_get_or(t, "prompt_field", o.prompt_field, src);
  o.steps_field = json_get_or(t, "steps_field", o.steps_field, src);
  o.labels_field = json_get_or(t, "labels_field", o.labels_field, src);
  o.reference_field = json_get_or(t, "reference_field", o.reference_field, src);
  o.delimiter = json_get_or(t, "delimiter", o.delimiter, src);
  check(!o.delimiter.empty(), src, ": delimiter must not be empty (it separates the steps)");
  o.eval_size = json_get_or(t, "eval_size", o.eval_size, src);
  check(o.eval_size >= 0, src, ": eval_size must be >= 0 (got ", o.eval_size, ")");
  o.n_terms = json_get_or(t, "n_terms", o.n_terms, src);
  check(o.n_terms >= 2 && o.n_terms <= 8, src, ": n_terms must be in [2, 8] (got ", o.n_terms, ")");
  o.wrong_fraction = json_get_or(t, "wrong_fraction", o.wrong_fraction, src);
  check(o.wrong_fraction >= 0 && o.wrong_fraction <= 1, src, ": wrong_fraction must be in [0, 1] (got ",
        o.wrong_fraction, ")");
  check(o.preset == "generic" || o.preset == "arithmetic", src, ": preset must be \"generic\" or \"arithmetic\" (got \"",
        o.preset, "\")");
  return o;
}

}  // namespace rlf
