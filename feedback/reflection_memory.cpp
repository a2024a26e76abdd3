#include "feedback/reflection_memory.h"

#include <cstdio>

#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"

namespace rlf {

namespace {
constexpr const char* kMemoryFormat = "rlf-reflection-memory";
constexpr int64_t kMemoryVersion = 1;
}  // namespace


ReflectionMemory::ReflectionMemory(int64_t capacity) : capacity_(capacity) {
  check(capacity_ >= 1, "reflexion memory size must be >= 1 (got ", capacity_, ")");
}

void ReflectionMemory::add(const std::string& task_id, const std::string& prompt, const std::string& reflection) {
  Task& t = tasks_[task_id];
  t.prompt_hash = fnv1a64_hex(prompt);
  t.reflections.push_back(reflection);
  while (static_cast<int64_t>(t.reflections.size()) > capacity_) t.reflections.pop_front();
}

std::vector<std::string> ReflectionMemory::reflections(const std::string& task_id) const {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end()) return {};
  return {it->second.reflections.begin(), it->second.reflections.end()};
}

int64_t ReflectionMemory::size() const {
  int64_t n = 0;
  for (const auto& [id, t] : tasks_) n += static_cast<int64_t>(t.reflections.size());
  return n;
}

Json ReflectionMemory::to_json() const {
  Json tasks = Json::array();
  for (const auto& [id, t] : tasks_)
    tasks.push_back({{"id", id}, {"prompt_hash", t.prompt_hash},
                     {"reflections", std::vector<std::string>(t.reflections.begin(), t.reflections.end())}});
  return {{"format", kMemoryFormat}, {"version", kMemoryVersion}, {"tasks", tasks}};
}

void ReflectionMemory::restore(const Json& saved, const std::map<std::string, std::string>& prompts,
                               const std::string& where) {
  check(saved.is_object() && saved.value("format", "") == kMemoryFormat, where, ": not an rlf reflection memory");
  const int64_t version = json_require<int64_t>(saved, "version", where);
  check(version == kMemoryVersion, where, ": reflection memory format version ", version, " (this rlf reads version ",
        kMemoryVersion, ")");
  std::map<std::string, Task> tasks;
  for (const Json& t : json_require<Json>(saved, "tasks", where)) {
    const std::string id = json_require<std::string>(t, "id", where);
    auto p = prompts.find(id);
    check(p != prompts.end(), where, ": the memory holds task '", id,
          "', which is not in this dataset (a memory of another task or dataset)");
    const std::string hash = json_require<std::string>(t, "prompt_hash", where);
    check(hash == fnv1a64_hex(p->second), where, ": the memory's task '", id,
          "' had another prompt (a memory of another dataset or prompt template)");
    Task task;
    task.prompt_hash = hash;
    for (const std::string& r : json_require<std::vector<std::string>>(t, "reflections", where)) {
      task.reflections.push_back(r);
      while (static_cast<int64_t>(task.reflections.size()) > capacity_) task.reflections.pop_front();
    }
    tasks[id] = std::move(task);
  }
  tasks_ = std::move(tasks);
}

void FeedbackMemory::save(const std::filesystem::path& path) const {
  write_file_atomic(path, to_json().dump(1));
}

void FeedbackMemory::load(const std::filesystem::path& path, const std::map<std::string, std::string>& prompts) {
  restore(read_json_file(path.string()), prompts, path.string());
}

}  // namespace rlf
