// Decontamination: training prompts that overlap an evaluation set are
// dropped at load ([curation] decontaminate, ngram, overlap_threshold;
// docs/curation.md).
//
// Texts are compared as word n-grams: a text's words are its maximal runs of
// letters and digits, lower-cased (ASCII; other bytes separate words), and
// its n-grams are the distinct runs of n consecutive words. For a training
// prompt P (its raw prompt field, before any template) and the evaluation
// items E_1..E_m:
//
//   overlap(P) = |ngrams(P) ∩ (ngrams(E_1) ∪ ... ∪ ngrams(E_m))| / |ngrams(P)|
//
// and P is dropped when overlap(P) > overlap_threshold (threshold 0: any
// shared n-gram drops it, GPT-3's 13-gram rule). A prompt with fewer than n
// words has no n-grams and is never dropped (it is counted as too short).
// The report names, for each dropped prompt, the evaluation item sharing the
// most of its n-grams (the first such item on ties).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/examples.h"
#include "util/json_util.h"

namespace rlf {

struct DecontaminationOptions {
  // Evaluation sets to compare against: each a string "path" or
  // "preset:path" (preset: data.preset's names), or a table like [data]
  // (path, preset, prompt_field, ...). [] = off.
  Json sources = Json::array();
  int64_t ngram = 13;              // words per n-gram (GPT-3, Llama: 13)
  double overlap_threshold = 0.0;  // drop when overlap(P) > this, in [0, 1); 0 = any shared n-gram

  bool enabled() const { return !sources.empty(); }
  // Throws rlf::Error naming curation.ngram / curation.overlap_threshold / curation.decontaminate.
  void validate() const;
};

// The words of `text` (lower-cased ASCII letter/digit runs).
std::vector<std::string> ngram_words(const std::string& text);
// Hashes of the distinct n-grams of `text` (empty when it has fewer than n words).
std::vector<uint64_t> ngram_hashes(const std::string& text, int64_t n);

// One evaluation item's text and where it came from.
struct EvalText {
  std::string source;  // the decontaminate entry it came from ("gsm8k 'path'")
  std::string id;
  std::string text;    // its raw prompt field
};

// Every item of the evaluation sets in `options.sources` (read with the
// dataset loader, data/prompt_dataset.h; no split). Throws rlf::Error naming
// curation.decontaminate[i] on a bad entry or file.
std::vector<EvalText> load_eval_texts(const DecontaminationOptions& options);

// What overlap a text has with the indexed evaluation items.
struct OverlapMatch {
  int64_t n_ngrams = 0;       // distinct n-grams of the text
  int64_t n_shared = 0;       // of those, found in some evaluation item
  double overlap = 0.0;       // n_shared / n_ngrams (0 without n-grams)
  int64_t item = -1;          // the evaluation item sharing the most n-grams (-1: none)
  int64_t n_shared_item = 0;  // how many it shares
};

// The n-grams of the evaluation items, each with the items that hold it.
class NgramIndex {
 public:
  NgramIndex(const std::vector<EvalText>& items, int64_t n);
  OverlapMatch match(const std::string& text) const;
  int64_t n() const { return n_; }

 private:
  int64_t n_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> items_of_;  // n-gram hash -> items holding it (ascending)
};

// The training prompts kept, and the report of those dropped.
struct DecontaminationResult {
  std::vector<PromptExample> kept;
  std::vector<size_t> kept_index;  // their positions in the input
  int64_t n_checked = 0;
  int64_t n_too_short = 0;  // fewer than ngram words: never dropped
  Json report;              // {"ngram", "overlap_threshold", "sources", "n_checked", "n_dropped", "dropped": [...]}
  int64_t n_dropped() const { return n_checked - static_cast<int64_t>(kept.size()); }
  std::string summary() const;  // one log line
};

// Drops the prompts of `train` whose overlap exceeds the threshold (order kept).
// `what` names them in the summary ("training prompts", "SFT pairs").
DecontaminationResult decontaminate(const std::vector<PromptExample>& train, const std::vector<EvalText>& eval,
                                    const DecontaminationOptions& options, const std::string& what = "training prompts");

}  // namespace rlf
