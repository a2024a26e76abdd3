#include "algorithms/span_credit.h"

#include "util/error.h"

namespace rlf::algo {

long add_span_credit(std::span<float> advantage, std::span<const float> loss_weight, std::span<const float> score,
                     double coef) {
  check(advantage.size() == loss_weight.size() && score.size() == advantage.size(), "add_span_credit: ",
        advantage.size(), " advantages, ", loss_weight.size(), " loss weights and ", score.size(), " scores");
  long changed = 0;
  for (size_t t = 0; t < advantage.size(); ++t) {
    if (loss_weight[t] <= 0 || score[t] == 0) continue;
    advantage[t] = static_cast<float>(advantage[t] + coef * score[t]);
    ++changed;
  }
  return changed;
}

}  // namespace rlf::algo
