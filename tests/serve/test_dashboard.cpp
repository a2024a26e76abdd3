// rlf dashboard: the JSON API over run directories (whole lines only, byte
// offsets, a restarted file, bad requests), the Host check against DNS
// rebinding (only its own names answered), and the page in a real headless
// browser (Debian's chromium through chromium-driver, selenium in the oracle
// venv): curves drawn, config and samples shown, live updates, no console
// errors, a screenshot written.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <thread>

#include "serve/dashboard.h"
#include "serve/host_check.h"
#include "tests/support/test_env.h"
#include "util/json_util.h"

namespace rlf {
namespace {

void write(const std::filesystem::path& p, const std::string& text, bool append = false) {
  std::ofstream(p, append ? std::ios::app : std::ios::trunc) << text;
}

// A finished run (20 steps, config, samples, summary) and a live one (3 of 10 steps).
struct Runs {
  test::TempDir dir;
  std::filesystem::path finished = dir / "grpo-seed0";
  std::filesystem::path live = dir / "live";
  Runs() {
    std::filesystem::create_directories(finished);
    std::filesystem::create_directories(live);
    write(finished / "config.json", R"({"run": {"steps": 20, "seed": 0}, "trainer": {"kind": "grpo"}})");
    write(live / "config.json", R"({"run": {"steps": 10, "seed": 1}, "trainer": {"kind": "grpo"}})");
    std::string m;
    for (int s = 1; s <= 20; ++s)
      m += Json{{"step", s}, {"reward/mean", 0.2 + 0.03 * s}, {"loss", 1.0 / s}, {"kl/ref", 0.001 * s}}.dump() + "\n";
    write(finished / "metrics.jsonl", m);
    write(finished / "summary.json", R"({"kind": "grpo", "steps": 20})");
    std::string samples;
    for (int s : {10, 20})
      for (int i = 0; i < 2; ++i)
        samples += Json{{"step", s}, {"index", i}, {"id", "t" + std::to_string(i)}, {"prompt", "Once upon a time"},
                        {"completion", " there was a cat."}, {"reward", 0.5}, {"rewards", {{"keywords", 0.5}}},
                        {"explanation", "keywords=0.5"}}.dump() + "\n";
    write(finished / "samples.jsonl", samples);
    std::string l;
    for (int s = 1; s <= 3; ++s) l += Json{{"step", s}, {"reward/mean", 0.1 * s}, {"loss", 0.5}, {"kl/ref", 0.01}}.dump() + "\n";
    write(live / "metrics.jsonl", l);
  }
};

struct Serving {
  std::unique_ptr<Dashboard> d;
  std::thread t;
  int port = 0;
  explicit Serving(std::vector<std::filesystem::path> runs, DashboardOptions o = {}) {
    o.runs = std::move(runs);
    o.port = 0;
    d = std::make_unique<Dashboard>(o);
    port = d->bind();
    t = std::thread([this] { d->run(); });
  }
  ~Serving() {
    d->stop();
    t.join();
  }
};

TEST(Dashboard, JsonlPagesReturnWholeLinesFromAnOffset) {
  test::TempDir dir;
  const auto f = dir / "m.jsonl";
  EXPECT_TRUE(read_jsonl_page(f, 0, 100).rows.empty());  // not written yet
  write(f, "{\"step\": 1}\n{\"step\": 2}\nnot json\n{\"step\": 3");
  JsonlPage p = read_jsonl_page(f, 0, 100);
  ASSERT_EQ(p.rows.size(), 2u);  // the bad line skipped, the partial one left
  EXPECT_EQ(p.rows[1]["step"], 2);
  EXPECT_EQ(p.offset, static_cast<int64_t>(std::string("{\"step\": 1}\n{\"step\": 2}\nnot json\n").size()));
  write(f, "}\n", true);
  JsonlPage q = read_jsonl_page(f, p.offset, 100);
  ASSERT_EQ(q.rows.size(), 1u);
  EXPECT_EQ(q.rows[0]["step"], 3);
  EXPECT_FALSE(q.restarted);
  write(f, "{\"step\": 1}\n");  // the run restarted in this directory
  JsonlPage r = read_jsonl_page(f, q.offset, 100);
  EXPECT_TRUE(r.restarted);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(read_jsonl_page(f, 0, 0).rows.size(), 0u);
}

TEST(Dashboard, ApiServesRunsMetricsAndSamples) {
  Runs runs;
  Serving s({runs.finished, runs.live, runs.dir / "not-yet"});
  httplib::Client c("127.0.0.1", s.port);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<title>rlf dashboard</title>"), std::string::npos);
  EXPECT_EQ(page->body.find("http://"), std::string::npos) << "the page must not load anything from elsewhere";
  EXPECT_EQ(page->body.find("https://"), std::string::npos) << "the page must not load anything from elsewhere";
  Json r = Json::parse(c.Get("/api/runs")->body);
  ASSERT_EQ(r["runs"].size(), 3u);
  EXPECT_EQ(r["runs"][0]["name"], "grpo-seed0");
  EXPECT_EQ(r["runs"][0]["config"]["run"]["steps"], 20);
  EXPECT_TRUE(r["runs"][0]["finished"].get<bool>());
  EXPECT_FALSE(r["runs"][1]["finished"].get<bool>());
  EXPECT_TRUE(r["runs"][2]["config"].is_null());
  Json m = Json::parse(c.Get("/api/metrics?run=0&offset=0")->body);
  EXPECT_EQ(m["rows"].size(), 20u);
  Json more = Json::parse(c.Get(("/api/metrics?run=0&offset=" + std::to_string(m["offset"].get<int64_t>())).c_str())->body);
  EXPECT_EQ(more["rows"].size(), 0u);
  EXPECT_EQ(Json::parse(c.Get("/api/samples?run=0")->body)["rows"].size(), 4u);
  EXPECT_EQ(Json::parse(c.Get("/api/metrics?run=2")->body)["rows"].size(), 0u);
  EXPECT_EQ(c.Get("/api/metrics?run=3")->status, 404);
  EXPECT_EQ(c.Get("/api/metrics?run=x")->status, 404);
  EXPECT_EQ(c.Get("/api/metrics?run=0&offset=-4")->status, 400);
  auto missing = c.Get("/nothing");
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(Json::parse(missing->body).contains("error"));
}

// DNS rebinding: a page of evil.example whose name resolves to 127.0.0.1
// sends requests with "Host: evil.example:PORT"; they are refused and read
// nothing, while the names of the machine itself are answered.
TEST(Dashboard, OnlyItsOwnHostNamesAreAnswered) {
  Runs runs;
  Serving s({runs.finished});
  httplib::Client c("127.0.0.1", s.port);
  const std::string port = ":" + std::to_string(s.port);
  for (const std::string& host : std::vector<std::string>{"evil.example" + port, "evil.example",
                                                          "127.0.0.1.evil.example" + port, "localhost.evil", "EVIL.example."}) {
    auto r = c.Get("/api/runs", {{"Host", host}});
    ASSERT_TRUE(r) << host;
    EXPECT_EQ(r->status, 403) << host;
    EXPECT_EQ(r->body.find("grpo-seed0"), std::string::npos) << "run data leaked to Host " << host;
    EXPECT_NE(r->body.find("is not a name of this server"), std::string::npos) << r->body;
    EXPECT_EQ(c.Get("/", {{"Host", host}})->status, 403) << host;
  }
  for (const std::string& host : std::vector<std::string>{"127.0.0.1" + port, "localhost" + port, "LOCALHOST",
                                                          "app.localhost" + port, "[::1]" + port, "192.168.7.9" + port,
                                                          "localhost." + port}) {
    auto r = c.Get("/api/runs", {{"Host", host}});
    ASSERT_TRUE(r) << host;
    EXPECT_EQ(r->status, 200) << host << ": " << r->body;
  }
  // A name the user allows (or binds to) is answered too.
  DashboardOptions o;
  o.allowed_hosts = {"box.lan"};
  Serving allowed({runs.finished}, o);
  httplib::Client a("127.0.0.1", allowed.port);
  EXPECT_EQ(a.Get("/api/runs", {{"Host", "box.lan:1234"}})->status, 200);
  EXPECT_EQ(a.Get("/api/runs", {{"Host", "evil.example"}})->status, 403);
}

TEST(Dashboard, HostNamesAreParsedStrictly) {
  EXPECT_EQ(host_header_name("LocalHost:8080"), "localhost");
  EXPECT_EQ(host_header_name("[::1]:8080"), "::1");
  EXPECT_EQ(host_header_name("[::1]x"), "");
  EXPECT_EQ(host_header_name("::1"), "");
  EXPECT_EQ(host_header_name("a b"), "");
  EXPECT_EQ(host_header_name("box.lan."), "box.lan");
  const HostCheck bound{"box.lan", {}};
  EXPECT_EQ(host_refusal(std::string("box.lan:80"), bound), "");
  EXPECT_NE(host_refusal(std::string("other.lan"), bound), "");
  EXPECT_EQ(host_refusal(std::nullopt, bound), "the request has no Host header");
  EXPECT_EQ(host_refusal(std::string("anything"), HostCheck{"0.0.0.0", {"*"}}), "");
  EXPECT_EQ(host_refusal(std::string("evil.example"), HostCheck{"0.0.0.0", {}}),
            "Host 'evil.example' is not a name of this server (a page of another site may be reaching it through DNS "
            "rebinding); open it as localhost or by its IP address, or allow the name (e.g. --allow-host evil.example)");
  DashboardOptions o;
  o.runs = {"r"};
  o.allowed_hosts = {"a b"};
  try {
    o.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--allow-host: 'a b' is not a host name (e.g. myhost.lan, or *)");
  }
}

TEST(DashboardOracle, ThePageWorksInAHeadlessBrowser) {
  RLF_REQUIRE_ORACLE();
  if (!std::filesystem::exists("/usr/bin/chromium") || !std::filesystem::exists("/usr/bin/chromedriver")) {
    const char* req = std::getenv("RLF_REQUIRE_ORACLE");
    if (req && std::string(req) == "1") FAIL() << "chromium and chromium-driver are missing: run scripts/setup.sh";
    GTEST_SKIP() << "chromium and chromium-driver are missing (scripts/setup.sh installs them)";
  }
  Runs runs;
  Serving s({runs.finished, runs.live});
  const std::string shot = (runs.dir / "dashboard.png").string();
  auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                             test::shell_quote(test::source_path("tests/oracle/dashboard_browser_check.py").string()) + " " +
                             test::shell_quote("http://127.0.0.1:" + std::to_string(s.port)) + " " +
                             test::shell_quote(runs.live.string()) + " " + test::shell_quote(shot) + " 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json out = Json::parse(r.output.substr(r.output.rfind("\n{") == std::string::npos ? 0 : r.output.rfind("\n{") + 1));
  EXPECT_EQ(out["charts"], 3);
  EXPECT_TRUE(out["live_updated"].get<bool>());
  EXPECT_TRUE(out["console_errors"].empty()) << out.dump();
  ASSERT_TRUE(std::filesystem::exists(shot));
  EXPECT_GT(std::filesystem::file_size(shot), 20000u);  // a blank 1400x1600 PNG is a few KB
  // Keep a copy for people to look at (the build tree is not cleaned by tests).
  std::filesystem::copy_file(shot, test::binary_path("dashboard-screenshot.png"),
                             std::filesystem::copy_options::overwrite_existing);
}

}  // namespace
}  // namespace rlf
