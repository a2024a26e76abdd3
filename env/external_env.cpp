#include "env/external_env.h"

#include <cmath>

#include "util/error.h"

namespace rlf {

namespace {

class ExternalSession final : public EnvironmentSession {
 public:
  ExternalSession(ExternalEnvironment& env, std::string episode, int64_t generation)
      : env_(env), episode_(std::move(episode)), generation_(generation) {}

  ~ExternalSession() override {
    // Best effort: the program may free the episode's state. A failure here
    // ends nothing (the episode is over).
    env_.close(episode_, generation_);
  }

  EnvStep step(const PolicyTurn& turn) override {
    Json reply = env_.request(
        {{"type", "step"}, {"episode", episode_}, {"turn", turn.turn}, {"text", turn.text}, {"stop", turn.stop}},
        generation_);
    EnvStep s;
    auto text = [&](const char* key) -> std::string {
      auto it = reply.find(key);
      if (it == reply.end() || it->is_null()) return "";
      check(it->is_string(), "external environment: '", key, "' must be a string, got ", json_text_for_message(*it));
      return it->get<std::string>();
    };
    auto flag = [&](const char* key) {
      auto it = reply.find(key);
      if (it == reply.end() || it->is_null()) return false;
      check(it->is_boolean(), "external environment: '", key, "' must be true or false, got ", json_text_for_message(*it));
      return it->get<bool>();
    };
    s.observation = text("observation");
    s.feedback = text("feedback");
    s.done = flag("done");
    s.tool_call = flag("tool_call");
    s.tool_error = flag("tool_error");
    s.observation_is_feedback = flag("observation_is_feedback");
    auto r = reply.find("reward");
    if (r != reply.end() && !r->is_null()) {
      check(r->is_number() && std::isfinite(r->get<double>()), "external environment: 'reward' must be a finite number or null, got ",
            json_text_for_message(*r), " (turn ", turn.turn, ")");
      s.reward = r->get<double>();
    }
    return s;
  }

 private:
  ExternalEnvironment& env_;
  std::string episode_;
  int64_t generation_;
};

}  // namespace

ExternalEnvironment::ExternalEnvironment(ExternalEnvOptions options) : options_(std::move(options)) {
  check(!options_.command.empty(), "env.command must name the program to run, e.g. command = [\"python3\", \"env.py\"]");
  check(options_.timeout_s > 0 && std::isfinite(options_.timeout_s), "env.timeout_s must be > 0 (got ",
        options_.timeout_s, ")");
  check(options_.shutdown_grace_s >= 0 && std::isfinite(options_.shutdown_grace_s),
        "env.shutdown_grace_s must be >= 0 (got ", options_.shutdown_grace_s, ")");
  ScorerProcessOptions p;
  p.command = options_.command;
  p.working_dir = options_.working_dir;
  p.echo_stderr = options_.echo_stderr;
  p.shutdown_grace_s = options_.shutdown_grace_s;
  p.label = "env";
  process_ = std::make_unique<ScorerProcess>(std::move(p));
  with_context("external environment", [&] { process_->start(); });
}

ExternalEnvironment::~ExternalEnvironment() = default;

Json ExternalEnvironment::request(Json message, int64_t episode_generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (process_->exited()) process_->kill_now();  // reaped here; the next reset() starts a fresh one
  check(episode_generation == process_->n_starts() && process_->running(),
        "external environment: the program was restarted after a failure in another episode; this episode's state "
        "was lost with it");
  const int64_t id = next_id_++;
  message["protocol"] = kExternalEnvProtocol;
  message["id"] = id;
  const ReplyPredicate is_reply = [id](const std::string& line) {
    const Json j = try_parse_json_allowing_nan(line);  // Python's json.dumps writes NaN / Infinity
    if (!j.is_object()) return false;
    auto it = j.find("id");
    return it != j.end() && it->is_number_integer() && it->get<int64_t>() == id;
  };
  ScorerExchange ex = process_->exchange(json_line(message), options_.timeout_s,
                                         is_reply);
  if (!ex.ok) {
    std::string why = ex.error;
    if (ex.n_stray_lines > 0) why += str("; ", ex.n_stray_lines, " stdout line(s) that are not the reply were skipped");
    fail("external environment: ", why);
  }
  Json reply = try_parse_json_allowing_nan(ex.reply);  // accepted by is_reply: an object
  auto err = reply.find("error");
  if (err != reply.end() && !err->is_null())
    fail("external environment: ", err->is_string() ? err->get<std::string>() : json_text_for_message(*err));
  return reply;
}

void ExternalEnvironment::close(const std::string& episode, int64_t episode_generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (episode_generation != process_->n_starts() || !process_->running()) return;
  Json message = {{"protocol", kExternalEnvProtocol}, {"id", next_id_++}, {"type", "close"}, {"episode", episode}};
  process_->notify(json_line(message), options_.timeout_s);
}

std::unique_ptr<EnvironmentSession> ExternalEnvironment::reset(const PromptExample& task, uint64_t seed,
                                                               std::string* first_observation) {
  // A program that died since its last request is started again here, before the episode begins.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (process_->exited()) process_->kill_now();
    if (!process_->running()) with_context("external environment", [&] { process_->start(); });
  }
  const int64_t generation = process_->n_starts();
  const std::string episode = str("e", next_episode_++);
  Json t = {{"id", task.id}, {"prompt", task.prompt}, {"reference", task.reference}};
  t["record"] = options_.send_record ? task.record : Json(nullptr);
  Json reply = request({{"type", "reset"}, {"episode", episode}, {"task", t}, {"seed", seed}}, generation);
  auto obs = reply.find("observation");
  if (obs == reply.end() || obs->is_null()) {
    *first_observation = task.prompt;
  } else {
    check(obs->is_string(), "external environment: 'observation' must be a string, got ", json_text_for_message(*obs));
    *first_observation = obs->get<std::string>();
  }
  return std::make_unique<ExternalSession>(*this, episode, generation);
}

}  // namespace rlf
