#include "train/lessons.h"

#include <chrono>
#include <cmath>

#include "util/error.h"
#include "util/strings.h"

namespace rlf {

namespace {
constexpr size_t kMaxNotes = 4;
using Clock = std::chrono::steady_clock;
}  // namespace

void LessonOptions::validate() const {
  check(k >= 1, "lessons.k must be >= 1 (got ", k, ")");
  check(capacity >= 1, "lessons.capacity must be >= 1 (got ", capacity, ")");
  check(ngram >= 1 && ngram <= 4, "lessons.ngram must be in [1, 4] (got ", ngram, ")");
  check(std::isfinite(min_similarity) && min_similarity >= 0 && min_similarity <= 1,
        "lessons.min_similarity must be in [0, 1] (got ", min_similarity, ")");
  check(line.find("{lesson}") != std::string::npos, "lessons.line must contain {lesson} (got \"", line, "\")");
  check(max_per_step >= 0, "lessons.max_per_step must be >= 0 (got ", max_per_step, "; 0 = all)");
}

LessonPoolOptions LessonOptions::pool() const {
  LessonPoolOptions p;
  p.capacity = capacity;
  p.k = k;
  p.ngram = static_cast<int>(ngram);
  p.min_similarity = min_similarity;
  return p;
}

LessonStats& LessonStats::operator+=(const LessonStats& o) {
  n_prompts += o.n_prompts, n_with_lessons += o.n_with_lessons, n_shown += o.n_shown, n_cut += o.n_cut;
  n_requests += o.n_requests, n_written += o.n_written, n_critic_failures += o.n_critic_failures;
  n_generated_tokens += o.n_generated_tokens, critic_s += o.critic_s;
  for (const std::string& n : o.notes)
    if (notes.size() < kMaxNotes) notes.push_back(n);
  return *this;
}

Json LessonStats::metrics(Reducer& reducer, int64_t pool_size) const {
  auto d = [](int64_t n) { return static_cast<double>(n); };
  struct {
    double prompts, with_lessons, shown, cut, requests, written, critic_failures, generated_tokens, critic_s;
  } v{.prompts = d(n_prompts),
      .with_lessons = d(n_with_lessons),
      .shown = d(n_shown),
      .cut = d(n_cut),
      .requests = d(n_requests),
      .written = d(n_written),
      .critic_failures = d(n_critic_failures),
      .generated_tokens = d(n_generated_tokens),
      .critic_s = critic_s};
  reducer.sum_fields(v);
  Json m;
  m["lessons/prompts_with_lessons"] = v.prompts > 0 ? v.with_lessons / v.prompts : 0.0;
  m["lessons/shown_per_prompt"] = v.prompts > 0 ? v.shown / v.prompts : 0.0;
  m["lessons/cut"] = v.cut;
  m["lessons/critiques"] = v.requests;
  m["lessons/written"] = v.written;
  m["lessons/critic_failures"] = v.critic_failures;
  m["lessons/generated_tokens"] = v.generated_tokens;
  m["lessons/pool_size"] = pool_size;
  m["time/lessons_critic_s"] = v.critic_s;
  return m;
}

LessonStage::LessonStage(const Tokenizer& tokenizer, int64_t context, int64_t room, bool add_special_tokens,
                         Critic& critic, LessonOptions options, std::string source)
    : tokenizer_(tokenizer),
      context_(context),
      room_(room),
      add_special_tokens_(add_special_tokens),
      critic_(critic),
      options_(std::move(options)),
      pool_((options_.validate(), options_.pool()), std::move(source)) {}

std::vector<PromptExample> LessonStage::show(const std::vector<const PromptExample*>& tasks, LessonStats& st) const {
  std::vector<PromptExample> out;
  out.reserve(tasks.size());
  for (const PromptExample* t : tasks) {
    PromptExample p = *t;
    const std::vector<std::string> lessons = pool_.recall(t->id, t->prompt);  // least similar first
    size_t skip = 0;
    for (; skip < lessons.size(); ++skip) {
      std::string front;
      for (size_t k = skip; k < lessons.size(); ++k) front += replace_all(options_.line, "{lesson}", lessons[k]);
      const std::string candidate = front + t->prompt;
      const int64_t n = static_cast<int64_t>(tokenizer_.encode(candidate, add_special_tokens_).size());
      if (n + room_ <= context_) {
        p.prompt = candidate;
        break;
      }
    }
    ++st.n_prompts;
    st.n_cut += static_cast<int64_t>(skip);
    if (skip < lessons.size()) ++st.n_with_lessons, st.n_shown += static_cast<int64_t>(lessons.size() - skip);
    out.push_back(std::move(p));
  }
  return out;
}

void LessonStage::learn(const std::vector<ScoredGroup>& groups, const std::vector<const PromptExample*>& originals,
                        size_t accuracy_component, LessonStats& st) {
  check(originals.size() == groups.size(), "lessons: ", originals.size(), " tasks for ", groups.size(), " groups");
  std::vector<CritiqueRequest> requests;
  std::vector<size_t> from;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (options_.max_per_step > 0 && static_cast<int64_t>(requests.size()) >= options_.max_per_step) break;
    const ScoredGroup& sg = groups[g];
    bool any_correct = false;
    std::optional<size_t> failed;
    for (size_t i = 0; i < sg.group.episodes.size(); ++i) {
      const Episode& e = sg.group.episodes[i];
      if (e.source != EpisodeSource::Rollout || !e.env_error.empty()) continue;
      if (is_correct(sg, accuracy_component, i)) any_correct = true;
      else if (!failed) failed = i;
    }
    if (any_correct || !failed) continue;
    CritiqueRequest r;
    r.task = originals[g];
    r.prompt = originals[g]->prompt;
    r.response = sg.group.episodes[*failed].transcript();
    r.reward = sg.totals[*failed];
    r.correct = false;
    r.explanation = sg.scores.describe(*failed);
    requests.push_back(std::move(r));
    from.push_back(g);
  }
  if (requests.empty()) return;
  const auto t0 = Clock::now();
  std::vector<Critique> cs = critic_.critique(requests);
  st.critic_s += std::chrono::duration<double>(Clock::now() - t0).count();
  check(cs.size() == requests.size(), "critic '", critic_.name(), "' returned ", cs.size(), " critiques for ",
        requests.size(), " requests");
  st.n_requests += static_cast<int64_t>(requests.size());
  for (size_t k = 0; k < cs.size(); ++k) {
    st.n_generated_tokens += cs[k].n_generated_tokens;
    if (!cs[k].ok) {
      ++st.n_critic_failures;
      if (st.notes.size() < kMaxNotes)
        st.notes.push_back(str("critic '", critic_.name(), "' failed on ", originals[from[k]]->where, ": ", cs[k].error));
      continue;
    }
    pool_.add(originals[from[k]]->id, originals[from[k]]->prompt, cs[k].text);
    ++st.n_written;
  }
}

}  // namespace rlf
