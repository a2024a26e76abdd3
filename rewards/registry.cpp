// The type -> factory table; options are read and checked before anything starts.
#include "rewards/registry.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "rewards/code_reward.h"
#include "rewards/countdown_reward.h"
#include "rewards/env_reward.h"
#include "rewards/exact_match.h"
#include "rewards/external_reward.h"
#include "rewards/format_reward.h"
#include "rewards/keyword_reward.h"
#include "rewards/length_reward.h"
#include "rewards/majority_reward.h"
#include "rewards/reward_options.h"
#include "rewards/text_overlap.h"

namespace rlf {
namespace {

using Factory = RewardFactory;

// Reads the options (all keys), rejects unknown keys, then constructs: so a
// typo is reported before any expensive start-up (sandbox probe, scorer).
template <typename Options, typename RewardT>
Factory factory(Options (*read)(OptionReader&)) {
  return [read](OptionReader& reader) -> std::unique_ptr<Reward> {
    Options options = read(reader);
    reader.finish();
    return std::make_unique<RewardT>(std::move(options));
  };
}

// bleu, chrf, rouge_l: one reward class, the metric named by the type.
Factory text_overlap(const std::string& metric) {
  return [metric](OptionReader& reader) -> std::unique_ptr<Reward> {
    TextOverlapOptions options = read_text_overlap_options(reader, metric);
    reader.finish();
    return std::make_unique<TextOverlapReward>(std::move(options));
  };
}

// A reward type without options of its own.
template <typename RewardT>
Factory no_options() {
  return [](OptionReader& reader) -> std::unique_ptr<Reward> {
    reader.finish();
    return std::make_unique<RewardT>();
  };
}

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> table = {
      {"bleu", text_overlap("bleu")},
      {"chrf", text_overlap("chrf")},
      {"code", factory<CodeRewardOptions, CodeReward>(read_code_options)},
      {"countdown", no_options<CountdownReward>()},
      {"env", no_options<EnvReward>()},
      {"external", factory<ExternalRewardOptions, ExternalReward>(read_external_options)},
      {"format", factory<FormatRewardOptions, FormatReward>(read_format_options)},
      {"keywords", factory<KeywordRewardOptions, KeywordReward>(read_keyword_options)},
      {"length", factory<LengthRewardOptions, LengthReward>(read_length_options)},
      {"majority", factory<MajorityRewardOptions, MajorityReward>(read_majority_options)},
      {"math", factory<ExactMatchOptions, ExactMatchReward>(read_exact_match_options)},
      {"rouge_l", text_overlap("rouge_l")},
  };
  return table;
}

}  // namespace

std::vector<std::string> reward_types(const RewardFactories& extra) {
  std::set<std::string> names;
  for (const auto& [name, f] : factories()) names.insert(name);
  for (const auto& [name, f] : extra) names.insert(name);
  return {names.begin(), names.end()};
}

std::unique_ptr<Reward> make_reward(const std::string& type, const Json& options, const std::string& where,
                                    const RewardFactories& extra) {
  auto it = factories().find(type);
  auto ext = extra.find(type);
  check(it != factories().end() || ext != extra.end(), where, ": unknown reward type '", type,
        "'; valid types: ", join_names(reward_types(extra)));
  OptionReader reader(options, type, where);
  try {
    return it != factories().end() ? it->second(reader) : ext->second(reader);
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (message.rfind(reader.context(), 0) == 0) throw;  // already says where
    throw Error(reader.context() + ": " + message);
  }
}

RewardSet make_reward_set(const Json& reward_tables, const std::string& where, const RewardFactories& extra) {
  check(reward_tables.is_array(), where, ": rewards must be an array of tables ([[reward]] in TOML), got ",
        reward_tables.type_name());
  check(!reward_tables.empty(), where, ": no rewards configured; add at least one [[reward]] table (types: ",
        join_names(reward_types(extra)), ")");
  RewardSet set;
  for (size_t k = 0; k < reward_tables.size(); ++k) {
    const Json& table = reward_tables[k];
    const std::string at = str(where, " [[reward]] #", k + 1);
    check(table.is_object(), at, ": expected a table, got ", table.type_name());
    auto type = table.find("type");
    check(type != table.end() && type->is_string(), at, ": missing 'type' (a string; one of: ",
          join_names(reward_types(extra)), ")");
    std::string name = type->get<std::string>();
    if (auto n = table.find("name"); n != table.end()) {
      check(n->is_string() && !n->get<std::string>().empty(), at, ": 'name' must be a non-empty string");
      name = n->get<std::string>();
    }
    double weight = 1.0;
    if (auto w = table.find("weight"); w != table.end()) {
      check(w->is_number() && std::isfinite(w->get<double>()), at, ": 'weight' must be a finite number, got ",
            w->dump());
      weight = w->get<double>();
    }
    ComponentShaping shaping = read_component_shaping(table, at);
    std::unique_ptr<Reward> reward = make_reward(type->get<std::string>(), table, at, extra);
    with_context(at, [&] { set.add(name, weight, std::move(reward), std::move(shaping)); });
  }
  with_context(where, [&] { set.resolve_gates(); });
  return set;
}

}  // namespace rlf
