// The lesson pool (LANPO-style, feedback/lesson_pool.h): retrieval by word
// n-gram Jaccard of the prompts, k at most, least similar shown first, the
// threshold, capacity and de-duplication, and persistence that refuses
// another format, version or source.
#include "feedback/lesson_pool.h"

#include <gtest/gtest.h>

#include "tests/support/test_env.h"

namespace rlf {
namespace {

TEST(LessonPool, RetrievesTheMostSimilarTasksLessonsLeastSimilarFirst) {
  LessonPoolOptions o;
  o.k = 2;
  LessonPool pool(o, "preset arithmetic");
  pool.add("a", "What is 12 + 7?", "carry the ten");
  pool.add("b", "Name a colour of the sky.", "answer with one word");
  pool.add("c", "What is 30 - 4?", "borrow from the tens");
  EXPECT_EQ(pool.size(), 3);
  // Unigrams of "What is 12 + 9?": {what, is, 12, +, 9, ?}; with a: {what, is, 12, +, 7, ?} -> 5/7;
  // with c: {what, is, 30, -, 4, ?} -> 3/9; with b nothing in common -> 0, never shown.
  EXPECT_EQ(pool.recall("new", "What is 12 + 9?"), (std::vector<std::string>{"borrow from the tens", "carry the ten"}));
  // A threshold drops the weak match; k = 1 keeps the best.
  LessonPoolOptions strict = o;
  strict.min_similarity = 0.5;
  LessonPool p2(strict, "s");
  p2.add("a", "What is 12 + 7?", "carry the ten");
  p2.add("c", "What is 30 - 4?", "borrow from the tens");
  EXPECT_EQ(p2.recall("new", "What is 12 + 9?"), (std::vector<std::string>{"carry the ten"}));
  EXPECT_TRUE(p2.recall("new", "Name a colour.").empty());
  // Ties go to the newer lesson.
  LessonPoolOptions one = o;
  one.k = 1;
  LessonPool p3(one, "s");
  p3.add("x", "same prompt", "old");
  p3.add("y", "same prompt", "new");
  EXPECT_EQ(p3.recall("z", "same prompt"), (std::vector<std::string>{"new"}));
}

TEST(LessonPool, CapacityDeduplicationAndPersistence) {
  LessonPoolOptions o;
  o.capacity = 2;
  LessonPool pool(o, "tasks.jsonl");
  pool.add("a", "p a", "one");
  pool.add("b", "p b", "two");
  pool.add("c", "p c", "one");  // already there: moved to the newest place, not stored twice
  EXPECT_EQ(pool.size(), 2);
  pool.add("d", "p d", "three");  // "two" is now the oldest and goes
  const Json j = pool.to_json();
  ASSERT_EQ(j.at("lessons").size(), 2u);
  EXPECT_EQ(j.at("lessons")[0].at("lesson"), "one");
  EXPECT_EQ(j.at("lessons")[1].at("lesson"), "three");
  test::TempDir dir;
  pool.save(dir / "pool.json");
  LessonPool again(o, "tasks.jsonl");
  again.load(dir / "pool.json", {});
  EXPECT_EQ(again.to_json(), j);
  LessonPool other(o, "other.jsonl");
  EXPECT_NE(test::error_of([&] { other.load(dir / "pool.json", {}); }).find(
                "the lessons are about \"tasks.jsonl\", this run's tasks are \"other.jsonl\" (a pool of another task)"),
            std::string::npos);
  Json old = j;
  old["version"] = 7;
  EXPECT_EQ(test::error_of([&] { again.restore(old, {}, "pool.json"); }),
            "pool.json: lesson pool format version 7 (this rlf reads version 1)");
  ReflectionMemory memory(2);  // a per-task memory file is not a pool, and the other way round
  EXPECT_EQ(test::error_of([&] { again.restore(memory.to_json(), {}, "m.json"); }), "m.json: not an rlf lesson pool");
  EXPECT_EQ(test::error_of([&] { memory.restore(j, {}, "p.json"); }), "p.json: not an rlf reflection memory");
  LessonPoolOptions bad;
  bad.ngram = 0;
  EXPECT_EQ(test::error_of([&] { LessonPool p(bad, "s"); }), "lesson similarity n-gram order must be in [1, 4] (got 0)");
}

}  // namespace
}  // namespace rlf
