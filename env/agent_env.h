// Black-box agents as environments: an agent program (any language, any
// OpenAI client) runs once per episode and talks to the policy through an
// OpenAI-compatible endpoint that rlf serves during rollouts. Every call the
// agent makes is one policy turn; the episode records the exact ids the
// policy sampled and the exact ids of what the agent said in between, never
// re-tokenizing the history.
//
//   [env]
//   type = "agent"
//   command = ["python3", "examples/agent/agent.py"]   # run once per episode
//   timeout_s = 60          # the agent's whole run (start to result line), seconds
//   chat_template = "auto"  # how conversations are rendered (data/prompt_format.h conversation_format)
//   working_dir = ""        # "" = rlf's; else an existing directory (checked at load)
//   echo_stderr = true      # copy the agent's stderr to rlf's, prefixed "[agent <pid>] "
//   max_agents = 1024       # agents at once (prompts_per_step x group_size of a step must fit);
//                           # a step's agents all start at once, each timed from its own start
//   max_turns = 4           # the generic [env] keys apply: calls per episode at most
//
// The agent program's side (docs/environments.md, "Black-box agents"):
//   - its environment has OPENAI_BASE_URL (http://127.0.0.1:PORT/v1) and
//     OPENAI_API_KEY, which OpenAI clients read: a random key (128 bits, not
//     derived from the seed) that only its own episode accepts (any other
//     key, or its own after the episode ended, gets a 401);
//   - it runs in a PID namespace of its own with a private /proc (see
//     sandbox/child_process.h), so no other agent can read its environment,
//     and everything it starts ends when it ends or when rlf dies;
//   - its stdin has one JSON line: {"protocol": 1, "episode": "a7", "task":
//     {"id", "prompt", "reference", "record"}, "seed": N, "base_url", "api_key"};
//   - it calls POST {base_url}/chat/completions with the whole conversation
//     each time (as OpenAI clients do; the model field is not checked;
//     sampling fields are ignored: the run's [rollout] settings sample, since
//     the run trains on what its policy samples). The reply is
//     choices[0].message.content, plus the extension choices[0].token_ids;
//   - it ends by printing one JSON line on stdout, {"reward": 0.5} (also
//     optional "feedback": "...", "correct": true/false; "reward": null =
//     none), and exiting.
//
// The episode: its prompt is the first call's conversation rendered with
// the chat format (and a generation prompt); each reply is a policy turn;
// the messages a later call adds after the last reply are rendered as the
// continuation of the conversation and appended as an observation (what
// the sampled turn already holds — the EOS or stop string that ended it —
// is not repeated). The result line's reward is the last step's reward
// (the reward component "env").
//
// Failures end only their episode (end_reason "env_error", the reason in
// the log): the agent exits without a result line, runs past timeout_s,
// changes earlier messages or the replies it got, calls twice at once, or
// sends a malformed request (it gets an OpenAI error object and a 400). An
// episode that ends first (env.max_turns, the token budget) answers the
// agent's pending call with a 400 and waits for the agent to exit.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "env/environment.h"

namespace rlf {

inline constexpr int kAgentProtocol = 1;

struct AgentEnvOptions {
  std::vector<std::string> command;  // argv, e.g. ["python3", "agent.py"]; required
  double timeout_s = 60.0;           // the agent's whole run, seconds
  std::string chat_template = "auto";  // "auto" (the tokenizer's; plain without one) or a format name
  std::string working_dir;           // "" = rlf's
  bool echo_stderr = true;           // copy its stderr to rlf's, prefixed "[agent <pid>] "
  std::string host = "127.0.0.1";    // where the endpoint listens (loopback only by default)
  int64_t max_agents = 1024;         // agents running at once (each waiting call holds one HTTP thread);
                                     // an episode beyond it ends with env_error

  void validate() const;  // throws rlf::Error naming the option
};

class AgentEnvironment final : public Environment {
 public:
  // Starts the endpoint (throws rlf::Error when it cannot listen).
  explicit AgentEnvironment(AgentEnvOptions options);
  ~AgentEnvironment() override;
  std::string name() const override { return "agent"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t seed,
                                            std::string* first_observation) override;
  // Starts every agent at once (up to max_agents; the ones beyond fail), then
  // waits for each one's first call: the start-ups' waits overlap.
  std::vector<ResetResult> reset_all(const std::vector<ResetRequest>& requests) override;
  bool gives_rewards() const override { return true; }
  void use_tokenizer(std::shared_ptr<const Tokenizer> tokenizer) override;

  // The endpoint's base URL ("http://127.0.0.1:PORT/v1").
  std::string base_url() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace rlf
