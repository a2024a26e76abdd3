// Credit assignment; see credit.h and docs/algorithms.md.
#include "algorithms/credit.h"

#include <cmath>

#include "algorithms/gae.h"
#include "algorithms/names.h"
#include "util/error.h"

namespace rlf::algo {
namespace {

constexpr detail::NameTable<CreditMode, 4> kCreditNames{{
    {CreditMode::Episode, "episode"},
    {CreditMode::Turn, "turn"},
    {CreditMode::Token, "token"},
    {CreditMode::Gae, "gae"},
}};

void check_input(const CreditInput& e, std::size_t i) {
  check(e.token_turn.empty() || e.token_turn.size() == e.loss_weight.size(), "assign_credit: episode ", i, " has ",
        e.token_turn.size(), " token turns for ", e.loss_weight.size(), " tokens");
  check(e.token_reward.empty() || e.token_reward.size() == e.loss_weight.size(), "assign_credit: episode ", i,
        " has ", e.token_reward.size(), " token rewards for ", e.loss_weight.size(), " tokens");
  check(e.value.empty() || e.value.size() == e.loss_weight.size(), "assign_credit: episode ", i, " has ",
        e.value.size(), " values for ", e.loss_weight.size(), " tokens");
  for (double r : e.turn_rewards) check(std::isfinite(r), "assign_credit: episode ", i, " has a non-finite turn reward");
}

double token_reward_at(const CreditInput& e, std::size_t t) { return e.token_reward.empty() ? 0.0 : e.token_reward[t]; }

int64_t turn_of(const CreditInput& e, std::size_t t) { return e.token_turn.empty() ? 0 : e.token_turn[t]; }

// Per-turn rewards r_k (turn rewards + token rewards of the turn, outcome on
// the last turn) for an episode with a present outcome.
std::vector<double> turn_step_rewards(const CreditInput& e) {
  int64_t n_turns = static_cast<int64_t>(e.turn_rewards.size());
  for (std::size_t t = 0; t < e.loss_weight.size(); ++t)
    if (e.loss_weight[t] > 0) n_turns = std::max<int64_t>(n_turns, turn_of(e, t) + 1);
  std::vector<double> r(static_cast<std::size_t>(std::max<int64_t>(1, n_turns)), 0.0);
  for (std::size_t k = 0; k < e.turn_rewards.size(); ++k) r[k] += e.turn_rewards[k];
  for (std::size_t t = 0; t < e.loss_weight.size(); ++t)
    if (e.loss_weight[t] > 0) r[static_cast<std::size_t>(turn_of(e, t))] += token_reward_at(e, t);
  r.back() += *e.outcome;
  return r;
}

// Per-token rewards of `token` and `gae` mode [T] (0 off policy tokens): the
// token reward, the turn reward at its turn's last policy token and the
// outcome at the episode's last policy token. `last` = that token (-1: none,
// and the outcome is placed nowhere).
std::vector<double> token_step_rewards(const CreditInput& e, int64_t* last) {
  const std::size_t T = e.loss_weight.size();
  std::vector<double> r(T, 0.0);
  std::vector<int64_t> last_of_turn;
  *last = -1;
  for (std::size_t t = 0; t < T; ++t) {
    if (e.loss_weight[t] <= 0) continue;
    r[t] = token_reward_at(e, t);
    const std::size_t k = static_cast<std::size_t>(turn_of(e, t));
    if (last_of_turn.size() <= k) last_of_turn.resize(k + 1, -1);
    last_of_turn[k] = static_cast<int64_t>(t);
    *last = static_cast<int64_t>(t);
  }
  for (std::size_t k = 0; k < e.turn_rewards.size() && k < last_of_turn.size(); ++k)
    if (last_of_turn[k] >= 0) r[static_cast<std::size_t>(last_of_turn[k])] += e.turn_rewards[k];
  if (*last >= 0) r[static_cast<std::size_t>(*last)] += *e.outcome;
  return r;
}

}  // namespace

CreditMode parse_credit_mode(std::string_view name) { return detail::parse_name(kCreditNames, "credit mode", name); }

std::vector<std::string> credit_mode_names() { return detail::names_list(kCreditNames); }

std::string_view credit_mode_name(CreditMode mode) { return detail::name_of(kCreditNames, mode); }

void CreditOptions::validate() const {
  check(std::isfinite(gamma) && gamma > 0.0 && gamma <= 1.0, "algorithm.gamma must be in (0, 1] (got ", gamma,
        "; 1 = no discount)");
  check(std::isfinite(lambda) && lambda >= 0.0 && lambda <= 1.0, "algorithm.lambda must be in [0, 1] (got ", lambda,
        "; GAE's lambda: 1 = Monte-Carlo returns, 0 = one-step TD)");
  advantage.validate();
}

std::optional<double> episode_return(const CreditInput& e) {
  if (!e.outcome) return std::nullopt;
  double r = *e.outcome;
  for (double x : e.turn_rewards) r += x;
  if (!e.token_reward.empty())
    for (std::size_t t = 0; t < e.loss_weight.size(); ++t)
      if (e.loss_weight[t] > 0) r += e.token_reward[t];
  return r;
}

std::vector<std::vector<float>> assign_credit(std::span<const CreditInput> episodes, const CreditOptions& options,
                                              const BatchSum& batch_sum, std::vector<std::vector<float>>* returns) {
  options.validate();
  const std::size_t n = episodes.size();
  for (std::size_t i = 0; i < n; ++i) check_input(episodes[i], i);
  std::vector<std::vector<float>> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i].assign(episodes[i].loss_weight.size(), 0.0f);
  const double g = options.gamma;

  // Per-episode returns (episode mode) or their discounted equivalents at the
  // first step (turn/token mode): the statistics every mode normalises with.
  std::vector<std::optional<double>> first_return(n);
  std::vector<int64_t> groups(n);
  std::vector<std::vector<double>> turn_returns(n);   // turn mode
  std::vector<std::vector<double>> token_returns(n);  // token mode, [T] (0 off policy tokens)
  for (std::size_t i = 0; i < n; ++i) {
    const CreditInput& e = episodes[i];
    groups[i] = e.group;
    if (!e.outcome) continue;
    switch (options.mode) {
      case CreditMode::Episode:
        first_return[i] = episode_return(e);
        break;
      case CreditMode::Turn: {
        std::vector<double> r = turn_step_rewards(e);
        std::vector<double>& G = turn_returns[i];
        G.assign(r.size(), 0.0);
        double acc = 0.0;
        for (std::size_t k = r.size(); k-- > 0;) G[k] = acc = r[k] + g * acc;
        first_return[i] = G[0];
        break;
      }
      case CreditMode::Token: {
        int64_t last = -1;
        const std::vector<double> r = token_step_rewards(e, &last);
        std::vector<double>& G = token_returns[i];
        G.assign(r.size(), 0.0);
        if (last < 0) {  // no policy token: the return is the outcome (and turn rewards) alone
          first_return[i] = episode_return(e);
          break;
        }
        double acc = 0.0, first = 0.0;
        for (std::size_t t = r.size(); t-- > 0;) {
          if (e.loss_weight[t] <= 0) continue;
          G[t] = acc = r[t] + g * acc;
          first = acc;
        }
        first_return[i] = first;
        break;
      }
      case CreditMode::Gae:
        break;  // below: the critic is the baseline
    }
  }

  if (options.mode == CreditMode::Gae) {
    if (returns) returns->assign(n, {});
    for (std::size_t i = 0; i < n; ++i) {
      const CreditInput& e = episodes[i];
      if (!e.outcome) continue;
      check(e.value.size() == e.loss_weight.size(), "assign_credit: credit mode gae needs the critic's values (episode ",
            i, " has none)");
      if (returns) (*returns)[i].assign(e.loss_weight.size(), 0.0f);
      if (options.turn_values) {
        // Steps are turns: the value at each turn's first policy token; a turn
        // without policy tokens passes its reward to the previous turn that has one.
        const std::vector<double> turn_r = turn_step_rewards(e);
        std::vector<int64_t> first(turn_r.size(), -1);
        for (std::size_t t = 0; t < e.loss_weight.size(); ++t)
          if (e.loss_weight[t] > 0 && first[static_cast<std::size_t>(turn_of(e, t))] < 0)
            first[static_cast<std::size_t>(turn_of(e, t))] = static_cast<int64_t>(t);
        std::vector<std::size_t> turns;
        std::vector<double> rewards, values;
        double carry = 0.0;
        for (std::size_t k = 0; k < turn_r.size(); ++k) {
          if (first[k] < 0) {
            if (rewards.empty()) carry += turn_r[k];
            else rewards.back() += turn_r[k];
            continue;
          }
          turns.push_back(k);
          rewards.push_back(turn_r[k] + carry);
          carry = 0.0;
          values.push_back(e.value[static_cast<std::size_t>(first[k])]);
        }
        const GaeResult res = gae(rewards, values, g, options.lambda);
        std::vector<double> adv_of_turn(turn_r.size(), 0.0);
        for (std::size_t k = 0; k < turns.size(); ++k) adv_of_turn[turns[k]] = res.advantages[k];
        for (std::size_t t = 0; t < e.loss_weight.size(); ++t) {
          if (e.loss_weight[t] <= 0) continue;
          out[i][t] = static_cast<float>(adv_of_turn[static_cast<std::size_t>(turn_of(e, t))]);
          if (returns) (*returns)[i][t] = std::nanf("");
        }
        if (returns)
          for (std::size_t k = 0; k < turns.size(); ++k)
            (*returns)[i][static_cast<std::size_t>(first[turns[k]])] = static_cast<float>(res.returns[k]);
        continue;
      }
      int64_t last = -1;
      const std::vector<double> r = token_step_rewards(e, &last);
      std::vector<std::size_t> steps;
      std::vector<double> rewards, values;
      for (std::size_t t = 0; t < r.size(); ++t) {
        if (e.loss_weight[t] <= 0) continue;
        steps.push_back(t);
        rewards.push_back(r[t]);
        values.push_back(e.value[t]);
      }
      const GaeResult res = gae(rewards, values, g, options.lambda);
      for (std::size_t k = 0; k < steps.size(); ++k) {
        out[i][steps[k]] = static_cast<float>(res.advantages[k]);
        if (returns) (*returns)[i][steps[k]] = static_cast<float>(res.returns[k]);
      }
    }
  } else {
    const auto base = advantage_baselines(first_return, groups, options.advantage, batch_sum);
    for (std::size_t i = 0; i < n; ++i) {
      const CreditInput& e = episodes[i];
      if (!first_return[i] || !base[i].has_baseline) continue;
      const double b = base[i].baseline, s = base[i].scale;
      for (std::size_t t = 0; t < e.loss_weight.size(); ++t) {
        if (e.loss_weight[t] <= 0) continue;
        double ret = 0.0;
        switch (options.mode) {
          case CreditMode::Episode: ret = *first_return[i]; break;
          case CreditMode::Turn: ret = turn_returns[i][static_cast<std::size_t>(turn_of(e, t))]; break;
          case CreditMode::Token: ret = token_returns[i][t]; break;
          case CreditMode::Gae: break;
        }
        out[i][t] = static_cast<float>((ret - b) / s);
      }
    }
  }
  if (options.whiten) {
    std::vector<std::vector<uint8_t>> mask(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!episodes[i].outcome) continue;
      mask[i].assign(episodes[i].loss_weight.size(), 0);
      for (std::size_t t = 0; t < mask[i].size(); ++t) mask[i][t] = episodes[i].loss_weight[t] > 0;
    }
    whiten(out, mask, batch_sum);
  }
  return out;
}

}  // namespace rlf::algo
