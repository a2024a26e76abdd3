#include "env/episode.h"

#include "util/error.h"

namespace rlf {

const char* segment_role_name(SegmentRole role) {
  switch (role) {
    case SegmentRole::Prompt: return "prompt";
    case SegmentRole::Policy: return "policy";
    case SegmentRole::Observation: return "observation";
    case SegmentRole::Feedback: return "feedback";
  }
  return "?";
}

const char* episode_source_name(EpisodeSource source) {
  switch (source) {
    case EpisodeSource::Rollout: return "rollout";
    case EpisodeSource::Refinement: return "refinement";
    case EpisodeSource::Replay: return "replay";
  }
  return "?";
}

int64_t Episode::n_policy_tokens() const {
  int64_t n = 0;
  for (float w : loss_weight) n += w > 0;
  return n;
}

std::string Episode::transcript() const {
  std::string out;
  for (const Segment& s : segments)
    if (s.role != SegmentRole::Prompt) out += s.written();
  return out;
}

std::string Segment::written() const {
  // A stop string that ended a turn is part of what the policy wrote (its
  // tokens are in the episode); EOS and stop ids are not text.
  const bool stop_string = role == SegmentRole::Policy && !stop.empty() && stop != "eos" && stop.rfind("id:", 0) != 0;
  return stop_string ? text + stop : text;
}

Episode Episode::single_turn(int64_t group, const std::vector<int32_t>& prompt, const std::vector<int32_t>& completion,
                             const std::vector<float>& logprobs, int32_t version) {
  Episode e;
  e.group = group;
  e.tokens = prompt;
  e.tokens.insert(e.tokens.end(), completion.begin(), completion.end());
  e.n_prompt = static_cast<int64_t>(prompt.size());
  const size_t n = e.tokens.size();
  e.loss_weight.assign(n, 0.0f);
  e.old_logprob.assign(n, 0.0f);
  e.policy_version.assign(n, -1);
  for (size_t i = 0; i < completion.size(); ++i) {
    e.loss_weight[prompt.size() + i] = 1.0f;
    e.old_logprob[prompt.size() + i] = i < logprobs.size() ? logprobs[i] : 0.0f;
    e.policy_version[prompt.size() + i] = version;
  }
  Segment p;
  p.role = SegmentRole::Prompt;
  p.begin = 0;
  p.end = e.n_prompt;
  e.segments.push_back(p);
  if (!completion.empty()) {
    Segment s;
    s.role = SegmentRole::Policy;
    s.begin = e.n_prompt;
    s.end = static_cast<int64_t>(n);
    e.segments.push_back(s);
    e.n_turns = 1;
  }
  return e;
}

Episode Episode::with_prompt(const std::vector<int32_t>& prompt, const std::string& prompt_text) const {
  check(!prompt.empty(), "episode: a new prompt needs at least one token");
  check(n_prompt > 0 && !segments.empty() && segments[0].role == SegmentRole::Prompt && segments[0].end == n_prompt,
        "episode: only an episode whose first segment is its prompt (", n_prompt, " tokens) can take another prompt");
  const size_t n_old = tokens.size(), n_new = prompt.size(), old_prompt = static_cast<size_t>(n_prompt);
  Episode e = *this;
  e.tokens = prompt;
  e.tokens.insert(e.tokens.end(), tokens.begin() + n_prompt, tokens.end());
  e.n_prompt = static_cast<int64_t>(n_new);
  // A stream with k values per token: the first position's k values for each new prompt position, then the rest.
  auto move_stream = [&](auto& to, const auto& from) {
    if (from.empty()) return;
    const size_t k = from.size() / n_old;
    to.assign(from.begin(), from.begin() + k);
    for (size_t i = 1; i < n_new; ++i) to.insert(to.end(), from.begin(), from.begin() + k);
    to.insert(to.end(), from.begin() + old_prompt * k, from.end());
  };
#define RLF_MOVE_STREAM(type, name, ...) move_stream(e.name, name);
  RLF_TOKEN_STREAMS(RLF_MOVE_STREAM)
#undef RLF_MOVE_STREAM
  const int64_t shift = e.n_prompt - n_prompt;
  e.segments[0].end = e.n_prompt;
  e.segments[0].text = prompt_text;
  for (size_t s = 1; s < e.segments.size(); ++s) e.segments[s].begin += shift, e.segments[s].end += shift;
  return e;
}

void Episode::validate() const {
  const size_t n = tokens.size();
  // Every per-token stream (env/token_streams.h): n entries (k * n for k per token); empty unless always present.
  auto check_stream = [n](const char* name, size_t size, token_stream::Batch batch, token_stream::Width width) {
    if (size == 0 && batch != token_stream::Batch::Always) return;
    const bool ok = width == token_stream::Width::One ? size == n : n > 0 && size % n == 0 && size > 0;
    check(ok, "episode: ", name, " has ", size, " entries for ", n, " tokens",
          width == token_stream::Width::One ? " (one per token)" : " (k per token)");
  };
#define RLF_CHECK_STREAM(type, name, batch, width, ...) \
  check_stream(#name, name.size(), token_stream::Batch::batch, token_stream::Width::width);
  RLF_TOKEN_STREAMS(RLF_CHECK_STREAM)
#undef RLF_CHECK_STREAM
  check(n_prompt >= 0 && static_cast<size_t>(n_prompt) <= n, "episode: n_prompt ", n_prompt, " outside [0, ", n, "]");
  int64_t at = 0;
  for (const Segment& s : segments) {
    check(s.begin == at && s.end >= s.begin, "episode: segments must cover the tokens in order (segment [", s.begin,
          ", ", s.end, ") after position ", at, ")");
    if (s.role != SegmentRole::Policy)
      for (int64_t t = s.begin; t < s.end; ++t)
        check(loss_weight[static_cast<size_t>(t)] == 0.0f, "episode: token ", t, " of a ", segment_role_name(s.role),
              " segment has loss weight ", loss_weight[static_cast<size_t>(t)], "; only policy tokens are trained on");
    at = s.end;
  }
  check(segments.empty() || static_cast<size_t>(at) == n, "episode: segments cover ", at, " of ", n, " tokens");
}

}  // namespace rlf
