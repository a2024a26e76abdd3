#include "serve/dashboard.h"

#include <httplib.h>

#include <fstream>

#include "serve/dashboard_page.h"
#include "serve/host_check.h"
#include "serve/http_server.h"
#include "serve/http_socket.h"
#include "util/error.h"

namespace rlf {

void DashboardOptions::validate() const {
  check(!runs.empty(), "rlf dashboard: give at least one run directory (a run's run.out_dir)");
  check(port >= 0 && port <= 65535, "--port must be in [0, 65535] (got ", port, ")");
  check(max_rows >= 1, "max_rows must be >= 1 (got ", max_rows, ")");
  for (const std::string& h : allowed_hosts)
    check(h == "*" || !host_header_name(h).empty(), "--allow-host: '", h, "' is not a host name (e.g. myhost.lan, or *)");
  http.validate("http.");
}

JsonlPage read_jsonl_page(const std::filesystem::path& file, int64_t offset, int64_t max_rows) {
  JsonlPage page;
  page.offset = offset;
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) {  // not written yet
    page.offset = 0;
    page.restarted = offset > 0;
    return page;
  }
  if (static_cast<int64_t>(size) < offset) {
    page.restarted = true;
    offset = 0;
  }
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  std::string line;
  int64_t pos = offset;
  while (static_cast<int64_t>(page.rows.size()) < max_rows && std::getline(in, line)) {
    if (in.eof()) break;  // no '\n' yet: a line being written
    pos += static_cast<int64_t>(line.size()) + 1;
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_discarded()) page.rows.push_back(std::move(j));
  }
  page.offset = pos;
  return page;
}

namespace {

Json read_json_or_null(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return nullptr;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Json j = Json::parse(text, nullptr, false);
  return j.is_discarded() ? Json(nullptr) : j;
}

}  // namespace

struct Dashboard::Impl {
  DashboardOptions options;
  GuardedHttpServer http;
  int port = -1;

  explicit Impl(DashboardOptions o) : options((o.validate(), std::move(o))), http(options.http) {}

  void error(httplib::Response& res, int status, const std::string& message) {
    res.status = status;
    res.set_content(json_line(Json{{"error", {{"message", message}}}}), "application/json");
  }

  // The run index of ?run=I, or -1 after replying with an error.
  int64_t run_index(const httplib::Request& req, httplib::Response& res) {
    const std::string v = req.get_param_value("run");
    char* end = nullptr;
    const long long i = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || i < 0 || i >= static_cast<long long>(options.runs.size())) {
      error(res, 404, "no run '" + v + "' (runs are 0.." + std::to_string(options.runs.size() - 1) + ")");
      return -1;
    }
    return i;
  }

  void page(const std::string& file, const httplib::Request& req, httplib::Response& res) {
    const int64_t i = run_index(req, res);
    if (i < 0) return;
    const std::string o = req.get_param_value("offset");
    char* end = nullptr;
    const long long offset = o.empty() ? 0 : std::strtoll(o.c_str(), &end, 10);
    if ((!o.empty() && *end != '\0') || offset < 0) return error(res, 400, "offset must be a byte offset >= 0 (got '" + o + "')");
    JsonlPage p = read_jsonl_page(options.runs[static_cast<size_t>(i)] / file, offset, options.max_rows);
    res.set_content(json_line(Json{{"rows", p.rows}, {"offset", p.offset}, {"restarted", p.restarted}}), "application/json");
  }

  Json runs_json() const {
    Json out = Json::array();
    for (const auto& dir : options.runs) {
      Json summary = read_json_or_null(dir / "summary.json");
      std::string name = dir.filename().string();
      if (name.empty()) name = dir.parent_path().filename().string();
      out.push_back(Json{{"name", name},
                         {"dir", dir.string()},
                         {"config", read_json_or_null(dir / "config.json")},
                         {"summary", summary},
                         {"finished", !summary.is_null()}});
    }
    return Json{{"runs", out}};
  }
};

Dashboard::Dashboard(DashboardOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl* impl = impl_.get();
  // Before anything else: a request for another site's name (DNS rebinding) reads nothing.
  impl->http.set_pre_routing_handler([impl](const httplib::Request& req, httplib::Response& res) {
    const HostCheck host{impl->options.host, impl->options.allowed_hosts};
    const std::string why = host_refusal(req.has_header("Host") ? std::optional<std::string>(req.get_header_value("Host"))
                                                                : std::nullopt,
                                         host);
    if (why.empty()) return httplib::Server::HandlerResponse::Unhandled;
    impl->error(res, req.has_header("Host") ? 403 : 400, why);
    return httplib::Server::HandlerResponse::Handled;
  });
  impl->http.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kDashboardPage, "text/html; charset=utf-8"); });
  impl->http.Get("/api/runs", [impl](const httplib::Request&, httplib::Response& res) {
    res.set_content(json_line(impl->runs_json()), "application/json");
  });
  impl->http.Get("/api/metrics", [impl](const httplib::Request& req, httplib::Response& res) { impl->page("metrics.jsonl", req, res); });
  impl->http.Get("/api/samples", [impl](const httplib::Request& req, httplib::Response& res) { impl->page("samples.jsonl", req, res); });
  impl->http.set_error_handler([impl](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty()) impl->error(res, res.status, "no route " + req.method + " " + req.path);
  });
}

Dashboard::~Dashboard() { stop(); }

int Dashboard::bind() {
  if (impl_->port > 0) return impl_->port;
  const auto& o = impl_->options;
  impl_->port = bind_server(impl_->http, o.host, static_cast<int>(o.port));
  check(impl_->port > 0, "rlf dashboard: cannot listen on ", o.host, ":", o.port, " (the port is in use? pick another --port)");
  return impl_->port;
}

void Dashboard::run() {
  bind();
  impl_->http.listen_after_bind();
}

void Dashboard::stop() { impl_->http.stop(); }

}  // namespace rlf
