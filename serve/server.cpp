#include "serve/server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "data/prompt_format.h"
#include "tokenizer/tokenizer.h"
#include "serve/openai_api.h"
#include "serve/http_server.h"
#include "serve/http_socket.h"
#include "util/error.h"

namespace rlf {

void ServeOptions::validate(const std::string& prefix) const {
  check(!host.empty(), prefix, "host must not be empty (e.g. 127.0.0.1)");
  check(port >= 0 && port <= 65535, prefix, "port must be in [0, 65535] (got ", port, "; 0 = any free port)");
  check(!model_name.empty(), prefix, "model_name must not be empty");
  http.validate(prefix + "http.");
  check(max_body_bytes >= 1024, prefix, "max_body_bytes must be >= 1024 (got ", max_body_bytes, ")");
  check(max_pending >= 1, prefix, "max_pending must be >= 1 (got ", max_pending, ")");
  check(max_n >= 1, prefix, "max_n must be >= 1 (got ", max_n, ")");
  if (tool_parser != "auto" && tool_parser != "none")
    with_context(prefix + "tool_parser", [&] { parse_tool_call_format(tool_parser); });
}

namespace {

bool is_template_path(const std::string& name) {
  auto ends = [&](const char* suffix) {
    const std::string x(suffix);
    return name.size() > x.size() && name.compare(name.size() - x.size(), x.size(), x) == 0;
  };
  return name.find('/') != std::string::npos || ends(".jinja") || ends(".json");
}

// How chat requests are rendered: the model's own Jinja template when there
// is one, else a fixed format; and how its tool calls are parsed.
void setup_chat(ApiModel& model, const ServeOptions& o, const Tokenizer& tok) {
  const TokenizerChat tc = tokenizer_chat_of(tok);
  std::map<std::string, std::string> tokens;
  if (!tc.bos_token.empty()) tokens["bos_token"] = tc.bos_token;
  if (!tc.eos_token.empty()) tokens["eos_token"] = tc.eos_token;
  if (is_template_path(o.chat_template)) {
    JinjaChatTemplate t = JinjaChatTemplate::load(o.chat_template);
    t.add_missing_special_tokens(tokens);  // as transformers passes the tokenizer's special tokens
    model.chat_template = std::make_shared<const JinjaChatTemplate>(std::move(t));
  } else if (o.chat_template == "auto") {
    if (!tc.jinja_template.empty()) {
      try {
        model.chat_template = std::make_shared<const JinjaChatTemplate>(tc.jinja_template, tokens,
                                                                        std::map<std::string, std::string>{}, tc.source);
      } catch (const jinja::Error& e) {
        std::cerr << "rlf serve: the chat template of " << tc.source << " does not parse (" << e.what()
                  << "); using the fixed format detected from it\n";
      }
    }
  }
  if (!model.chat_template) {
    model.chat_format = conversation_format(o.chat_template, tok);
    model.chat_options = chat_options_for(tok);
    return;
  }
  if (o.tool_parser == "auto") model.tool_format = detect_tool_call_format(model.chat_template->source_for(ChatInput{}));
  else if (o.tool_parser != "none") model.tool_format = parse_tool_call_format(o.tool_parser);
}

}  // namespace

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One HTTP request in flight: its engine requests (one per prompt) report here.
struct Call {
  ApiRequest req;
  std::mutex m;
  std::condition_variable cv;
  std::vector<GeneratedSequence> results;  // by choice index (non-streamed)
  int64_t outstanding = 0;                 // samples not yet finished
  std::string error;                       // a failure (then the call is over)
  int error_status = 500;
  struct Event {
    int64_t choice = 0;
    bool finished = false;
    StreamDelta delta;
    GeneratedSequence seq;
  };
  std::deque<Event> events;                // streamed only
  std::atomic<bool> cancelled{false};
  std::vector<int64_t> engine_ids;
  int64_t version = 0;                     // the policy version that produced it (set on the engine thread)
};

// The engine's RequestSource: a queue the HTTP threads fill, and the routing
// of engine results back to their calls.
class Scheduler : public RequestSource {
 public:
  Scheduler(int64_t max_pending, ServeLearning* learning) : max_pending_(max_pending), learning_(learning) {}

  void submit(const std::shared_ptr<Call>& call, std::vector<GenerationRequest> reqs) {
    std::lock_guard<std::mutex> lk(m_);
    if (closed_) throw ApiError(503, "the server is shutting down", "", "", "server_error");
    if (static_cast<int64_t>(pending_.size()) >= max_pending_)
      throw ApiError(503, str("the server is overloaded (", pending_.size(), " requests waiting); retry later"), "", "",
                     "server_error");
    call->outstanding = 0;
    for (size_t p = 0; p < reqs.size(); ++p) {
      const int64_t id = next_id_++;
      routes_[id] = Route{call, static_cast<int64_t>(p), reqs[p].n};
      call->engine_ids.push_back(id);
      call->outstanding += reqs[p].n;
      pending_.push_back(LiveRequest{id, std::move(reqs[p])});
    }
    cv_.notify_all();
  }

  // The call is no longer wanted (its client left): the engine drops its samples.
  void forget(const Call& call) {
    std::lock_guard<std::mutex> lk(m_);
    for (int64_t id : call.engine_ids) routes_.erase(id);
    for (auto it = pending_.begin(); it != pending_.end();)
      it = routes_.count(it->id) ? std::next(it) : pending_.erase(it);
  }

  // Stops serving: poll() returns false; requests not yet taken fail with 503.
  void close() {
    std::vector<std::shared_ptr<Call>> waiting;
    {
      std::lock_guard<std::mutex> lk(m_);
      closed_ = true;
      for (const auto& lr : pending_) {
        auto it = routes_.find(lr.id);
        if (it != routes_.end()) waiting.push_back(it->second.call), routes_.erase(it);
      }
      pending_.clear();
      cv_.notify_all();
    }
    for (auto& c : waiting) fail(*c, "the server is shutting down", 503);
  }

  // With a learner whose update is due: returns false without taking the
  // waiting requests (they stay queued), so serve() finishes the batch it
  // holds and returns; the engine thread then updates and resume()s.
  bool poll(std::vector<LiveRequest>& out, bool wait) override {
    std::unique_lock<std::mutex> lk(m_);
    const auto ready = [&] { return closed_ || !pending_.empty(); };
    if (wait && !learning_) cv_.wait(lk, ready);
    while (wait && learning_ && !ready() && !learning_->update_due())
      cv_.wait_for(lk, std::chrono::milliseconds(100));  // the learner's max_wait_s is a clock, not an event
    if (!closed_ && learning_ && learning_->update_due()) {
      pausing_ = true;
      return false;
    }
    for (auto& lr : pending_) out.push_back(std::move(lr));
    pending_.clear();
    return !closed_;
  }

  // After serve() returned: true when it returned for an update (not closed).
  bool paused_for_update() {
    std::lock_guard<std::mutex> lk(m_);
    return pausing_ && !closed_;
  }
  void resume() {
    std::lock_guard<std::mutex> lk(m_);
    pausing_ = false;
  }
  // Feedback arrived: an idle engine thread re-checks whether an update is due.
  void wake() { cv_.notify_all(); }

  void on_delta(const StreamDelta& d) override {
    auto [call, prompt] = route(d.id, false);
    if (!call || !call->req.stream) return;
    std::lock_guard<std::mutex> lk(call->m);
    call->version = version();
    Call::Event e;
    e.choice = prompt * call->req.n + d.sample;
    e.delta = d;
    call->events.push_back(std::move(e));
    call->cv.notify_all();
  }

  void on_finished(GeneratedSequence seq) override {
    auto [call, prompt] = route(seq.request_index, true);
    if (!call) return;
    std::lock_guard<std::mutex> lk(call->m);
    call->version = version();
    const int64_t choice = prompt * call->req.n + seq.sample_index;
    if (call->req.stream) {
      if (learning_) call->results[static_cast<size_t>(choice)] = seq;  // remembered when the stream ends
      Call::Event e;
      e.choice = choice;
      e.finished = true;
      e.seq = std::move(seq);
      call->events.push_back(std::move(e));
    } else {
      call->results[static_cast<size_t>(choice)] = std::move(seq);
    }
    call->outstanding -= 1;
    call->cv.notify_all();
  }

  void on_failed(int64_t id, const std::string& error) override {
    std::shared_ptr<Call> call;
    {
      std::lock_guard<std::mutex> lk(m_);
      auto it = routes_.find(id);
      if (it == routes_.end()) return;
      call = it->second.call;
      routes_.erase(it);
    }
    fail(*call, error, error.rfind("generation failed", 0) == 0 ? 500 : 400);
  }

  bool cancelled(int64_t id) override {
    std::lock_guard<std::mutex> lk(m_);
    auto it = routes_.find(id);
    return it == routes_.end() || it->second.call->cancelled.load();
  }

  static void fail(Call& call, const std::string& error, int status) {
    std::lock_guard<std::mutex> lk(call.m);
    if (call.error.empty()) call.error = error, call.error_status = status;
    call.cv.notify_all();
  }

 private:
  struct Route {
    std::shared_ptr<Call> call;
    int64_t prompt = 0;
    int64_t remaining = 0;  // samples of this engine request not yet finished
  };
  // The call an engine request reports to; `finished` counts one sample done.
  std::pair<std::shared_ptr<Call>, int64_t> route(int64_t id, bool finished) {
    std::lock_guard<std::mutex> lk(m_);
    auto it = routes_.find(id);
    if (it == routes_.end()) return {nullptr, 0};
    auto out = std::make_pair(it->second.call, it->second.prompt);
    if (finished && --it->second.remaining == 0) routes_.erase(it);
    return out;
  }

  int64_t version() const { return learning_ ? learning_->version() : 0; }

  int64_t max_pending_;
  ServeLearning* learning_;  // null without --learn
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<LiveRequest> pending_;
  std::unordered_map<int64_t, Route> routes_;
  int64_t next_id_ = 1;
  bool closed_ = false;
  bool pausing_ = false;     // poll() returned false for an update
};

// Per streamed choice: what has been sent.
struct StreamState {
  size_t tokens = 0;
  size_t text = 0;
  bool started = false;
  bool finished = false;
  std::optional<ToolCallStream> tools;  // chat with tool parsing: holds back text that may be a call
};

}  // namespace

struct Server::Impl {
  Policy& policy;
  ServeOptions options;
  RolloutEngine engine;
  ApiModel model;
  Scheduler scheduler;
  GuardedHttpServer http;
  int bound_port = -1;
  std::atomic<int64_t> next_call{1};
  std::atomic<int64_t> n_requests{0}, n_4xx{0}, n_5xx{0}, n_cancelled{0};
  std::thread engine_thread;
  std::atomic<bool> stopped{false};
  ServeLearning* learning;  // null without --learn

  Impl(Policy& p, EngineOptions eo, ServeOptions o, ServeLearning* l)
      : policy(p),
        options((o.validate(), std::move(o))),
        engine(p.model(), p.tokenizer, std::move(eo)),
        scheduler(options.max_pending, l),
        http(options.http, [](int status, const std::string& message) {
          return json_line(api_error_json(message, status >= 500 ? "server_error" : "invalid_request_error"));
        }),
        learning(l) {
    model.name = options.model_name;
    model.tokenizer = policy.tokenizer.get();
    model.context_limit = engine.context_limit();
    model.max_n = options.max_n;
    setup_chat(model, options, *policy.tokenizer);
    routes();
  }

  void error_reply(httplib::Response& res, int status, const std::string& message, const std::string& type,
                   const std::string& param = "", const std::string& code = "") {
    (status >= 500 ? n_5xx : n_4xx) += 1;
    res.status = status;
    res.set_content(json_line(api_error_json(message, type, param, code)), "application/json");
  }

  std::string new_id(const char* prefix) {
    const uint64_t x = mix_seed(static_cast<uint64_t>(next_call++) ^ static_cast<uint64_t>(unix_now()) << 20);
    char buf[24];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
    return std::string(prefix) + buf;
  }

  void routes() {
    http.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (options.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
      const std::string want = "Bearer " + options.api_key;
      const std::string got = req.get_header_value("Authorization");
      unsigned diff = got.size() != want.size();
      for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) diff |= static_cast<unsigned>(got[i] ^ want[i]);
      if (diff == 0) return httplib::Server::HandlerResponse::Unhandled;
      error_reply(res, 401, "a valid API key is required: send \"Authorization: Bearer <key>\"", "invalid_request_error",
                  "", "invalid_api_key");
      return httplib::Server::HandlerResponse::Handled;
    });
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 404) error_reply(res, 404, "no route " + req.method + " " + req.path +
                                                   " (rlf serve has GET /v1/models, POST /v1/completions, POST /v1/chat/completions" +
                                                   (learning ? ", POST /v1/feedback, GET /v1/learn)" : "; POST /v1/feedback needs --learn)"),
                                         "invalid_request_error", "", "not_found");
      else if (res.status == 413) error_reply(res, 413, str("the request body is larger than ", options.max_body_bytes, " bytes"),
                                              "invalid_request_error");
      else error_reply(res, res.status, str("HTTP ", res.status), res.status >= 500 ? "server_error" : "invalid_request_error");
    });
    http.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      error_reply(res, 500, "internal error: " + what, "server_error");
    });
    http.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.set_content("{\"status\":\"ok\"}", "application/json"); });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(json_line(api_models(model, unix_now())), "application/json");
    });
    http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { handle(Endpoint::Completions, req, res); });
    http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { handle(Endpoint::Chat, req, res); });
    if (!learning) return;
    http.Post("/v1/feedback", [this](const httplib::Request& req, httplib::Response& res) {
      try {
        res.set_content(json_line(learning->feedback(req.body)), "application/json");
        scheduler.wake();
      } catch (const FeedbackError& e) {
        error_reply(res, e.status, e.what(), "invalid_request_error", e.param, e.status == 404 ? "not_found" : "");
      }
    });
    http.Get("/v1/learn", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(json_line(learning->status()), "application/json");
    });
  }

  // With --learn: the response says which policy version wrote it, and its choices are remembered for feedback.
  void stamp(Json& response, int64_t version) const {
    if (learning) response["system_fingerprint"] = "rlf-v" + std::to_string(version);
  }
  void remember(const Call& call, const std::string& id) {
    if (!learning) return;
    std::vector<ServedChoice> choices;
    for (size_t k = 0; k < call.results.size(); ++k) {
      const size_t prompt = k / static_cast<size_t>(call.req.n);
      ServedChoice c;
      c.sequence = call.results[k];
      c.prompt = call.req.endpoint == Endpoint::Completions && prompt < call.req.prompt_texts.size()
                     ? call.req.prompt_texts[prompt]
                     : policy.tokenizer->decode(c.sequence.prompt_ids);
      c.version = call.version;
      choices.push_back(std::move(c));
    }
    learning->remember(id, std::move(choices));
  }

  void handle(Endpoint endpoint, const httplib::Request& hreq, httplib::Response& res) {
    auto call = std::make_shared<Call>();
    try {
      call->req = parse_api_request(endpoint, hreq.body, model);
      auto reqs = generation_requests(call->req);
      for (size_t p = 0; p < reqs.size(); ++p) engine.check_request(reqs[p], "prompt " + std::to_string(p));
      call->results.resize(call->req.prompts.size() * static_cast<size_t>(call->req.n));
      scheduler.submit(call, std::move(reqs));
      n_requests += 1;
    } catch (const ApiError& e) {
      return error_reply(res, e.status, e.what(), e.type, e.param, e.code);
    } catch (const Error& e) {
      return error_reply(res, 400, e.what(), "invalid_request_error");
    }
    const std::string id = new_id(endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-");
    const int64_t created = unix_now();
    if (!call->req.stream) {
      std::unique_lock<std::mutex> lk(call->m);
      call->cv.wait(lk, [&] { return call->outstanding == 0 || !call->error.empty(); });
      if (!call->error.empty()) {
        const std::string err = call->error;
        const int status = call->error_status;
        lk.unlock();
        scheduler.forget(*call);
        return error_reply(res, status, err, status >= 500 ? "server_error" : "invalid_request_error");
      }
      Json out = api_response(call->req, model, id, created, call->results);
      stamp(out, call->version);
      lk.unlock();
      remember(*call, id);
      res.set_content(json_line(out), "application/json");
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    auto states = std::make_shared<std::vector<StreamState>>(call->results.size());
    auto complete = std::make_shared<bool>(false);
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, call, states, complete, id, created](size_t, httplib::DataSink& sink) {
          return stream_some(*call, *states, *complete, id, created, sink);
        },
        [this, call, complete](bool) {
          if (*complete) return;
          call->cancelled = true;
          scheduler.forget(*call);
          n_cancelled += 1;
        });
  }

  // Writes what the engine produced since the last call; false = the client is gone.
  bool stream_some(Call& call, std::vector<StreamState>& states, bool& complete, const std::string& id, int64_t created,
                   httplib::DataSink& sink) {
    std::deque<Call::Event> events;
    std::string error;
    bool all_done = false;
    {
      std::unique_lock<std::mutex> lk(call.m);
      call.cv.wait_for(lk, std::chrono::seconds(1),
                       [&] { return !call.events.empty() || !call.error.empty() || call.outstanding == 0; });
      events.swap(call.events);
      error = call.error;
      all_done = call.outstanding == 0;
    }
    auto send = [&](const Json& j) {
      const std::string s = "data: " + json_line(j) + "\n\n";
      return sink.write(s.data(), s.size());
    };
    if (events.empty() && error.empty() && !all_done) return sink.is_writable();  // nothing yet; still connected?
    int64_t completion_tokens = 0;
    for (auto& e : events) {
      StreamState& st = states[static_cast<size_t>(e.choice)];
      StreamPiece p;
      p.index = e.choice;
      const int64_t prompt = e.choice / call.req.n;
      if (!st.started) p.prompt_ids = &call.req.prompts[static_cast<size_t>(prompt)];
      const std::vector<int32_t>* ids;
      const std::vector<float>* lps;
      const std::vector<std::vector<TokenLogprob>>* tops;
      int64_t begin;
      std::string text;
      if (e.finished) {
        ids = &e.seq.completion_ids, lps = &e.seq.logprobs, tops = &e.seq.top_logprobs, begin = 0;
        if (st.text < e.seq.text.size()) text = e.seq.text.substr(st.text);
        p.finish_reason = e.seq.finish_reason;
        st.finished = true;
      } else {
        ids = &e.delta.token_ids, lps = &e.delta.logprobs, tops = &e.delta.top_logprobs, begin = e.delta.token_begin;
        if (e.delta.text_begin <= static_cast<int64_t>(st.text) &&
            e.delta.text_begin + static_cast<int64_t>(e.delta.text.size()) > static_cast<int64_t>(st.text))
          text = e.delta.text.substr(st.text - static_cast<size_t>(e.delta.text_begin));
      }
      // Tokens not sent yet: [st.tokens, begin + ids->size()).
      const size_t from = st.tokens >= static_cast<size_t>(begin) ? st.tokens - static_cast<size_t>(begin) : 0;
      for (size_t k = from; k < ids->size(); ++k) {
        p.token_ids.push_back((*ids)[k]);
        p.logprobs.push_back((*lps)[k]);
        if (k < tops->size()) p.top_logprobs.push_back((*tops)[k]);
      }
      st.tokens += p.token_ids.size();
      st.text += text.size();
      if (call.req.tool_format) {
        if (!st.tools) st.tools.emplace(*call.req.tool_format);
        text = st.tools->push(text);
        if (e.finished) {
          ParsedOutput rest = st.tools->finish();
          text += rest.content;
          p.tool_calls = std::move(rest.calls);
        }
      }
      p.text = std::move(text);
      if (!st.started && call.req.endpoint == Endpoint::Completions && call.req.echo)
        p.text = call.req.prompt_texts[static_cast<size_t>(prompt)] + p.text;
      st.started = true;
      if (p.token_ids.empty() && p.text.empty() && !p.finish_reason && !p.prompt_ids) continue;
      Json chunk = api_stream_chunk(call.req, model, id, created, p);
      stamp(chunk, call.version);
      if (!send(chunk)) return false;
    }
    if (!error.empty()) {
      send(api_error_json(error, "server_error"));
      send_done(sink);
      complete = true;
      return true;
    }
    if (all_done) {
      bool every = true;
      for (const auto& st : states) every = every && st.finished;
      if (!every) return true;  // finishing events still queued (cannot happen: they precede outstanding == 0)
      if (call.req.include_usage) {
        int64_t prompt_tokens = 0;
        for (const auto& ids : call.req.prompts) prompt_tokens += static_cast<int64_t>(ids.size());
        for (const auto& st : states) completion_tokens += static_cast<int64_t>(st.tokens);
        if (!send(api_usage_chunk(call.req, model, id, created, prompt_tokens, completion_tokens))) return false;
      }
      complete = true;
      {
        std::lock_guard<std::mutex> lk(call.m);
        remember(call, id);
      }
      send_done(sink);
    }
    return true;
  }

  static void send_done(httplib::DataSink& sink) {
    static const std::string done = "data: [DONE]\n\n";
    sink.write(done.data(), done.size());
    sink.done();
  }
};

Server::Server(Policy& policy, EngineOptions engine, ServeOptions options, ServeLearning* learning)
    : impl_(std::make_unique<Impl>(policy, std::move(engine), std::move(options), learning)) {}

Server::~Server() {
  stop();
  if (impl_->engine_thread.joinable()) impl_->engine_thread.join();
}

int Server::bind() {
  if (impl_->bound_port >= 0) return impl_->bound_port;
  const auto& o = impl_->options;
  impl_->bound_port = bind_server(impl_->http, o.host, static_cast<int>(o.port));
  check(impl_->bound_port > 0, "rlf serve: cannot listen on ", o.host, ":", o.port,
        " (the port is in use or the address is not this machine's; pick another --port or --host)");
  return impl_->bound_port;
}

int Server::port() const { return impl_->bound_port; }

std::string Server::chat_format() const {
  const ApiModel& m = impl_->model;
  if (m.chat_template)
    return "jinja (" + m.chat_template->origin() + "; tool calls " +
           (m.tool_format ? tool_call_format_name(*m.tool_format) : std::string("not parsed")) + ")";
  return m.chat_format ? chat_format_name(*m.chat_format) : "none";
}

void Server::run() {
  bind();
  impl_->engine_thread = std::thread([this] {
    try {
      for (;;) {
        impl_->engine.serve(impl_->scheduler);
        if (!impl_->learning || !impl_->scheduler.paused_for_update()) break;
        impl_->engine.release_cache();  // the update's memory
        impl_->learning->update();      // nothing decodes: requests that arrive wait in the queue
        impl_->scheduler.resume();
      }
    } catch (const std::exception& e) {
      std::cerr << "rlf serve: the engine stopped: " << e.what() << "\n";
      impl_->http.stop();
    }
  });
  if (!impl_->stopped) impl_->http.listen_after_bind();
  impl_->scheduler.close();
  if (impl_->engine_thread.joinable()) impl_->engine_thread.join();
}

void Server::stop() {
  impl_->stopped = true;
  impl_->scheduler.close();
  impl_->http.stop();
}

Server::Counters Server::counters() const {
  return Counters{impl_->n_requests.load(), impl_->n_4xx.load(), impl_->n_5xx.load(), impl_->n_cancelled.load()};
}

}  // namespace rlf
