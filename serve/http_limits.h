// What a client may cost rlf's HTTP servers (rlf serve, rlf dashboard): time
// to send a request, open connections, header size. Enforced by
// GuardedHttpServer (serve/http_server.h, which has the full story); kept
// free of httplib so public headers can hold it.
#pragma once

#include <cstdint>
#include <string>

namespace rlf {

struct HttpLimits {
  int64_t threads = 256;                       // requests handled at once (a streamed response holds one to its end)
  double header_timeout_s = 10.0;              // request line + headers must arrive within this of the connection's
                                               // opening or its previous response; else 408 (idle: closed quietly)
  double body_timeout_s = 60.0;                // the body must arrive within this of the headers; else closed
  int64_t max_connections = 1024;              // open connections in all; over it the oldest waiting connection of
                                               // the client with most goes (or the new one gets 503)
  int64_t max_connections_per_client = 256;    // open connections from one client address; over it its oldest
                                               // waiting connection goes (or the new one gets 503)
  int64_t max_header_bytes = 16 << 10;         // request line + headers; longer: 431
  int64_t max_buffered_body_bytes = 64 << 10;  // bodies up to this wait in the waiting room, not in a worker
  int64_t max_requests_per_connection = 100;   // keep-alive: the connection closes after this many

  // Throws rlf::Error naming `prefix` + key.
  void validate(const std::string& prefix) const;
};

}  // namespace rlf
