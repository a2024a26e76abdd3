// Errors with context. Library code throws rlf::Error (never exits); the CLI
// catches at the program's edge and prints the message. Messages say what went
// wrong, where (file, field, value) and, when there is one, how to fix it.
// Layers wrap errors with their own context: "loading model 'dir': <inner>".
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace rlf {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Concatenates any streamable values into one string: str("n=", 3, " x=", 1.5).
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

// Throws rlf::Error built from the streamable arguments.
template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(str(std::forward<Args>(args)...));
}

// Throws rlf::Error when `cond` is false.
template <typename... Args>
void check(bool cond, Args&&... args) {
  if (!cond) fail(std::forward<Args>(args)...);
}

// Runs `fn`; if it throws, rethrows rlf::Error with `context + ": "` prefixed.
template <typename Fn>
auto with_context(const std::string& context, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    throw Error(context + ": " + e.what());
  }
}

}  // namespace rlf
