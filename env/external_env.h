// External environments in any language: a program started once and spoken
// to over JSON lines (protocol version 1, docs/environments.md has a
// complete Python example). Every request gets one reply line carrying the
// request's id:
//
//   {"protocol": 1, "id": 3, "type": "reset", "episode": "e5",
//    "task": {"id": ..., "prompt": ..., "reference": ..., "record": {...}}, "seed": 123}
//     -> {"id": 3, "observation": "the first observation (the prompt)"}   ("observation" optional:
//        default the task's prompt)
//   {"protocol": 1, "id": 4, "type": "step", "episode": "e5", "turn": 0, "text": "...", "stop": "eos"}
//     -> {"id": 4, "observation": "...", "reward": 0.5, "done": false, "feedback": "...",
//         "tool_call": false, "tool_error": false, "observation_is_feedback": false}
//        (every key but "id" optional; "reward": null or absent = none; "done" default false)
//   {"protocol": 1, "id": 5, "type": "close", "episode": "e5"}   a notification: no reply (one is
//        skipped as a stray line); the program may free the episode's state
//   a reset or step -> {"id": N, "error": "why"}: that episode ends with the reason
//
// Replies are read as Python's json.dumps writes them by default, NaN,
// Infinity and -Infinity included, so such a reply is recognised at once and
// its fault named ("'reward' must be a finite number or null, got NaN (turn 0)").
//
// Failures end only the episode concerned, never the run: a reply with
// "error", a timeout, the program's exit, or a reply that is not the expected
// JSON ends that episode (end_reason "env_error", the reason logged and
// counted). After a timeout or an exit the program is killed (its whole
// process group) and started again; episodes it was serving cannot continue
// (their state died with it) and end with that reason at their next step.
// Stray stdout lines (debug prints) are skipped and counted
// (rewards/scorer_process.h); stderr is free for logs (echoed prefixed
// "[env <pid>] ").
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "env/environment.h"
#include "rewards/scorer_process.h"

namespace rlf {

inline constexpr int kExternalEnvProtocol = 1;

struct ExternalEnvOptions {
  std::vector<std::string> command;  // argv, e.g. ["python3", "env.py"]; required
  double timeout_s = 30.0;           // per request: from sending it to the end of the reply line, seconds
  std::string working_dir;           // "" = rlf's
  bool echo_stderr = true;           // copy its stderr to rlf's, prefixed "[env <pid>] "
  bool send_record = true;           // include the dataset record in reset requests
  bool gives_rewards = true;         // its step rewards form the reward component "env"
  double shutdown_grace_s = 2.0;     // at shutdown: time to exit after its stdin closes, before SIGKILL
};

class ExternalEnvironment final : public Environment {
 public:
  // Starts the program (throws rlf::Error when it cannot start).
  explicit ExternalEnvironment(ExternalEnvOptions options);
  ~ExternalEnvironment() override;
  std::string name() const override { return "external"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t seed,
                                            std::string* first_observation) override;
  bool gives_rewards() const override { return options_.gives_rewards; }

  int64_t n_starts() const { return process_->n_starts(); }
  int64_t n_stray_lines() const { return process_->n_stray_lines(); }

  // One request/reply exchange (used by sessions): the parsed reply, or an
  // rlf::Error saying what failed. `episode_generation` is the process start
  // the episode began on; a restart since then is an error for that episode.
  Json request(Json message, int64_t episode_generation);
  // How many times the program was started (the current process's number).
  int64_t generation() const { return process_->n_starts(); }
  // Tells the program an episode ended (a notification; failures end nothing).
  void close(const std::string& episode, int64_t episode_generation);

 private:
  ExternalEnvOptions options_;
  std::unique_ptr<ScorerProcess> process_;
  std::mutex mutex_;
  int64_t next_id_ = 1;
  int64_t next_episode_ = 1;
};

}  // namespace rlf
