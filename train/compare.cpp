#include "train/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <set>

#include "config/toml_config.h"
#include "util/error.h"
#include "util/fs.h"

namespace rlf {

namespace {

void mean_std(const std::vector<double>& v, double* mean, double* sd) {
  const MeanSe m = mean_se(v);
  *mean = m.mean, *sd = m.sd;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

MeanSe mean_se(const std::vector<double>& v) {
  MeanSe m;
  m.n = static_cast<int64_t>(v.size());
  if (v.empty()) return m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  if (v.size() < 2) return m;
  double sq = 0;
  for (double x : v) sq += (x - m.mean) * (x - m.mean);
  m.sd = std::sqrt(sq / static_cast<double>(v.size() - 1));
  m.se = m.sd / std::sqrt(static_cast<double>(v.size()));
  return m;
}

void CompareOptions::validate() const {
  check(seeds >= 1 && seeds <= 1000, "--seeds must be in [1, 1000] (got ", seeds, ")");
  check(!out_dir.empty(), "--out must not be empty");
}

Json CompareResult::to_json() const {
  Json j;
  j["seeds"] = seeds;
  j["rollout_token_budget"] = rollout_token_budget;
  j["configs"] = Json::array();
  for (const CompareEntry& e : entries) {
    Json c = {{"config", e.config},
              {"name", e.name},
              {"pass1_after_mean", e.pass1_after_mean},
              {"pass1_after_std", e.pass1_after_std},
              {"pass1_after_se", e.pass1_after_se},
              {"vs_first_mean", e.vs_first_mean},
              {"vs_first_se", e.vs_first_se},
              {"vs_first_ahead", e.vs_first_ahead},
              {"gain_mean", e.gain_mean},
              {"gain_std", e.gain_std},
              {"rollout_tokens_mean", e.rollout_tokens_mean},
              {"rl_s_mean", e.rl_s_mean},
              {"runs", Json::array()}};
    for (const CompareRun& r : e.runs)
      c["runs"].push_back({{"seed", r.seed},
                           {"pass1_before", r.pass1_before},
                           {"pass1_after", r.pass1_after},
                           {"steps", r.steps},
                           {"rollout_tokens", r.rollout_tokens},
                           {"wall_s", r.wall_s},
                           {"rl_s", r.rl_s},
                           {"pass1_control", r.pass1_control}});
    j["configs"].push_back(std::move(c));
  }
  return j;
}

std::string CompareResult::table() const {
  const std::string first = entries.empty() ? "" : entries[0].name;
  std::string out = "| config | pass@1 after (mean ± s.e.) | per seed | vs " + first +
                    " (paired mean ± s.e., seeds ahead) | gain (mean ± std) | steps (mean) | rollout tokens (mean) | "
                    "RL time s (mean) |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  std::vector<double> control;
  for (const CompareEntry& e : entries) {
    double steps = 0;
    std::string per_seed;
    for (const CompareRun& r : e.runs) {
      steps += static_cast<double>(r.steps);
      per_seed += (per_seed.empty() ? "" : " ") + fmt("%.3f", r.pass1_after);
      if (r.pass1_control >= 0 && control.size() < e.runs.size()) control.push_back(r.pass1_control);
    }
    steps /= std::max<size_t>(1, e.runs.size());
    const std::string vs = &e == &entries[0] ? "baseline"
                                             : fmt("%+.3f", e.vs_first_mean) + " ± " + fmt("%.3f", e.vs_first_se) +
                                                   ", " + std::to_string(e.vs_first_ahead) + " of " +
                                                   std::to_string(e.runs.size());
    out += "| " + e.name + " | " + fmt("%.3f", e.pass1_after_mean) + " ± " + fmt("%.3f", e.pass1_after_se) + " | " +
           per_seed + " | " + vs + " | " + fmt("%+.3f", e.gain_mean) + " ± " + fmt("%.3f", e.gain_std) + " | " +
           fmt("%.0f", steps) + " | " + fmt("%.0f", e.rollout_tokens_mean) + " | " + fmt("%.0f", e.rl_s_mean) + " |\n";
  }
  if (!control.empty()) {
    const MeanSe c = mean_se(control);
    std::string per_seed;
    for (double x : control) per_seed += (per_seed.empty() ? "" : " ") + fmt("%.3f", x);
    out += "| SFT alone (run.sft_control) | " + fmt("%.3f", c.mean) + " ± " + fmt("%.3f", c.se) + " | " + per_seed +
           " | | | | | |\n";
  }
  return out;
}

CompareResult compare_configs(const std::vector<std::filesystem::path>& configs, const CompareOptions& o) {
  o.validate();
  check(!configs.empty(), "rlf compare needs at least one config");
  std::set<std::string> names;
  std::vector<TrainConfig> base;
  CompareResult result;
  result.seeds = o.seeds;
  for (size_t i = 0; i < configs.size(); ++i) {
    TrainConfig c = load_train_config(configs[i], o.overrides);
    check(c.kind == TrainerKind::Rl, configs[i].string(), ": rlf compare compares RL methods (trainer.kind = \"grpo\")");
    check(c.has_data && !c.rewards.empty(), configs[i].string(),
          ": rlf compare reports held-out pass@1: the config needs [data] with an eval split and a [[reward]]");
    const std::string name = configs[i].stem().string();
    check(names.insert(name).second, "two configs are named '", name, "': rename one (each gets out_dir/", name, ")");
    if (i == 0) result.rollout_token_budget = c.run.rollout_token_budget;
    check(c.run.rollout_token_budget == result.rollout_token_budget, "configs differ in run.rollout_token_budget (",
          configs[0].string(), ": ", result.rollout_token_budget, ", ", configs[i].string(), ": ",
          c.run.rollout_token_budget, "); a comparison gives every method the same budget: set it in the files or with "
          "--set run.rollout_token_budget=N");
    base.push_back(std::move(c));
  }
  for (size_t i = 0; i < configs.size(); ++i) {
    CompareEntry e;
    e.config = configs[i].string();
    e.name = configs[i].stem().string();
    std::vector<double> after, gain, tokens, rl_s;
    for (int64_t s = 0; s < o.seeds; ++s) {
      std::vector<std::string> ov = o.overrides;
      const std::filesystem::path dir = o.out_dir / e.name / ("seed-" + std::to_string(s));
      ov.push_back("run.seed=" + std::to_string(s));
      // Every method of one seed starts from the same warm start: trained once, then loaded.
      const bool user_cache = std::any_of(o.overrides.begin(), o.overrides.end(), [](const std::string& x) {
        return x.rfind("run.warm_start_cache=", 0) == 0;
      });
      if (!user_cache) ov.push_back("run.warm_start_cache=\"" + (o.out_dir / "warm_start").string() + "\"");
      ov.push_back("run.out_dir=\"" + dir.string() + "\"");
      TrainConfig c = load_train_config(configs[i], ov);
      CompareRun r;
      r.seed = s;
      const std::filesystem::path summary = dir / "summary.json";
      const std::filesystem::path saved_config = dir / "config.json";
      if (std::filesystem::exists(summary) && std::filesystem::exists(saved_config) &&
          read_json_file(saved_config.string()) == c.raw) {
        const Json j = read_json_file(summary.string());
        r.pass1_before = j.value("pass1_before", -1.0);
        r.pass1_after = j.value("pass1_after", -1.0);
        r.steps = j.value("steps", int64_t{0});
        r.rollout_tokens = j.value("rollout_tokens", int64_t{0});
        r.wall_s = j.value("wall_s", 0.0);
        r.rl_s = j.value("steps_wall_s", 0.0);
        const Json control = j.value("pass1_control", Json(nullptr));
        r.pass1_control = control.is_number() ? control.get<double>() : -1.0;
        r.reused = true;
      } else {
        TrainRunOptions ro;
        ro.quiet = true;
        ro.read_env = o.read_env;
        TrainRunSummary sum = with_context(str(e.config, " (seed ", s, ")"), [&] { return run_training(c, ro); });
        r.pass1_before = sum.pass1_before;
        r.pass1_after = sum.pass1_after;
        r.steps = sum.steps;
        r.rollout_tokens = sum.rollout_tokens;
        r.wall_s = sum.wall_s;
        r.rl_s = sum.steps_wall_s;
        r.pass1_control = sum.pass1_control;
      }
      if (!o.quiet)
        std::cout << "compare: " << e.name << " seed " << s << ": pass@1 " << fmt("%.3f", r.pass1_before) << " -> "
                  << fmt("%.3f", r.pass1_after) << ", " << r.steps << " steps, " << r.rollout_tokens << " tokens, "
                  << fmt("%.0f", r.wall_s) << " s" << (r.reused ? " (earlier run)" : "") << std::endl;
      after.push_back(r.pass1_after);
      gain.push_back(r.pass1_after - r.pass1_before);
      tokens.push_back(static_cast<double>(r.rollout_tokens));
      rl_s.push_back(r.rl_s);
      e.runs.push_back(r);
    }
    mean_std(after, &e.pass1_after_mean, &e.pass1_after_std);
    e.pass1_after_se = mean_se(after).se;
    if (!result.entries.empty()) {  // paired against the first config, seed by seed
      const CompareEntry& base_entry = result.entries[0];
      std::vector<double> diff;
      for (size_t k = 0; k < e.runs.size() && k < base_entry.runs.size(); ++k) {
        diff.push_back(e.runs[k].pass1_after - base_entry.runs[k].pass1_after);
        e.vs_first_ahead += diff.back() > 0;
      }
      const MeanSe d = mean_se(diff);
      e.vs_first_mean = d.mean, e.vs_first_se = d.se;
    }
    mean_std(gain, &e.gain_mean, &e.gain_std);
    double sd = 0;
    mean_std(tokens, &e.rollout_tokens_mean, &sd);
    mean_std(rl_s, &e.rl_s_mean, &sd);
    result.entries.push_back(std::move(e));
  }
  return result;
}

}  // namespace rlf
