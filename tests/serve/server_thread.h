// A Server bound to a free loopback port and run on its own thread until
// destruction, for the serve tests. Declare it after whatever the server
// borrows (the policy, a learner), so it stops first.
#pragma once

#include <httplib.h>

#include <memory>
#include <thread>

#include "serve/server.h"

namespace rlf::test {

class ServerThread {
 public:
  ServerThread() = default;
  ServerThread(const ServerThread&) = delete;
  ServerThread& operator=(const ServerThread&) = delete;
  ~ServerThread() {
    if (!server_) return;
    server_->stop();
    thread_.join();
  }

  // Binds `server` (made with ServeOptions::port = 0) and runs it on the thread; returns it.
  Server* start(std::unique_ptr<Server> server) {
    server_ = std::move(server);
    port_ = server_->bind();
    thread_ = std::thread([s = server_.get()] { s->run(); });
    return server_.get();
  }
  int port() const { return port_; }
  // A client of the server with a 120 s read timeout.
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120, 0);
    return c;
  }

 private:
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace rlf::test
