// The `external` reward: a user program scores completions over a stable
// JSON-lines protocol (version 1, documented in docs/rewards.md).
//
// The program (`command`, e.g. ["python3", "scorer.py"]) is started once and
// kept running. Per group, rlf writes one request line to its stdin:
//   {"protocol": 1, "id": 7, "prompt": "...", "reference": "...", "record": {...},
//    "max_new_tokens": 512, "completions": ["...", ...],
//    "finish_reasons": ["stop", ...], "n_tokens": [12, ...],
//    "turns": [[{"role": "policy", "text": ...}, {"role": "observation", ...}], ...]}
// ("turns" only for multi-turn episodes: every sample's turns and
// observations in order; "completions" then holds each last policy turn and
// "n_tokens" counts every token after the prompt.)
// and reads one reply line from its stdout:
//   {"scores": [1.0, null, ...],          required, one number or null per completion
//    "explanations": ["...", null, ...],  optional
//    "reasons": [null, "why missing", ...],  optional, for null scores
//    "token_rewards": [[0.1, ...], null, ...],  optional, one list per completion
//    "id": 7}                            optional echo of the request id
// Its stderr is free for logs. The reply is the first stdout line that is a
// JSON object with "scores" and, when it has an "id", the request's id; any
// other stdout line (a debug print, a late reply to an earlier request) is
// skipped, counted and echoed to stderr. Replies are read as Python's
// json.dumps writes them by default, NaN, Infinity and -Infinity included.
// A null score, one that is not a number, or NaN / Infinity makes only that
// sample missing (the reason says which); so do token rewards that are not
// finite numbers. A timeout, the scorer's exit
// (noticed at once, even when a process it started keeps its stdout open)
// or a reply of the wrong shape makes the whole group missing with the
// reason; the program is then killed (its whole process group) and started
// again for the next group. Training never stops because of the scorer.
// A scorer that exits with status 0 instead of replying (say, one that
// serves one request per process) is started again and gets the request
// once more.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rewards/reward.h"
#include "rewards/reward_options.h"
#include "rewards/scorer_process.h"

namespace rlf {

// The protocol version written in every request.
inline constexpr int kExternalRewardProtocol = 1;

struct ExternalRewardOptions {
  std::vector<std::string> command;  // the scorer's argv, e.g. ["python3", "scorer.py"]; required
  double timeout_s = 60.0;           // per group: from sending the request to the end of the reply line, seconds
  std::string working_dir;           // the scorer's working directory; "" = rlf's
  bool send_record = true;           // include the dataset record in requests ("record": null when false)
  bool echo_stderr = true;           // copy the scorer's stderr to rlf's, each line prefixed "[scorer <pid>] "
  int64_t max_reply_bytes = 64 << 20;  // longest accepted reply line, bytes
  double shutdown_grace_s = 2.0;     // at shutdown: time to exit after its stdin closes, before SIGKILL
};

void validate(const ExternalRewardOptions& options);
ExternalRewardOptions read_external_options(OptionReader& reader);

// The request line for a group (no trailing newline).
std::string external_request(const RewardGroup& group, int64_t id, bool send_record);

// True when `line` is the reply to request `id` (see above).
bool is_external_reply(const std::string& line, int64_t id);

// Parses a reply line into one result per sample; throws rlf::Error saying
// what is wrong with the reply as a whole (then every sample is missing).
std::vector<RewardResult> parse_external_reply(const std::string& line, const RewardGroup& group, int64_t id);

class ExternalReward : public Reward {
 public:
  // Starts the scorer (throws rlf::Error when the command cannot be started).
  explicit ExternalReward(ExternalRewardOptions options);
  ~ExternalReward() override;
  std::string name() const override { return "external"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;

  // The scorer's pid (-1 when not running) and how often it was started.
  pid_t scorer_pid() const { return process_->pid(); }
  int64_t n_starts() const { return process_->n_starts(); }

 private:
  ExternalRewardOptions options_;
  std::unique_ptr<ScorerProcess> process_;
  std::mutex mutex_;     // one group at a time
  int64_t next_id_ = 1;  // request ids
};

}  // namespace rlf
