// Word n-gram decontamination of training prompts (see decontamination.h).
#include "data/decontamination.h"

#include <algorithm>

#include "data/prompt_dataset.h"
#include "util/error.h"
#include "util/hash.h"

namespace rlf {

namespace {

bool word_char(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// The dataset options of one curation.decontaminate entry.
PromptDatasetOptions source_options(const Json& entry, const std::string& key) {
  if (entry.is_string()) {
    const std::string s = entry.get<std::string>();
    check(!s.empty(), key, " is empty: give a JSONL file, \"preset:path\" or a table like [data]");
    PromptDatasetOptions o;
    o.path = s;
    if (const size_t colon = s.find(':'); colon != std::string::npos) {
      const std::string prefix = s.substr(0, colon);
      const auto& presets = dataset_presets();
      if (std::any_of(presets.begin(), presets.end(), [&](const DatasetPreset& p) { return p.name == prefix; })) {
        o.preset = prefix;
        o.path = s.substr(colon + 1);
      }
    }
    return o;
  }
  check(entry.is_object(), key, " must be a string (\"path\" or \"preset:path\") or a table like [data] (got ",
        entry.dump(), ")");
  return prompt_dataset_options_from_json(entry, key);
}

}  // namespace

void DecontaminationOptions::validate() const {
  check(sources.is_array(), "curation.decontaminate must be an array of evaluation sets (\"path\", \"preset:path\" "
        "or tables like [data]; [] = off)");
  check(ngram >= 1, "curation.ngram must be >= 1 (got ", ngram, "; 13 is GPT-3's and Llama's choice)");
  check(overlap_threshold >= 0 && overlap_threshold < 1, "curation.overlap_threshold must be in [0, 1) (got ",
        overlap_threshold, "; 0 drops a prompt sharing any n-gram with an evaluation item)");
}

std::vector<std::string> ngram_words(const std::string& text) {
  std::vector<std::string> words;
  std::string w;
  for (unsigned char c : text) {
    if (word_char(c)) {
      w.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
    } else if (!w.empty()) {
      words.push_back(std::move(w));
      w.clear();
    }
  }
  if (!w.empty()) words.push_back(std::move(w));
  return words;
}

std::vector<uint64_t> ngram_hashes(const std::string& text, int64_t n) {
  check(n >= 1, "ngram_hashes: n must be >= 1 (got ", n, ")");
  const std::vector<std::string> words = ngram_words(text);
  std::vector<uint64_t> out;
  const size_t N = static_cast<size_t>(n);
  for (size_t i = 0; i + N <= words.size(); ++i) {
    std::string gram;
    for (size_t k = i; k < i + N; ++k) gram += words[k] + ' ';
    out.push_back(fnv1a64(gram));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<EvalText> load_eval_texts(const DecontaminationOptions& options) {
  std::vector<EvalText> out;
  for (size_t i = 0; i < options.sources.size(); ++i) {
    const std::string key = str("curation.decontaminate[", i, "]");
    const PromptDatasetOptions o = source_options(options.sources[i], key);
    PromptDataset ds = with_context(key, [&] { return PromptDataset::load(o); });
    const std::string source = o.path.empty() ? o.preset : o.path;  // how the report names the set
    for (const auto* split : {&ds.train(), &ds.eval()})
      for (const PromptExample& e : *split) out.push_back({.source = source, .id = e.id, .text = e.raw_prompt});
  }
  return out;
}

NgramIndex::NgramIndex(const std::vector<EvalText>& items, int64_t n) : n_(n) {
  for (size_t i = 0; i < items.size(); ++i)
    for (uint64_t h : ngram_hashes(items[i].text, n)) items_of_[h].push_back(static_cast<uint32_t>(i));
}

OverlapMatch NgramIndex::match(const std::string& text) const {
  OverlapMatch m;
  const std::vector<uint64_t> grams = ngram_hashes(text, n_);
  m.n_ngrams = static_cast<int64_t>(grams.size());
  std::unordered_map<uint32_t, int64_t> shared;  // item -> n-grams it shares
  for (uint64_t h : grams) {
    auto it = items_of_.find(h);
    if (it == items_of_.end()) continue;
    ++m.n_shared;
    for (uint32_t item : it->second) ++shared[item];
  }
  for (const auto& [item, count] : shared)
    if (count > m.n_shared_item || (count == m.n_shared_item && static_cast<int64_t>(item) < m.item))
      m.item = static_cast<int64_t>(item), m.n_shared_item = count;
  m.overlap = m.n_ngrams > 0 ? static_cast<double>(m.n_shared) / static_cast<double>(m.n_ngrams) : 0.0;
  return m;
}

std::string DecontaminationResult::summary() const {
  return str("decontamination: ", n_dropped(), " of ", n_checked, " ", report.value("what", std::string()), " dropped (",
             report.value("ngram", int64_t{0}), "-gram overlap > ", report.value("overlap_threshold", 0.0), " with ",
             report.value("n_eval_items", int64_t{0}), " evaluation items); ", n_too_short,
             " too short to compare");
}

DecontaminationResult decontaminate(const std::vector<PromptExample>& train, const std::vector<EvalText>& eval,
                                    const DecontaminationOptions& options, const std::string& what) {
  options.validate();
  const NgramIndex index(eval, options.ngram);
  DecontaminationResult r;
  Json dropped = Json::array();
  Json per_source = Json::object();
  for (const EvalText& e : eval) per_source[e.source] = per_source.value(e.source, int64_t{0}) + 1;
  for (size_t k = 0; k < train.size(); ++k) {
    const PromptExample& p = train[k];
    ++r.n_checked;
    const OverlapMatch m = index.match(p.raw_prompt);
    if (m.n_ngrams == 0) ++r.n_too_short;
    if (m.n_ngrams == 0 || m.overlap <= options.overlap_threshold) {
      r.kept.push_back(p);
      r.kept_index.push_back(k);
      continue;
    }
    const EvalText& e = eval[static_cast<size_t>(m.item)];
    dropped.push_back({{"id", p.id},
                       {"where", p.where},
                       {"prompt", p.raw_prompt},
                       {"overlap", m.overlap},
                       {"n_ngrams", m.n_ngrams},
                       {"n_shared", m.n_shared},
                       {"eval_source", e.source},
                       {"eval_id", e.id},
                       {"eval_text", e.text},
                       {"n_shared_with_eval_item", m.n_shared_item}});
  }
  r.report = {{"format", "rlf.decontamination"},
              {"version", 1},
              {"what", what},
              {"ngram", options.ngram},
              {"overlap_threshold", options.overlap_threshold},
              {"sources", options.sources},
              {"eval_items_per_source", per_source},
              {"n_eval_items", static_cast<int64_t>(eval.size())},
              {"n_checked", r.n_checked},
              {"n_too_short", r.n_too_short},
              {"n_dropped", r.n_dropped()},
              {"dropped", dropped}};
  return r;
}

}  // namespace rlf
