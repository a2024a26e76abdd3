#include "feedback/lesson_pool.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"
#include "util/text_similarity.h"

namespace rlf {

namespace {
constexpr const char* kLessonPoolFormat = "rlf-lesson-pool";
constexpr int64_t kLessonPoolVersion = 1;
}  // namespace

void LessonPoolOptions::validate() const {
  check(capacity >= 1, "lesson pool capacity must be >= 1 (got ", capacity, ")");
  check(k >= 1, "lessons per attempt must be >= 1 (got ", k, ")");
  check(ngram >= 1 && ngram <= 4, "lesson similarity n-gram order must be in [1, 4] (got ", ngram, ")");
  check(std::isfinite(min_similarity) && min_similarity >= 0 && min_similarity <= 1,
        "lesson min_similarity must be in [0, 1] (got ", min_similarity, ")");
}

LessonPool::LessonPool(LessonPoolOptions options, std::string source)
    : options_(options), source_(std::move(source)) {
  options_.validate();
}

void LessonPool::add(const std::string& task_id, const std::string& prompt, const std::string& lesson) {
  auto same = std::find_if(lessons_.begin(), lessons_.end(), [&](const Lesson& l) { return l.text == lesson; });
  if (same != lessons_.end()) lessons_.erase(same);
  lessons_.push_back({.task = task_id, .prompt = prompt, .text = lesson});
  while (static_cast<int64_t>(lessons_.size()) > options_.capacity) lessons_.pop_front();
}

std::vector<std::string> LessonPool::recall(const std::string&, const std::string& prompt) const {
  struct Scored {
    double similarity;
    size_t age;  // position in the pool: larger = newer
  };
  std::vector<Scored> scored;
  for (size_t i = 0; i < lessons_.size(); ++i) {
    const double s = ngram_jaccard(prompt, lessons_[i].prompt, options_.ngram);
    if (s > 0 && s >= options_.min_similarity) scored.push_back({s, i});
  }
  // Most similar first (ties: newer first), keep k, then show least similar first.
  std::sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    return a.similarity != b.similarity ? a.similarity > b.similarity : a.age > b.age;
  });
  if (static_cast<int64_t>(scored.size()) > options_.k) scored.resize(static_cast<size_t>(options_.k));
  std::vector<std::string> out;
  for (auto it = scored.rbegin(); it != scored.rend(); ++it) out.push_back(lessons_[it->age].text);
  return out;
}

Json LessonPool::to_json() const {
  Json lessons = Json::array();
  for (const Lesson& l : lessons_) lessons.push_back({{"task", l.task}, {"prompt", l.prompt}, {"lesson", l.text}});
  return {{"format", kLessonPoolFormat}, {"version", kLessonPoolVersion}, {"source", source_}, {"lessons", lessons}};
}

void LessonPool::restore(const Json& saved, const std::map<std::string, std::string>&, const std::string& where) {
  check(saved.is_object() && saved.value("format", "") == kLessonPoolFormat, where, ": not an rlf lesson pool");
  const int64_t version = json_require<int64_t>(saved, "version", where);
  check(version == kLessonPoolVersion, where, ": lesson pool format version ", version, " (this rlf reads version ", kLessonPoolVersion,
        ")");
  const std::string source = json_require<std::string>(saved, "source", where);
  check(source == source_, where, ": the lessons are about \"", source, "\", this run's tasks are \"", source_,
        "\" (a pool of another task)");
  std::deque<Lesson> lessons;
  for (const Json& l : json_require<Json>(saved, "lessons", where))
    lessons.push_back({json_require<std::string>(l, "task", where), json_require<std::string>(l, "prompt", where),
                       json_require<std::string>(l, "lesson", where)});
  while (static_cast<int64_t>(lessons.size()) > options_.capacity) lessons.pop_front();
  lessons_ = std::move(lessons);
}

}  // namespace rlf
