#include "serve/http_limits.h"

#include <cmath>

#include "util/error.h"

namespace rlf {

void HttpLimits::validate(const std::string& prefix) const {
  check(threads >= 1, prefix, "threads must be >= 1 (got ", threads, ")");
  check(std::isfinite(header_timeout_s) && header_timeout_s > 0, prefix, "header_timeout_s must be > 0 seconds (got ",
        header_timeout_s, ")");
  check(std::isfinite(body_timeout_s) && body_timeout_s > 0, prefix, "body_timeout_s must be > 0 seconds (got ",
        body_timeout_s, ")");
  check(max_connections >= 1, prefix, "max_connections must be >= 1 (got ", max_connections, ")");
  check(max_connections_per_client >= 1, prefix, "max_connections_per_client must be >= 1 (got ",
        max_connections_per_client, ")");
  check(max_header_bytes >= 1024, prefix, "max_header_bytes must be >= 1024 (got ", max_header_bytes, ")");
  check(max_buffered_body_bytes >= 0, prefix, "max_buffered_body_bytes must be >= 0 (got ", max_buffered_body_bytes, ")");
  check(max_requests_per_connection >= 1, prefix, "max_requests_per_connection must be >= 1 (got ",
        max_requests_per_connection, ")");
}

}  // namespace rlf
