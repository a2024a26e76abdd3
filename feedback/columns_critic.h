// A critic that knows column addition (critic.type = "columns"): for the
// built-in addition task worked column by column, units first ("7+8=15,
// 3+4+1=8. #### 85", data/synthetic_tasks.h column_sum), it names the first
// column the response gets wrong and the rule broken, and marks that
// column's text as the wrong span (feedback/critique_spans.h):
//
//   dropped carry  "The tens column drops the carry: the units column gave
//                   15, so it is 3+4+1=8, not 3+4=7."
//   wrong column   "The tens column is wrong: it is 3+4+1=8, not 3+5+1=9."
//   missing column "The hundreds column is missing: it is 1+0+1=2." (the
//                   final answer marked)
//   extra column   "There is no thousands column: 37 + 48 has 2." (marked)
//   wrong answer   "The columns are right but the answer does not read them:
//                   it is 85." (the answer marked)
//   no answer      "End with the answer after ####: it is 85." (no span)
//   correct        "Correct." (verdict correct, no span)
// It says more than the scalar reward (where the mistake is and what it
// is) without giving away more than one column's sum. Tasks other than
// addition records ({"a", "b", "op": "+"}) get Critique::ok false.
#pragma once

#include "feedback/critic.h"

namespace rlf {

class ColumnsCritic final : public Critic {
 public:
  std::string name() const override { return "columns"; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& requests) override;
};

// The critique of `response` to a + b (a, b >= 0), as above.
Critique critique_columns(int64_t a, int64_t b, const std::string& response);

}  // namespace rlf
