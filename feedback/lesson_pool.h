// A pool of lessons shared across tasks (after LANPO, Wang et al. 2025;
// docs/feedback.md): the critiques or reflections written after failed
// attempts, kept with the prompt of the task they came from, and retrieved
// for any task whose prompt is similar — so what was learnt on one problem
// reaches related ones, which the per-task memory (reflection_memory.h)
// cannot do.
//
// Retrieval: similarity(prompt, lesson's prompt) = Jaccard of their distinct
// word n-grams (util/text_similarity.h; n = `ngram`); the `k` most similar
// lessons with similarity >= `min_similarity` and > 0 (a task with nothing
// in common sees nothing; ties: the newer first), shown least similar first. A lesson already in the pool (same text) is moved to
// the newest place instead of stored twice; beyond `capacity` the oldest
// goes.
//
// Saved as JSON {"format": "rlf-lesson-pool", "version": 1, "source",
// "lessons": [{"task", "prompt", "lesson"}]}; `source` names the dataset the
// lessons came from, and loading refuses another format, version or source.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "feedback/reflection_memory.h"

namespace rlf {

struct LessonPoolOptions {
  int64_t capacity = 256;        // lessons kept (>= 1)
  int64_t k = 3;                 // lessons shown per attempt (>= 1)
  int ngram = 1;                 // word n-gram order of the similarity (1..4)
  double min_similarity = 0.0;   // in [0, 1]
  void validate() const;         // names the option
};

class LessonPool final : public FeedbackMemory {
 public:
  // `source`: what the lessons are about (the dataset), checked on load.
  LessonPool(LessonPoolOptions options, std::string source);

  void add(const std::string& task_id, const std::string& prompt, const std::string& lesson) override;
  std::vector<std::string> recall(const std::string& task_id, const std::string& prompt) const override;
  int64_t size() const override { return static_cast<int64_t>(lessons_.size()); }
  Json to_json() const override;
  void restore(const Json& saved, const std::map<std::string, std::string>& prompts,
               const std::string& where) override;

 private:
  struct Lesson {
    std::string task, prompt, text;
  };
  LessonPoolOptions options_;
  std::string source_;
  std::deque<Lesson> lessons_;  // oldest first
};

}  // namespace rlf
