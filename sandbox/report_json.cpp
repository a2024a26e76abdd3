#include "sandbox/report_json.h"

namespace rlf::sandbox {

namespace {
constexpr size_t kStderrTail = 600;  // characters of stderr kept per failure in a report

std::string tail(const std::string& text, size_t n) { return text.size() <= n ? text : text.substr(text.size() - n); }
}  // namespace

Json to_json(const ExecResult& r) {
  return Json{{"status", status_name(r.status)}, {"exit_code", r.exit_code}, {"signal", r.signal},
              {"stdout", r.stdout_text},         {"stderr", r.stderr_text},  {"output_truncated", r.output_truncated},
              {"note", r.note},                  {"wall_ms", r.wall_ms},     {"cpu_ms", r.cpu_ms}};
}

Json to_json(const VerifyReport& report) {
  Json failures = Json::array();
  for (const TaskFailure& f : report.failures) {
    failures.push_back({{"task_id", f.task_id},
                        {"status", status_name(f.result.status)},
                        {"exit_code", f.result.exit_code},
                        {"note", f.result.note},
                        {"stderr_tail", tail(f.result.stderr_text, kStderrTail)}});
  }
  double rate = report.total > 0 ? double(report.passed) / double(report.total) : 0.0;
  return Json{{"passed", report.passed}, {"total", report.total}, {"pass_rate", rate},
              {"wall_ms", report.wall_ms}, {"failures", failures}};
}

Json to_json(const ExecBenchReport& r) {
  return Json{{"programs", r.n_programs},  {"workers", r.n_workers},
              {"ok", r.n_ok},              {"wall_ms", r.wall_ms},
              {"programs_per_s", r.programs_per_s}, {"mean_run_ms", r.mean_run_ms}};
}


}  // namespace rlf::sandbox
