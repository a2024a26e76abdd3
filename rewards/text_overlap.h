// Reference-based text rewards: how much of a reference answer a completion
// reproduces, by three standard overlap metrics, each computed exactly as
// the Python packages the field uses (checked against them on a shipped set
// of pairs, tests/rewards/test_text_overlap.cpp):
//
//   bleu     sentence BLEU as sacrebleu.sentence_bleu (2.x): the 13a
//            tokenizer, n-grams 1..4, brevity penalty, "exp" smoothing
//            (NIST: the k-th zero-match order gets precision 1/(2^k total)),
//            effective order (orders the hypothesis is too short for are
//            left out) (Papineni et al. 2002; Chen & Cherry 2014)
//   chrf     chrF as sacrebleu's CHRF() (2.x defaults): character n-grams
//            1..6 with whitespace removed, the averaged precision and recall
//            of the orders both sides have, F-beta with beta = 2 (Popovic 2015)
//   rouge_l  ROUGE-L as rouge_score's RougeScorer(["rougeL"]) without a
//            stemmer: lowercase ASCII alphanumeric tokens, longest common
//            subsequence; precision LCS/|hyp|, recall LCS/|ref|, F1 (Lin 2004)
//
// Scores are in [0, 1] (sacrebleu's 0..100 divided by 100).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rewards/reward.h"
#include "rewards/reward_options.h"

namespace rlf {

// sacrebleu's 13a tokenization of one segment (after its rstrip), tokens joined by single spaces.
std::string tokenize_13a(std::string_view text);

// Sentence BLEU of `hypothesis` against one reference, in [0, 1].
double sentence_bleu(std::string_view hypothesis, std::string_view reference);

// Sentence chrF (char order 6, beta 2, whitespace ignored), in [0, 1].
double sentence_chrf(std::string_view hypothesis, std::string_view reference);

struct RougeScore {
  double precision = 0, recall = 0, f = 0;
};
// ROUGE-L of `hypothesis` against `reference` (empty token lists score 0).
RougeScore rouge_l(std::string_view hypothesis, std::string_view reference);

struct TextOverlapOptions {
  std::string metric = "bleu";   // bleu | chrf | rouge_l (set by the reward type)
  std::string field;             // record field with the reference text ("" = the dataset's reference answer)
  std::string rouge_measure = "f";  // rouge_l: f | precision | recall
};

void validate(const TextOverlapOptions& options);
TextOverlapOptions read_text_overlap_options(OptionReader& reader, const std::string& metric);

// The `bleu`, `chrf` and `rouge_l` reward types: the metric of each completion
// against the record's reference. Explanation: "bleu 0.412 against the reference".
class TextOverlapReward : public Reward {
 public:
  explicit TextOverlapReward(TextOverlapOptions options);
  std::string name() const override { return options_.metric; }
  std::vector<RewardResult> score(const RewardGroup& group) override;
  void check_record(const Json& record, const std::string& reference, const std::string& where) const override;

 private:
  std::string reference_of(const Json& record, const std::string& reference, const std::string& where) const;
  TextOverlapOptions options_;
};

}  // namespace rlf
