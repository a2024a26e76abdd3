#include "train/rank_balance.h"

#include <algorithm>
#include <numeric>

#include "env/episode_json.h"
#include "util/error.h"

namespace rlf {

std::vector<int64_t> assign_groups_to_ranks(const std::vector<GroupLoad>& groups, int64_t world) {
  check(world >= 1, "assign_groups_to_ranks: world = ", world);
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return groups[a].tokens != groups[b].tokens ? groups[a].tokens > groups[b].tokens : groups[a].slot < groups[b].slot;
  });
  std::vector<int64_t> load(static_cast<size_t>(world), 0), owner(groups.size(), 0);
  for (size_t i : order) {
    const auto r = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());  // first minimum
    owner[i] = static_cast<int64_t>(r);
    load[r] += groups[i].tokens;
  }
  return owner;
}

std::vector<Episode> gather_episodes(const std::vector<Episode>& local, Reducer& reducer) {
  Json mine = Json::array();
  for (const Episode& e : local) mine.push_back(episode_to_json(e));
  const std::vector<uint8_t> bytes = Json::to_cbor(mine);
  std::vector<Episode> all;
  const std::vector<std::string> parts = reducer.all_gather(std::string(bytes.begin(), bytes.end()));
  for (size_t r = 0; r < parts.size(); ++r) {
    const std::string where = "rank " + std::to_string(r) + "'s episodes";
    Json j;
    try {
      j = Json::from_cbor(std::vector<uint8_t>(parts[r].begin(), parts[r].end()));
    } catch (const std::exception& ex) {
      fail(where, ": not readable (", ex.what(), "): do the ranks run the same build?");
    }
    for (const Json& e : j) all.push_back(episode_from_json(e, where));
  }
  return all;
}

}  // namespace rlf
