// rlf serve over HTTP on the loopback interface, with stories260K: bad
// requests get OpenAI error objects and 4xx without harming the server, a
// client that leaves mid-stream is noticed, the API key is enforced, a seeded
// request gives what rlf's own engine gives, the official `openai` client
// works (oracle venv), 64 concurrent requests all succeed, and 300 slow-loris
// connections do not stop other clients.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include "net/chat_client.h"
#include "rollout/policy.h"
#include "serve/server.h"
#include "tests/serve/server_thread.h"
#include "tests/support/test_env.h"
#include "util/json_util.h"

namespace rlf {
namespace {

// A server on a free port, run on its own thread for the test's lifetime.
struct Running {
  Policy policy;
  test::ServerThread serving;  // after the policy: stops first
  Server* server = nullptr;
  int port = 0;

  explicit Running(ServeOptions so = {}, int64_t max_batch = 64) {
    policy = load_policy(test::shared_path("models/stories260K/stories260K.bin"), "", LoadOptions{});
    EngineOptions eo;
    eo.eos_token_ids = policy.eos_token_ids;
    eo.max_batch_rows = max_batch;
    so.port = 0;
    if (so.model_name.empty()) so.model_name = "stories260K";
    server = serving.start(std::make_unique<Server>(policy, eo, so));
    port = serving.port();
  }
  httplib::Client client() const { return serving.client(); }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }
};

Json post(httplib::Client& c, const std::string& path, const std::string& body, int want_status,
          const httplib::Headers& headers = {}) {
  auto r = c.Post(path.c_str(), headers, body, "application/json");
  EXPECT_TRUE(r) << "no response for " << body;
  if (!r) return Json();
  EXPECT_EQ(r->status, want_status) << body << " -> " << r->body;
  return r->body.empty() ? Json() : Json::parse(r->body, nullptr, false);
}

void expect_error(const Json& j, const std::string& type, const std::string& param, const std::string& code = "") {
  ASSERT_TRUE(j.is_object() && j.contains("error")) << j.dump();
  const Json& e = j.at("error");
  EXPECT_TRUE(e.at("message").is_string() && !e.at("message").get<std::string>().empty()) << j.dump();
  EXPECT_EQ(e.at("type"), type) << j.dump();
  if (!param.empty()) {
    EXPECT_EQ(e.at("param"), param) << j.dump();
  }
  if (!code.empty()) {
    EXPECT_EQ(e.at("code"), code) << j.dump();
  }
}

TEST(Serve, BadRequestsGetOpenAIErrorsAndTheServerKeepsServing) {
  ServeOptions so;
  so.max_body_bytes = 64 * 1024;
  Running s(so);
  auto c = s.client();
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(Json::parse(models->body).at("data").at(0).at("id"), "stories260K");

  expect_error(post(c, "/v1/completions", "{\"model\": \"stories260K\", \"prompt\": ", 400), "invalid_request_error", "");
  expect_error(post(c, "/v1/completions", "[1, 2]", 400), "invalid_request_error", "");
  expect_error(post(c, "/v1/completions", R"({"model": "stories260K", "prompt": "Hi", "bogus": 1})", 400),
               "invalid_request_error", "bogus", "unknown_parameter");
  expect_error(post(c, "/v1/completions", R"({"model": "stories260K", "prompt": "Hi", "temperature": "hot"})", 400),
               "invalid_request_error", "temperature");
  expect_error(post(c, "/v1/completions", R"({"model": "stories260K", "prompt": "Hi", "n": 0})", 400),
               "invalid_request_error", "n");
  expect_error(post(c, "/v1/completions", R"({"model": "stories260K", "prompt": "Hi", "logit_bias": {"5": 10}})", 400),
               "invalid_request_error", "logit_bias", "unsupported_parameter");
  expect_error(post(c, "/v1/completions", R"({"model": "gpt-4", "prompt": "Hi"})", 404), "invalid_request_error",
               "model", "model_not_found");
  expect_error(post(c, "/v1/chat/completions", R"({"model": "stories260K", "messages": []})", 400),
               "invalid_request_error", "messages");
  expect_error(post(c, "/v1/chat/completions", R"({"model": "stories260K", "messages": [{"role": "robot", "content": "x"}]})", 400),
               "invalid_request_error", "messages[0].role");
  // Lengths: a prompt over the context, max_tokens past it, a body over the limit.
  std::string long_prompt;
  for (int i = 0; i < 400; ++i) long_prompt += "Once upon a time ";
  expect_error(post(c, "/v1/completions", Json{{"model", "stories260K"}, {"prompt", long_prompt}}.dump(), 400),
               "invalid_request_error", "prompt", "context_length_exceeded");
  expect_error(post(c, "/v1/completions", R"({"model": "stories260K", "prompt": "Hi", "max_tokens": 100000})", 400),
               "invalid_request_error", "max_tokens", "context_length_exceeded");
  expect_error(post(c, "/v1/completions", Json{{"model", "stories260K"}, {"prompt", std::string(100000, 'a')}}.dump(), 413),
               "invalid_request_error", "");
  auto missing = c.Get("/v1/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  expect_error(Json::parse(missing->body), "invalid_request_error", "", "not_found");

  // Still serving, and a seeded request gives what rlf's engine gives.
  Json ok = post(c, "/v1/completions",
                 R"({"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 25, "temperature": 1, "seed": 9,
                     "n": 2, "return_token_ids": true, "logprobs": 0})", 200);
  ASSERT_EQ(ok.at("choices").size(), 2u);
  EngineOptions eo;
  eo.eos_token_ids = s.policy.eos_token_ids;
  RolloutEngine engine(s.policy.model(), s.policy.tokenizer, eo);
  GenerationRequest r;
  r.prompt_ids = s.policy.tokenizer->encode("Once upon a time", true);
  r.n = 2;
  r.params.max_new_tokens = 25;
  r.params.seed = 9;
  auto want = engine.generate({r});
  for (int k = 0; k < 2; ++k) {
    const Json& ch = ok.at("choices").at(k);
    EXPECT_EQ(ch.at("prompt_token_ids").get<std::vector<int32_t>>(), want[k].prompt_ids);
    EXPECT_EQ(ch.at("token_ids").get<std::vector<int32_t>>(), want[k].completion_ids);
    EXPECT_EQ(ch.at("text"), want[k].text);
    auto lps = ch.at("logprobs").at("token_logprobs").get<std::vector<float>>();
    ASSERT_EQ(lps.size(), want[k].logprobs.size());
    for (size_t i = 0; i < lps.size(); ++i) EXPECT_NEAR(lps[i], want[k].logprobs[i], 1e-4);
  }
  EXPECT_EQ(ok.at("usage").at("completion_tokens"), want[0].completion_ids.size() + want[1].completion_ids.size());
  EXPECT_GE(s.server->counters().errors_4xx, 13);
}

TEST(Serve, AClientThatLeavesMidStreamIsDroppedAndOthersAreServed) {
  Running s;
  auto c = s.client();
  int chunks = 0;
  std::string seen;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  // Four samples of 500 tokens: long enough that the server is still writing when the client is gone.
  req.body = R"({"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 500, "n": 4, "stream": true,
                 "ignore_eos": true})";
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    seen.append(data, len);
    return ++chunks < 3;  // hang up after three chunks
  };
  auto r = c.send(req);
  EXPECT_FALSE(r);  // the client cancelled
  EXPECT_NE(seen.find("data: {"), std::string::npos) << seen;
  // The server notices at its next write and drops the sample.
  for (int i = 0; i < 100 && s.server->counters().cancelled == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(s.server->counters().cancelled, 1);
  auto c2 = s.client();
  Json ok = post(c2, "/v1/completions", R"({"model": "stories260K", "prompt": "The dog", "max_tokens": 10})", 200);
  EXPECT_EQ(ok.at("choices").size(), 1u);
}

TEST(Serve, RlfsOwnChatClientTheCriticsAndJudgesUseGetsAnswers) {
  ServeOptions so;
  so.api_key = "k1";
  Running s(so);
  ChatClientOptions co;
  co.base_url = s.base_url();
  co.model = "stories260K";
  co.api_key = "k1";
  co.temperature = 0;
  co.max_tokens = 20;
  co.max_retries = 0;
  ChatClient client(co);
  client.probe();
  const std::vector<ChatMessage> ask = {{"system", "You judge stories."}, {"user", "Is this story good? Once upon a time."}};
  ChatResult a = client.complete(ask);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_FALSE(a.content.empty());
  EXPECT_EQ(client.complete(ask).content, a.content);  // greedy: the same verdict twice
  co.api_key = "wrong";
  ChatClient refused(co);
  EXPECT_NE(test::error_of([&] { refused.probe(); }).find("401"), std::string::npos);
}

// The probe of issue 37: 300 connections each sending a header byte now and
// then (slow loris) held every HTTP thread, and /health timed out. Now they
// wait in the front's waiting room, at most 256 from one address (a newer
// connection closes the oldest waiting one): /health and a completion from
// the same address are answered while they trickle on, and their headers
// time out (408) or they make room (503, or closed before their first byte).
TEST(Serve, SlowLorisConnectionsDoNotStopOtherClients) {
  ServeOptions so;
  so.http.header_timeout_s = 3;
  Running s(so);
  std::vector<int> slow;
  for (int i = 0; i < 300; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    to.sin_port = htons(static_cast<uint16_t>(s.port));
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
    slow.push_back(fd);
  }
  const std::string header = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaa";
  httplib::Client c("127.0.0.1", s.port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(5, 0);
  for (size_t k = 0; k < 4; ++k) {  // one byte per connection per round
    for (int fd : slow) (void)::send(fd, header.data() + k, 1, MSG_NOSIGNAL);
    auto health = c.Get("/health");
    ASSERT_TRUE(health) << "round " << k << ": /health not answered";
    EXPECT_EQ(health->status, 200);
    post(c, "/v1/completions", R"({"model": "stories260K", "prompt": "Once", "max_tokens": 3})", 200);
  }
  // Every slow connection is closed by the server: 408 after header_timeout_s, or earlier to make room.
  int n_408 = 0, n_closed = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto left_ms = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count()));
  };
  for (int fd : slow) {
    std::string got;
    char buf[512];
    pollfd p{fd, POLLIN, 0};
    bool closed = false;
    while (!closed && ::poll(&p, 1, left_ms()) > 0) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) closed = true;
      else got.append(buf, static_cast<size_t>(n));
    }
    n_closed += closed;
    n_408 += got.rfind("HTTP/1.1 408", 0) == 0;
    EXPECT_TRUE(got.empty() || got.rfind("HTTP/1.1 408", 0) == 0 || got.rfind("HTTP/1.1 503", 0) == 0) << got;
    ::close(fd);
  }
  EXPECT_EQ(n_closed, 300);
  EXPECT_GE(n_408, 200);  // 256 admitted, less the few that made room for the client's requests
  EXPECT_LE(n_408, 256);
}

TEST(Serve, AnApiKeyIsRequiredWhenSet) {
  ServeOptions so;
  so.api_key = "s3cret";
  Running s(so);
  auto c = s.client();
  const std::string body = R"({"model": "stories260K", "prompt": "Hi", "max_tokens": 3})";
  expect_error(post(c, "/v1/completions", body, 401), "invalid_request_error", "", "invalid_api_key");
  expect_error(post(c, "/v1/completions", body, 401, {{"Authorization", "Bearer wrong"}}), "invalid_request_error", "",
               "invalid_api_key");
  post(c, "/v1/completions", body, 200, {{"Authorization", "Bearer s3cret"}});
  auto health = c.Get("/health");  // outside /v1: no key needed
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(Serve, ChatIsRefusedWithoutAChatFormat) {
  ServeOptions so;
  so.chat_template = "none";
  Running s(so);
  auto c = s.client();
  expect_error(post(c, "/v1/chat/completions", R"({"model": "stories260K", "messages": [{"role": "user", "content": "Hi"}]})", 400),
               "invalid_request_error", "messages");
}

TEST(Serve, ThePortInUseIsAClearError) {
  Running s;
  Policy p = load_policy(test::shared_path("models/stories260K/stories260K.bin"), "", LoadOptions{});
  ServeOptions so;
  so.model_name = "x";
  so.port = s.port;
  Server second(p, EngineOptions{}, so);
  const std::string msg = test::error_of([&] { second.bind(); });
  EXPECT_NE(msg.find("cannot listen on 127.0.0.1:" + std::to_string(s.port)), std::string::npos) << msg;
}

TEST(ServeOracle, TheOpenAIClientTalksToRlfServe) {
  RLF_REQUIRE_ORACLE();
  Running s;
  auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                             test::shell_quote(test::source_path("tests/oracle/openai_client_check.py").string()) + " " +
                             test::shell_quote(s.base_url()) + " stories260K");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json out = Json::parse(r.output.substr(r.output.rfind("\n{") == std::string::npos ? 0 : r.output.rfind("\n{") + 1));
  // The client's greedy completion is rlf's own greedy generation, token for token.
  EngineOptions eo;
  eo.eos_token_ids = s.policy.eos_token_ids;
  RolloutEngine engine(s.policy.model(), s.policy.tokenizer, eo);
  GenerationRequest g;
  g.prompt_ids = out.at("greedy").at("prompt_token_ids").get<std::vector<int32_t>>();
  g.params.temperature = 0;
  g.params.max_new_tokens = 30;
  auto want = engine.generate({g})[0];
  EXPECT_EQ(out.at("greedy").at("token_ids").get<std::vector<int32_t>>(), want.completion_ids);
  EXPECT_EQ(out.at("greedy").at("text"), want.text);
  auto lps = out.at("greedy").at("logprobs").get<std::vector<float>>();
  ASSERT_EQ(lps.size(), want.logprobs.size());
  for (size_t i = 0; i < lps.size(); ++i) EXPECT_NEAR(lps[i], want.logprobs[i], 1e-4);
}

TEST(ServeOracle, SixtyFourConcurrentRequestsAllSucceed) {
  RLF_REQUIRE_ORACLE();
  Running s({}, /*max_batch=*/64);
  auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                             test::shell_quote(test::source_path("bench/serve_load.py").string()) +
                             " --base-url " + test::shell_quote(s.base_url()) +
                             " --model stories260K --concurrency 64 --requests 64 --max-tokens 48 --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json out = Json::parse(r.output.substr(r.output.find('{')));
  const Json& level = out.at("levels").at(0);
  EXPECT_EQ(level.at("ok"), 64) << r.output;
  EXPECT_EQ(level.at("failed"), 0) << r.output;
  EXPECT_EQ(s.server->counters().requests, 64);
  EXPECT_EQ(s.server->counters().errors_5xx, 0);
}

}  // namespace
}  // namespace rlf
