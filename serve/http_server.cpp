// The front of rlf's HTTP servers: a waiting room (one poll() thread) where
// connections wait for their request, workers that run httplib on whole
// requests, and the counts of connections per client.
#include "serve/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "util/error.h"
#include "util/json_util.h"

namespace rlf {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Milliseconds from now to `t` for poll(): >= 0, rounded up.
int ms_until(Clock::time_point t) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

// The peer's address without the port ("" when unknown): what limits count per client.
std::string peer_address(int fd, int* port = nullptr) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    if (port) *port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    if (port) *port = ntohs(a->sin6_port);
  } else {
    return "local";
  }
  return text;
}

void local_address(int fd, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ip.clear();
  port = 0;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

// Waits up to `ms` for `events` on `fd`: > 0 ready, 0 not in time, < 0 error.
int wait_for(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

// One request's bytes: first those the waiting room read (exactly what it
// holds, never more), then the socket, each read within the request's
// deadline; writes wait up to write_timeout each. Never reads past what
// httplib asks for, so bytes of a next (pipelined) request stay unread.
class RequestStream final : public httplib::Stream {
 public:
  RequestStream(int fd, std::string buffered, Clock::time_point read_deadline, int write_timeout_ms)
      : fd_(fd), buffered_(std::move(buffered)), read_deadline_(read_deadline), write_timeout_ms_(write_timeout_ms) {}

  bool is_readable() const override {
    return used_ < buffered_.size() || wait_for(fd_, POLLIN, ms_until(read_deadline_)) > 0;
  }
  bool is_writable() const override {
    return wait_for(fd_, POLLOUT, write_timeout_ms_) > 0 && peer_open();
  }
  ssize_t read(char* ptr, size_t size) override {
    if (used_ < buffered_.size()) {
      const size_t n = std::min(size, buffered_.size() - used_);
      std::memcpy(ptr, buffered_.data() + used_, n);
      used_ += n;
      return static_cast<ssize_t>(n);
    }
    if (wait_for(fd_, POLLIN, ms_until(read_deadline_)) <= 0) {
      read_timed_out_ = Clock::now() >= read_deadline_;
      return -1;
    }
    for (;;) {
      const ssize_t n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    for (;;) {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    port = 0;
    ip = peer_address(fd_, &port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override { local_address(fd_, ip, port); }
  socket_t socket() const override { return fd_; }

  // Bytes the waiting room read that this request did not use (a pipelined request).
  std::string unread() const { return buffered_.substr(used_); }
  bool read_timed_out() const { return read_timed_out_; }

 private:
  // False once the client closed its side (EOF) or the connection broke.
  bool peer_open() const {
    if (wait_for(fd_, POLLIN, 0) <= 0) return true;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  }

  int fd_;
  std::string buffered_;
  size_t used_ = 0;
  Clock::time_point read_deadline_;
  int write_timeout_ms_;
  mutable bool read_timed_out_ = false;
};

// A connection between requests, or waiting for one.
struct Connection {
  int fd = -1;
  std::string client;         // peer address (the key of the per-client count)
  std::string buffer;         // bytes read, not yet handed to httplib
  size_t scanned = 0;         // buffer bytes already searched for the end of the headers
  size_t header_end = 0;      // where the headers end (0: not yet complete)
  size_t collect_end = 0;     // bytes to hold before a worker takes it (headers + a small body)
  bool peer_closed = false;   // the client closed its side after sending
  int64_t n_requests = 0;     // requests handled on this connection
  Clock::time_point since;    // opened, or back from its last response: the oldest waiting goes first
  Clock::time_point deadline;
};

// Case-insensitive: does the header block `h` have a header `name` (lower case, with ':')?
// Returns its value (trimmed) in *value.
bool find_header(const std::string& h, const char* name, std::string* value) {
  const size_t n = std::strlen(name);
  for (size_t line = h.find("\r\n"); line != std::string::npos && line + 2 < h.size(); line = h.find("\r\n", line + 2)) {
    const size_t begin = line + 2;
    if (h.size() - begin < n) break;
    bool same = true;
    for (size_t i = 0; same && i < n; ++i) same = std::tolower(static_cast<unsigned char>(h[begin + i])) == name[i];
    if (!same) continue;
    size_t v = begin + n, end = h.find("\r\n", begin);
    while (v < end && (h[v] == ' ' || h[v] == '\t')) ++v;
    while (end > v && (h[end - 1] == ' ' || h[end - 1] == '\t')) --end;
    *value = h.substr(v, end - v);
    return true;
  }
  return false;
}

// How many body bytes the waiting room holds on to before handing the
// request to a worker: all of a small Content-Length body; none of a larger
// or chunked one, or of one that waits for "100 Continue" (the worker reads those).
size_t body_to_collect(const std::string& headers, int64_t max_buffered) {
  std::string v;
  if (find_header(headers, "transfer-encoding:", &v) || find_header(headers, "expect:", &v)) return 0;
  if (!find_header(headers, "content-length:", &v) || v.empty() || v.size() > 18) return 0;
  if (!std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) return 0;  // httplib answers it
  const int64_t n = std::stoll(v);
  return n <= max_buffered ? static_cast<size_t>(n) : 0;
}

// A short reply written without waiting (best effort), for refusals.
void send_refusal(int fd, int status, const char* reason, const std::string& body) {
  const std::string reply = str("HTTP/1.1 ", status, " ", reason, "\r\nContent-Type: application/json\r\nContent-Length: ",
                                body.size(), "\r\nConnection: close\r\n\r\n", body);
  (void)::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void close_socket(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

}  // namespace

struct GuardedHttpServer::Stats {
  std::atomic<int64_t> header_timeouts{0}, body_timeouts{0}, over_limit{0}, evicted{0}, too_large{0};
};

// One listen(): the waiting room thread, the workers, and the connection
// counts. httplib creates it through new_task_queue and shuts it down when
// its accept loop ends: then waiting connections are closed and the workers
// finish the requests they hold.
class GuardedHttpServer::Front final : public httplib::TaskQueue {
 public:
  using EnqueueResult = decltype(std::declval<httplib::TaskQueue&>().enqueue(std::function<void()>()));

  explicit Front(GuardedHttpServer& server)
      : server_(server), limits_(server.limits_), wake_(make_pipe()), workers_(static_cast<size_t>(limits_.threads)) {
    thread_ = std::thread([this] { waiting_room(); });
    server_.front_ = this;
  }
  ~Front() override {
    shutdown();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  static std::array<int, 2> make_pipe() {
    std::array<int, 2> p{-1, -1};
    check(::pipe2(p.data(), O_NONBLOCK | O_CLOEXEC) == 0, "rlf http: cannot create a pipe: ", std::strerror(errno));
    return p;
  }

  // httplib's accept loop: `fn` hands the new connection to process_and_close_socket, i.e. admit().
  EnqueueResult enqueue(std::function<void()> fn) override {
    fn();
    return static_cast<EnqueueResult>(true);
  }

  int64_t n_open() {
    std::lock_guard<std::mutex> lk(m_);
    return n_open_;
  }

  void shutdown() override {
    if (shut_down_) return;
    shut_down_ = true;
    server_.front_ = nullptr;
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    wake();
    if (thread_.joinable()) thread_.join();
    workers_.shutdown();  // runs the requests handed over, then joins
    std::vector<Connection> left;
    {
      std::lock_guard<std::mutex> lk(m_);
      left.swap(inbox_);
    }
    for (Connection& c : left) release(c);
  }

  // A new connection (on httplib's accept thread): counted and queued for
  // the waiting room, which applies the limits (make_room).
  void admit(int fd) {
    Connection c;
    c.fd = fd;
    c.client = peer_address(fd);
    c.since = Clock::now();
    c.deadline = after(limits_.header_timeout_s);
    bool refused = false;
    {
      std::lock_guard<std::mutex> lk(m_);
      refused = stopping_ || static_cast<int64_t>(inbox_.size()) >= limits_.max_connections;
      if (!refused) {
        per_client_[c.client] += 1;
        n_open_ += 1;
        inbox_.push_back(std::move(c));
      }
    }
    if (refused) {  // a flood faster than the waiting room takes connections in
      server_.stats_->over_limit += 1;
      send_refusal(fd, 503, "Service Unavailable", server_.error_body_(503, "the server is overloaded; retry later"));
      close_socket(fd);
      return;
    }
    wake();
  }

 private:
  enum class Next { Wait, Ready, Close, HeaderTimeout, TooLarge };

  void wake() { (void)!::write(wake_[1], "x", 1); }

  // Closes a counted connection and forgets it.
  void release(Connection& c) {
    close_socket(c.fd);
    std::lock_guard<std::mutex> lk(m_);
    auto it = per_client_.find(c.client);
    if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
    --n_open_;
  }

  // What the buffer holds: a whole request (Ready), too much header, or not yet enough.
  Next assess(Connection& c) {
    if (c.header_end == 0) {
      const size_t from = c.scanned >= 3 ? c.scanned - 3 : 0;
      const size_t end = c.buffer.find("\r\n\r\n", from);
      c.scanned = c.buffer.size();
      const size_t limit = static_cast<size_t>(limits_.max_header_bytes);
      if (end == std::string::npos) return c.buffer.size() > limit ? Next::TooLarge : Next::Wait;
      if (end + 4 > limit) return Next::TooLarge;
      c.header_end = end + 4;
      const size_t body = body_to_collect(c.buffer.substr(0, c.header_end), limits_.max_buffered_body_bytes);
      c.collect_end = c.header_end + body;
      if (body > 0) c.deadline = after(limits_.body_timeout_s);
    }
    return c.buffer.size() >= c.collect_end ? Next::Ready : Next::Wait;
  }

  // Reads what the socket holds now (without blocking), then assesses.
  Next read_more(Connection& c) {
    const size_t cap = std::max(c.collect_end, static_cast<size_t>(limits_.max_header_bytes) + 1);
    char chunk[16384];
    while (c.buffer.size() < cap) {
      const ssize_t n = ::recv(c.fd, chunk, std::min(sizeof chunk, cap - c.buffer.size()), MSG_DONTWAIT);
      if (n > 0) {
        c.buffer.append(chunk, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      c.peer_closed = true;  // EOF or a broken connection
      break;
    }
    const Next next = assess(c);
    return next != Next::Ready && c.peer_closed ? Next::Close : next;
  }

  void waiting_room() {
    std::vector<Connection> waiting;
    std::vector<pollfd> fds;
    for (;;) {
      std::vector<Connection> arrived;
      {
        std::lock_guard<std::mutex> lk(m_);
        if (stopping_) break;
        arrived.swap(inbox_);
      }
      for (Connection& c : arrived) {  // new, or back from a worker (maybe holding a pipelined request)
        if (c.n_requests == 0 && !make_room(c, waiting)) continue;
        if (!c.buffer.empty() && assess(c) == Next::Ready) dispatch(std::move(c));
        else waiting.push_back(std::move(c));
      }
      fds.assign(1, pollfd{wake_[0], POLLIN, 0});
      Clock::time_point next_deadline = Clock::time_point::max();
      for (const Connection& c : waiting) {
        fds.push_back(pollfd{c.fd, POLLIN, 0});
        next_deadline = std::min(next_deadline, c.deadline);
      }
      const int timeout = next_deadline == Clock::time_point::max() ? -1 : ms_until(next_deadline);
      if (::poll(fds.data(), fds.size(), timeout) < 0) {
        if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // ENOMEM: try again
        continue;
      }
      char drain[256];
      while (::read(wake_[0], drain, sizeof drain) > 0) {
      }
      const Clock::time_point now = Clock::now();
      std::vector<Connection> still;
      still.reserve(waiting.size());
      for (size_t i = 0; i < waiting.size(); ++i) {
        Connection& c = waiting[i];
        Next next = (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) ? read_more(c) : Next::Wait;
        if (next == Next::Wait && now >= c.deadline) next = Next::HeaderTimeout;
        settle(std::move(c), next, still);
      }
      waiting.swap(still);
    }
    for (Connection& c : waiting) release(c);
  }

  // Applies the connection limits to a new connection `c`: over them, the
  // oldest waiting connection (idle, or with its request incomplete) of the
  // crowded client — c's own, or at the total limit the one with the most
  // connections — is closed to make room, so a client trickling bytes on
  // many connections cannot lock out a request that arrives whole, even from
  // its own address. When that client has no waiting connection (all are
  // being answered), c itself is refused with 503; false then.
  bool make_room(Connection& c, std::vector<Connection>& waiting) {
    for (;;) {
      std::string crowded, why;
      {
        std::lock_guard<std::mutex> lk(m_);
        const int64_t mine = per_client_[c.client];
        if (mine > limits_.max_connections_per_client) {
          crowded = c.client;
          why = str("too many connections from ", c.client, " (", mine, " open; the limit is ",
                    limits_.max_connections_per_client, ")");
        } else if (n_open_ > limits_.max_connections) {
          auto most = std::max_element(per_client_.begin(), per_client_.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
          crowded = most->first;
          why = str("too many open connections (", n_open_, "; the limit is ", limits_.max_connections, ")");
        } else {
          return true;
        }
      }
      auto victim = waiting.end();
      for (auto it = waiting.begin(); it != waiting.end(); ++it)
        if (it->client == crowded && (victim == waiting.end() || it->since < victim->since)) victim = it;
      if (victim == waiting.end()) {
        server_.stats_->over_limit += 1;
        send_refusal(c.fd, 503, "Service Unavailable", server_.error_body_(503, why + "; retry later"));
        release(c);
        return false;
      }
      server_.stats_->evicted += 1;
      if (!victim->buffer.empty())  // an idle connection is closed quietly
        send_refusal(victim->fd, 503, "Service Unavailable",
                     server_.error_body_(503, "closed to make room for a newer connection: " + why +
                                                  ", and this request had not arrived whole"));
      release(*victim);
      waiting.erase(victim);
    }
  }

  // Does what `next` says with a connection of the waiting room.
  void settle(Connection c, Next next, std::vector<Connection>& still) {
    switch (next) {
      case Next::Wait:
        still.push_back(std::move(c));
        return;
      case Next::Ready:
        dispatch(std::move(c));
        return;
      case Next::Close:
        release(c);
        return;
      case Next::TooLarge:
        server_.stats_->too_large += 1;
        send_refusal(c.fd, 431, "Request Header Fields Too Large",
                     server_.error_body_(431, str("the request line and headers are longer than ",
                                                  limits_.max_header_bytes, " bytes")));
        release(c);
        return;
      case Next::HeaderTimeout:
        if (c.header_end > 0) {  // a small body that did not come in time
          server_.stats_->body_timeouts += 1;
          send_refusal(c.fd, 408, "Request Timeout",
                       server_.error_body_(408, str("the request body did not arrive within ", limits_.body_timeout_s, " s")));
        } else if (!c.buffer.empty()) {  // headers begun, not finished
          server_.stats_->header_timeouts += 1;
          send_refusal(c.fd, 408, "Request Timeout",
                       server_.error_body_(408, str("the request headers did not arrive within ", limits_.header_timeout_s,
                                                    " s")));
        }  // else: an idle connection, closed quietly
        release(c);
        return;
    }
  }

  void dispatch(Connection c) {
    workers_.enqueue([this, c = std::move(c)]() mutable { serve(std::move(c)); });
  }

  // On a worker: one request through httplib, then the connection goes back to the waiting room.
  void serve(Connection c) {
    const int write_ms = static_cast<int>(server_.write_timeout_sec_ * 1000 + server_.write_timeout_usec_ / 1000);
    RequestStream stream(c.fd, std::move(c.buffer), after(limits_.body_timeout_s), std::max(write_ms, 1));
    c.buffer.clear();
    c.n_requests += 1;
    bool stopping;
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping = stopping_;
    }
    const bool last = stopping || c.peer_closed || c.n_requests >= limits_.max_requests_per_connection;
    bool client_closed = false;
    const bool keep = server_.handle_request(stream, last, client_closed);
    if (stream.read_timed_out()) server_.stats_->body_timeouts += 1;
    if (!keep || last || client_closed || stream.read_timed_out()) return release(c);
    c.buffer = stream.unread();
    c.scanned = c.header_end = c.collect_end = 0;
    c.since = Clock::now();
    c.deadline = after(limits_.header_timeout_s);
    {
      std::lock_guard<std::mutex> lk(m_);
      if (!stopping_) {
        inbox_.push_back(std::move(c));
        c.fd = -1;
      }
    }
    if (c.fd >= 0) return release(c);
    wake();
  }

  GuardedHttpServer& server_;
  const HttpLimits limits_;
  const std::array<int, 2> wake_;  // a pipe: a byte wakes the waiting room
  httplib::ThreadPool workers_;
  std::thread thread_;
  bool shut_down_ = false;

  std::mutex m_;  // guards what follows
  bool stopping_ = false;
  std::vector<Connection> inbox_;                // admitted or returned, not yet in the waiting room
  std::map<std::string, int64_t> per_client_;    // open connections per client address
  int64_t n_open_ = 0;
};

GuardedHttpServer::GuardedHttpServer(HttpLimits limits, ErrorBody error_body)
    : limits_(std::move(limits)), error_body_(std::move(error_body)), stats_(std::make_unique<Stats>()) {
  limits_.validate("http.");
  if (!error_body_)
    error_body_ = [](int, const std::string& message) { return json_line(Json{{"error", {{"message", message}}}}); };
  new_task_queue = [this] { return new Front(*this); };
  set_keep_alive_max_count(static_cast<size_t>(limits_.max_requests_per_connection));
  set_keep_alive_timeout(static_cast<time_t>(std::ceil(limits_.header_timeout_s)));
}

GuardedHttpServer::~GuardedHttpServer() { stop(); }

GuardedHttpServer::Counters GuardedHttpServer::counters() const {
  return Counters{stats_->header_timeouts.load(), stats_->body_timeouts.load(), stats_->over_limit.load(),
                  stats_->evicted.load(), stats_->too_large.load()};
}

int64_t GuardedHttpServer::open_connections() const {
  Front* front = front_.load();
  return front ? front->n_open() : 0;
}

bool GuardedHttpServer::process_and_close_socket(socket_t sock) {
  Front* front = front_.load();
  if (!front) {  // not listening through a Front (cannot happen: new_task_queue makes one)
    close_socket(sock);
    return false;
  }
  front->admit(sock);
  return true;
}

bool GuardedHttpServer::handle_request(httplib::Stream& stream, bool last, bool& client_closed) {
  return process_request(stream, last, client_closed, nullptr);
}

}  // namespace rlf
