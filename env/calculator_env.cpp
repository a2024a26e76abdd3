#include "env/calculator_env.h"

#include "data/countdown.h"
#include "util/error.h"

namespace rlf {

namespace {

class CalculatorSession final : public EnvironmentSession {
 public:
  CalculatorSession(const CalculatorEnvironment& env, const CalculatorOptions& options) : env_(env), options_(options) {}

  EnvStep step(const PolicyTurn& turn) override {
    EnvStep s;
    const CalculatorSyntax& x = options_.syntax;
    const size_t open = turn.text.rfind(x.call_open);
    std::string expression;
    bool called = false;
    if (open != std::string::npos) {
      const size_t from = open + x.call_open.size();
      const size_t close = turn.text.find(x.call_close, from);
      if (close != std::string::npos) {
        expression = turn.text.substr(from, close - from);
        called = true;
      } else if (turn.stop == x.call_close) {
        expression = turn.text.substr(from);
        called = true;
      }
    }
    if (!called) {
      s.done = true;  // an answer, not a call
      return s;
    }
    s.tool_call = true;
    if (++n_calls_ > options_.max_calls) {
      s.tool_error = true;
      s.done = true;
      s.feedback = str("more than ", options_.max_calls, " calculator calls");
      return s;
    }
    bool error = false;
    s.observation = env_.call(expression, &error);
    s.tool_error = error;
    return s;
  }

 private:
  const CalculatorEnvironment& env_;
  const CalculatorOptions& options_;
  int64_t n_calls_ = 0;
};

}  // namespace

CalculatorEnvironment::CalculatorEnvironment(CalculatorOptions options) : options_(std::move(options)) {
  check(options_.max_calls > 0, "env.max_calls must be > 0 (got ", options_.max_calls, ")");
}

std::string CalculatorEnvironment::call(const std::string& expression, bool* error) const {
  ExactValue v = evaluate_exact(expression);
  *error = !v.ok;
  const CalculatorSyntax& x = options_.syntax;
  return x.result_open + (v.ok ? v.value : "error: " + v.reason) + x.result_close;
}

std::unique_ptr<EnvironmentSession> CalculatorEnvironment::reset(const PromptExample& task, uint64_t,
                                                                 std::string* first_observation) {
  *first_observation = task.prompt;
  return std::make_unique<CalculatorSession>(*this, options_);
}

}  // namespace rlf
