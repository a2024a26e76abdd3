// Critique-to-token credit (Text2Grad, Wang et al. 2025; CAPO, Xie et al.
// 2025): the tokens a critique marks (feedback/critique_spans.h) get their
// own share of the advantage on top of the group's:
//
//   A_t = A + coef * s_t     on policy tokens (loss weight > 0)
//
// where A is the token's advantage from credit assignment (the group
// baseline's, algorithms/credit.h) and s_t the score of the span its
// characters fall in (-1 wrong, +1 good, 0 unmarked). A wrong answer's
// flagged tokens are pushed down harder than the rest of it; a right answer
// keeps its advantage unless a span marks it. coef is in the advantage's
// units (group-normalised advantages are about unit size).
#pragma once

#include <span>

namespace rlf::algo {

// Adds coef * score[t] to advantage[t] where loss_weight[t] > 0; returns the
// number of tokens changed (score != 0 there).
long add_span_credit(std::span<float> advantage, std::span<const float> loss_weight, std::span<const float> score,
                     double coef);

}  // namespace rlf::algo
