#include "env/episode_producer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "util/clock.h"
#include "util/error.h"
#include "util/seed.h"

namespace rlf {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxNotes = 8;

// One episode in flight.
struct Slot {
  std::unique_ptr<EnvironmentSession> session;
  std::string prompt;                                // first observation
  std::string error;                                 // the session failed ("" = no)
  std::string end_reason;                            // set when the episode ends
  std::vector<std::optional<double>> turn_rewards;   // one per stepped turn
  std::vector<std::string> turn_feedback;            // one per stepped turn
  std::vector<float> turn_weights;                   // one per stepped turn
  int64_t n_judged = 0;                              // answers judged (EnvStep::correct)
  int64_t solved_at_turn = -1;                       // the turn of the first right answer (-1: none)
  struct Appended {
    SegmentRole role = SegmentRole::Observation;
    std::string text;
    bool truncated = false;
  };
  std::vector<Appended> appended;                    // one per appended stretch, in order
};

class Conversations final : public TurnHandler {
 public:
  Conversations(const Tokenizer& tok, const EpisodeOptions& o, EpisodeStats& stats) : tok_(tok), o_(o), stats_(stats) {}

  // Engine request r serves slots (group, first + sample).
  std::vector<std::pair<size_t, int64_t>> request_slots;
  std::vector<std::vector<Slot>>* slots = nullptr;

  TurnContinuation on_turn_end(const TurnEnd& te) override {
    const auto [group, first] = request_slots.at(static_cast<size_t>(te.request_index));
    Slot& s = (*slots)[group][static_cast<size_t>(first + te.sample_index)];
    TurnContinuation done;  // done = true
    PolicyTurn turn;
    turn.turn = te.turn;
    turn.text = te.segment->text;
    turn.stop = te.segment->stop;
    turn.truncated = te.segment->finish_reason == FinishReason::Length;
    turn.token_ids.assign(te.completion_ids->begin() + te.segment->begin, te.completion_ids->begin() + te.segment->end);
    EnvStep step;
    auto t0 = Clock::now();
    try {
      step = s.session->step(turn);
      check(std::isfinite(step.turn_weight) && step.turn_weight >= 0, "turn_weight must be finite and >= 0 (got ",
            step.turn_weight, ")");
    } catch (const std::exception& e) {
      stats_.env_s += seconds_since(t0);
      s.error = e.what();
      s.end_reason = "env_error";
      note(str("environment error (turn ", te.turn, "): ", s.error));
      return done;
    }
    stats_.env_s += seconds_since(t0);
    s.turn_rewards.push_back(step.reward);
    s.turn_feedback.push_back(step.feedback);
    s.turn_weights.push_back(step.turn_weight);
    if (step.correct) {
      const size_t k = static_cast<size_t>(s.n_judged++);
      if (stats_.attempts_judged.size() <= k) {
        stats_.attempts_judged.resize(k + 1, 0);
        stats_.attempts_right.resize(k + 1, 0);
      }
      ++stats_.attempts_judged[k];
      stats_.attempts_right[k] += *step.correct;
      if (*step.correct && s.solved_at_turn < 0) s.solved_at_turn = te.turn;
    }
    stats_.n_tool_calls += step.tool_call;
    stats_.n_tool_errors += step.tool_error;
    if (step.done) {
      s.end_reason = "env";
      return done;
    }
    if (te.turn + 1 >= o_.max_turns) {
      s.end_reason = "max_turns";
      return done;
    }
    if (te.room <= 0) {
      s.end_reason = "length";
      return done;
    }
    std::vector<int32_t> ids = tok_.encode(step.observation, /*add_special=*/false);
    bool truncated = false;
    if (static_cast<int64_t>(ids.size()) > o_.max_observation_tokens) {
      note(str("observation of ", ids.size(), " tokens cut to env.max_observation_tokens = ", o_.max_observation_tokens));
      ids.resize(static_cast<size_t>(o_.max_observation_tokens));
      truncated = true;
    }
    if (static_cast<int64_t>(ids.size()) + 1 > te.room) {
      if (te.room <= 1 && !ids.empty()) {
        s.end_reason = "context";
        note(str("observation of ", ids.size(), " tokens does not fit the ", te.room,
                 " token(s) left in the episode: episode ended (env.max_episode_tokens)"));
        return done;
      }
      note(str("observation of ", ids.size(), " tokens cut to the ", te.room - 1,
               " that fit the episode's budget (env.max_episode_tokens)"));
      ids.resize(static_cast<size_t>(te.room - 1));
      truncated = true;
    }
    stats_.n_observations_truncated += truncated;
    if (!ids.empty()) {
      Slot::Appended a;
      a.role = step.observation_is_feedback ? SegmentRole::Feedback : SegmentRole::Observation;
      a.text = truncated ? tok_.decode(ids) : step.observation;
      a.truncated = truncated;
      s.appended.push_back(std::move(a));
    }
    TurnContinuation next;
    next.done = false;
    next.append_ids = std::move(ids);
    return next;
  }

  void note(std::string text) {
    if (stats_.notes.size() < kMaxNotes) stats_.notes.push_back(std::move(text));
  }

 private:
  const Tokenizer& tok_;
  const EpisodeOptions& o_;
  EpisodeStats& stats_;
};

// What the engine recorded of each draw, onto the episode's sampled tokens
// (loss_weight > 0 among the completion's, which start at e.n_prompt):
// Episode::sampler_kl, and with kept sets, sampling_mask_id (k = the largest
// set, -1 fills) and old_logprob renormalised over each set.
void attach_draw_records(Episode& e, const GeneratedSequence& seq) {
  const size_t n = e.tokens.size(), P = static_cast<size_t>(e.n_prompt);
  auto sampled = [&](size_t i) { return P + i < n && e.loss_weight[P + i] > 0; };
  if (!seq.sampler_kl.empty()) {
    e.sampler_kl.assign(n, 0.0f);
    for (size_t i = 0; i < seq.sampler_kl.size(); ++i)
      if (sampled(i)) e.sampler_kl[P + i] = seq.sampler_kl[i];
  }
  size_t k = 0;
  for (size_t i = 0; i < seq.kept_ids.size(); ++i)
    if (sampled(i)) k = std::max(k, seq.kept_ids[i].size());
  if (k == 0) return;
  e.sampling_mask_id.assign(n * k, -1);
  for (size_t i = 0; i < seq.kept_ids.size(); ++i) {
    if (!sampled(i) || seq.kept_ids[i].empty()) continue;
    std::copy(seq.kept_ids[i].begin(), seq.kept_ids[i].end(), e.sampling_mask_id.begin() + static_cast<std::ptrdiff_t>((P + i) * k));
    e.old_logprob[P + i] = seq.logprobs[i] - seq.kept_logmass[i];
  }
}

// The episode for slot `s` from what the engine returned.
Episode build_episode(const GeneratedSequence& seq, Slot& s, int32_t version) {
  Episode e = Episode::single_turn(0, seq.prompt_ids, {}, {}, version);
  e.tokens.insert(e.tokens.end(), seq.completion_ids.begin(), seq.completion_ids.end());
  const size_t n = e.tokens.size();
  e.loss_weight.resize(n, 0.0f);
  e.old_logprob.resize(n, 0.0f);
  e.policy_version.resize(n, -1);
  size_t appended = 0;
  int64_t turn = 0;
  for (const CompletionSegment& c : seq.segments) {
    Segment g;
    g.begin = e.n_prompt + c.begin;
    g.end = e.n_prompt + c.end;
    if (c.sampled) {
      g.role = SegmentRole::Policy;
      g.turn = turn++;
      g.text = c.text;
      g.finish_reason = finish_reason_name(c.finish_reason);
      g.stop = c.stop;
      const float w = static_cast<size_t>(g.turn) < s.turn_weights.size() ? s.turn_weights[static_cast<size_t>(g.turn)] : 1.0f;
      for (int64_t t = g.begin; t < g.end; ++t) {
        e.loss_weight[static_cast<size_t>(t)] = w;
        e.old_logprob[static_cast<size_t>(t)] = seq.logprobs[static_cast<size_t>(t - e.n_prompt)];
        e.policy_version[static_cast<size_t>(t)] = version;
      }
      e.finish_reason = g.finish_reason;
      e.completion_text = c.text;
    } else {
      check(appended < s.appended.size(), "episode producer: an appended segment without its record");
      const Slot::Appended& a = s.appended[appended++];
      g.role = a.role;
      g.turn = turn - 1;
      g.text = a.text;
      g.truncated = a.truncated;
    }
    e.segments.push_back(std::move(g));
  }
  e.n_turns = turn;
  e.turn_rewards = s.turn_rewards;
  e.turn_rewards.resize(static_cast<size_t>(e.n_turns));
  e.turn_feedback = s.turn_feedback;
  e.turn_feedback.resize(static_cast<size_t>(e.n_turns));
  e.env_error = s.error;
  e.end_reason = s.end_reason.empty() ? (seq.overflowed ? "context" : "length") : s.end_reason;
  attach_draw_records(e, seq);
  return e;
}

}  // namespace

void EpisodeOptions::validate() const {
  check(max_turns > 0, "env.max_turns must be > 0 (got ", max_turns, ")");
  check(max_observation_tokens > 0, "env.max_observation_tokens must be > 0 (got ", max_observation_tokens, ")");
  check(max_episode_tokens >= 0, "env.max_episode_tokens must be >= 0 (got ", max_episode_tokens, "; 0 = derived)");
  check(max_batch_rows > 0, "rollout.max_batch_rows must be > 0 (got ", max_batch_rows, ")");
}

int64_t EpisodeOptions::episode_budget(int64_t max_new_tokens, bool single_turn) const {
  if (single_turn) return max_new_tokens;
  if (max_episode_tokens > 0) return max_episode_tokens;
  return max_turns * max_new_tokens + (max_turns - 1) * max_observation_tokens;
}

EpisodeStats& EpisodeStats::operator+=(const EpisodeStats& o) {
  n_episodes += o.n_episodes;
  n_turns += o.n_turns;
  n_policy_tokens += o.n_policy_tokens;
  n_observation_tokens += o.n_observation_tokens;
  n_ended_by_env += o.n_ended_by_env;
  if (attempts_judged.size() < o.attempts_judged.size()) {
    attempts_judged.resize(o.attempts_judged.size(), 0);
    attempts_right.resize(o.attempts_judged.size(), 0);
  }
  for (size_t k = 0; k < o.attempts_judged.size(); ++k) {
    attempts_judged[k] += o.attempts_judged[k];
    attempts_right[k] += o.attempts_right[k];
  }
  n_judged_episodes += o.n_judged_episodes;
  n_solved += o.n_solved;
  solve_turns += o.solve_turns;
  n_ended_by_length += o.n_ended_by_length;
  n_ended_by_max_turns += o.n_ended_by_max_turns;
  n_ended_by_context += o.n_ended_by_context;
  n_env_errors += o.n_env_errors;
  n_tool_calls += o.n_tool_calls;
  n_tool_errors += o.n_tool_errors;
  n_observations_truncated += o.n_observations_truncated;
  rollout_s += o.rollout_s;
  env_s += o.env_s;
  for (const auto& n : o.notes)
    if (notes.size() < kMaxNotes) notes.push_back(n);
  return *this;
}

Json EpisodeStats::to_metrics() const {
  const double n = std::max<int64_t>(1, n_episodes);
  Json m;
  m["episode/count"] = n_episodes;
  m["episode/turns_mean"] = n_episodes ? n_turns / n : 0.0;
  m["episode/ended_by_env"] = n_ended_by_env;
  m["episode/ended_by_length"] = n_ended_by_length;
  m["episode/ended_by_max_turns"] = n_ended_by_max_turns;
  m["episode/ended_by_context"] = n_ended_by_context;
  m["episode/observation_tokens"] = n_observation_tokens;
  m["episode/observations_truncated"] = n_observations_truncated;
  m["env/errors"] = n_env_errors;
  m["env/tool_calls"] = n_tool_calls;
  m["env/tool_errors"] = n_tool_errors;
  m["time/env_s"] = env_s;
  if (n_judged_episodes > 0) {
    for (size_t k = 0; k < attempts_judged.size(); ++k)
      if (attempts_judged[k] > 0)
        m["episode/accuracy_attempt" + std::to_string(k + 1)] =
            static_cast<double>(attempts_right[k]) / static_cast<double>(attempts_judged[k]);
    m["episode/accuracy_first"] = m["episode/accuracy_attempt1"];
    m["episode/accuracy_final"] = static_cast<double>(n_solved) / static_cast<double>(n_judged_episodes);
    m["episode/turns_to_solve"] = n_solved ? static_cast<double>(solve_turns) / static_cast<double>(n_solved) : 0.0;
  }
  return m;
}

EpisodeProducer::EpisodeProducer(Policy& policy, Environment& env, EpisodeOptions options)
    : policy_(policy),
      env_(env),
      options_(std::move(options)),
      engine_(policy.model(), policy.tokenizer, EngineOptions{options_.max_batch_rows, 0, policy.eos_token_ids, 0}) {
  options_.validate();
  env_.use_tokenizer(policy.tokenizer);
}

std::vector<EpisodeGroup> EpisodeProducer::produce(const std::vector<const PromptExample*>& tasks, int64_t n,
                                                   const SamplingParams& base_params, const std::vector<uint64_t>& seeds,
                                                   int32_t version, EpisodeStats* out_stats) {
  check(n > 0, "episode producer: n must be > 0 (got ", n, ")");
  check(seeds.size() == tasks.size(), "episode producer: ", seeds.size(), " seeds for ", tasks.size(), " tasks");
  const bool single = env_.single_turn();
  EpisodeStats stats;
  SamplingParams params = base_params;
  for (const std::string& s : env_.turn_stops())
    if (std::find(params.stop_strings.begin(), params.stop_strings.end(), s) == params.stop_strings.end())
      params.stop_strings.push_back(s);
  const int64_t budget = options_.episode_budget(params.max_new_tokens, single);

  // Sessions and prompts.
  std::vector<std::vector<Slot>> slots(tasks.size());
  std::vector<EpisodeGroup> groups(tasks.size());
  Conversations handler(*policy_.tokenizer, options_, stats);
  handler.slots = &slots;
  std::vector<GenerationRequest> requests;
  auto t_start = Clock::now();
  // Every episode's session, started together (an environment may overlap their start-ups).
  std::vector<ResetRequest> resets;
  for (size_t g = 0; g < tasks.size(); ++g)
    for (int64_t j = 0; j < n; ++j)
      resets.push_back({.task = tasks[g], .seed = derive_seed(seeds[g], static_cast<uint64_t>(j) + kEnvResetItem)});
  std::vector<ResetResult> started = env_.reset_all(resets);
  check(started.size() == resets.size(), "environment '", env_.name(), "': reset_all returned ", started.size(),
        " sessions for ", resets.size(), " episodes");
  stats.env_s += seconds_since(t_start);
  for (size_t g = 0; g < tasks.size(); ++g) {
    groups[g].task = tasks[g];
    slots[g].resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      Slot& s = slots[g][static_cast<size_t>(j)];
      ResetResult& r = started[g * static_cast<size_t>(n) + static_cast<size_t>(j)];
      if (r.session && r.error.empty()) {
        s.session = std::move(r.session);
        s.prompt = std::move(r.first_observation);
        continue;
      }
      s.error = r.error.empty() ? "the environment started no session" : r.error;
      s.end_reason = "env_error";
      s.prompt = tasks[g]->prompt;
      handler.note(str(tasks[g]->where, ": environment reset failed: ", s.error));
    }
    groups[g].prompt = slots[g][0].prompt;
    auto encode = [&](const std::string& text) {
      std::vector<int32_t> ids = policy_.tokenizer->encode(text, options_.add_special_tokens);
      check(!ids.empty(), tasks[g]->where, ": the prompt encodes to no tokens",
            options_.add_special_tokens ? "" : " (no BOS is added when a chat template renders the prompt)");
      return ids;
    };
    // A first observation that leaves no room in the context ends its episode
    // (an environment's own prompt is not checked at load, a dataset's is).
    const int64_t context = policy_.model()->config().max_position_embeddings;
    std::vector<std::vector<int32_t>> prompt_ids(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      Slot& s = slots[g][static_cast<size_t>(j)];
      if (!s.error.empty()) continue;
      prompt_ids[static_cast<size_t>(j)] = encode(s.prompt);
      const int64_t P = static_cast<int64_t>(prompt_ids[static_cast<size_t>(j)].size());
      if (P + 1 > context) {
        s.error = str("the first observation has ", P, " tokens; the model's context is ", context, " tokens");
        s.end_reason = "env_error";
        handler.note(str(tasks[g]->where, ": ", s.error));
      }
    }
    const bool shared = std::all_of(slots[g].begin(), slots[g].end(),
                                    [&](const Slot& s) { return s.error.empty() && s.prompt == slots[g][0].prompt; });
    if (shared) {
      GenerationRequest req;
      req.prompt_ids = prompt_ids[0];
      req.n = n;
      req.params = params;
      req.params.seed = seeds[g];
      req.max_total_tokens = single ? 0 : budget;
      req.record_sampler_kl = options_.record_sampler_kl;
      req.record_kept = options_.sampling_replay;
      handler.request_slots.emplace_back(g, 0);
      requests.push_back(std::move(req));
      continue;
    }
    for (int64_t j = 0; j < n; ++j) {
      const Slot& s = slots[g][static_cast<size_t>(j)];
      if (!s.error.empty()) continue;  // never started: an episode of its prompt alone
      GenerationRequest req;
      req.prompt_ids = prompt_ids[static_cast<size_t>(j)];
      req.n = 1;
      req.params = params;
      req.params.seed = derive_seed(seeds[g], static_cast<uint64_t>(j) + 1);
      req.max_total_tokens = single ? 0 : budget;
      req.record_sampler_kl = options_.record_sampler_kl;
      req.record_kept = options_.sampling_replay;
      handler.request_slots.emplace_back(g, j);
      requests.push_back(std::move(req));
    }
  }

  std::vector<GeneratedSequence> seqs = engine_.generate(requests, &handler);
  std::map<std::pair<size_t, int64_t>, const GeneratedSequence*> by_slot;
  for (const GeneratedSequence& q : seqs) {
    const auto [g, first] = handler.request_slots.at(static_cast<size_t>(q.request_index));
    by_slot[{g, first + q.sample_index}] = &q;
  }
  for (size_t g = 0; g < tasks.size(); ++g) {
    for (int64_t j = 0; j < n; ++j) {
      Slot& s = slots[g][static_cast<size_t>(j)];
      auto it = by_slot.find({g, j});
      Episode e;
      if (it == by_slot.end()) {  // reset failed: the prompt alone, nothing to train
        std::vector<int32_t> ids = policy_.tokenizer->encode(s.prompt, options_.add_special_tokens);
        const size_t context = static_cast<size_t>(policy_.model()->config().max_position_embeddings);
        if (ids.size() > context) ids.resize(context);  // kept for logs only: nothing of it is trained
        e = Episode::single_turn(static_cast<int64_t>(g), ids, {}, {}, version);
        e.env_error = s.error;
        e.end_reason = "env_error";
      } else {
        e = build_episode(*it->second, s, version);
      }
      e.group = static_cast<int64_t>(g);
      ++stats.n_episodes;
      stats.n_turns += e.n_turns;
      for (const Segment& seg : e.segments) {
        if (seg.role == SegmentRole::Policy) stats.n_policy_tokens += seg.end - seg.begin;
        else if (seg.role != SegmentRole::Prompt) stats.n_observation_tokens += seg.end - seg.begin;
      }
      if (s.n_judged > 0) {
        ++stats.n_judged_episodes;
        if (s.solved_at_turn >= 0) {
          ++stats.n_solved;
          stats.solve_turns += s.solved_at_turn + 1;
        }
      }
      if (e.end_reason == "env") ++stats.n_ended_by_env;
      else if (e.end_reason == "length") ++stats.n_ended_by_length;
      else if (e.end_reason == "max_turns") ++stats.n_ended_by_max_turns;
      else if (e.end_reason == "context") ++stats.n_ended_by_context;
      else if (e.end_reason == "env_error") ++stats.n_env_errors;
      groups[g].episodes.push_back(std::move(e));
    }
    slots[g].clear();  // sessions end here (external environments are told to close)
  }
  stats.rollout_s = seconds_since(t_start);
  if (out_stats) *out_stats += stats;
  return groups;
}

std::vector<Episode> EpisodeProducer::produce_from_ids(const std::vector<TokenPrompt>& prompts, int32_t version) {
  std::vector<GenerationRequest> requests;
  for (const TokenPrompt& p : prompts) {
    GenerationRequest r;
    r.prompt_ids = p.ids;
    r.params = p.params;
    r.record_sampler_kl = options_.record_sampler_kl;
    r.record_kept = options_.sampling_replay;
    requests.push_back(std::move(r));
  }
  std::vector<GeneratedSequence> seqs;
  {
    torch::NoGradGuard ng;
    seqs = engine_.generate(requests);
    engine_.release_cache();
  }
  std::vector<Episode> out(prompts.size());
  for (const GeneratedSequence& seq : seqs) {
    const TokenPrompt& p = prompts.at(static_cast<size_t>(seq.request_index));
    Episode e = Episode::single_turn(0, p.episode_prompt.empty() ? p.ids : p.episode_prompt, seq.completion_ids,
                                     seq.logprobs, version);
    if (e.segments.size() > 1) {
      Segment& pol = e.segments[1];
      pol.text = seq.text;
      pol.finish_reason = finish_reason_name(seq.finish_reason);
      pol.stop = seq.stop;
    }
    attach_draw_records(e, seq);
    e.completion_text = seq.text;
    e.finish_reason = finish_reason_name(seq.finish_reason);
    e.end_reason = "env";
    e.turn_rewards.assign(static_cast<size_t>(e.n_turns), std::nullopt);
    e.turn_feedback.assign(static_cast<size_t>(e.n_turns), "");
    out[static_cast<size_t>(seq.request_index)] = std::move(e);
  }
  return out;
}

}  // namespace rlf
