#include "train/rl_steps.h"

#include "train/phase_memory.h"
#include "train/sampling_replay.h"
#include "train/update_shares.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "algorithms/credit.h"
#include "algorithms/semantic_entropy.h"
#include "rewards/math/majority_vote.h"
#include "algorithms/kl.h"
#include "train/diagnostics.h"
#include "train/micro_batch.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/memory_usage.h"
#include "util/seed.h"

namespace rlf {

namespace {

using Clock = std::chrono::steady_clock;

// Sums a step's episode statistics over the ranks (wall times: the slowest rank's).
void reduce_episode_stats(EpisodeStats& s, Reducer& reducer) {
  double n_attempts = static_cast<double>(s.attempts_judged.size());
  reducer.max(std::span<double>(&n_attempts, 1));
  s.attempts_judged.resize(static_cast<size_t>(n_attempts), 0);
  s.attempts_right.resize(static_cast<size_t>(n_attempts), 0);
  std::vector<int64_t*> fields = {&s.n_episodes, &s.n_turns, &s.n_policy_tokens, &s.n_observation_tokens,
                                  &s.n_ended_by_env, &s.n_ended_by_length, &s.n_ended_by_max_turns,
                                  &s.n_ended_by_context, &s.n_env_errors, &s.n_tool_calls, &s.n_tool_errors,
                                  &s.n_observations_truncated, &s.n_judged_episodes, &s.n_solved, &s.solve_turns};
  for (auto& v : s.attempts_judged) fields.push_back(&v);
  for (auto& v : s.attempts_right) fields.push_back(&v);
  std::vector<double> v;
  for (const int64_t* f : fields) v.push_back(static_cast<double>(*f));
  reducer.sum(v);
  for (size_t i = 0; i < fields.size(); ++i) *fields[i] = static_cast<int64_t>(v[i]);
  struct {
    double rollout_s, env_s;
  } t{.rollout_s = s.rollout_s, .env_s = s.env_s};
  reducer.max_fields(t);
  s.rollout_s = t.rollout_s, s.env_s = t.env_s;
}

// The policy engine's seconds between two readings of its stats: prefill,
// decoding (sampling part of it) and packing the weights for decoding.
struct EngineTimes {
  double prefill_s = 0, decode_s = 0, sample_s = 0, pack_s = 0;
};
EngineTimes engine_times(const EngineStats& before, const EngineStats& after) {
  return {.prefill_s = after.prefill_s - before.prefill_s,
          .decode_s = after.decode_s - before.decode_s,
          .sample_s = after.sample_s - before.sample_s,
          .pack_s = after.pack_s - before.pack_s};
}
void write_engine_times(const EngineTimes& t, Json& metrics) {
  metrics["time/rollout_prefill_s"] = t.prefill_s;
  metrics["time/rollout_decode_s"] = t.decode_s;
  metrics["time/rollout_sample_s"] = t.sample_s;
  metrics["time/rollout_pack_s"] = t.pack_s;
}

// Mean and sample std of values over every rank (two passes through the reducer).
struct GlobalMoments {
  double n = 0, mean = 0, std = 0;
};
GlobalMoments global_moments(const std::vector<double>& v, Reducer& reducer) {
  struct {
    double n, sum;
  } first{.n = static_cast<double>(v.size()), .sum = 0.0};
  for (double x : v) first.sum += x;
  reducer.sum_fields(first);
  GlobalMoments m;
  m.n = first.n;
  if (m.n == 0) return m;
  m.mean = first.sum / m.n;
  double sq = 0;
  for (double x : v) sq += (x - m.mean) * (x - m.mean);
  reducer.sum(std::span<double>(&sq, 1));
  if (m.n >= 2) m.std = std::sqrt(sq / (m.n - 1));
  return m;
}

// The turn index of each policy token of `e` (0 elsewhere).
std::vector<int32_t> token_turns(const Episode& e) {
  std::vector<int32_t> turns(e.tokens.size(), 0);
  for (const Segment& s : e.segments)
    if (s.role == SegmentRole::Policy)
      for (int64_t t = s.begin; t < s.end; ++t) turns[static_cast<size_t>(t)] = static_cast<int32_t>(s.turn);
  return turns;
}

// Adds e's sampled tokens' Episode::sampler_kl (and their count) and, where
// the sampler recorded kept sets, their sizes (and count).
void add_sampler_counts(const Episode& e, double& kl, double& kl_tokens, double& kept, double& kept_tokens) {
  const size_t n = e.tokens.size(), k = e.sampling_mask_id.size() / std::max<size_t>(n, 1);
  for (size_t t = 0; t < n; ++t) {
    if (e.loss_weight[t] <= 0) continue;
    if (!e.sampler_kl.empty()) kl += e.sampler_kl[t], kl_tokens += 1;
    if (k == 0) continue;
    const auto* ids = e.sampling_mask_id.data() + t * k;
    const double size = static_cast<double>(std::count_if(ids, ids + k, [](int32_t id) { return id >= 0; }));
    if (size > 0) kept += size, kept_tokens += 1;
  }
}

}  // namespace

std::vector<float> kl_reward_tokens(const Episode& e, algo::KlEstimator estimator, double beta) {
  check(e.ref_logprob.size() == e.tokens.size(), "kl_reward_tokens: the episode has no reference log-probs");
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const int64_t n = static_cast<int64_t>(e.tokens.size());
  auto lp = torch::from_blob(const_cast<float*>(e.old_logprob.data()), {1, n}, f32);
  auto ref = torch::from_blob(const_cast<float*>(e.ref_logprob.data()), {1, n}, f32);
  auto w = torch::from_blob(const_cast<float*>(e.loss_weight.data()), {1, n}, f32);
  auto pen = algo::kl_reward_penalty(lp, ref, w, estimator, beta).contiguous();
  return std::vector<float>(pen.data_ptr<float>(), pen.data_ptr<float>() + n);
}

RlSteps::RlSteps(Policy& policy, const std::vector<PromptExample>& examples, RewardSet& rewards, Environment& env,
                 RlStepOptions options, Reducer& reducer, CausalLM reference, Critic* critic, ValueModel* value,
                 CausalLM ema)
    : policy_(policy),
      examples_(examples),
      rewards_(rewards),
      options_(std::move(options)),
      reducer_(reducer),
      reference_(std::move(reference)),
      value_(value),
      kl_(algo::KlControllerOptions{
          .initial_beta = options_.kl_beta, .target = options_.kl_target, .horizon = options_.kl_horizon}),
      producer_(policy, env,
                [&] {
                  EpisodeOptions eo = options_.env.episode;
                  eo.max_batch_rows = options_.max_batch_rows;
                  eo.add_special_tokens = options_.add_special_tokens;
                  eo.record_sampler_kl = true;
                  eo.sampling_replay = sampling_replay_applies(options_.sampling_replay, options_.sampling,
                                                               policy.model()->config().vocab_size);
                  return eo;
                }()),
      cursor_(examples.size(), DataCursorOptions{
          .batch_size = static_cast<size_t>(options_.prompts_per_step), .shuffle = true, .seed = options_.seed}) {
  options_.validate();
  check(!rewards_.empty(), "no reward configured: add at least one [[reward]] table");
  check(options_.kl_beta == 0 || reference_, "algorithm.kl_beta > 0 needs a reference model");
  check(options_.credit.mode != algo::CreditMode::Gae || value_ != nullptr,
        "algorithm.credit = \"gae\" needs a value model (train/value_model.h)");
  if (!options_.accuracy_reward.empty())
    accuracy_component_ = rewards_.index_of(options_.accuracy_reward, "algorithm.accuracy_reward");
  if (options_.refine.enabled) {
    check(critic != nullptr, "refine.enabled needs a critic ([critic])");
    refiner_ = std::make_unique<Refiner>(producer_, rewards_, *critic, options_.refine, options_.sampling,
                                         options_.reward_aggregation, accuracy_component_, options_.add_special_tokens,
                                         options_.seed);
  }
  if (options_.span_credit.enabled) {
    check(critic != nullptr, "span_credit.enabled needs a critic ([critic])");
    span_credit_ = std::make_unique<CritiqueCredit>(*critic, *policy_.tokenizer, options_.span_credit);
  }
  if (options_.replay.enabled) replay_ = std::make_unique<ReplayBuffer>(options_.replay);
  if (options_.lessons.enabled) {
    check(critic != nullptr, "lessons.enabled needs a critic ([critic])");
    std::string fingerprint;
    for (const PromptExample& e : examples_) fingerprint += e.id + '\x1f' + e.prompt + '\x1e';
    const int64_t room = options_.env.episode.episode_budget(options_.sampling.max_new_tokens, env.single_turn());
    lessons_ = std::make_unique<LessonStage>(*policy_.tokenizer, policy_.loaded.config.max_position_embeddings, room,
                                             options_.add_special_tokens, *critic, options_.lessons,
                                             "training prompts " + fnv1a64_hex(fingerprint));
  }
  if (options_.pool.enabled()) {
    std::vector<std::string> ids;
    for (const PromptExample& e : examples_) ids.push_back(e.id);
    pool_ = std::make_unique<PromptPool>(ids, options_.pool);
    if (options_.pool.reward_disagreement > 0)
      gold_component_ = rewards_.index_of(options_.gold_reward, "curation.reward_disagreement: algorithm.gold_reward");
  }
  if (options_.fcp.enabled) {
    check(critic != nullptr, "fcp.enabled needs a critic ([critic]) to write each episode's feedback");
    fcp_ = std::make_unique<FeedbackConditioning>(*policy_.tokenizer, *critic, options_.fcp,
                                                  options_.add_special_tokens,
                                                  policy_.loaded.config.max_position_embeddings);
  }
  if (options_.distill.enabled)
    teacher_ = std::make_unique<DistillTeacher>(policy_, options_.distill, accuracy_component_,
                                                options_.add_special_tokens, options_.reference_micro_batch_size,
                                                critic,
                                                options_.distill.teacher == DistillTeacherKind::Ema ? ema : reference_);
}

std::vector<ScoredGroup> RlSteps::collect_and_score(int64_t step, int32_t version, Json& metrics) {
  std::vector<ScoredGroup> kept, dropped;
  // Data-parallel: this rank's share of the step's prompts, the positions r
  // with r % world == rank, each sampled with the seed of its position, so
  // the ranks together sample what one process samples.
  const Shard shard = shard_of(reducer_);
  const int64_t rank = shard.rank, world = shard.world;
  const int64_t n_prompts = shard.count(options_.prompts_per_step);
  double reward_s = 0;
  int64_t n_dropped = 0, rounds = 0;
  EpisodeStats stats;
  RefineStats refine_stats;
  ReplayStats replay_stats;
  LessonStats lesson_stats;
  PoolDrawStats draw_stats;
  int64_t n_disagreements = 0;
  const EngineStats engine_before = producer_.engine().stats();
  shown_.clear();
  while (static_cast<int64_t>(kept.size()) < n_prompts && rounds < options_.dynamic_sampling_max_rounds) {
    // 1. collect
    std::vector<size_t> idx = pool_ ? pool_->draw(cursor_, static_cast<size_t>(options_.prompts_per_step), step, draw_stats)
                                    : cursor_.next_batch();
    std::vector<const PromptExample*> tasks;
    std::vector<uint64_t> seeds;
    std::vector<size_t> positions;  // the batch position of each of this rank's tasks
    for (size_t r = 0; r < idx.size(); ++r) {
      if (!shard.owns(r)) continue;
      positions.push_back(r);
      tasks.push_back(&examples_[idx[r]]);
      seeds.push_back(derive_seed(options_.seed, static_cast<uint64_t>(step) * 1000003u + rounds * 1009u + r));
    }
    const std::vector<const PromptExample*> originals = tasks;
    if (lessons_) {
      for (PromptExample& p : lessons_->show(tasks, lesson_stats)) shown_.push_back(std::move(p));
      for (size_t r = 0; r < tasks.size(); ++r) tasks[r] = &shown_[shown_.size() - tasks.size() + r];
    }
    std::vector<EpisodeGroup> produced =
        producer_.produce(tasks, options_.group_size, options_.sampling, seeds, version, &stats);

    // 2. score
    auto t0 = Clock::now();
    std::vector<ScoredGroup> groups(produced.size());
    std::vector<std::optional<double>> totals;
    std::vector<int64_t> group_ids;
    for (size_t g = 0; g < produced.size(); ++g) {
      ScoredGroup& sg = groups[g];
      sg = score_group(std::move(produced[g]), rewards_, options_.sampling.max_new_tokens, options_.reward_aggregation);
      for (size_t i = 0; i < sg.group.episodes.size(); ++i) {
        // An episode whose environment failed has no reward: it teaches nothing and is in no baseline.
        if (!sg.group.episodes[i].env_error.empty()) sg.totals[i].reset();
        sg.group.episodes[i].reward = sg.totals[i];
        totals.push_back(sg.totals[i]);
        group_ids.push_back(static_cast<int64_t>(g));
      }
    }
    reward_s += seconds_since(t0);
    if (pool_) n_disagreements += record_in_pool(idx, positions, groups, step);

    // 2a. lessons from the groups with no correct episode
    if (lessons_) lessons_->learn(groups, originals, accuracy_component_, lesson_stats);

    // 2b. refine (before the filter: a group rescued by a refinement is no longer flat)
    if (refiner_)
      refine_stats += refiner_->refine(
          groups, derive_seed(options_.seed, static_cast<uint64_t>(step) * 1000003u + rounds * 1009u), version);

    // 2c. replay (before the filter: a group given a stored success is no longer flat)
    if (replay_) {
      const ReplayStats rs = replay_->step(groups, rewards_, options_.reward_aggregation, accuracy_component_,
                                           options_.sampling.max_new_tokens, step);
      replay_stats.n_stored += rs.n_stored, replay_stats.n_groups_without += rs.n_groups_without;
      replay_stats.n_hits += rs.n_hits, replay_stats.n_injected += rs.n_injected;
    }

    // 3. filter (DAPO dynamic sampling)
    std::vector<int64_t> flat;
    if (options_.dynamic_sampling) flat = algo::zero_variance_groups(totals, group_ids);
    for (size_t g = 0; g < groups.size(); ++g) {
      const bool informative = std::find(flat.begin(), flat.end(), static_cast<int64_t>(g)) == flat.end();
      if (informative && static_cast<int64_t>(kept.size()) < n_prompts) kept.push_back(std::move(groups[g]));
      else if (!informative) ++n_dropped, dropped.push_back(std::move(groups[g]));
    }
    ++rounds;
    if (!options_.dynamic_sampling) break;
  }
  // Out of rounds: fill with dropped groups (they get zero advantage) so the step has its size.
  for (auto& g : dropped)
    if (static_cast<int64_t>(kept.size()) < n_prompts) kept.push_back(std::move(g));
  // A group's slot in the step, the same numbering on every rank (the trainer's mini-batches).
  for (size_t k = 0; k < kept.size(); ++k) kept[k].slot = rank + world * static_cast<int64_t>(k);
  producer_.engine().release_cache();  // training reclaims the cache memory
  double groups_dropped = static_cast<double>(n_dropped), max_rounds = static_cast<double>(rounds);
  EngineTimes engine = engine_times(engine_before, producer_.engine().stats());
  if (world > 1) {
    reduce_episode_stats(stats, reducer_);
    reducer_.sum(std::span<double>(&groups_dropped, 1));
    reducer_.max(std::span<double>(&max_rounds, 1));
    reducer_.max_fields(engine);  // the slowest rank's
  }
  metrics.update(stats.to_metrics());
  metrics["time/rollout_s"] = stats.rollout_s;
  metrics["time/reward_s"] = reward_s;
  write_engine_times(engine, metrics);
  metrics["rollout/generated_tokens"] = stats.n_policy_tokens;
  metrics["rollout/tokens_per_s"] = stats.rollout_s > 0 ? stats.n_policy_tokens / stats.rollout_s : 0.0;
  metrics["rollout/rounds"] = max_rounds;
  metrics["rollout/groups_dropped"] = groups_dropped;
  for (const std::string& note : stats.notes) metrics["notes"].push_back(note);
  if (pool_) {
    // Every rank drew the same indices and recorded the same outcomes: these are global already.
    metrics["curation/pool_skipped"] = static_cast<double>(draw_stats.n_skipped);
    metrics["curation/pool_forced"] = static_cast<double>(draw_stats.n_forced);
    metrics["curation/pool_parked"] = static_cast<double>(pool_->n_parked(step + 1));
    if (options_.pool.reward_disagreement > 0) {
      metrics["curation/disagreements"] = static_cast<double>(n_disagreements);
      metrics["curation/dropped_prompts"] = static_cast<double>(pool_->n_dropped());
    }
  }
  if (replay_) metrics.update(replay_stats.metrics(reducer_, replay_->size()));
  if (lessons_) {
    metrics.update(lesson_stats.metrics(reducer_, lessons_->pool().size()));
    for (const std::string& note : lesson_stats.notes) metrics["notes"].push_back(note);
  }
  if (refiner_) {
    Json rm = Refiner::metrics(refine_stats, reducer_);
    for (const auto& note : rm["notes"]) metrics["notes"].push_back(note);
    rm.erase("notes");
    metrics.update(rm);
  }
  return kept;
}

int64_t RlSteps::record_in_pool(const std::vector<size_t>& batch, const std::vector<size_t>& positions,
                                const std::vector<ScoredGroup>& groups, int64_t step) {
  // Per batch position. Only the owning rank fills a position, so the sums
  // over ranks are exact and every rank records the same.
  struct Row {
    double n_correct = 0, n_judged = 0;
    double trained_sum = 0, n_trained = 0;  // the trained reward's totals
    double gold_sum = 0, n_gold = 0;        // the gold reward's scores
  };
  std::vector<Row> rows(batch.size());
  const bool check_rewards = options_.pool.reward_disagreement > 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const ScoredGroup& sg = groups[g];
    Row& row = rows[positions[g]];
    for (size_t i = 0; i < sg.group.episodes.size(); ++i) {
      if (sg.group.episodes[i].source != EpisodeSource::Rollout) continue;
      if (sg.scores.results[accuracy_component_][i].score)
        row.n_judged += 1, row.n_correct += is_correct(sg, accuracy_component_, i);
      if (!check_rewards) continue;
      if (sg.totals[i]) row.trained_sum += *sg.totals[i], row.n_trained += 1;
      if (const auto& gold = sg.scores.results[gold_component_][i].score) row.gold_sum += *gold, row.n_gold += 1;
    }
  }
  if (reducer_.world_size() > 1) reducer_.sum_fields(rows);
  int64_t n_disagree = 0;
  for (size_t r = 0; r < batch.size(); ++r) {
    const Row& row = rows[r];
    PromptOutcome o;
    o.n_correct = static_cast<int64_t>(row.n_correct);
    o.n_judged = static_cast<int64_t>(row.n_judged);
    o.reward_checked = check_rewards && row.n_trained > 0 && row.n_gold > 0;
    if (o.reward_checked) o.trained_mean = row.trained_sum / row.n_trained, o.gold_mean = row.gold_sum / row.n_gold;
    n_disagree += pool_->record(batch[r], o, step);
  }
  return n_disagree;
}

void RlSteps::add_reference_logprobs(std::vector<ScoredGroup>& groups) {
  // Given when the kl term, KL in the reward, a preference term or a frozen distill teacher needs it; only the
  // first three read its log-probs.
  if (!reference_ || !options_.reference_logprobs) return;
  std::vector<Episode*> all;
  std::vector<const Episode*> view;
  for (auto& g : groups)
    for (auto& e : g.group.episodes) {
      if (e.tokens.size() < 2) continue;
      all.push_back(&e);
      view.push_back(&e);
    }
  auto ref = recompute_logprobs(*reference_, view, options_.reference_micro_batch_size,
                                LogprobScope::FromFirstWeighted);
  for (size_t i = 0; i < all.size(); ++i) all[i]->ref_logprob = std::move(ref[i]);
}

void RlSteps::assign_credit(std::vector<ScoredGroup>& groups, Json& metrics) {
  const bool kl_in_reward = options_.kl_in_reward && options_.kl_beta > 0;
  const bool per_turn = options_.credit.mode != algo::CreditMode::Episode;
  const auto& components = rewards_.components();
  int64_t env_component = -1;
  for (size_t c = 0; c < components.size(); ++c)
    if (components[c].reward->name() == "env") env_component = static_cast<int64_t>(c);

  std::vector<algo::CreditInput> inputs;
  std::vector<Episode*> episodes;
  std::vector<std::vector<int32_t>> turns_store;
  std::vector<std::vector<float>> token_reward_store;
  double kl_penalty_sum = 0;
  int64_t n_missing = 0, n_kl = 0;
  const double beta = kl_.beta();
  if (value_) {
    std::vector<Episode*> all;
    for (auto& g : groups)
      for (auto& e : g.group.episodes) all.push_back(&e);
    value_->score(all);
  }
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    ScoredGroup& sg = groups[gi];
    // The accuracy reward's verdicts and the group's correct rate (NFT's r_q).
    double n_known = 0, n_correct = 0;
    for (size_t i = 0; i < sg.group.episodes.size(); ++i) {
      if (!sg.scores.results[accuracy_component_][i].score) continue;
      ++n_known;
      if (is_correct(sg, accuracy_component_, i)) ++n_correct;
    }
    for (size_t i = 0; i < sg.group.episodes.size(); ++i) {
      Episode& e = sg.group.episodes[i];
      e.group = sg.slot;
      if (sg.scores.results[accuracy_component_][i].score) e.correct = is_correct(sg, accuracy_component_, i);
      e.group_accuracy = n_known > 0 ? n_correct / n_known : -1.0;
      if (!e.reward) ++n_missing;
      const size_t T = e.tokens.size();
      // Per-token rewards: what rewards scored per token (weighted), and the KL penalty.
      std::vector<float> tr;
      for (size_t c = 0; c < components.size(); ++c) {
        const RewardResult& rr = sg.scores.results[c][i];
        if (rr.token_rewards.empty() || !rr.score || !sg.scores.counts(c, i)) continue;  // gated off: nothing
        if (tr.empty()) tr.assign(T, 0.0f);
        for (size_t j = 0; j < rr.token_rewards.size() && e.n_prompt + static_cast<int64_t>(j) < static_cast<int64_t>(T); ++j)
          tr[static_cast<size_t>(e.n_prompt) + j] += static_cast<float>(components[c].weight * rr.token_rewards[j]);
      }
      if (kl_in_reward && e.reward && !e.ref_logprob.empty()) {
        const std::vector<float> pen = kl_reward_tokens(e, options_.kl_estimator, beta);
        if (tr.empty()) tr.assign(T, 0.0f);
        for (size_t t = 0; t < T; ++t) tr[t] += pen[t], kl_penalty_sum -= pen[t];
        ++n_kl;
      }
      e.token_reward = tr;
      algo::CreditInput in;
      in.group = static_cast<int64_t>(gi);
      // An episode with nothing to train on (an environment weighted every turn 0)
      // stays out of its group's baseline.
      in.outcome = e.n_policy_tokens() > 0 ? e.reward : std::nullopt;
      if (per_turn && in.outcome && env_component >= 0) {
        // The environment's rewards go to their turns; the outcome is everything else.
        double outcome = 0;
        for (size_t c = 0; c < components.size(); ++c) {
          if (static_cast<int64_t>(c) == env_component) continue;
          const auto& s = sg.scores.results[c][i].score;
          if (s) outcome += components[c].weight * *s;
        }
        in.outcome = outcome;
        for (const auto& r : e.turn_rewards) in.turn_rewards.push_back(r ? components[env_component].weight * *r : 0.0);
      }
      episodes.push_back(&e);
      inputs.push_back(std::move(in));
    }
  }
  // Spans point into the episodes (stable now).
  for (size_t k = 0; k < episodes.size(); ++k) {
    turns_store.push_back(token_turns(*episodes[k]));
  }
  for (size_t k = 0; k < episodes.size(); ++k) {
    inputs[k].loss_weight = episodes[k]->loss_weight;
    inputs[k].token_turn = turns_store[k];
    inputs[k].token_reward = episodes[k]->token_reward;
    inputs[k].value = episodes[k]->value;
  }
  std::vector<std::vector<float>> returns;
  auto adv = algo::assign_credit(inputs, options_.credit, reducer_.batch_sum(), value_ ? &returns : nullptr);
  for (size_t k = 0; k < episodes.size(); ++k) {
    episodes[k]->advantage = std::move(adv[k]);
    if (value_) episodes[k]->value_target = std::move(returns[k]);
  }
  if (options_.seed_alpha > 0) scale_by_semantic_entropy(groups, metrics);
  double missing = static_cast<double>(n_missing);
  reducer_.sum(std::span<double>(&missing, 1));
  metrics["reward/missing"] = missing;
  if (kl_in_reward) {
    // The penalty's KL per episode (summed over its tokens), averaged over every rank's episodes.
    struct {
      double kl_sum, n_episodes;
    } kl{.kl_sum = beta > 0 ? kl_penalty_sum / beta : 0.0, .n_episodes = static_cast<double>(n_kl)};
    reducer_.sum_fields(kl);
    const double kl_episode = kl.n_episodes > 0 ? kl.kl_sum / kl.n_episodes : 0.0;
    metrics["kl/reward_penalty_mean"] = kl.n_episodes > 0 ? beta * kl_episode : 0.0;
    metrics["kl/episode_mean"] = kl_episode;
    metrics["kl/beta"] = beta;
    kl_.update(kl_episode, static_cast<int64_t>(kl.n_episodes));
  }
}

void RlSteps::reward_metrics(const std::vector<ScoredGroup>& groups, Json& m) {
  std::vector<double> totals, lengths;
  struct {
    double truncated = 0, correct = 0, judged = 0, episodes = 0;
    double sampler_kl = 0, kl_tokens = 0, kept_ids = 0, kept_tokens = 0;  // over sampled tokens
  } counts;
  const size_t C = rewards_.size();
  std::vector<std::vector<double>> component(C), token_sums(C);
  std::vector<double> component_missing(C, 0.0);
  double length_max = 0, length_min = 1e300;
  for (const auto& g : groups) {
    for (size_t i = 0; i < g.group.episodes.size(); ++i) {
      const Episode& e = g.group.episodes[i];
      if (e.source != EpisodeSource::Rollout) continue;  // refinements: refine/* metrics
      if (g.totals[i]) totals.push_back(*g.totals[i]);
      const double len = static_cast<double>(e.n_completion());
      lengths.push_back(len);
      length_max = std::max(length_max, len), length_min = std::min(length_min, len);
      counts.truncated += e.finish_reason == "length";
      counts.episodes += 1;
      add_sampler_counts(e, counts.sampler_kl, counts.kl_tokens, counts.kept_ids, counts.kept_tokens);
      for (size_t c = 0; c < C; ++c) {
        const RewardResult& rr = g.scores.results[c][i];
        if (rr.score) component[c].push_back(*rr.score);
        else component_missing[c] += 1;
        // Per-token rewards (a process reward model's steps): their sum per episode, unweighted.
        if (rr.score && !rr.token_rewards.empty()) {
          double sum = 0;
          for (float v : rr.token_rewards) sum += v;
          token_sums[c].push_back(sum);
        }
      }
      if (g.scores.results[accuracy_component_][i].score)
        counts.judged += 1, counts.correct += is_correct(g, accuracy_component_, i);
    }
  }
  reducer_.sum_fields(counts);
  reducer_.sum(component_missing);
  const GlobalMoments t = global_moments(totals, reducer_);
  // A step where no episode has a reward reports it as missing, not as 0.
  if (t.n > 0) {
    m["reward/mean"] = t.mean;
    m["reward/std"] = t.std;
  }
  std::vector<std::optional<double>> means(C);
  for (size_t c = 0; c < C; ++c) {
    const std::string& name = rewards_.components()[c].name;
    const GlobalMoments cm = global_moments(component[c], reducer_);
    if (cm.n > 0) {
      m["reward/" + name + "/mean"] = cm.mean;
      m["reward/" + name + "/std"] = cm.std;
      means[c] = cm.mean;
    }
    m["reward/" + name + "/missing"] = component_missing[c];
    const GlobalMoments ts = global_moments(token_sums[c], reducer_);
    if (ts.n > 0) m["reward/" + name + "/token_sum"] = ts.mean;
  }
  // Lagrangian constraints: the multiplier this step used, then one dual-ascent step for the next.
  if (rewards_.has_constraints()) {
    for (const RewardComponent& c : rewards_.components())
      if (c.shaping.constraint_max) m["reward/" + c.name + "/lambda"] = c.lambda;
    rewards_.update_constraints(means);
  }
  if (counts.judged > 0) m["accuracy"] = counts.correct / counts.judged;
  const GlobalMoments l = global_moments(lengths, reducer_);
  struct {
    double length_max, minus_length_min;  // maxima across ranks
  } extremes{.length_max = lengths.empty() ? -1e300 : length_max,
             .minus_length_min = lengths.empty() ? -1e300 : -length_min};
  reducer_.max_fields(extremes);
  m["completion/length_mean"] = l.mean;
  m["completion/length_max"] = l.n > 0 ? extremes.length_max : 0.0;
  m["completion/length_min"] = l.n > 0 ? -extremes.minus_length_min : 0.0;
  m["completion/truncated_frac"] = counts.episodes > 0 ? counts.truncated / counts.episodes : 0.0;
  // KL(sampling distribution || learner's) per sampled token; with replay, the kept sets' mean size.
  if (counts.kl_tokens > 0) m["rollout/sampler_kl"] = counts.sampler_kl / counts.kl_tokens;
  if (counts.kept_tokens > 0) m["rollout/kept_ids_mean"] = counts.kept_ids / counts.kept_tokens;
  DiagnosticSums diag = diagnostic_sums(groups, accuracy_component_);
  reducer_.sum_fields(diag);
  m.update(diagnostics_from_sums(diag));
}

void RlSteps::recompute_old_logprobs(std::vector<ScoredGroup>& groups, Json& metrics) {
  std::vector<Episode*> all;
  std::vector<const Episode*> view;
  for (auto& g : groups)
    for (auto& e : g.group.episodes) {
      if (!e.on_policy || e.tokens.size() < 2 || e.n_policy_tokens() == 0) continue;
      all.push_back(&e);
      view.push_back(&e);
    }
  auto lp = recompute_logprobs(*policy_.model(), view, options_.reference_micro_batch_size,
                               LogprobScope::FromFirstWeighted, /*replay_mask=*/true);
  double diff_max = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    Episode& e = *all[i];
    e.behaviour_logprob = e.old_logprob;
    for (size_t t = 0; t < e.tokens.size(); ++t) {
      if (e.loss_weight[t] <= 0) continue;
      diff_max = std::max(diff_max, std::abs(static_cast<double>(lp[i][t]) - e.old_logprob[t]));
      e.old_logprob[t] = lp[i][t];
    }
  }
  reducer_.max(std::span<double>(&diff_max, 1));
  metrics["mismatch/logprob_diff_max"] = diff_max;  // |trainer - rollout| on policy tokens, before the update
}

void RlSteps::scale_by_semantic_entropy(std::vector<ScoredGroup>& groups, Json& metrics) {
  struct {
    double entropy = 0, scale = 0, groups = 0;
  } sums;
  for (auto& g : groups) {
    auto& eps = g.group.episodes;
    if (eps.size() < 2) continue;
    std::vector<std::string> texts;
    for (const auto& e : eps) texts.push_back(e.completion_text);
    const auto clusters = cluster_answers(extract_answers(texts, math::AnswerFormat::Auto));
    std::vector<int> ids;
    for (int c : clusters) ids.push_back(c == kNoAnswer ? algo::kNoCluster : c);
    const double se = algo::semantic_entropy(ids);
    const double scale = algo::seed_scale(se, eps.size(), options_.seed_alpha);
    for (auto& e : eps)
      for (auto& a : e.advantage) a = static_cast<float>(a * scale);
    sums.entropy += se, sums.scale += scale, sums.groups += 1;
  }
  reducer_.sum_fields(sums);
  if (sums.groups > 0) {
    metrics["seed/semantic_entropy"] = sums.entropy / sums.groups;  // mean over the step's groups
    metrics["seed/scale"] = sums.scale / sums.groups;
  }
}

std::vector<Episode> RlSteps::next(int64_t step, int32_t version, Json& metrics) {
  // Peak memory per phase, where the phases do not overlap (no rollout pipeline).
  const bool phases = options_.max_staleness == 0;
  PhasePeak peak(policy_.model()->device());
  if (phases) peak.begin();
  auto groups = collect_and_score(step, version, metrics);
  if (phases) peak.write(metrics, "rollout"), peak.begin();
  if (fcp_) metrics.update(fcp_->relabel(groups, accuracy_component_).metrics(reducer_));
  const auto t_logprobs = Clock::now();  // the no-grad scoring passes: reference, old policy, teacher
  add_reference_logprobs(groups);
  if (options_.recompute_old_logprobs) recompute_old_logprobs(groups, metrics);
  if (teacher_) metrics.update(teacher_->add_teacher_logprobs(groups).metrics(reducer_));
  metrics["time/logprobs_s"] = seconds_since(t_logprobs);
  if (phases) peak.write(metrics, "reference");
  assign_credit(groups, metrics);
  if (span_credit_) metrics.update(span_credit_->apply(groups, reducer_));
  reward_metrics(groups, metrics);
  std::vector<Episode> out;
  for (const auto& g : groups)
    for (const auto& e : g.group.episodes) out.push_back(e);
  metrics.update(update_share_metrics(out, reducer_));
  last_groups_ = std::move(groups);
  return out;
}

}  // namespace rlf
