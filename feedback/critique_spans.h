// Critiques that point at the text they judge (critique-to-token credit:
// Text2Grad, Wang et al. 2025; CAPO, Xie et al. 2025): a critique may mark
// spans of the response — character offsets — as wrong (score -1) or good
// (+1), and each span reaches exactly the tokens that wrote its characters.
//
// Who marks spans:
//   - a critic that knows the task (feedback/columns_critic.h) sets
//     Critique::spans itself;
//   - a model or endpoint critic quotes the text, one line per span, in the
//     schema the critic prompt asks for (docs/feedback.md):
//         Error: "3+4=7"
//         Good: "7+8=15"
//     (the keyword in any case, the quote a JSON string: \" and \\ escape);
//     spans_from_critique finds each quote in the response (the first
//     occurrence not yet taken by an earlier span), and counts quotes it
//     cannot find.
// Token offsets come from the streaming decoder (tokenizer/tokenizer.h), so
// the decoded text is exactly what the critic saw, and a character that
// takes several tokens (bytes of one UTF-8 character) belongs to the token
// that completed it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace rlf {

struct CritiqueSpan {
  int64_t begin = 0;   // [begin, end): byte offsets into the critiqued response
  int64_t end = 0;
  double score = -1;   // -1 wrong, +1 good (any value: its sign and size scale the credit)
};

// The spans a critique's text quotes (the schema above) located in
// `response`; `unmatched` (may be null) counts the quotes not found there.
std::vector<CritiqueSpan> spans_from_critique(const std::string& critique, const std::string& response,
                                              int64_t* unmatched = nullptr);

// A token sequence decoded for the critic: `text` (the streaming decode,
// special tokens skipped) and where each token's characters start:
// token k wrote text[begin[k], begin[k + 1]) (begin has one entry more than
// the tokens; a token whose bytes complete no character writes nothing).
struct DecodedTokens {
  std::string text;
  std::vector<int64_t> begin;
};
DecodedTokens decode_with_offsets(const Tokenizer& tok, std::span<const int32_t> ids);

// Per token of `decoded`, the score of the span its characters overlap (of
// the largest |score| where several do; 0 where none does).
std::vector<float> token_scores(const DecodedTokens& decoded, const std::vector<CritiqueSpan>& spans);

}  // namespace rlf
