// Protocol v1: one request line per group, one reply line back; reply checks are
// strict about shape (the whole group) and lenient per entry (one sample).
#include "rewards/external_reward.h"

#include <algorithm>

#include <cmath>

namespace rlf {
namespace {

std::string preview(const std::string& line) {
  return line.size() > 120 ? line.substr(0, 120) + "..." : line;
}

// Checks an optional per-completion list: absent/null, or an array of n.
const Json* optional_list(const Json& reply, const char* key, size_t n) {
  auto it = reply.find(key);
  if (it == reply.end() || it->is_null()) return nullptr;
  check(it->is_array(), "'", key, "' must be a list, got ", it->type_name());
  check(it->size() == n, "'", key, "' has ", it->size(), " entries for ", n, " completions");
  return &*it;
}

}  // namespace

void validate(const ExternalRewardOptions& o) {
  check(!o.command.empty() && !o.command[0].empty(),
        "option 'command' is empty; give the scorer's argv, e.g. command = [\"python3\", \"scorer.py\"]");
  check(std::isfinite(o.timeout_s) && o.timeout_s > 0, "option 'timeout_s' is ", o.timeout_s,
        "; use a positive number of seconds");
  check(o.max_reply_bytes >= 1024, "option 'max_reply_bytes' is ", o.max_reply_bytes, "; use at least 1024");
  check(std::isfinite(o.shutdown_grace_s) && o.shutdown_grace_s >= 0, "option 'shutdown_grace_s' is ",
        o.shutdown_grace_s, "; use a number of seconds >= 0");
}

ExternalRewardOptions read_external_options(OptionReader& reader) {
  ExternalRewardOptions o;
  o.command = reader.get_strings("command", o.command);
  o.timeout_s = reader.get_double("timeout_s", o.timeout_s);
  o.working_dir = reader.get_string("working_dir", o.working_dir);
  o.send_record = reader.get_bool("send_record", o.send_record);
  o.echo_stderr = reader.get_bool("echo_stderr", o.echo_stderr);
  o.max_reply_bytes = reader.get_int("max_reply_bytes", o.max_reply_bytes);
  o.shutdown_grace_s = reader.get_double("shutdown_grace_s", o.shutdown_grace_s);
  return o;
}

std::string external_request(const RewardGroup& group, int64_t id, bool send_record) {
  Json completions = Json::array(), finish_reasons = Json::array(), n_tokens = Json::array();
  for (const RewardSample& s : group.samples) {
    completions.push_back(s.completion);
    finish_reasons.push_back(s.finish_reason);
    n_tokens.push_back(s.completion_ids.size());
  }
  Json request = {{"protocol", kExternalRewardProtocol},
                  {"id", id},
                  {"prompt", group.prompt},
                  {"reference", group.reference},
                  {"record", send_record ? group.record : Json()},
                  {"max_new_tokens", group.max_new_tokens},
                  {"completions", completions},
                  {"finish_reasons", finish_reasons},
                  {"n_tokens", n_tokens}};
  // Multi-turn episodes: every sample's turns and observations.
  const bool multi_turn =
      std::any_of(group.samples.begin(), group.samples.end(), [](const RewardSample& s) { return !s.turns.empty(); });
  if (multi_turn) {
    Json turns = Json::array();
    for (const RewardSample& s : group.samples) {
      Json parts = Json::array();
      for (const TranscriptPart& p : s.turns) parts.push_back({{"role", p.role}, {"text", p.text}});
      turns.push_back(parts);
    }
    request["turns"] = turns;
  }
  return json_line(request);
}

std::vector<RewardResult> parse_external_reply(const std::string& line, const RewardGroup& group, int64_t id) {
  const size_t n = group.samples.size();
  const Json reply = try_parse_json_allowing_nan(line);  // Python's json.dumps writes NaN / Infinity
  check(!reply.is_discarded(), "reply is not JSON (print logs to stderr, not stdout): ", preview(line));
  check(reply.is_object(), "reply must be a JSON object with 'scores', got ", reply.type_name(), ": ", preview(line));
  if (reply.contains("id") && !reply.at("id").is_null()) {
    check(reply.at("id") == Json(id), "reply id ", json_text_for_message(reply.at("id")), " does not match request id ", id);
  }
  auto scores = reply.find("scores");
  check(scores != reply.end() && scores->is_array(), "reply has no 'scores' list: ", preview(line));
  check(scores->size() == n, "reply has ", scores->size(), " scores for ", n, " completions");
  const Json* explanations = optional_list(reply, "explanations", n);
  const Json* reasons = optional_list(reply, "reasons", n);
  const Json* token_rewards = optional_list(reply, "token_rewards", n);

  std::vector<RewardResult> results(n);
  for (size_t i = 0; i < n; ++i) {
    RewardResult& r = results[i];
    if (explanations && (*explanations)[i].is_string()) r.explanation = (*explanations)[i].get<std::string>();
    const Json& s = (*scores)[i];
    if (s.is_null()) {
      bool has_reason = reasons && (*reasons)[i].is_string();
      r.missing_reason = has_reason ? "external scorer: " + (*reasons)[i].get<std::string>()
                                    : "external scorer returned null";
      continue;
    }
    if (!s.is_number()) {
      r.missing_reason = str("external scorer: score #", i, " is not a number: ", preview(json_line(s)));
      continue;
    }
    if (!std::isfinite(s.get<double>())) {
      r.missing_reason = str("external scorer: score #", i, " is ", json_text_for_message(s),
                             " (a score must be a finite number, or null with a reason)");
      continue;
    }
    if (token_rewards && !(*token_rewards)[i].is_null()) {
      const Json& t = (*token_rewards)[i];
      size_t n_tokens = group.samples[i].completion_ids.size();
      bool ok = t.is_array() && t.size() == n_tokens;
      std::string bad_entry = !t.is_array() ? str(" (got ", t.type_name(), ")")
                              : !ok         ? str(" (got ", t.size(), ")")
                                            : "";
      for (size_t k = 0; ok && k < t.size(); ++k) {
        ok = t[k].is_number() && std::isfinite(t[k].get<double>());
        if (!ok) bad_entry = str(" (entry ", k, " is ", preview(json_text_for_message(t[k])), ")");
      }
      if (!ok) {
        r.missing_reason = str("external scorer: token_rewards #", i, " must be a list of ", n_tokens,
                               " finite numbers", bad_entry);
        continue;
      }
      for (const Json& v : t) r.token_rewards.push_back(v.get<float>());
    }
    r.score = s.get<double>();
  }
  return results;
}

ExternalReward::ExternalReward(ExternalRewardOptions options) : options_(std::move(options)) {
  validate(options_);
  ScorerProcessOptions p;
  p.command = options_.command;
  p.working_dir = options_.working_dir;
  p.echo_stderr = options_.echo_stderr;
  p.max_line_bytes = options_.max_reply_bytes;
  p.shutdown_grace_s = options_.shutdown_grace_s;
  process_ = std::make_unique<ScorerProcess>(std::move(p));
  with_context("external scorer", [&] { process_->start(); });
}

ExternalReward::~ExternalReward() = default;

bool is_external_reply(const std::string& line, int64_t id) {
  const Json j = try_parse_json_allowing_nan(line);
  if (!j.is_object() || !j.contains("scores")) return false;
  auto it = j.find("id");
  return it == j.end() || it->is_null() || (it->is_number_integer() && it->get<int64_t>() == id);
}

std::vector<RewardResult> ExternalReward::score(const RewardGroup& group) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t id = next_id_++;
  std::vector<RewardResult> results(group.samples.size());
  if (group.samples.empty()) return results;
  const std::string request = external_request(group, id, options_.send_record);
  const ReplyPredicate is_reply = [id](const std::string& line) { return is_external_reply(line, id); };
  ScorerExchange exchange = process_->exchange(request, options_.timeout_s, is_reply);
  // A scorer that ended normally (status 0) without replying had finished
  // before this request, e.g. one that serves a single request per process:
  // a fresh one gets the request again, once.
  if (!exchange.ok && exchange.clean_exit) exchange = process_->exchange(request, options_.timeout_s, is_reply);
  std::string problem;
  if (exchange.ok) {
    try {
      return parse_external_reply(exchange.reply, group, id);
    } catch (const std::exception& e) {
      problem = str("external scorer: malformed reply: ", e.what());
      process_->kill_now();  // out of step with the protocol: start afresh for the next group
    }
  } else {
    problem = str("external scorer: ", exchange.error);
    if (exchange.n_stray_lines > 0)
      problem += str("; ", exchange.n_stray_lines, " stdout line(s) that are not the reply were skipped");
  }
  for (RewardResult& r : results) r.missing_reason = problem;
  return results;
}

}  // namespace rlf
