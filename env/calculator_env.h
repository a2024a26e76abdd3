// The calculator tool: the policy writes a call in its text and the
// environment appends the result, e.g.
//   policy:       What is 347 * 58? ... <calc>347*58</calc>
//   observation:  <result>20126</result>
//   policy:       #### 20126
// A turn that ends with a call (the closing tag is a turn stop string, so the
// engine pauses there) gets the result appended and the policy continues; a
// turn without a call ends the episode (the reward set scores its text).
// Expressions: integers, + - * /, parentheses, evaluated exactly
// (data/countdown.h evaluate_exact: "163/2" for a fraction); an invalid one
// gets "<result>error: REASON</result>" and counts as a tool error. Tool
// output is an observation: loss weight 0, never trained on.
//
// Options ([env], docs/environments.md): max_calls (per episode; a call
// beyond it ends the episode as a tool error). The tags are
// data/synthetic_tasks.h's CalculatorSyntax, shared with the SFT data that
// shows the policy how to call the tool.
#pragma once

#include "data/synthetic_tasks.h"
#include "env/environment.h"

namespace rlf {

struct CalculatorOptions {
  CalculatorSyntax syntax;   // <calc>...</calc> -> <result>...</result>
  int64_t max_calls = 4;     // calls per episode; one more ends the episode
};

class CalculatorEnvironment final : public Environment {
 public:
  explicit CalculatorEnvironment(CalculatorOptions options);
  std::string name() const override { return "calculator"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t seed,
                                            std::string* first_observation) override;
  std::vector<std::string> turn_stops() const override { return {options_.syntax.call_close}; }

  // The tool itself: the observation for one call's expression.
  std::string call(const std::string& expression, bool* error) const;

 private:
  CalculatorOptions options_;
};

}  // namespace rlf
