// Lessons in the prompts of training rollouts (after LANPO, Wang et al.
// 2025; docs/feedback.md), a stage of RL steps around collection:
//
//   show   before collecting, each task's prompt gets the lessons of the k
//          most similar tasks from the pool (feedback/lesson_pool.h), one
//          `line` each, in front of the prompt; the group's episodes are
//          sampled, scored and trained with them in context
//   learn  after scoring, every group with no correct episode (up to
//          max_per_step per step) sends its first failed episode — task
//          prompt without lessons, response, the rewards' words — to the
//          critic ([critic]); the critique becomes a lesson of that task
//
// Context rule: when a prompt with its lessons leaves less room than the
// episode needs (rollout.max_new_tokens, or the environment's episode
// budget), its least similar lessons go first (counted: lessons/cut).
// Held-out evaluation shows no lessons: what is measured is what the policy
// learnt, not what it is told. The pool is saved in every checkpoint and
// restored on resume; a critic that fails leaves the pool as it was
// (counted: lessons/critic_failures).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "feedback/critic.h"
#include "feedback/lesson_pool.h"
#include "tokenizer/tokenizer.h"
#include "train/reducer.h"
#include "env/scored_group.h"
#include "util/json_util.h"

namespace rlf {

struct LessonOptions {
  bool enabled = false;                   // [lessons] enabled
  int64_t k = 2;                          // lessons shown per task
  int64_t capacity = 256;                 // lessons kept (the oldest go first)
  int64_t ngram = 1;                      // word n-gram order of the prompt similarity
  double min_similarity = 0.1;            // lessons of less similar tasks are not shown
  std::string line = "Lesson: {lesson}\n";  // one per lesson, before the prompt
  int64_t max_per_step = 0;               // failed groups critiqued per step at most (0 = all)

  void validate() const;                  // names the lessons.* key
  LessonPoolOptions pool() const;
};

struct LessonStats {
  int64_t n_prompts = 0;           // prompts shown
  int64_t n_with_lessons = 0;      // ... with at least one lesson
  int64_t n_shown = 0;             // lessons shown
  int64_t n_cut = 0;               // lessons left out to fit the context
  int64_t n_requests = 0;          // critiques asked for
  int64_t n_written = 0;           // lessons added to the pool
  int64_t n_critic_failures = 0;   // critiques that failed (nothing added)
  int64_t n_generated_tokens = 0;  // tokens a local critic model generated
  double critic_s = 0;
  std::vector<std::string> notes;  // the first few critic failures

  LessonStats& operator+=(const LessonStats& o);
  Json metrics(Reducer& reducer, int64_t pool_size) const;  // "lessons/*"
};

class LessonStage {
 public:
  // `room`: the tokens an episode needs after its prompt; `context`: the
  // model's; `source` names the dataset (checked when a saved pool is restored).
  LessonStage(const Tokenizer& tokenizer, int64_t context, int64_t room, bool add_special_tokens, Critic& critic,
              LessonOptions options, std::string source);

  // Copies of `tasks` whose prompts carry their lessons.
  std::vector<PromptExample> show(const std::vector<const PromptExample*>& tasks, LessonStats& stats) const;
  // Lessons from the groups without a correct episode; `originals[g]` is
  // group g's task without lessons.
  void learn(const std::vector<ScoredGroup>& groups, const std::vector<const PromptExample*>& originals,
             size_t accuracy_component, LessonStats& stats);

  LessonPool& pool() { return pool_; }
  const LessonPool& pool() const { return pool_; }

 private:
  const Tokenizer& tokenizer_;
  int64_t context_, room_;
  bool add_special_tokens_;
  Critic& critic_;
  LessonOptions options_;
  LessonPool pool_;
};

}  // namespace rlf
