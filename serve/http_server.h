// rlf's HTTP servers (rlf serve, rlf dashboard): cpp-httplib's routing behind
// a front that slow or greedy clients cannot stall.
//
// httplib gives every connection a worker thread from accept to close, and
// its read timeout starts again with every byte: 300 clients each sending one
// header byte every 2 s hold 256 threads for ever, and nobody else, /health
// included, is answered. Here a connection holds a worker thread only while
// its request is handled:
// - One "waiting room" thread reads every open connection's request line and
//   headers (and a body up to max_buffered_body_bytes) without blocking, in
//   poll(). A request goes to a worker once it has arrived whole (or, for a
//   larger or chunked body, once its headers have).
// - Headers must be complete within header_timeout_s of the connection's
//   opening or of its previous response: else 408 and close (a kept-alive
//   connection that sent nothing is closed quietly). Headers longer than
//   max_header_bytes: 431 and close. A body must arrive within body_timeout_s
//   of its headers: else the connection is closed.
// - At most max_connections_per_client open connections from one client
//   address, max_connections in all. A new connection over a limit closes
//   the crowded client's oldest waiting connection (idle, or its request
//   incomplete: 503) to make room, so a request that arrives whole is
//   answered even from the address of a client trickling bytes on hundreds
//   of connections; when all of that client's connections are being
//   answered, the new one gets 503 instead.
// - A response is written with httplib's write timeout per write; a client
//   that stops reading loses its connection, not the server's time.
// Requests are parsed, routed and answered by httplib itself (its handlers,
// pre-routing, error and exception handlers work as usual).
//
// Written against cpp-httplib 0.11 (Debian 12): it overrides httplib's
// per-connection entry point (process_and_close_socket) and calls its
// protected process_request once per request. Include only from .cpp files
// of libraries that link httplib privately (as serve/http_socket.h).
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "serve/http_limits.h"

namespace rlf {

class GuardedHttpServer : public httplib::Server {
 public:
  // The body of the server's own refusals (408, 431, 503), as application/json.
  using ErrorBody = std::function<std::string(int status, const std::string& message)>;

  // `error_body` null: {"error": {"message": ...}}.
  explicit GuardedHttpServer(HttpLimits limits, ErrorBody error_body = nullptr);
  ~GuardedHttpServer() override;

  // What the front refused since construction (for tests and logs).
  struct Counters {
    int64_t header_timeouts = 0;  // 408: headers not complete in time
    int64_t body_timeouts = 0;    // bodies not complete in time
    int64_t over_limit = 0;       // 503: a new connection over the limits with none of its client's waiting
    int64_t evicted = 0;          // waiting connections closed to make room for a newer one
    int64_t too_large = 0;        // 431: headers too long
  };
  Counters counters() const;
  // Connections open now (0 when not listening).
  int64_t open_connections() const;

 private:
  class Front;
  friend class Front;

  // httplib's accept loop hands every new connection here (on its thread).
  bool process_and_close_socket(socket_t sock) override;
  // Runs httplib on one request read from `stream`; false: close the connection.
  bool handle_request(httplib::Stream& stream, bool last, bool& client_closed);

  HttpLimits limits_;
  ErrorBody error_body_;
  std::atomic<Front*> front_{nullptr};  // the waiting room and workers of the listen() in progress
  struct Stats;
  std::unique_ptr<Stats> stats_;
};

}  // namespace rlf
