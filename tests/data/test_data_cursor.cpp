// DataCursor: epochs are permutations, orders depend on the seed, and a
// cursor saved and restored into a fresh one (here across an epoch boundary)
// continues exactly as an uninterrupted one.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "data/data_cursor.h"
#include "tests/data/data_fixtures.h"

namespace rlf {
namespace {

using test::error_of;

std::vector<size_t> take(DataCursor& c, size_t n_batches) {
  std::vector<size_t> all;
  for (size_t i = 0; i < n_batches; ++i) {
    std::vector<size_t> b = c.next_batch();
    all.insert(all.end(), b.begin(), b.end());
  }
  return all;
}

TEST(DataCursor, EachEpochVisitsEveryIndexOnce) {
  DataCursor c(10, {.batch_size = 5, .shuffle = true, .seed = 1});
  std::vector<size_t> e0 = take(c, 2), e1 = take(c, 2);
  EXPECT_EQ(c.epoch(), 1u);
  EXPECT_EQ(c.position(), 10u);
  std::vector<size_t> sorted0 = e0, sorted1 = e1, expected(10);
  std::iota(expected.begin(), expected.end(), size_t{0});
  std::sort(sorted0.begin(), sorted0.end());
  std::sort(sorted1.begin(), sorted1.end());
  EXPECT_EQ(sorted0, expected);
  EXPECT_EQ(sorted1, expected);
  EXPECT_NE(e0, e1);        // reshuffled per epoch
  EXPECT_NE(e0, expected);  // shuffled at all

  DataCursor plain(10, {.batch_size = 4, .shuffle = false});
  EXPECT_EQ(take(plain, 3), (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));  // the last batch straddles
  EXPECT_EQ(plain.epoch(), 1u);
  EXPECT_EQ(plain.position(), 2u);
}

TEST(DataCursor, OrderDependsOnSeedOnly) {
  DataCursor a(100, {.batch_size = 7, .seed = 5}), b(100, {.batch_size = 7, .seed = 5}), c(100, {.batch_size = 7, .seed = 6});
  std::vector<size_t> ta = take(a, 40), tb = take(b, 40), tc = take(c, 40);
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  // The batch size only cuts the same stream differently.
  DataCursor d(100, {.batch_size = 4, .seed = 5});
  EXPECT_EQ(take(d, 70), ta);
}

TEST(DataCursor, SaveRestoreContinuesExactlyAcrossEpochBoundary) {
  const DataCursorOptions opts{.batch_size = 3, .shuffle = true, .seed = 42};
  DataCursor uninterrupted(10, opts);
  std::vector<size_t> reference = take(uninterrupted, 12);  // 36 indices: 3.6 epochs

  DataCursor first(10, opts);
  take(first, 3);  // 9 of 10: the next batch straddles the epoch boundary
  std::string saved = first.state().dump();
  EXPECT_EQ(saved,
            R"({"epoch":0,"format":"rlf.data_cursor","n_items":10,"position":9,"seed":42,"shuffle":true,"version":1})");

  DataCursor resumed(10, {.batch_size = 3, .shuffle = true, .seed = 999});  // the saved seed wins
  resumed.restore(Json::parse(saved));
  std::vector<size_t> rest = take(resumed, 9);
  EXPECT_EQ(rest, std::vector<size_t>(reference.begin() + 9, reference.end()));
  EXPECT_EQ(resumed.epoch(), uninterrupted.epoch());
  EXPECT_EQ(resumed.position(), uninterrupted.position());
  EXPECT_EQ(resumed.state(), uninterrupted.state());

  // Saved exactly at an epoch's end (position == n_items) resumes too.
  DataCursor at_end(10, {.batch_size = 5, .seed = 42});
  take(at_end, 2);
  DataCursor again(10, {.batch_size = 5, .seed = 42});
  again.restore(at_end.state());
  EXPECT_EQ(take(again, 4), take(at_end, 4));
}

TEST(DataCursor, RejectsStatesThatDoNotFit) {
  DataCursor c(10, {.batch_size = 2});
  Json s = c.state();
  DataCursor other(11, {.batch_size = 2});
  EXPECT_EQ(error_of([&] { other.restore(s); }),
            "data cursor state: saved for a dataset of 10 records, this one has 11; resume with the same dataset and options");
  DataCursor unshuffled(10, {.batch_size = 2, .shuffle = false});
  EXPECT_EQ(error_of([&] { unshuffled.restore(s); }),
            "data cursor state: saved with shuffle = true, now false; resume with the same setting");
  Json bad = s;
  bad["position"] = 11;
  EXPECT_EQ(error_of([&] { c.restore(bad); }), "data cursor state: position 11 is beyond the dataset's 10 records");
  bad = s;
  bad.erase("epoch");
  EXPECT_EQ(error_of([&] { c.restore(bad); }), "data cursor state: missing required field 'epoch'");
  bad = s;
  bad["version"] = 2;
  EXPECT_EQ(error_of([&] { c.restore(bad); }), "data cursor state: version 2 is not supported (expected 1)");
  EXPECT_EQ(error_of([] { DataCursor(0, {}); }), "data cursor: the dataset is empty");
  EXPECT_EQ(error_of([] { DataCursor(3, {.batch_size = 0}); }), "data cursor: batch_size must be positive");
}

}  // namespace
}  // namespace rlf
