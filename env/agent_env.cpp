#include "env/agent_env.h"

#include <httplib.h>

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "data/prompt_format.h"
#include "rewards/scorer_process.h"
#include "rollout/sampling.h"
#include "serve/openai_api.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "serve/http_socket.h"
#include "util/error.h"

namespace rlf {

void AgentEnvOptions::validate() const {
  check(!command.empty(), "option 'command' is required: the agent program, e.g. command = [\"python3\", \"agent.py\"]");
  check(std::isfinite(timeout_s) && timeout_s > 0, "option 'timeout_s' must be > 0 (got ", timeout_s, ")");
  check(!host.empty(), "option 'host' must not be empty");
  check(max_agents >= 1 && max_agents <= 65536, "option 'max_agents' must be in [1, 65536] (got ", max_agents, ")");
  // Paths are checked now, not when every episode fails.
  std::error_code ec;
  check(working_dir.empty() || std::filesystem::is_directory(working_dir, ec), "option 'working_dir' must be an existing "
        "directory (got '", working_dir, "'; \"\" = rlf's working directory)");
  if (command[0].find('/') != std::string::npos) {
    const std::filesystem::path program = working_dir.empty() ? std::filesystem::path(command[0])
                                                              : std::filesystem::path(working_dir) / command[0];
    check(::access(program.c_str(), X_OK) == 0, "option 'command': '", command[0], "' is not an executable file (",
          std::strerror(errno), working_dir.empty() ? "" : str("; relative to working_dir '", working_dir, "'"), ")");
  }
}

namespace {

using Clock = std::chrono::steady_clock;

// One episode's meeting point between the HTTP thread serving the agent's
// calls, the thread running the agent program, and the episode producer.
struct AgentState {
  std::string key;
  std::string episode;
  std::mutex m;
  std::condition_variable cv;
  // The agent's calls (HTTP thread -> producer).
  int64_t n_calls = 0;                  // calls received so far
  std::vector<ChatMessage> call_messages;  // the latest call's conversation
  bool call_waiting = false;            // an HTTP thread waits for the reply to the latest call
  // The reply (producer -> HTTP thread).
  int64_t n_replies = 0;                // replies given so far (a call waits for n_replies == n_calls)
  std::string reply_text;
  std::vector<int32_t> reply_ids;
  FinishReason reply_finish = FinishReason::Stop;
  // The program (runner thread -> producer).
  bool agent_done = false;
  ScorerExchange result;
  bool closed = false;                  // the episode ended: calls get a 400
};

}  // namespace

struct AgentEnvironment::Impl {
  AgentEnvOptions options;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::optional<ChatFormat> format;
  ChatRenderOptions render;
  std::string end_marker;  // what the chat format writes after an assistant message's content
  httplib::Server http;
  std::thread http_thread;
  int port = -1;
  std::mutex m;
  std::unordered_map<std::string, std::shared_ptr<AgentState>> sessions;  // by API key
  std::vector<std::pair<std::shared_ptr<AgentState>, std::thread>> runners;
  int64_t next_episode = 1;
  std::atomic<bool> containment_noted{false};  // the warning about a weaker containment was written

  ~Impl() {
    http.stop();
    if (http_thread.joinable()) http_thread.join();
    for (auto& [st, t] : runners)
      if (t.joinable()) t.join();
  }

  std::string render_text(const std::vector<ChatMessage>& messages, bool generation_prompt) const {
    ChatRenderOptions o = render;
    o.add_generation_prompt = generation_prompt;
    return render_chat(*format, messages, o);
  }

  void error_reply(httplib::Response& res, int status, const std::string& message, const std::string& code = "") {
    res.status = status;
    res.set_content(json_line(api_error_json(message, "invalid_request_error", "", code)), "application/json");
  }

  void serve_call(const httplib::Request& req, httplib::Response& res) {
    const std::string auth = req.get_header_value("Authorization");
    const std::string key = auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : "";
    std::shared_ptr<AgentState> st;
    {
      std::lock_guard<std::mutex> lk(m);
      auto it = sessions.find(key);
      if (it != sessions.end()) st = it->second;
    }
    if (!st) return error_reply(res, 401, "unknown API key: use the OPENAI_API_KEY rlf gave this agent run", "invalid_api_key");
    std::vector<ChatMessage> messages;
    try {
      Json body = Json::parse(req.body);
      if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
      if (!body.contains("messages")) throw ApiError(400, "'messages' is required", "messages");
      messages = parse_chat_messages(body.at("messages"));
    } catch (const ApiError& e) {
      return error_reply(res, e.status, e.what(), e.code);
    } catch (const std::exception& e) {
      return error_reply(res, 400, std::string("the request body is not valid JSON: ") + e.what());
    }
    std::unique_lock<std::mutex> lk(st->m);
    if (st->closed) return error_reply(res, 400, "the episode is over (env.max_turns or the token budget): exit", "episode_over");
    if (st->call_waiting) return error_reply(res, 409, "one call at a time: the previous call has no reply yet");
    st->call_waiting = true;
    st->call_messages = std::move(messages);
    const int64_t call = ++st->n_calls;
    st->cv.notify_all();
    st->cv.wait_for(lk, std::chrono::duration<double>(options.timeout_s), [&] { return st->n_replies >= call || st->closed; });
    st->call_waiting = false;
    if (st->n_replies < call)
      return error_reply(res, 400, st->closed ? "the episode is over (env.max_turns or the token budget): exit"
                                              : "no reply within timeout_s", "episode_over");
    ApiRequest r;
    r.endpoint = Endpoint::Chat;
    r.return_token_ids = true;
    r.prompts = {{}};
    ApiModel model;
    model.name = "policy";
    model.tokenizer = tokenizer.get();
    GeneratedSequence s;
    s.completion_ids = st->reply_ids;
    s.text = st->reply_text;
    s.finish_reason = st->reply_finish;
    const std::string id = "chatcmpl-" + st->episode + "-" + std::to_string(call);
    const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::system_clock::now().time_since_epoch()).count();
    res.set_content(json_line(api_response(r, model, id, created, {s})), "application/json");
  }
};

namespace {

class AgentSession final : public EnvironmentSession {
 public:
  AgentSession(std::shared_ptr<AgentEnvironment::Impl> env, std::shared_ptr<AgentState> st)
      : env_(std::move(env)), st_(std::move(st)) {}

  ~AgentSession() override {
    {
      std::lock_guard<std::mutex> lk(st_->m);
      st_->closed = true;
      st_->cv.notify_all();
    }
    std::lock_guard<std::mutex> lk(env_->m);
    env_->sessions.erase(st_->key);
  }

  // The first call's conversation, rendered (the episode's prompt).
  std::string start() {
    auto msgs = next_call();
    check(msgs.has_value(), "the agent ended before calling the model: ", outcome());
    history_ = std::move(*msgs);
    return env_->render_text(history_, true);
  }

  EnvStep step(const PolicyTurn& turn) override {
    {
      std::lock_guard<std::mutex> lk(st_->m);
      st_->reply_text = turn.text;
      st_->reply_ids = turn.token_ids;
      st_->reply_finish = turn.truncated ? FinishReason::Length : FinishReason::Stop;
      st_->n_replies += 1;
      st_->cv.notify_all();
    }
    history_.push_back({"assistant", turn.text});
    auto msgs = next_call();
    EnvStep out;
    if (!msgs) {  // the agent is done: its result line is the episode's reward
      const ScorerExchange& ex = st_->result;
      check(ex.ok, "the agent ended without a result line: ", outcome());
      Json j = parse_json(ex.reply, "the agent's result line");
      const Json& reward = j.at("reward");
      check(reward.is_null() || reward.is_number(), "the agent's result \"reward\" must be a number or null (got ",
            json_line(reward), ")");
      if (reward.is_number()) {
        out.reward = reward.get<double>();
        check(std::isfinite(*out.reward), "the agent's reward is not finite");
      }
      if (j.contains("feedback") && j.at("feedback").is_string()) out.feedback = j.at("feedback").get<std::string>();
      if (j.contains("correct") && j.at("correct").is_boolean()) out.correct = j.at("correct").get<bool>();
      out.done = true;
      return out;
    }
    // Another call: the history must be what it was, plus new messages.
    const auto& now = *msgs;
    check(now.size() > history_.size(), "the agent's call ", st_->n_calls, " has ", now.size(),
          " messages; it must repeat the ", history_.size(), " of the conversation so far and add at least one");
    for (size_t i = 0; i < history_.size(); ++i)
      check(now[i].role == history_[i].role && now[i].content == history_[i].content, "the agent changed message ", i,
            " of the conversation (", history_[i].role, "): an episode's history cannot be rewritten");
    const std::string before = env_->render_text(history_, false);
    const std::string after = env_->render_text(now, true);
    check(after.compare(0, before.size(), before) == 0, "the chat format '", chat_format_name(*env_->format),
          "' does not render the longer conversation as a continuation of the shorter one");
    // Everything after the reply's content, less what the sampled turn already holds.
    std::string observation = env_->end_marker + after.substr(before.size());
    std::string held;
    if (turn.stop == "eos" && !turn.token_ids.empty()) held = env_->tokenizer->token_string(turn.token_ids.back());
    else if (!turn.stop.empty() && turn.stop.rfind("id:", 0) != 0) held = turn.stop;
    if (!held.empty() && observation.compare(0, held.size(), held) == 0) observation.erase(0, held.size());
    history_ = now;
    out.observation = std::move(observation);
    return out;
  }

 private:
  // Waits for the agent's next call (its conversation) or its end (nullopt).
  std::optional<std::vector<ChatMessage>> next_call() {
    std::unique_lock<std::mutex> lk(st_->m);
    const int64_t seen = seen_calls_;
    const bool ok = st_->cv.wait_for(lk, std::chrono::duration<double>(env_->options.timeout_s + 5),
                                     [&] { return st_->n_calls > seen || st_->agent_done; });
    check(ok, "the agent neither called nor ended within timeout_s = ", env_->options.timeout_s, " s");
    if (st_->n_calls > seen) {
      seen_calls_ = st_->n_calls;
      return st_->call_messages;
    }
    return std::nullopt;
  }

  std::string outcome() const {
    const ScorerExchange& ex = st_->result;
    if (ex.ok) return "it printed its result line";
    return ex.clean_exit ? "it exited (status 0) without printing {\"reward\": ...}" : ex.error;
  }

  std::shared_ptr<AgentEnvironment::Impl> env_;
  std::shared_ptr<AgentState> st_;
  std::vector<ChatMessage> history_;
  int64_t seen_calls_ = 0;
};

}  // namespace

AgentEnvironment::AgentEnvironment(AgentEnvOptions options) : impl_(std::make_shared<Impl>()) {
  options.validate();
  impl_->options = std::move(options);
  Impl* impl = impl_.get();
  // Every running agent may hold a thread while it waits for its reply: one per agent, none queued behind
  // a waiting call (which would wait for a reply that needs the queued call first).
  impl->http.new_task_queue = [n = impl->options.max_agents] { return new httplib::ThreadPool(static_cast<size_t>(n) + 4); };
  impl->http.Post("/v1/chat/completions", [impl](const httplib::Request& req, httplib::Response& res) { impl->serve_call(req, res); });
  impl->http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"object": "list", "data": [{"id": "policy", "object": "model", "owned_by": "rlf"}]})", "application/json");
  });
  impl->http.set_error_handler([impl](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty())
      impl->error_reply(res, res.status, "no route " + req.method + " " + req.path + " (the agent endpoint has POST /v1/chat/completions)",
                        "not_found");
  });
  impl->port = bind_server(impl->http, impl->options.host, 0);
  check(impl->port > 0, "the agent endpoint cannot listen on ", impl->options.host, " (option 'host')");
  impl->http_thread = std::thread([impl] { impl->http.listen_after_bind(); });
}

AgentEnvironment::~AgentEnvironment() = default;

std::string AgentEnvironment::base_url() const {
  return "http://" + impl_->options.host + ":" + std::to_string(impl_->port) + "/v1";
}

void AgentEnvironment::use_tokenizer(std::shared_ptr<const Tokenizer> tokenizer) {
  impl_->tokenizer = std::move(tokenizer);
  impl_->format = conversation_format(impl_->options.chat_template, *impl_->tokenizer);
  check(impl_->format.has_value(), "environment type 'agent': option 'chat_template' cannot be \"none\"");
  impl_->render = chat_options_for(*impl_->tokenizer);
  // The format's text after an assistant message's content.
  ChatRenderOptions o = impl_->render;
  o.add_generation_prompt = false;
  const std::string mark = "\x01";
  const std::string r = render_chat(*impl_->format, std::vector<ChatMessage>{{"user", "u"}, {"assistant", mark}}, o);
  impl_->end_marker = r.substr(r.rfind(mark) + mark.size());
}

namespace {

// A fresh API key: 128 bits from the kernel's random source, never derived
// from the seed (a sibling that knows the seeds must not know the key).
std::string random_key() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    check(n > 0, "cannot draw an API key: getrandom: ", std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key = "rlf-";
  for (unsigned char b : bytes) key += {kHex[b >> 4], kHex[b & 15]};
  return key;
}

// Starts the agent program of one episode (it runs on its own thread) and
// returns its session, not yet waiting for the agent's first call.
std::unique_ptr<AgentSession> launch(const std::shared_ptr<AgentEnvironment::Impl>& env, const PromptExample& task,
                                     uint64_t seed) {
  AgentEnvironment::Impl& impl = *env;
  check(impl.tokenizer != nullptr, "environment type 'agent': no tokenizer (use_tokenizer was not called)");
  auto st = std::make_shared<AgentState>();
  {
    std::lock_guard<std::mutex> lk(impl.m);
    check(static_cast<int64_t>(impl.sessions.size()) < impl.options.max_agents, "more than max_agents = ",
          impl.options.max_agents, " agents at once: raise [env] max_agents or lower prompts_per_step x group_size");
    const int64_t n = impl.next_episode++;
    st->episode = "a" + std::to_string(n);
    st->key = random_key();
    impl.sessions[st->key] = st;
    // Runners whose agents finished are joined here, so they never pile up.
    for (auto it = impl.runners.begin(); it != impl.runners.end();) {
      bool done;
      {
        std::lock_guard<std::mutex> slk(it->first->m);
        done = it->first->agent_done;
      }
      if (done) {
        it->second.join();
        it = impl.runners.erase(it);
      } else {
        ++it;
      }
    }
  }
  const std::string base_url = "http://" + impl.options.host + ":" + std::to_string(impl.port) + "/v1";
  Json line{{"protocol", kAgentProtocol},
            {"episode", st->episode},
            {"task", {{"id", task.id},
                      {"prompt", task.raw_prompt.empty() ? task.prompt : task.raw_prompt},
                      {"reference", task.reference},
                      {"record", task.record}}},
            {"seed", seed},
            {"base_url", base_url},
            {"api_key", st->key}};
  ScorerProcessOptions po;
  po.command = impl.options.command;
  po.working_dir = impl.options.working_dir;
  po.echo_stderr = impl.options.echo_stderr;
  po.label = "agent";
  po.shutdown_grace_s = 1.0;
  po.note_containment = false;  // said once per environment, below
  po.env = {{"OPENAI_BASE_URL", base_url}, {"OPENAI_API_KEY", st->key}, {"RLF_EPISODE", st->episode}};
  const double timeout = impl.options.timeout_s;
  AgentEnvironment::Impl* shared = &impl;  // outlives the runner (its destructor joins them)
  std::thread runner([st, po, timeout, shared, text = json_line(line)] {
    ScorerExchange ex;
    try {
      ScorerProcess proc(po);
      proc.start();
      if (proc.containment() != Containment::pid_namespace && !shared->containment_noted.exchange(true)) {
        const std::string msg = str("[env] agents run contained as ", containment_name(proc.containment()),
                                    ", not in PID namespaces of their own (docs/footprint.md): an agent can read the "
                                    "environment, API key included, of the others",
                                    proc.containment() == Containment::process_group
                                        ? ", and what an agent starts outside its process group can outlive the run\n"
                                        : "\n");
        (void)!::write(STDERR_FILENO, msg.data(), msg.size());
      }
      ex = proc.exchange(text, timeout, [](const std::string& l) {
        Json j = Json::parse(l, nullptr, false);
        return j.is_object() && j.contains("reward");
      });
    } catch (const std::exception& e) {
      ex.ok = false;
      ex.error = e.what();
    }
    std::lock_guard<std::mutex> lk(st->m);
    st->result = std::move(ex);
    st->agent_done = true;
    st->cv.notify_all();
  });
  {
    std::lock_guard<std::mutex> lk(impl.m);
    impl.runners.emplace_back(st, std::move(runner));
  }
  return std::make_unique<AgentSession>(env, st);
}

}  // namespace

std::unique_ptr<EnvironmentSession> AgentEnvironment::reset(const PromptExample& task, uint64_t seed,
                                                             std::string* first_observation) {
  auto session = launch(impl_, task, seed);
  *first_observation = session->start();
  return session;
}

std::vector<ResetResult> AgentEnvironment::reset_all(const std::vector<ResetRequest>& requests) {
  // Every agent starts now; each one's timeout_s runs from its own start, so
  // a hanging agent costs its episode, not the others' time.
  std::vector<ResetResult> out(requests.size());
  std::vector<std::unique_ptr<AgentSession>> sessions(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    try {
      sessions[i] = launch(impl_, *requests[i].task, requests[i].seed);
    } catch (const std::exception& e) {
      out[i].error = e.what();
    }
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!sessions[i]) continue;
    try {
      out[i].first_observation = sessions[i]->start();
      out[i].session = std::move(sessions[i]);
    } catch (const std::exception& e) {
      out[i].error = e.what();
      sessions[i].reset();  // ends the episode: its agent's calls get a 400, its program is stopped
    }
  }
  return out;
}

}  // namespace rlf
