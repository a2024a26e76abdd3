// The offline kinds' step source (train/run_kind_dataset.h): each step is the
// data cursor's next batch, each example's episodes in batch order, the
// episodes_of callback told the example and its position; data-parallel ranks
// split every batch by position, together covering it exactly once; the
// cursor's state restores the same batches (what a resume relies on).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "data/data_cursor.h"
#include "train/run_kind_dataset.h"

namespace rlf {
namespace {

// One episode per example whose single token is the example's index, in the position's group.
DatasetSource::EpisodesOf one_per_example() {
  return [](size_t index, int64_t position) {
    return std::vector<Episode>{Episode::single_turn(position, {static_cast<int32_t>(index)}, {1}, {0.0f})};
  };
}

TEST(DatasetSource, GivesTheCursorsBatchesInOrderWithPositionsAsGroups) {
  DataCursor reference(7, DataCursorOptions{3, true, 11});
  DatasetSource source(7, 3, 11, Shard{}, one_per_example());
  for (int step = 0; step < 6; ++step) {  // past an epoch boundary: 7 examples, batches of 3
    const std::vector<size_t> batch = reference.next_batch();
    const std::vector<Episode> eps = source.next();
    ASSERT_EQ(eps.size(), batch.size());
    for (size_t k = 0; k < batch.size(); ++k) {
      EXPECT_EQ(eps[k].tokens.front(), static_cast<int32_t>(batch[k]));
      EXPECT_EQ(eps[k].group, static_cast<int64_t>(k));
    }
  }
}

TEST(DatasetSource, RanksSplitEachBatchByPositionAndCoverItOnce) {
  DatasetSource whole(10, 4, 3, Shard{}, one_per_example());
  DatasetSource rank0(10, 4, 3, Shard{0, 3}, one_per_example());
  DatasetSource rank1(10, 4, 3, Shard{1, 3}, one_per_example());
  DatasetSource rank2(10, 4, 3, Shard{2, 3}, one_per_example());
  for (int step = 0; step < 5; ++step) {
    std::map<int64_t, int32_t> by_position;  // position -> example, over the ranks
    for (DatasetSource* s : {&rank0, &rank1, &rank2})
      for (const Episode& e : s->next()) EXPECT_TRUE(by_position.emplace(e.group, e.tokens.front()).second);
    const std::vector<Episode> all = whole.next();
    ASSERT_EQ(by_position.size(), all.size());
    for (const Episode& e : all) EXPECT_EQ(by_position.at(e.group), e.tokens.front());
  }
  // Rank 1 of 3 keeps positions 1 (of 0..3) only.
  DatasetSource alone(10, 4, 3, Shard{1, 3}, one_per_example());
  const std::vector<Episode> eps = alone.next();
  ASSERT_EQ(eps.size(), 1u);
  EXPECT_EQ(eps[0].group, 1);
}

TEST(DatasetSource, ExamplesWithSeveralEpisodesKeepThemTogetherAndARestoredCursorRepeatsTheBatches) {
  auto pair_of = [](size_t index, int64_t position) {
    std::vector<Episode> out;
    for (int32_t side : {0, 1}) out.push_back(Episode::single_turn(position, {static_cast<int32_t>(index), side}, {1}, {0.0f}));
    return out;
  };
  DatasetSource source(5, 2, 7, Shard{}, pair_of);
  source.next();
  const Json saved = source.cursor().state();
  const std::vector<Episode> a = source.next(), b = source.next();
  DatasetSource resumed(5, 2, 7, Shard{}, pair_of);
  resumed.cursor().restore(saved);
  const std::vector<Episode> ra = resumed.next(), rb = resumed.next();
  ASSERT_EQ(a.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tokens, ra[i].tokens);
    EXPECT_EQ(b[i].tokens, rb[i].tokens);
    EXPECT_EQ(a[i].tokens[1], static_cast<int32_t>(i % 2));  // chosen then rejected, per example
    EXPECT_EQ(a[i].group, static_cast<int64_t>(i / 2));
  }
}

}  // namespace
}  // namespace rlf
