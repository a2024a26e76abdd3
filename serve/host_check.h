// Which Host headers a local web server answers: the defence against DNS
// rebinding. A page on another site that makes its own name resolve to
// 127.0.0.1 can send requests to a local server as if from the same origin,
// and read the replies; such requests carry that site's name in Host. So a
// server answers only Host names it knows for its own:
// - "localhost" and names under ".localhost" (always the loopback);
// - an IP address literal (127.0.0.1, [::1], 192.168.1.5: a page cannot
//   take an address for its origin);
// - the name it was told to bind to (--host myhost.lan);
// - names given explicitly (allowed; "*" = any Host, the check off).
// Ports and a trailing dot are ignored, names compared case-insensitively.
// A request without Host is refused too (HTTP/1.1 requires one).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rlf {

struct HostCheck {
  std::string bind_host = "127.0.0.1";  // the address or name the server binds to
  std::vector<std::string> allowed;     // more names to answer ("*": any)
};

// The name part of a Host header: lower case, without port, brackets or a trailing dot ("" when malformed).
std::string host_header_name(const std::string& host_header);

// Why a request with this Host header (nullopt: no header) must be refused, or "" to answer it.
std::string host_refusal(const std::optional<std::string>& host_header, const HostCheck& check);

}  // namespace rlf
