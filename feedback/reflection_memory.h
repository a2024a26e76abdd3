// Episodic memory of reflections per task (Reflexion, Shinn et al. 2023;
// docs/feedback.md): after a failed attempt the task gets a reflection (a
// critique the policy or another critic wrote); later attempts see the
// task's reflections in their prompt. At most `capacity` per task (the
// oldest goes first).
//
// Saved as JSON {"format": "rlf-reflection-memory", "version": 1, "tasks":
// [{"id", "prompt_hash", "reflections"}]}; loading refuses another format or
// version, and a task whose prompt differs from the dataset's (a memory of
// another task or dataset), naming it.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "util/json_util.h"

namespace rlf {

// What an attempt is shown from earlier attempts' feedback: the per-task
// episodic memory below, or the pool of lessons shared across related tasks
// (feedback/lesson_pool.h).
class FeedbackMemory {
 public:
  virtual ~FeedbackMemory() = default;
  // Keeps `text` (a reflection or lesson written after a failed attempt at the task).
  virtual void add(const std::string& task_id, const std::string& prompt, const std::string& text) = 0;
  // What an attempt at the task sees, least important first (the context rule drops from the front).
  virtual std::vector<std::string> recall(const std::string& task_id, const std::string& prompt) const = 0;
  virtual int64_t size() const = 0;  // texts stored
  virtual Json to_json() const = 0;
  // `prompts`: task id -> prompt of the dataset in use.
  virtual void restore(const Json& saved, const std::map<std::string, std::string>& prompts,
                       const std::string& where) = 0;
  void save(const std::filesystem::path& path) const;  // atomic
  void load(const std::filesystem::path& path, const std::map<std::string, std::string>& prompts);
};

class ReflectionMemory final : public FeedbackMemory {
 public:
  explicit ReflectionMemory(int64_t capacity = 3);

  void add(const std::string& task_id, const std::string& prompt, const std::string& reflection) override;
  // The task's reflections, oldest first (empty when none).
  std::vector<std::string> reflections(const std::string& task_id) const;
  std::vector<std::string> recall(const std::string& task_id, const std::string&) const override {
    return reflections(task_id);
  }
  int64_t size() const override;  // reflections stored

  Json to_json() const override;
  void restore(const Json& saved, const std::map<std::string, std::string>& prompts,
               const std::string& where) override;

 private:
  struct Task {
    std::string prompt_hash;
    std::deque<std::string> reflections;
  };
  int64_t capacity_;
  std::map<std::string, Task> tasks_;
};

}  // namespace rlf
