// serve/http_server.h, the front of rlf serve and rlf dashboard, over raw
// sockets on the loopback interface: clients that send headers or bodies
// slowly wait without holding a worker (with one worker, others are still
// answered), and are cut off after their timeout (408); idle connections are
// closed quietly; over its connection limit a client's oldest waiting
// connection makes room for its new one (503 when none is waiting), while
// another address is not affected; headers too long get 431; keep-alive and pipelined
// requests are answered in order; stop() returns with connections waiting.
// Slow clients connect from 127.0.0.2 (any 127/8 address is the loopback),
// well-behaved ones from 127.0.0.1, so the per-address limit tells them apart.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/http_server.h"
#include "serve/http_socket.h"
#include "util/json_util.h"

namespace rlf {
namespace {

using Clock = std::chrono::steady_clock;

// A raw TCP connection from `source` (a loopback address) to 127.0.0.1:port.
struct Raw {
  int fd = -1;
  Raw(int port, const char* source) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, source, &a.sin_addr);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << "bind " << source;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  }
  ~Raw() {
    if (fd >= 0) ::close(fd);
  }
  Raw(const Raw&) = delete;
  Raw(Raw&& o) noexcept : fd(o.fd) { o.fd = -1; }
  void send(const std::string& s) const { (void)::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }
  // What the server sends until it closes the connection or `seconds` pass.
  std::string read_until_close(double seconds) const {
    std::string out;
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      const int ms = static_cast<int>(std::chrono::duration<double, std::milli>(end - Clock::now()).count());
      pollfd p{fd, POLLIN, 0};
      if (ms <= 0 || ::poll(&p, 1, ms) <= 0) return out;
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return out + "<closed>";
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // True once the server closed the connection (EOF) within `seconds`.
  bool closed_within(double seconds) const {
    const std::string got = read_until_close(seconds);
    return got.size() >= 8 && got.compare(got.size() - 8, 8, "<closed>") == 0;
  }
};

// A GuardedHttpServer with GET /health and POST /echo on a free port, run on its own thread.
struct Front {
  GuardedHttpServer http;
  std::thread thread;
  int port = 0;
  explicit Front(HttpLimits limits, const std::function<void(GuardedHttpServer&)>& more_routes = nullptr) : http(limits) {
    http.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
    http.Post("/echo", [](const httplib::Request& req, httplib::Response& res) { res.set_content(req.body, "text/plain"); });
    if (more_routes) more_routes(http);
    port = bind_server(http, "127.0.0.1", 0);
    EXPECT_GT(port, 0);
    thread = std::thread([this] { http.listen_after_bind(); });
    while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Front() {
    http.stop();
    thread.join();
  }
  // GET /health from 127.0.0.1 with a client timeout: the status, or -1 when no answer came.
  int health(double timeout_s = 5.0) const {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(static_cast<time_t>(timeout_s), 0);
    c.set_read_timeout(static_cast<time_t>(timeout_s), 0);
    auto r = c.Get("/health");
    return r ? r->status : -1;
  }
};

const std::string kPartialHeaders = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ";

TEST(HttpServer, SlowHeadersAndBodiesWaitWithoutAWorkerAndOthersAreAnswered) {
  HttpLimits l;
  l.threads = 1;  // one worker: a slow client holding it would stop everyone
  l.header_timeout_s = 30;
  l.body_timeout_s = 30;
  Front f(l);
  std::vector<Raw> slow;
  for (int i = 0; i < 40; ++i) {
    slow.emplace_back(f.port, "127.0.0.2");
    slow.back().send(i % 2 ? kPartialHeaders : "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf");
  }
  for (int k = 0; k < 3; ++k) {  // the slow ones keep sending, a byte at a time
    for (const Raw& r : slow) r.send("a");
    EXPECT_EQ(f.health(), 200);
  }
  // A slow body finished later is answered whole.
  Raw late(f.port, "127.0.0.1");
  late.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\n01234");
  EXPECT_EQ(f.health(), 200);
  late.send("56789");
  const std::string reply = late.read_until_close(5);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_NE(reply.find("0123456789"), std::string::npos) << reply;
}

TEST(HttpServer, HeadersNotCompleteInTimeGet408AndIdleConnectionsAreClosed) {
  HttpLimits l;
  l.header_timeout_s = 0.3;
  Front f(l);
  Raw slow(f.port, "127.0.0.2"), idle(f.port, "127.0.0.2");
  slow.send(kPartialHeaders);
  const std::string got = slow.read_until_close(5);
  EXPECT_EQ(got.rfind("HTTP/1.1 408 Request Timeout", 0), 0u) << got;
  EXPECT_NE(got.find("the request headers did not arrive within 0.3 s"), std::string::npos) << got;
  EXPECT_NE(got.find("<closed>"), std::string::npos);
  EXPECT_EQ(idle.read_until_close(5), "<closed>");  // nothing sent: closed without a reply
  EXPECT_EQ(f.http.counters().header_timeouts, 1);
}

TEST(HttpServer, ALargeBodySentTooSlowlyIsCutOffAndTheWorkerFreed) {
  HttpLimits l;
  l.threads = 1;
  l.body_timeout_s = 0.3;
  Front f(l);
  Raw slow(f.port, "127.0.0.2");
  slow.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nsome");  // too large to wait outside a worker
  EXPECT_TRUE(slow.closed_within(5));
  EXPECT_EQ(f.health(), 200);
  EXPECT_EQ(f.http.counters().body_timeouts, 1);
}

TEST(HttpServer, OverItsConnectionLimitAClientsOldestWaitingConnectionMakesRoom) {
  HttpLimits l;
  l.max_connections_per_client = 4;
  Front f(l);
  std::vector<Raw> held;
  for (int i = 0; i < 4; ++i) {
    held.emplace_back(f.port, "127.0.0.2");
    if (i > 0) held.back().send(kPartialHeaders);  // the first stays idle
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // admitted in this order
  }
  // A whole request from the same address is answered: the oldest waiting connection (idle) is closed quietly.
  {
    Raw fresh(f.port, "127.0.0.2");
    fresh.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(fresh.read_until_close(5).rfind("HTTP/1.1 200", 0), 0u);
    EXPECT_EQ(held[0].read_until_close(5), "<closed>");
  }
  // Once the fresh one is closed, one more fits; the next makes room again, and the oldest waiting had
  // begun its request: it is told why.
  for (int i = 0; i < 5000 && f.http.open_connections() != 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(f.http.open_connections(), 3);
  Raw fits(f.port, "127.0.0.2");
  for (int i = 0; i < 5000 && f.http.open_connections() != 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(f.http.open_connections(), 4);
  Raw again(f.port, "127.0.0.2");
  const std::string got = held[1].read_until_close(5);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_NE(got.find("closed to make room for a newer connection: too many connections from 127.0.0.2 (5 open; the "
                     "limit is 4)"),
            std::string::npos)
      << got;
  EXPECT_EQ(f.health(), 200);  // another address: not affected
  EXPECT_EQ(f.http.counters().evicted, 2);
  EXPECT_EQ(f.http.counters().over_limit, 0);
}

TEST(HttpServer, ANewConnectionIsRefusedWhenAllItsClientsConnectionsAreBeingAnswered) {
  HttpLimits l;
  l.max_connections_per_client = 2;
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  int n_in = 0;
  Front f(l, [&](GuardedHttpServer& http) {
    http.Get("/hold", [&](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lk(m);
      n_in += 1;
      cv.notify_all();
      cv.wait(lk, [&] { return release; });
      res.set_content("held", "text/plain");
    });
  });
  Raw a(f.port, "127.0.0.2"), b(f.port, "127.0.0.2");
  a.send("GET /hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  b.send("GET /hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  {
    std::unique_lock<std::mutex> lk(m);
    cv.wait(lk, [&] { return n_in == 2; });  // both in workers: none waiting
  }
  Raw third(f.port, "127.0.0.2");
  const std::string got = third.read_until_close(5);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_NE(got.find("too many connections from 127.0.0.2 (3 open; the limit is 2); retry later"), std::string::npos) << got;
  {
    std::lock_guard<std::mutex> lk(m);
    release = true;
  }
  cv.notify_all();
  EXPECT_NE(a.read_until_close(5).find("held"), std::string::npos);
  EXPECT_NE(b.read_until_close(5).find("held"), std::string::npos);
  EXPECT_EQ(f.http.counters().over_limit, 1);
}

TEST(HttpServer, HeadersTooLongGet431) {
  HttpLimits l;
  l.max_header_bytes = 2048;
  Front f(l);
  Raw big(f.port, "127.0.0.1");
  big.send("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4000, 'a') + "\r\n\r\n");
  const std::string got = big.read_until_close(5);
  EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got;
  EXPECT_EQ(f.health(), 200);
}

TEST(HttpServer, KeepAliveAndPipelinedRequestsAreAnsweredInOrder) {
  Front f(HttpLimits{});
  Raw c(f.port, "127.0.0.1");
  c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirstPOST /echo HTTP/1.1\r\nHost: x\r\n"
         "Content-Length: 6\r\n\r\nsecondGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string got = c.read_until_close(5);
  const size_t a = got.find("first"), b = got.find("second"), h = got.find("\r\n\r\nok");
  ASSERT_NE(a, std::string::npos) << got;
  ASSERT_NE(b, std::string::npos) << got;
  ASSERT_NE(h, std::string::npos) << got;
  EXPECT_LT(a, b);
  EXPECT_LT(b, h);
  // httplib's own client keeps its connection alive across requests.
  httplib::Client client("127.0.0.1", f.port);
  client.set_keep_alive(true);
  for (int i = 0; i < 5; ++i) {
    auto r = client.Post("/echo", std::string(100000, 'x'), "text/plain");  // larger than the waiting room holds
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body.size(), 100000u);
  }
}

TEST(HttpServer, StopReturnsWithConnectionsWaiting) {
  auto f = std::make_unique<Front>(HttpLimits{});
  Raw a(f->port, "127.0.0.2"), b(f->port, "127.0.0.2");
  a.send(kPartialHeaders);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  f.reset();  // joins the server's thread: a hang here fails the test by its timeout
  EXPECT_TRUE(a.closed_within(1));
  EXPECT_TRUE(b.closed_within(1));
}

TEST(HttpServer, LimitsAreValidatedNamingTheKey) {
  HttpLimits l;
  l.header_timeout_s = 0;
  try {
    l.validate("serve.http.");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "serve.http.header_timeout_s must be > 0 seconds (got 0)");
  }
}

}  // namespace
}  // namespace rlf
