// PromptPool: parking by pass rate and revisiting by hand on an unshuffled
// cursor, the forced draw when every prompt is parked, the disagreement count
// and drop, the saved state continuing exactly, and errors naming the key.
#include <gtest/gtest.h>

#include "data/prompt_pool.h"
#include "tests/data/data_fixtures.h"

namespace rlf {
namespace {

using test::error_of;

const std::vector<std::string> kIds = {"a", "b", "c", "d"};

PromptOutcome passed(int64_t c, int64_t j) {
  PromptOutcome o;
  o.n_correct = c, o.n_judged = j;
  return o;
}

PromptOutcome gap(double trained, double gold) {
  PromptOutcome o = passed(1, 2);
  o.reward_checked = true, o.trained_mean = trained, o.gold_mean = gold;
  return o;
}

TEST(PromptPool, NeverOrAlwaysSolvedPromptsAreSkippedThenRevisited) {
  PromptPoolOptions o;
  o.difficulty = true;
  o.revisit_after = 2;
  PromptPool pool(kIds, o);
  DataCursor cursor(4, {.batch_size = 2, .shuffle = false});
  PoolDrawStats s;
  EXPECT_EQ(pool.draw(cursor, 2, 0, s), (std::vector<size_t>{0, 1}));
  pool.record(0, passed(4, 4), 0);  // p = 1: parked until 0 + 1 + 2 = 3
  pool.record(1, passed(2, 4), 0);  // active
  EXPECT_EQ(pool.draw(cursor, 2, 1, s), (std::vector<size_t>{2, 3}));
  pool.record(2, passed(0, 4), 1);  // p = 0: parked until 4
  pool.record(3, passed(1, 4), 1);
  pool.record(3, passed(0, 0), 1);  // nothing judged: no pass rate, stays active
  EXPECT_TRUE(pool.parked(0, 2));
  EXPECT_FALSE(pool.parked(0, 3));
  EXPECT_EQ(pool.n_parked(2), 2);
  EXPECT_EQ(s.n_skipped, 0);
  // Step 2, the cursor's next epoch 0 1 2 3: 0 and 2 are parked.
  EXPECT_EQ(pool.draw(cursor, 2, 2, s), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(s.n_skipped, 2);
  // Step 3: 0 is back (parked until 3), 2 is not yet.
  EXPECT_EQ(pool.draw(cursor, 2, 3, s), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(pool.draw(cursor, 2, 3, s), (std::vector<size_t>{3, 0}));
  EXPECT_EQ(s.n_skipped, 3);
  EXPECT_EQ(s.n_forced, 0);

  const Json r = pool.report(3);
  EXPECT_EQ(r["n_visited"], 4);
  EXPECT_EQ(r["n_parked"], 1);
  EXPECT_EQ(r["prompts"][0]["id"], "a");
  EXPECT_DOUBLE_EQ(r["prompts"][0]["pass_rate"].get<double>(), 1.0);
  EXPECT_EQ(r["prompts"][0]["parked_until_step"], 3);
  EXPECT_TRUE(r["prompts"][3]["pass_rate"].is_null());  // its last visit judged nothing
}

TEST(PromptPool, ThresholdsAreInclusive) {
  PromptPoolOptions o;
  o.difficulty = true;
  o.pass_low = 0.25;
  o.pass_high = 0.75;
  o.revisit_after = 1;
  PromptPool pool(kIds, o);
  pool.record(0, passed(1, 4), 0);  // 0.25 <= low
  pool.record(1, passed(3, 4), 0);  // 0.75 >= high
  pool.record(2, passed(2, 4), 0);
  EXPECT_TRUE(pool.parked(0, 1));
  EXPECT_TRUE(pool.parked(1, 1));
  EXPECT_FALSE(pool.parked(2, 1));
  EXPECT_FALSE(pool.parked(0, 2));
  // Without difficulty_pool nothing parks (the pool only filters unreliable rewards).
  PromptPoolOptions off;
  off.reward_disagreement = 0.1;
  PromptPool plain(kIds, off);
  plain.record(0, passed(4, 4), 0);
  EXPECT_FALSE(plain.parked(0, 1));
}

TEST(PromptPool, WhenEveryPromptIsParkedTheNextIsTakenAnyway) {
  PromptPoolOptions o;
  o.difficulty = true;
  const std::vector<std::string> ids = {"a", "b"};
  PromptPool pool(ids, o);
  pool.record(0, passed(0, 2), 0);
  pool.record(1, passed(2, 2), 0);
  DataCursor cursor(2, {.batch_size = 1, .shuffle = false});
  PoolDrawStats s;
  EXPECT_EQ(pool.draw(cursor, 1, 1, s), (std::vector<size_t>{0}));  // 0, 1 skipped, then 0 forced
  EXPECT_EQ(s.n_skipped, 2);
  EXPECT_EQ(s.n_forced, 1);
}

TEST(PromptPool, DisagreeingPromptsAreCountedAndDroppedAfterN) {
  PromptPoolOptions o;
  o.reward_disagreement = 0.3;
  o.drop_after = 2;
  PromptPool pool(kIds, o);
  EXPECT_TRUE(pool.record(1, gap(1.0, 0.5), 0));   // |1 - 0.5| = 0.5 > 0.3
  EXPECT_FALSE(pool.record(1, gap(0.7, 0.5), 1));  // 0.2 is not above 0.3
  EXPECT_FALSE(pool.record(2, gap(0.2, 0.0), 1));
  PromptOutcome unchecked = passed(1, 2);            // no gold score: not a check
  EXPECT_FALSE(pool.record(1, unchecked, 1));
  EXPECT_FALSE(pool.dropped(1));
  EXPECT_TRUE(pool.record(1, gap(0.0, 1.0), 2));
  EXPECT_TRUE(pool.dropped(1));
  EXPECT_EQ(pool.n_dropped(), 1);
  DataCursor cursor(4, {.batch_size = 4, .shuffle = false});
  PoolDrawStats s;
  EXPECT_EQ(pool.draw(cursor, 4, 3, s), (std::vector<size_t>{0, 2, 3, 0}));
  const Json r = pool.report(3);
  EXPECT_EQ(r["n_disagreeing"], 1);
  EXPECT_EQ(r["prompts"][0]["id"], "b");
  EXPECT_EQ(r["prompts"][0]["reward_checks"], 3);
  EXPECT_EQ(r["prompts"][0]["disagreements"], 2);
  EXPECT_EQ(r["prompts"][0]["dropped"], true);
  // Report only: counted, never dropped.
  o.drop_after = 0;
  PromptPool counting(kIds, o);
  for (int k = 0; k < 5; ++k) counting.record(1, gap(1.0, 0.0), k);
  EXPECT_FALSE(counting.dropped(1));
}

TEST(PromptPool, ASavedPoolAndCursorContinueExactly) {
  PromptPoolOptions o;
  o.difficulty = true;
  o.revisit_after = 3;
  o.reward_disagreement = 0.5;
  o.drop_after = 1;
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) ids.push_back("p" + std::to_string(i));
  auto outcome = [](size_t i, int64_t step) {
    PromptOutcome x = passed(static_cast<int64_t>((i * 7 + step) % 5), 4);
    x.reward_checked = true, x.trained_mean = (i == 3 ? 1.5 : 0.5), x.gold_mean = 0.5;
    return x;
  };
  auto run = [&](PromptPool& pool, DataCursor& cursor, int64_t from, int64_t to) {
    std::vector<size_t> all;
    for (int64_t step = from; step < to; ++step) {
      PoolDrawStats s;
      for (size_t i : pool.draw(cursor, 3, step, s)) {
        pool.record(i, outcome(i, step), step);
        all.push_back(i);
      }
    }
    return all;
  };
  PromptPool straight(ids, o);
  DataCursor c1(10, {.batch_size = 3, .shuffle = true, .seed = 5});
  std::vector<size_t> expected = run(straight, c1, 0, 12);

  PromptPool first(ids, o);
  DataCursor c2(10, {.batch_size = 3, .shuffle = true, .seed = 5});
  std::vector<size_t> got = run(first, c2, 0, 5);
  const Json pool_state = Json::parse(first.state().dump()), cursor_state = Json::parse(c2.state().dump());
  PromptPool second(ids, o);
  DataCursor c3(10, {.batch_size = 3, .shuffle = true, .seed = 0});
  second.restore(pool_state, "saved pool");
  c3.restore(cursor_state);
  std::vector<size_t> rest = run(second, c3, 5, 12);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, expected);
  EXPECT_EQ(second.report(12).dump(), straight.report(12).dump());

  // Saved for other prompts: refused with the fix.
  std::vector<std::string> other = ids;
  other[9] = "q9";
  PromptPool elsewhere(other, o);
  EXPECT_EQ(error_of([&] { elsewhere.restore(pool_state, "saved pool"); }),
            "saved pool: saved for other training prompts (their ids differ); resume with the same dataset and "
            "[curation] options");
  PromptPool smaller(kIds, o);
  EXPECT_EQ(error_of([&] { smaller.restore(pool_state, "saved pool"); }),
            "saved pool: saved for 10 training prompts, this run has 4; resume with the same dataset and [curation] "
            "options");
}

TEST(PromptPool, OptionErrorsNameTheKey) {
  PromptPoolOptions o;
  o.pass_low = 0.6, o.pass_high = 0.5;
  EXPECT_EQ(error_of([&] { o.validate(); }), "curation.pool_pass_low (0.6) must be below curation.pool_pass_high "
                                              "(0.5): otherwise every prompt is parked");
  o = PromptPoolOptions{};
  o.drop_after = 2;
  EXPECT_EQ(error_of([&] { o.validate(); }), "curation.drop_disagreeing_after = 2 needs curation.reward_disagreement "
                                              "> 0 (the threshold that makes a disagreement)");
}

}  // namespace
}  // namespace rlf
