#include "env/episode_json.h"

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "env/token_streams.h"
#include "util/error.h"

namespace rlf {

namespace {

SegmentRole role_of(const std::string& name, const std::string& where) {
  for (SegmentRole r : {SegmentRole::Prompt, SegmentRole::Policy, SegmentRole::Observation, SegmentRole::Feedback})
    if (name == segment_role_name(r)) return r;
  fail(where, ": unknown segment role '", name, "'");
}

// A per-token stream as JSON: NaN (no value, e.g. no target) as null.
template <class T>
Json stream_to_json(const std::vector<T>& v) {
  Json out = Json::array();
  for (T x : v) out.push_back(std::isnan(static_cast<double>(x)) ? Json(nullptr) : Json(x));
  return out;
}

template <class T>
std::vector<T> stream_from_json(const Json& j, const char* name, const std::string& where) {
  check(j.is_array(), where, ": the episode's '", name, "' is not an array");
  std::vector<T> out;
  out.reserve(j.size());
  for (const Json& x : j) {
    if constexpr (std::is_floating_point_v<T>) {
      if (x.is_null()) {
        out.push_back(std::numeric_limits<T>::quiet_NaN());
        continue;
      }
    }
    check(x.is_number(), where, ": the episode's '", name, "' holds a non-number");
    out.push_back(x.get<T>());
  }
  return out;
}

// Every per-token stream of the episode (env/token_streams.h) that it has,
// under its name; on load, the streams every episode has (Batch::Always) are
// required and the others read when present. Buffers saved before the walk
// (loss_weight, old_logprob, policy_version) load as they did.
void streams_to_json(const Episode& e, Json& j) {
#define RLF_SAVE_STREAM(type, name, batch, ...)                                            \
  if (token_stream::Batch::batch == token_stream::Batch::Always || !e.name.empty()) \
    j[#name] = stream_to_json(e.name);
  RLF_TOKEN_STREAMS(RLF_SAVE_STREAM)
#undef RLF_SAVE_STREAM
}

void streams_from_json(const Json& j, Episode& e, const std::string& where) {
#define RLF_LOAD_STREAM(type, name, batch, ...)                                           \
  if (token_stream::Batch::batch == token_stream::Batch::Always || j.contains(#name)) \
    e.name = stream_from_json<type>(json_require<Json>(j, #name, where), #name, where);
  RLF_TOKEN_STREAMS(RLF_LOAD_STREAM)
#undef RLF_LOAD_STREAM
}

EpisodeSource source_of(const std::string& name, const std::string& where) {
  for (EpisodeSource s : {EpisodeSource::Rollout, EpisodeSource::Refinement, EpisodeSource::Replay})
    if (name == episode_source_name(s)) return s;
  fail(where, ": unknown episode source '", name, "'");
}

// The scalars, each when present (files written before them lack them).
void read_scalars(const Json& j, Episode& e, const std::string& where) {
  if (j.contains("group")) e.group = json_require<int64_t>(j, "group", where);
  if (j.contains("reward") && !j["reward"].is_null()) e.reward = json_require<double>(j, "reward", where);
  if (j.contains("correct") && !j["correct"].is_null()) e.correct = json_require<bool>(j, "correct", where);
  if (j.contains("group_accuracy")) e.group_accuracy = json_require<double>(j, "group_accuracy", where);
  if (j.contains("ratings")) e.ratings = stream_from_json<float>(j["ratings"], "ratings", where);
  if (j.contains("on_policy")) e.on_policy = json_require<bool>(j, "on_policy", where);
  if (j.contains("source")) e.source = source_of(json_require<std::string>(j, "source", where), where);
}

}  // namespace

Json episode_to_json(const Episode& e) {
  Json segs = Json::array();
  for (const Segment& s : e.segments)
    segs.push_back({{"role", segment_role_name(s.role)}, {"begin", s.begin}, {"end", s.end}, {"turn", s.turn},
                    {"text", s.text}, {"finish_reason", s.finish_reason}, {"stop", s.stop},
                    {"truncated", s.truncated}});
  Json turn_rewards = Json::array();
  for (const auto& r : e.turn_rewards) turn_rewards.push_back(r ? Json(*r) : Json(nullptr));
  Json j = {{"tokens", e.tokens},
            {"n_prompt", e.n_prompt},
            {"segments", segs},
            {"n_turns", e.n_turns},
            {"turn_rewards", turn_rewards},
            {"turn_feedback", e.turn_feedback},
            {"finish_reason", e.finish_reason},
            {"end_reason", e.end_reason},
            {"completion_text", e.completion_text},
            {"group", e.group},
            {"reward", e.reward ? Json(*e.reward) : Json(nullptr)},
            {"correct", e.correct ? Json(*e.correct) : Json(nullptr)},
            {"group_accuracy", e.group_accuracy},
            {"ratings", stream_to_json(e.ratings)},
            {"on_policy", e.on_policy},
            {"source", episode_source_name(e.source)}};
  streams_to_json(e, j);
  return j;
}

Episode episode_from_json(const Json& j, const std::string& where) {
  Episode e;
  e.tokens = json_require<std::vector<int32_t>>(j, "tokens", where);
  e.n_prompt = json_require<int64_t>(j, "n_prompt", where);
  for (const Json& s : json_require<Json>(j, "segments", where)) {
    Segment g;
    g.role = role_of(json_require<std::string>(s, "role", where), where);
    g.begin = json_require<int64_t>(s, "begin", where);
    g.end = json_require<int64_t>(s, "end", where);
    g.turn = json_require<int64_t>(s, "turn", where);
    g.text = json_require<std::string>(s, "text", where);
    g.finish_reason = json_require<std::string>(s, "finish_reason", where);
    g.stop = json_require<std::string>(s, "stop", where);
    g.truncated = json_require<bool>(s, "truncated", where);
    e.segments.push_back(std::move(g));
  }
  streams_from_json(j, e, where);
  e.n_turns = json_require<int64_t>(j, "n_turns", where);
  for (const Json& r : json_require<Json>(j, "turn_rewards", where))
    e.turn_rewards.push_back(r.is_null() ? std::nullopt : std::optional<double>(r.get<double>()));
  e.turn_feedback = json_require<std::vector<std::string>>(j, "turn_feedback", where);
  e.finish_reason = json_require<std::string>(j, "finish_reason", where);
  e.end_reason = json_require<std::string>(j, "end_reason", where);
  e.completion_text = json_require<std::string>(j, "completion_text", where);
  read_scalars(j, e, where);
  with_context(where, [&] { e.validate(); });
  return e;
}

}  // namespace rlf
