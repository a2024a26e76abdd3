// `rlf dashboard RUN_DIR...`: a live view of training runs in the browser.
//
// Serves one self-contained page (serve/dashboard_page.h: inline CSS and
// JavaScript, canvas charts, nothing fetched from elsewhere) and a small JSON
// API over the run directories, which the page polls:
//   GET /api/runs                         [{name, dir, config, summary, finished}] (config.json, summary.json)
//   GET /api/metrics?run=I&offset=BYTES   {"rows": [...], "offset": N}: complete lines of metrics.jsonl from BYTES
//   GET /api/samples?run=I&offset=BYTES   the same for samples.jsonl
// Only whole lines are returned (a line being written is left for the next
// poll), so a run that is writing shows up step by step; a file that shrank
// (a run restarted in the directory) is read again from the start. The
// directories are only read. Several runs are overlaid on every chart.
//
// Security: binds to 127.0.0.1 unless told otherwise, and answers only
// requests whose Host is its own (serve/host_check.h: localhost, an IP
// address, the --host name, allowed_hosts), so a page of another site cannot
// read run data through DNS rebinding (403 otherwise). Slow clients cost
// bounded time (serve/http_server.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "serve/http_limits.h"
#include "util/json_util.h"

namespace rlf {

struct DashboardOptions {
  std::vector<std::filesystem::path> runs;  // run directories (they may not exist yet); required
  std::string host = "127.0.0.1";           // interface to bind
  int64_t port = 8080;                      // 0 = any free port
  int64_t max_rows = 5000;                  // lines returned by one /api request at most
  std::vector<std::string> allowed_hosts;   // Host names answered besides localhost, IP addresses and `host`;
                                            // "*" = any (serve/host_check.h)
  HttpLimits http = {.threads = 16};        // connections and timeouts (serve/http_limits.h)

  void validate() const;  // throws rlf::Error naming the option
};

// One page of a JSONL file from a byte offset: the complete lines (parsed;
// unparsable lines skipped), the offset after the last of them, and whether
// the file was shorter than `offset` (then it was read from 0).
struct JsonlPage {
  std::vector<Json> rows;
  int64_t offset = 0;
  bool restarted = false;
};
JsonlPage read_jsonl_page(const std::filesystem::path& file, int64_t offset, int64_t max_rows);

class Dashboard {
 public:
  explicit Dashboard(DashboardOptions options);
  ~Dashboard();
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  int bind();  // binds (throws rlf::Error when it cannot) and returns the port
  void run();  // serves until stop(); blocks
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlf
