#include "env/guess_env.h"

#include <cctype>
#include <cmath>

#include "util/error.h"

namespace rlf {

namespace {

// The first integer written in `text` (optionally signed), if any.
std::optional<int64_t> first_integer(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) continue;
    const bool negative = i > 0 && text[i - 1] == '-';
    int64_t v = 0;
    size_t j = i;
    for (; j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])); ++j) {
      if (v > 1000000000000LL) return std::nullopt;  // absurdly long: not a guess
      v = v * 10 + (text[j] - '0');
    }
    return negative ? -v : v;
  }
  return std::nullopt;
}

class GuessSession final : public EnvironmentSession {
 public:
  GuessSession(int64_t secret, const GuessOptions& options) : secret_(secret), options_(options) {}

  EnvStep step(const PolicyTurn& turn) override {
    EnvStep s;
    const std::optional<int64_t> guess = first_integer(turn.text);
    s.correct = guess && *guess == secret_;
    if (*s.correct) {
      s.reward = options_.win_reward;
      s.done = true;
      s.feedback = "correct";
      return s;
    }
    s.reward = -options_.turn_penalty;
    s.observation = !guess ? " Say a number. " : *guess < secret_ ? " Higher. " : " Lower. ";
    s.feedback = !guess ? "no number" : str("guessed ", *guess);
    return s;
  }

 private:
  int64_t secret_;
  const GuessOptions& options_;
};

int64_t field(const PromptExample& task, const char* name) {
  auto it = task.record.find(name);
  check(it != task.record.end() && it->is_number_integer(), task.where, ": the guess environment needs an integer '",
        name, "' in the record (use the data preset \"guess\")");
  return it->get<int64_t>();
}

}  // namespace

GuessEnvironment::GuessEnvironment(GuessOptions options) : options_(options) {
  check(std::isfinite(options_.win_reward), "env.win_reward must be finite");
  check(std::isfinite(options_.turn_penalty) && options_.turn_penalty >= 0, "env.turn_penalty must be >= 0 (got ",
        options_.turn_penalty, ")");
}

void GuessEnvironment::check_record(const PromptExample& task) const {
  const int64_t lo = field(task, "low"), hi = field(task, "high"), secret = field(task, "secret");
  check(lo <= secret && secret <= hi, task.where, ": 'secret' ", secret, " is outside [low, high] = [", lo, ", ", hi, "]");
}

std::unique_ptr<EnvironmentSession> GuessEnvironment::reset(const PromptExample& task, uint64_t,
                                                            std::string* first_observation) {
  *first_observation = task.prompt;
  return std::make_unique<GuessSession>(field(task, "secret"), options_);
}

}  // namespace rlf
