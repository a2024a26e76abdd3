#include "train/sft_steps.h"

#include "util/error.h"

namespace rlf {

Episode sft_episode(const Policy& policy, const SftExample& ex, bool add_special) {
  check(!policy.eos_token_ids.empty(), "SFT needs an EOS token id (none found for the model)");
  auto prompt = policy.tokenizer->encode(ex.prompt, add_special);
  if (ex.turns.empty()) {
    auto response = policy.tokenizer->encode(ex.response, false);
    response.push_back(policy.eos_token_ids.front());
    Episode e = Episode::single_turn(0, prompt, response, std::vector<float>(response.size(), 0.0f));
    e.segments.back().text = ex.response;
    e.completion_text = ex.response;
    return e;
  }
  Episode e = Episode::single_turn(0, prompt, {}, {});
  int64_t turn = 0;
  for (size_t k = 0; k < ex.turns.size(); ++k) {
    const SftTurn& part = ex.turns[k];
    auto ids = policy.tokenizer->encode(part.text, false);
    if (part.policy && k + 1 == ex.turns.size()) ids.push_back(policy.eos_token_ids.front());
    Segment s;
    s.role = part.policy ? SegmentRole::Policy : SegmentRole::Observation;
    s.begin = static_cast<int64_t>(e.tokens.size());
    s.turn = part.policy ? turn++ : turn - 1;
    s.text = part.text;
    e.tokens.insert(e.tokens.end(), ids.begin(), ids.end());
    s.end = static_cast<int64_t>(e.tokens.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      e.loss_weight.push_back(part.policy ? 1.0f : 0.0f);
      e.old_logprob.push_back(0.0f);
      e.policy_version.push_back(part.policy ? 0 : -1);
    }
    if (part.policy) e.completion_text = part.text;
    e.segments.push_back(std::move(s));
  }
  e.n_turns = turn;
  return e;
}

}  // namespace rlf
