#include "serve/host_check.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace rlf {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_ip_literal(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

bool is_localhost(const std::string& name) {
  const std::string suffix = ".localhost";
  return name == "localhost" ||
         (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

}  // namespace

std::string host_header_name(const std::string& host_header) {
  std::string h = lower(host_header);
  if (!h.empty() && h.front() == '[') {  // [v6]:port
    const size_t close = h.find(']');
    if (close == std::string::npos) return "";
    const std::string rest = h.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return "";
    return h.substr(1, close - 1);
  }
  const size_t colon = h.find(':');
  if (colon != std::string::npos) {
    if (h.find(':', colon + 1) != std::string::npos) return "";  // a bare IPv6 address is not a Host
    h.resize(colon);
  }
  if (!h.empty() && h.back() == '.') h.pop_back();
  const bool valid = !h.empty() && std::all_of(h.begin(), h.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_';
  });
  return valid ? h : "";
}

std::string host_refusal(const std::optional<std::string>& host_header, const HostCheck& check) {
  if (std::find(check.allowed.begin(), check.allowed.end(), "*") != check.allowed.end()) return "";
  if (!host_header) return "the request has no Host header";
  const std::string name = host_header_name(*host_header);
  if (!name.empty()) {
    if (is_localhost(name) || is_ip_literal(name)) return "";
    if (name == host_header_name(check.bind_host)) return "";
    for (const std::string& a : check.allowed)
      if (name == host_header_name(a)) return "";
  }
  return "Host '" + *host_header + "' is not a name of this server (a page of another site may be reaching it through " +
         "DNS rebinding); open it as localhost or by its IP address, or allow the name (e.g. --allow-host " +
         (name.empty() ? std::string("NAME") : name) + ")";
}

}  // namespace rlf
