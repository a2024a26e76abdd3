// Binding rlf's HTTP servers (rlf serve, rlf dashboard, the agent endpoint).
// Include only from .cpp files of libraries that link cpp-httplib privately:
// no public header of rlf includes httplib.h.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

#include <memory>
#include <string>

namespace rlf {

// Binds `server` to host:port (0 = any free port) and returns the port, or
// -1 when it cannot. Two things httplib 0.11 (Debian 12) does differently:
// - SO_REUSEADDR only: its default also sets SO_REUSEPORT, which lets a
//   second server bind a busy port and silently take half its connections;
// - a listen backlog of SOMAXCONN: it listens with a backlog of 5, so a burst
//   of new connections (64 clients at once) overflows the accept queue and
//   some of them fail. listen() again on the bound socket raises it.
inline int bind_server(httplib::Server& server, const std::string& host, int port) {
  auto listening = std::make_shared<int>(-1);
  server.set_socket_options([listening](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    *listening = sock;
  });
  const int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound > 0 && *listening >= 0) ::listen(*listening, SOMAXCONN);
  return bound;
}

}  // namespace rlf
