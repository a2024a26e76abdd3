// rlf dashboard RUN_DIR...: a live page of training runs (serve/dashboard.h):
// every metric's curve with the runs overlaid, each run's config, the
// samples log and progress. Ctrl-C (SIGINT) or SIGTERM stops it.
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "serve/dashboard.h"
#include "util/error.h"

namespace rlf::cli {

namespace {

int run_dashboard(const Args& args) {
  DashboardOptions o;
  for (const auto& p : args.positional()) o.runs.emplace_back(p);
  o.host = args.str("host");
  o.port = args.integer("port");
  for (const std::string& h : args.list("allow-host")) o.allowed_hosts.push_back(h);
  Dashboard dashboard(o);
  const int port = dashboard.bind();
  StopOnSignal on_signal([&] { dashboard.stop(); });
  std::cout << "rlf dashboard: " << o.runs.size() << " run(s) on http://" << o.host << ":" << port << "/" << std::endl;
  dashboard.run();
  return 0;
}

}  // namespace

CommandSpec make_dashboard_command() {
  CommandSpec c;
  c.name = "dashboard";
  c.summary = "a live page of training runs in the browser: curves (runs overlaid), configs, samples, progress";
  c.usage = "RUN_DIR...";
  c.n_positional_min = 1;
  c.n_positional_max = 64;
  c.options = {
      {"host", OptKind::String, "127.0.0.1", "interface to listen on (0.0.0.0 = every interface)", "ADDR"},
      {"port", OptKind::Int, "8080", "TCP port; 0 = any free port (printed at start)", "N", 0, 65535},
      {"allow-host", OptKind::List, "", "answer requests for this Host name too (besides localhost, IP addresses and "
       "--host; * = any); repeatable", "NAME"},
  };
  c.run = [](const Args& a) {
    check(!a.positional().empty(), "rlf dashboard: give one or more run directories, e.g. rlf dashboard runs/demo runs/agent");
    return run_dashboard(a);
  };
  return c;
}

}  // namespace rlf::cli
