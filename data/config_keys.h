// Config tables: rejecting keys an Options struct does not have, so a typo
// ("shufle") is an error naming the key instead of a silently ignored setting.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "data/synthetic_tasks.h"
#include "util/json_util.h"

namespace rlf {

// Throws rlf::Error naming `source` when `table` is not an object or has a
// key outside `known` ("<source>: unknown key 'x' (expected one of a, b)").
inline void check_known_keys(const Json& table, const std::vector<std::string>& known, const std::string& source) {
  check(table.is_object(), source, ": expected a table");
  for (const auto& [key, _] : table.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    fail(source, ": unknown key '", key, "' (expected one of ", list, ")");
  }
}

// Reads the keys prompt and SFT dataset tables share (path, preset,
// system_prompt, chat_template, prompt_template, shuffle, seed, max_records,
// on_bad_record, arithmetic, countdown) into `o`, keeping o's defaults for
// absent keys. Errors name `src` and the key.
template <class DatasetOptions>
void read_shared_dataset_keys(const Json& t, const std::string& src, DatasetOptions& o) {
  o.path = json_get_or(t, "path", o.path, src);
  o.preset = json_get_or(t, "preset", o.preset, src);
  o.system_prompt = json_get_or(t, "system_prompt", o.system_prompt, src);
  o.chat_template = json_get_or(t, "chat_template", o.chat_template, src);
  o.prompt_template = json_get_or(t, "prompt_template", o.prompt_template, src);
  o.shuffle = json_get_or(t, "shuffle", o.shuffle, src);
  check(!t.contains("seed") || !t["seed"].is_number_integer() || t["seed"].is_number_unsigned() ||
            t["seed"].template get<int64_t>() >= 0,
        src, ": seed must be a non-negative integer");
  o.seed = json_get_or(t, "seed", o.seed, src);
  o.max_records = json_get_or(t, "max_records", o.max_records, src);
  o.on_bad_record = json_get_or(t, "on_bad_record", o.on_bad_record, src);
  if (t.contains("arithmetic")) o.arithmetic = arithmetic_options_from_json(t["arithmetic"], src + " arithmetic");
  if (t.contains("countdown")) o.countdown = countdown_options_from_json(t["countdown"], src + " countdown");
  if constexpr (requires { o.guess; }) {
    if (t.contains("guess")) o.guess = guess_options_from_json(t["guess"], src + " guess");
  }
}

}  // namespace rlf
