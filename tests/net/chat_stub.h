// A stand-in OpenAI-compatible chat server for tests (tests/net/chat_stub_server.py,
// started per test on a free port, stopped with the object). Shared by the
// chat client's tests and the endpoint critic's (tests/feedback).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/test_env.h"
#include "util/json_util.h"

extern char** environ;

namespace rlf::test {

class StubServer {
 public:
  explicit StubServer(const std::vector<std::string>& args = {}) {
    int in_pipe[2], out_pipe[2];
    if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    std::string python = "/usr/bin/python3";
    std::string script = test::source_path("tests/net/chat_stub_server.py").string();
    std::vector<std::string> argv_s = {python, script};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    int rc = posix_spawn(&pid_, python.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    stdin_fd_ = in_pipe[1];
    if (rc != 0) {
      ::close(out_pipe[0]);
      pid_ = -1;
      throw std::runtime_error("cannot start " + python + " " + script);
    }
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_pipe[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[64];
      ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    ::close(out_pipe[0]);
    port_ = std::atoi(line.c_str());
    if (port_ <= 0) {
      stop();
      throw std::runtime_error("the stub server printed no port (got '" + line + "')");
    }
  }
  ~StubServer() { stop(); }
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int64_t count() const { return get("/count").at("count").get<int64_t>(); }
  int64_t max_inflight() const { return get("/max_inflight").at("max_inflight").get<int64_t>(); }

 private:
  // A plain HTTP/1.0 GET over a socket (the client under test is not used to observe itself).
  Json get(const std::string& path) const {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      if (fd >= 0) ::close(fd);
      throw std::runtime_error("cannot connect to the stub server");
    }
    std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
      ::close(fd);
      throw std::runtime_error("cannot write to the stub server");
    }
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<size_t>(n));
    ::close(fd);
    size_t body = reply.find("\r\n\r\n");
    if (body == std::string::npos) throw std::runtime_error("bad reply from the stub server: " + reply);
    return Json::parse(reply.substr(body + 4));
  }

  void stop() {
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    stdin_fd_ = -1;
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int port_ = 0;
};

}  // namespace rlf::test
