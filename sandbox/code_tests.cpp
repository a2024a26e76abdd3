// Dataset loading (field detection with file:line errors) and the harness
// programs of HumanEval and MBPP.
#include "sandbox/code_tests.h"

#include <chrono>

#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf::sandbox {
namespace {

bool has_string(const Json& j, const char* key) { return j.contains(key) && j[key].is_string(); }

CodeTask parse_task(const Json& j, const std::string& origin) {
  CodeTask task;
  task.origin = origin;
  if (has_string(j, "prompt") && j.contains("entry_point")) {
    task.dataset = CodeDataset::humaneval;
    task.task_id = json_require<std::string>(j, "task_id", origin);
    task.prompt = json_require<std::string>(j, "prompt", origin);
    task.entry_point = json_require<std::string>(j, "entry_point", origin);
    task.reference = json_get_or<std::string>(j, "canonical_solution", "", origin);
    task.test = json_get_or<std::string>(j, "test", "", origin);
    check(task.test.find_first_not_of(" \t\r\n") != std::string::npos, origin, ": HumanEval task '", task.task_id,
          "' has no tests (field 'test' is missing or empty)");
    check(!task.entry_point.empty(), origin, ": HumanEval task '", task.task_id, "' has an empty 'entry_point'");
    return task;
  }
  if (j.contains("test_list") || j.contains("code")) {
    task.dataset = CodeDataset::mbpp;
    check(j.contains("task_id"), origin, ": missing required field 'task_id'");
    task.task_id = j["task_id"].is_string() ? j["task_id"].get<std::string>() : j["task_id"].dump();
    task.prompt = json_get_or<std::string>(j, "text", "", origin);
    task.reference = json_get_or<std::string>(j, "code", "", origin);
    task.test_setup_code = json_get_or<std::string>(j, "test_setup_code", "", origin);
    task.test_list = json_get_or<std::vector<std::string>>(j, "test_list", {}, origin);
    check(!task.test_list.empty(), origin, ": MBPP task '", task.task_id,
          "' has no tests (field 'test_list' is missing or empty)");
    return task;
  }
  fail(origin, ": not a HumanEval record (prompt, test, entry_point) nor an MBPP record (code, test_list)");
}

}  // namespace

const char* dataset_name(CodeDataset dataset) {
  return dataset == CodeDataset::humaneval ? "humaneval" : "mbpp";
}

std::vector<CodeTask> load_code_tasks(const std::string& path) {
  std::string text = read_file_maybe_gz(path);
  std::vector<CodeTask> tasks;
  std::vector<std::string> lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    std::string origin = str(path, ":", i + 1);
    tasks.push_back(parse_task(parse_json(lines[i], origin), origin));
  }
  check(!tasks.empty(), path, ": no records (expected JSON lines of HumanEval or MBPP tasks)");
  return tasks;
}

std::string build_humaneval_program(const CodeTask& task, const std::string& completion) {
  check(task.dataset == CodeDataset::humaneval, task.origin, ": build_humaneval_program on a ",
        dataset_name(task.dataset), " task");
  return task.prompt + completion + "\n" + task.test + "\n" + "check(" + task.entry_point + ")\n";
}

std::string build_mbpp_program(const CodeTask& task, const std::string& code) {
  check(task.dataset == CodeDataset::mbpp, task.origin, ": build_mbpp_program on a ", dataset_name(task.dataset),
        " task");
  std::string program = code + "\n" + task.test_setup_code + "\n";
  for (const std::string& assertion : task.test_list) program += assertion + "\n";
  return program;
}

std::string build_test_program(const CodeTask& task, const std::string& solution) {
  return task.dataset == CodeDataset::humaneval ? build_humaneval_program(task, solution)
                                                : build_mbpp_program(task, solution);
}

VerifyReport verify_references(const std::vector<CodeTask>& tasks, const SandboxOptions& options, int n_workers) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> programs;
  programs.reserve(tasks.size());
  for (const CodeTask& task : tasks) programs.push_back(build_test_program(task, task.reference));
  std::vector<ExecResult> results = run_many(programs, options, n_workers);
  VerifyReport report;
  report.total = int64_t(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (results[i].status == ExecStatus::ok) {
      ++report.passed;
    } else {
      report.failures.push_back({tasks[i].task_id, std::move(results[i])});
    }
  }
  report.wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
                       .count();
  return report;
}

}  // namespace rlf::sandbox
