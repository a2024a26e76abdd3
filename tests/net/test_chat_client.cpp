// The chat client against a stand-in server (tests/net/chat_stub_server.py,
// one per test, started with /usr/bin/python3 on a free port): replies and
// what is sent, retries and what is not retried, timeouts, the reply cache,
// the bound on requests in flight, probe(), and the options' error messages.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "net/chat_client.h"
#include "net/request_cache.h"
#include "tests/net/chat_stub.h"
#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

extern char** environ;

namespace rlf {
namespace {

using test::error_of;
using test::TempDir;

// The stand-in server, killed when the object dies (and exiting by itself
// when this process dies: it reads its stdin until EOF).
using test::StubServer;

// A local port nothing listens on.
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("cannot find a free port");
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Small timeouts and backoffs: every test stays well under a second or two.
ChatClientOptions test_options(const std::string& base_url) {
  ChatClientOptions o;
  o.base_url = base_url;
  o.model = "stub-model";
  o.timeout_s = 5;
  o.max_retries = 2;
  o.backoff_s = 0.01;
  return o;
}

std::vector<ChatMessage> user(const std::string& text) { return {{"user", text}}; }

std::vector<std::filesystem::path> cache_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  return files;
}

// ---- replies ----

TEST(ChatClient, ParsesOkReply) {
  StubServer server;
  ChatClient client(test_options(server.base_url()));
  ChatResult r = client.complete(user("MODE:ok is 2+2=4 right?"));
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.content, "critique of: MODE:ok is 2+2=4 right?");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.attempts, 1);
  EXPECT_FALSE(r.from_cache);
  EXPECT_GT(r.latency_s, 0);
  EXPECT_EQ(server.count(), 1);
}

TEST(ChatClient, SendsModelMessagesParametersAndAuthorization) {
  StubServer server;
  ChatClientOptions o = test_options(server.base_url() + "/");  // a trailing slash is fine
  o.api_key = "sk-test-123";
  o.temperature = 0.25;
  o.max_tokens = 77;
  ChatClient client(o);
  std::vector<ChatMessage> messages = {{"system", "You are a strict grader."}, {"user", "MODE:echo grade this"}};
  ChatResult r = client.complete(messages);
  ASSERT_TRUE(r.ok) << r.error;
  Json echo = Json::parse(r.content);
  EXPECT_EQ(echo["path"], "/v1/chat/completions");
  EXPECT_EQ(echo["authorization"], "Bearer sk-test-123");
  const Json& body = echo["body"];
  EXPECT_EQ(body["model"], "stub-model");
  EXPECT_EQ(body["temperature"].get<double>(), 0.25);
  EXPECT_EQ(body["max_tokens"], 77);
  EXPECT_EQ(body["stream"], false);
  EXPECT_EQ(body["messages"], Json::parse(R"([{"role": "system", "content": "You are a strict grader."},
                                              {"role": "user", "content": "MODE:echo grade this"}])"));

  ChatClient no_key(test_options(server.base_url()));
  ChatResult r2 = no_key.complete(user("MODE:echo"));
  ASSERT_TRUE(r2.ok) << r2.error;
  EXPECT_TRUE(Json::parse(r2.content)["authorization"].is_null());
}

TEST(ChatClient, EmptyContentIsOk) {
  StubServer server;
  ChatClient client(test_options(server.base_url()));
  ChatResult r = client.complete(user("MODE:empty"));
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.content, "");
  EXPECT_EQ(r.attempts, 1);
}

TEST(ChatClient, InvalidUtf8InMessagesIsSentAsReplacementCharacters) {
  StubServer server;
  ChatClient client(test_options(server.base_url()));
  ChatResult r = client.complete(user("MODE:ok half a character: \xe2\x82 and \xff"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.content, "critique of: MODE:ok half a character: \xef\xbf\xbd and \xef\xbf\xbd");
}

// ---- failures and retries ----

// The stub answers after 5 s; each attempt gives up at timeout_s and says so
// (a reply that waited for the stub would be ok).
TEST(ChatClient, TimeoutFailsEachAttemptAndSaysSo) {
  StubServer server;
  ChatClientOptions o = test_options(server.base_url());
  o.timeout_s = 0.3;
  o.max_retries = 1;
  ChatClient client(o);
  ChatResult r = client.complete(user("MODE:slow:5000"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.rfind("timeout after 0.3 s (", 0), 0u) << r.error;
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(server.count(), 2);
}

TEST(ChatClient, ServerErrorsAreRetriedUntilSuccess) {
  StubServer server;
  ChatClientOptions o = test_options(server.base_url());
  o.max_retries = 3;
  ChatClient client(o);
  ChatResult r = client.complete(user("MODE:fail_twice:k1"));
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.content, "critique of: MODE:fail_twice:k1");
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(server.count(), 3);
  EXPECT_EQ(client.stats().n_retries, 2);
}

TEST(ChatClient, RetriesWaitExponentialBackoff) {
  StubServer server;
  ChatClientOptions o = test_options(server.base_url());
  o.backoff_s = 0.1;  // waits 0.1 s then 0.2 s, each plus at most 25% jitter
  ChatClient client(o);
  ChatResult r = client.complete(user("MODE:fail_twice:k2"));
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.attempts, 3);
  EXPECT_GE(r.backoff_s, 0.1 + 0.2);
  EXPECT_LT(r.backoff_s, 1.25 * (0.1 + 0.2));
  EXPECT_GE(r.latency_s, r.backoff_s) << "the waits were slept, not only counted";
  // The jitter is drawn from the request's hash: the same request waits the same.
  StubServer again;  // its own count: two failures again
  o.base_url = again.base_url();
  EXPECT_EQ(ChatClient(o).complete(user("MODE:fail_twice:k2")).backoff_s, r.backoff_s);
}

TEST(ChatClient, ServerErrorFailsAfterAllRetries) {
  StubServer server;
  ChatClientOptions o = test_options(server.base_url());
  o.max_retries = 1;
  ChatClient client(o);
  ChatResult r = client.complete(user("MODE:fail_twice:k3"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "HTTP 500: stub failure 2");  // the last attempt's reason
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(server.count(), 2);
  EXPECT_EQ(client.stats().n_failures, 1);
}

TEST(ChatClient, MalformedRepliesFailAfterAllRetries) {
  struct Case {
    std::string mode, error_prefix;
  };
  std::vector<Case> cases = {
      {"malformed", "malformed reply: not JSON: this is not json {"},
      {"no_content", "malformed reply: no \"choices\" array: {\"id\": \"chatcmpl-stub\""},
      {"not_string", "malformed reply: choices[0].message.content is a number, not a string: {"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.mode);
    StubServer server;
    ChatClientOptions o = test_options(server.base_url());
    o.max_retries = 2;
    ChatClient client(o);
    ChatResult r = client.complete(user("MODE:" + c.mode));
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error.rfind(c.error_prefix, 0), 0u) << r.error;
    EXPECT_EQ(r.attempts, 3);
    EXPECT_EQ(server.count(), 3);
  }
}

TEST(ChatClient, ReplyLongerThanTheCapFails) {
  StubServer server;
  ChatClientOptions o = test_options(server.base_url());
  o.max_reply_bytes = 1024;
  o.max_retries = 0;
  ChatClient client(o);
  ChatResult r = client.complete(user("MODE:big:5000"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "malformed reply: the body is longer than max_reply_bytes (1024 bytes)");
  EXPECT_TRUE(client.complete(user("MODE:big:500")).ok);
}

TEST(ChatClient, ClientErrorsAreNotRetriedButRateLimitsAre) {
  StubServer server;
  ChatClient client(test_options(server.base_url()));  // max_retries 2
  int64_t expected_count = 0;
  for (int status : {400, 401, 403, 404, 422}) {
    ChatResult r = client.complete(user("MODE:status:" + std::to_string(status)));
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, str("HTTP ", status, ": stub status ", status));
    EXPECT_EQ(r.attempts, 1) << status;
    expected_count += 1;
  }
  for (int status : {408, 429, 500, 502}) {
    ChatResult r = client.complete(user("MODE:status:" + std::to_string(status)));
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, str("HTTP ", status, ": stub status ", status));
    EXPECT_EQ(r.attempts, 3) << status;
    expected_count += 3;
  }
  EXPECT_EQ(server.count(), expected_count);
}

TEST(ChatClient, WrongPathIsAnHttp404) {
  StubServer server;
  ChatClient client(test_options("http://127.0.0.1:" + std::to_string(server.port())));  // no /v1
  ChatResult r = client.complete(user("MODE:ok"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "HTTP 404: no route /chat/completions");
  EXPECT_EQ(r.attempts, 1);
}

TEST(ChatClient, ConnectionRefusedIsRetriedThenFails) {
  ChatClient client(test_options("http://127.0.0.1:" + std::to_string(closed_port()) + "/v1"));
  ChatResult r = client.complete(user("MODE:ok"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.rfind("connection error: Couldn't connect to server", 0), 0u) << r.error;
  EXPECT_EQ(r.attempts, 3);
  // Retries 0 and 1 of backoff_s = 0.01: 0.01 + 0.02 s, plus at most 25% jitter; no timeout waited.
  EXPECT_GE(r.backoff_s, 0.03);
  EXPECT_LT(r.backoff_s, 1.25 * 0.03);
  EXPECT_EQ(client.stats().n_retries, 2);
}

// ---- the cache ----

TEST(ChatClient, CacheAnswersRepeatedRequestsWithoutHttp) {
  StubServer server;
  TempDir dir;
  ChatClientOptions o = test_options(server.base_url());
  o.cache_dir = (dir / "cache").string();
  o.api_key = "sk-secret-key";
  {
    ChatClient client(o);
    ChatResult first = client.complete(user("MODE:ok cache me"));
    ASSERT_TRUE(first.ok) << first.error;
    ChatResult second = client.complete(user("MODE:ok cache me"));
    EXPECT_TRUE(second.ok);
    EXPECT_TRUE(second.from_cache);
    EXPECT_EQ(second.attempts, 0);
    EXPECT_EQ(second.content, first.content);
    EXPECT_EQ(server.count(), 1);
    EXPECT_EQ(client.stats().n_cache_hits, 1);
  }
  // A new client on the same directory (another API key: not part of the key).
  o.api_key = "sk-another-key";
  ChatClient again(o);
  ChatResult third = again.complete(user("MODE:ok cache me"));
  EXPECT_TRUE(third.from_cache);
  EXPECT_EQ(third.content, "critique of: MODE:ok cache me");
  EXPECT_EQ(server.count(), 1);

  // Anything that changes the reply is a miss: messages, temperature, max_tokens, model.
  EXPECT_FALSE(again.complete(user("MODE:ok cache me too")).from_cache);
  ChatClientOptions warmer = o;
  warmer.temperature = 0.7;
  EXPECT_FALSE(ChatClient(warmer).complete(user("MODE:ok cache me")).from_cache);
  ChatClientOptions longer = o;
  longer.max_tokens = 512;
  EXPECT_FALSE(ChatClient(longer).complete(user("MODE:ok cache me")).from_cache);
  ChatClientOptions other_model = o;
  other_model.model = "other-model";
  EXPECT_FALSE(ChatClient(other_model).complete(user("MODE:ok cache me")).from_cache);
  EXPECT_EQ(server.count(), 5);

  // The file: format, version, the request and the reply; never the API key.
  std::vector<std::filesystem::path> files = cache_files(dir / "cache");
  EXPECT_EQ(files.size(), 5u);
  for (const auto& f : files) {
    std::string text = read_file(f);
    EXPECT_EQ(text.find("sk-"), std::string::npos) << f;
    Json j = Json::parse(text);
    EXPECT_EQ(j["format"], "rlf-chat-cache");
    EXPECT_EQ(j["version"], kChatCacheVersion);
    EXPECT_TRUE(j["request"].contains("messages"));
    EXPECT_TRUE(j["content"].is_string());
  }
}

TEST(ChatClient, CorruptCacheFilesAreIgnoredAndRewritten) {
  StubServer server;
  TempDir dir;
  ChatClientOptions o = test_options(server.base_url());
  o.cache_dir = dir.path().string();
  ChatClient client(o);
  ASSERT_TRUE(client.complete(user("MODE:ok corrupt me")).ok);
  std::vector<std::filesystem::path> files = cache_files(dir.path());
  ASSERT_EQ(files.size(), 1u);
  std::string good = read_file(files[0]);
  Json other = Json::parse(good);
  other["request"]["messages"][0]["content"] = "another request under the same hash";
  Json old_version = Json::parse(good);
  old_version["version"] = kChatCacheVersion + 1;
  std::vector<std::string> corruptions = {"", "garbage{", good.substr(0, good.size() / 2), "[1, 2]",
                                          other.dump(), old_version.dump()};
  int64_t expected_count = 1;
  for (const auto& bad : corruptions) {
    SCOPED_TRACE(bad);
    std::ofstream(files[0], std::ios::trunc) << bad;
    ChatResult r = client.complete(user("MODE:ok corrupt me"));
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_FALSE(r.from_cache);
    EXPECT_EQ(r.content, "critique of: MODE:ok corrupt me");
    EXPECT_EQ(server.count(), ++expected_count);
    EXPECT_EQ(read_file(files[0]), good);  // rewritten
    EXPECT_TRUE(client.complete(user("MODE:ok corrupt me")).from_cache);
  }
  EXPECT_EQ(cache_files(dir.path()).size(), 1u);  // no temporary files left behind
}

TEST(ChatClient, FailuresAreNotCached) {
  StubServer server;
  TempDir dir;
  ChatClientOptions o = test_options(server.base_url());
  o.cache_dir = dir.path().string();
  o.max_retries = 0;
  ChatClient client(o);
  EXPECT_FALSE(client.complete(user("MODE:malformed")).ok);
  EXPECT_FALSE(client.complete(user("MODE:malformed")).ok);
  EXPECT_EQ(server.count(), 2);
  EXPECT_TRUE(cache_files(dir.path()).empty());
}

TEST(ChatClient, UnwritableCacheDirIsAnErrorAtConstruction) {
  TempDir dir;
  std::ofstream(dir / "a_file") << "x";
  ChatClientOptions o = test_options("http://127.0.0.1:1/v1");
  o.cache_dir = (dir / "a_file").string();
  std::string e = error_of([&] { ChatClient client(o); });
  EXPECT_EQ(e.rfind("chat cache: cannot create the directory '" + o.cache_dir + "'", 0), 0u) << e;
  EXPECT_NE(e.find("check cache_dir"), std::string::npos) << e;
}

// ---- concurrency ----

TEST(ChatClient, CompleteManyKeepsOrderAndBoundsRequestsInFlight) {
  StubServer server;
  ChatClientOptions o = test_options(server.base_url());
  o.max_concurrency = 3;
  ChatClient client(o);
  std::vector<std::vector<ChatMessage>> requests;
  for (int i = 0; i < 12; ++i) requests.push_back(user("MODE:sleep:100 request " + std::to_string(i)));
  std::vector<ChatResult> results = client.complete_many(requests);
  ASSERT_EQ(results.size(), requests.size());
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].ok) << results[i].error;
    EXPECT_EQ(results[i].content, "critique of: MODE:sleep:100 request " + std::to_string(i));
  }
  EXPECT_EQ(server.count(), 12);
  EXPECT_LE(server.max_inflight(), 3);
  EXPECT_GE(server.max_inflight(), 2);  // it did run requests side by side
  EXPECT_TRUE(client.complete_many({}).empty());
}

TEST(ChatClient, ConcurrencyBoundHoldsAcrossThreads) {
  StubServer server;
  ChatClientOptions o = test_options(server.base_url());
  o.max_concurrency = 2;
  ChatClient client(o);
  std::vector<std::vector<ChatMessage>> requests(4, user("MODE:sleep:60"));
  {
    std::vector<std::jthread> callers;
    for (int t = 0; t < 3; ++t)
      callers.emplace_back([&] {
        for (const auto& r : client.complete_many(requests)) EXPECT_TRUE(r.ok) << r.error;
      });
  }
  EXPECT_EQ(server.count(), 12);
  EXPECT_EQ(server.max_inflight(), 2);
  EXPECT_EQ(client.stats().n_requests, 12);
}

TEST(ChatClient, StatsSumOverRequests) {
  StubServer server;
  TempDir dir;
  ChatClientOptions o = test_options(server.base_url());
  o.cache_dir = dir.path().string();
  ChatClient client(o);
  double latency = 0;
  latency += client.complete(user("MODE:ok")).latency_s;
  latency += client.complete(user("MODE:ok")).latency_s;  // a cache hit
  latency += client.complete(user("MODE:malformed")).latency_s;  // 3 attempts
  ChatClientStats s = client.stats();
  EXPECT_EQ(s.n_requests, 3);
  EXPECT_EQ(s.n_cache_hits, 1);
  EXPECT_EQ(s.n_failures, 1);
  EXPECT_EQ(s.n_http_attempts, 4);
  EXPECT_EQ(s.n_retries, 2);
  EXPECT_EQ(s.n_cache_write_errors, 0);
  EXPECT_NEAR(s.total_latency_s, latency, 1e-9);
}

// ---- probe ----

TEST(ChatClient, ProbePassesAgainstAWorkingEndpoint) {
  StubServer server;
  TempDir dir;
  ChatClientOptions o = test_options(server.base_url());
  o.cache_dir = dir.path().string();
  ChatClient client(o);
  client.probe();
  client.probe();
  EXPECT_EQ(server.count(), 2);  // never cached
  EXPECT_TRUE(cache_files(dir.path()).empty());
  EXPECT_EQ(client.stats().n_requests, 0);
}

TEST(ChatClient, ProbeThrowsAgainstARefusingEndpointWithoutRetrying) {
  StubServer server({"--refuse", "401"});
  ChatClientOptions o = test_options(server.base_url());
  o.api_key = "sk-wrong";
  ChatClient client(o);
  std::string e = error_of([&] { client.probe("check critic.endpoint.api_key_env / base_url"); });
  EXPECT_EQ(e, "chat endpoint " + server.base_url() +
                   "/chat/completions (model 'stub-model') refused the probe request: HTTP 401: invalid API key"
                   " — the endpoint rejected the API key; check critic.endpoint.api_key_env / base_url");
  EXPECT_EQ(server.count(), 1);
  EXPECT_EQ(e.find("sk-wrong"), std::string::npos);
}

TEST(ChatClient, ProbeThrowsAgainstAClosedPort) {
  std::string base_url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/v1";
  ChatClient client(test_options(base_url));  // max_retries 2
  std::string e = error_of([&] { client.probe(); });
  std::string head = "chat endpoint " + base_url +
                     "/chat/completions (model 'stub-model') refused the probe request (3 attempts): "
                     "connection error: Couldn't connect to server";
  EXPECT_EQ(e.rfind(head, 0), 0u) << e;
  EXPECT_NE(e.find(" — nothing usable answered at base_url (is the server up, and are the host and port right?); "
                   "check base_url, model and api_key"),
            std::string::npos)
      << e;
}

TEST(ChatClient, ProbeRetriesServerErrorsThenThrows) {
  StubServer server({"--refuse", "504"});
  ChatClientOptions o = test_options(server.base_url());
  o.max_retries = 1;
  ChatClient client(o);
  std::string e = error_of([&] { client.probe(); });
  EXPECT_NE(e.find("refused the probe request (2 attempts): HTTP 504: invalid API key — the endpoint is failing or "
                   "overloaded"),
            std::string::npos)
      << e;
  EXPECT_EQ(server.count(), 2);
}

// ---- options ----

TEST(ChatClientOptions, ValidateNamesTheKeyAndTheValue) {
  auto error_for = [](const std::function<void(ChatClientOptions&)>& change) {
    ChatClientOptions o = test_options("http://127.0.0.1:8000/v1");
    change(o);
    return error_of([&] { o.validate("critic.endpoint."); });
  };
  EXPECT_EQ(error_for([](auto& o) { o.timeout_s = -1; }), "critic.endpoint.timeout_s must be > 0 (got -1)");
  EXPECT_EQ(error_for([](auto& o) { o.timeout_s = NAN; }), "critic.endpoint.timeout_s must be > 0 (got nan)");
  EXPECT_EQ(error_for([](auto& o) { o.base_url = ""; }),
            "critic.endpoint.base_url must be set (e.g. \"http://127.0.0.1:8000/v1\")");
  EXPECT_EQ(error_for([](auto& o) { o.base_url = "127.0.0.1:8000/v1"; }),
            "critic.endpoint.base_url must start with http:// or https:// (got \"127.0.0.1:8000/v1\")");
  EXPECT_EQ(error_for([](auto& o) { o.model = ""; }),
            "critic.endpoint.model must be set (a model name the endpoint serves)");
  EXPECT_EQ(error_for([](auto& o) { o.api_key = "sk-abc\n"; }),
            "critic.endpoint.api_key must not contain line breaks (check the environment variable it is read from)");
  EXPECT_EQ(error_for([](auto& o) { o.max_retries = -1; }),
            "critic.endpoint.max_retries must be in [0, 100] (got -1; 0 = one attempt only)");
  EXPECT_EQ(error_for([](auto& o) { o.backoff_s = -0.5; }), "critic.endpoint.backoff_s must be >= 0 (got -0.5)");
  EXPECT_EQ(error_for([](auto& o) { o.max_concurrency = 0; }),
            "critic.endpoint.max_concurrency must be in [1, 1024] (got 0)");
  EXPECT_EQ(error_for([](auto& o) { o.temperature = -1; }),
            "critic.endpoint.temperature must be >= 0 (got -1; 0 = greedy)");
  EXPECT_EQ(error_for([](auto& o) { o.max_tokens = 0; }), "critic.endpoint.max_tokens must be > 0 (got 0)");
  EXPECT_EQ(error_for([](auto& o) { o.max_reply_bytes = 10; }),
            "critic.endpoint.max_reply_bytes must be >= 1024 (got 10)");
  EXPECT_NO_THROW(test_options("https://api.example.com/v1").validate());
}

TEST(ChatClientOptions, ConstructorValidates) {
  ChatClientOptions o = test_options("http://127.0.0.1:8000/v1");
  o.max_tokens = 0;
  EXPECT_EQ(error_of([&] { ChatClient client(o); }), "ChatClientOptions.max_tokens must be > 0 (got 0)");
}

TEST(ChatClientCache, HashIsFnv1a64) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

}  // namespace
}  // namespace rlf
