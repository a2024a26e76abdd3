// Builds one harness program per completion (per assert with partial credit), runs them
// with run_many, and maps sandbox statuses to scores, explanations or missing scores.
#include "rewards/code_reward.h"

#include <cmath>
#include <random>

#include "sandbox/run_many.h"
#include "util/fs.h"

namespace rlf {
namespace {

bool has_string(const Json& j, const char* key) { return j.contains(key) && j[key].is_string(); }

// `n_bytes` random bytes from the OS, as hex (not seeded: the value never
// changes a score, only makes the end-of-tests sentinel unguessable).
std::string random_hex(int n_bytes) {
  std::random_device rd;
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < n_bytes; ++i) {
    unsigned v = rd() & 0xFFu;
    out += digits[v >> 4];
    out += digits[v & 15];
  }
  return out;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

// Python's "    ^^^^^" markers under a traceback line say nothing in one line of text.
bool caret_line(const std::string& s) { return s.find_first_not_of(" \t^~") == std::string::npos; }

// The status and the last `n_lines` non-empty lines of stderr.
std::string describe_failure(const sandbox::ExecResult& r, int64_t n_lines) {
  std::string head = r.status == sandbox::ExecStatus::failed
                         ? str("failed (exit ", r.exit_code, r.note.empty() ? "" : ": " + r.note, ")")
                                                             : str(sandbox::status_name(r.status), " (", r.note, ")");
  std::vector<std::string> lines;
  for (const std::string& line : split_lines(r.stderr_text)) {
    if (!blank(line) && !caret_line(line)) lines.push_back(line);
  }
  size_t first = lines.size() > size_t(n_lines) ? lines.size() - size_t(n_lines) : 0;
  std::string tail;
  for (size_t i = first; i < lines.size(); ++i) tail += (tail.empty() ? "" : " | ") + lines[i];
  if (tail.size() > 400) tail = "..." + tail.substr(tail.size() - 400);
  return tail.empty() ? head : head + ": " + tail;
}

}  // namespace

void validate(const CodeRewardOptions& o) {
  check(o.workers >= 0, "option 'workers' is ", o.workers, "; use a count >= 1, or 0 for one per hardware thread");
  check(std::isfinite(o.timeout_s) && o.timeout_s > 0, "option 'timeout_s' is ", o.timeout_s,
        "; use a positive number of seconds");
  check(o.memory_mb >= 32, "option 'memory_mb' is ", o.memory_mb, "; use at least 32 (MiB)");
  check(o.stderr_lines >= 0, "option 'stderr_lines' is ", o.stderr_lines, "; use a count >= 0");
}

CodeRewardOptions read_code_options(OptionReader& reader) {
  CodeRewardOptions o;
  o.workers = reader.get_int("workers", o.workers);
  o.timeout_s = reader.get_double("timeout_s", o.timeout_s);
  o.memory_mb = reader.get_int("memory_mb", o.memory_mb);
  o.extract_code = reader.get_bool("extract_code", o.extract_code);
  o.partial_credit = reader.get_bool("partial_credit", o.partial_credit);
  o.stderr_lines = reader.get_int("stderr_lines", o.stderr_lines);
  o.python = reader.get_string("python", o.python);
  return o;
}

std::string extract_code_block(const std::string& completion) {
  std::string untagged;
  bool have_untagged = false;
  for (size_t at = completion.find("```"); at != std::string::npos;) {
    size_t eol = completion.find('\n', at + 3);
    if (eol == std::string::npos) break;
    std::string info = completion.substr(at + 3, eol - at - 3);
    while (!info.empty() && (info.back() == ' ' || info.back() == '\r' || info.back() == '\t')) info.pop_back();
    size_t close = completion.find("```", eol + 1);
    std::string body = completion.substr(eol + 1, close == std::string::npos ? std::string::npos : close - eol - 1);
    if (info == "python" || info == "py" || info == "python3") return body;
    if (info.empty() && !have_untagged) {
      untagged = body;
      have_untagged = true;
    }
    if (close == std::string::npos) break;
    at = completion.find("```", close + 3);
  }
  return have_untagged ? untagged : completion;
}

sandbox::CodeTask code_task_from_record(const Json& record, const std::string& where) {
  sandbox::CodeTask task;
  task.origin = where;
  check(record.is_object(), where, ": code reward needs a record object with tests, got ", record.type_name());
  if (record.contains("task_id")) {
    task.task_id = record["task_id"].is_string() ? record["task_id"].get<std::string>() : record["task_id"].dump();
  }
  if (has_string(record, "prompt") && record.contains("entry_point")) {
    task.dataset = sandbox::CodeDataset::humaneval;
    task.prompt = record["prompt"].get<std::string>();
    task.entry_point = json_require<std::string>(record, "entry_point", where);
    task.test = json_get_or<std::string>(record, "test", "", where);
    check(!blank(task.test), where, ": code reward: HumanEval record has no tests (field 'test' is missing or empty)");
    check(!blank(task.entry_point), where, ": code reward: HumanEval record has an empty 'entry_point'");
    return task;
  }
  if (record.contains("test_list")) {
    task.dataset = sandbox::CodeDataset::mbpp;
    task.test_setup_code = json_get_or<std::string>(record, "test_setup_code", "", where);
    task.test_list = json_get_or<std::vector<std::string>>(record, "test_list", {}, where);
    check(!task.test_list.empty(), where, ": code reward: MBPP record has no tests (field 'test_list' is empty)");
    return task;
  }
  fail(where, ": code reward needs tests, but the record has neither HumanEval fields (prompt, test, entry_point) "
       "nor an MBPP 'test_list'");
}

CodeReward::CodeReward(CodeRewardOptions options) : options_(std::move(options)) {
  validate(options_);
  sandbox_.timeout_s = options_.timeout_s;
  sandbox_.memory_mb = options_.memory_mb;
  sandbox_.python = options_.python;
  with_context("code reward: the sandbox cannot run on this host", [&] { sandbox::check_sandbox_supported(sandbox_); });
}

void CodeReward::check_record(const Json& record, const std::string& reference, const std::string& where) const {
  code_task_from_record(record, where);
}

std::vector<RewardResult> CodeReward::score(const RewardGroup& group) {
  const sandbox::CodeTask task = code_task_from_record(group.record, "code reward");
  const bool per_assert = options_.partial_credit && task.dataset == sandbox::CodeDataset::mbpp;
  const size_t n_runs = per_assert ? task.test_list.size() : 1;  // programs per sample

  // Every program ends by printing a fresh random sentinel; a run that exits
  // 0 without printing it left before its tests finished (sys.exit(0),
  // os._exit(0) in the completion) and fails.
  const std::string sentinel = "rlf-tests-finished-" + random_hex(16);
  const std::string sentinel_line = "\nprint(\"" + sentinel + "\", flush=True)\n";
  std::vector<std::string> programs;
  for (const RewardSample& s : group.samples) {
    std::string code = options_.extract_code ? extract_code_block(s.completion) : s.completion;
    if (!per_assert) {
      programs.push_back(sandbox::build_test_program(task, code) + sentinel_line);
      continue;
    }
    for (const std::string& assertion : task.test_list) {
      sandbox::CodeTask one = task;
      one.test_list = {assertion};
      programs.push_back(sandbox::build_mbpp_program(one, code) + sentinel_line);
    }
  }

  std::vector<RewardResult> results(group.samples.size());
  std::vector<sandbox::ExecResult> runs;
  try {
    runs = sandbox::run_many(programs, sandbox_, int(options_.workers));
  } catch (const std::exception& e) {
    for (RewardResult& r : results) r.missing_reason = str("code reward: sandbox failed: ", e.what());
    return results;
  }

  for (size_t i = 0; i < group.samples.size(); ++i) {
    RewardResult& r = results[i];
    size_t n_passed = 0;
    const sandbox::ExecResult* first_failure = nullptr;
    sandbox::ExecResult early_exit;
    size_t first_failure_index = 0;
    for (size_t k = 0; k < n_runs; ++k) {
      const sandbox::ExecResult& run = runs[i * n_runs + k];
      if (run.status == sandbox::ExecStatus::error) {
        r.missing_reason = str("code reward: sandbox error (not the completion's fault): ", run.note);
        break;
      }
      if (run.status == sandbox::ExecStatus::ok && run.stdout_text.find(sentinel) != std::string::npos) {
        ++n_passed;
      } else if (run.status == sandbox::ExecStatus::ok) {
        if (!first_failure) {
          early_exit = run;
          early_exit.status = sandbox::ExecStatus::failed;
          early_exit.note = run.output_truncated ? "output over the cap: cannot confirm that the tests ran"
                                                 : "exited 0 before the tests finished (sys.exit / os._exit?)";
          first_failure = &early_exit;
          first_failure_index = k;
        }
      } else if (!first_failure) {
        first_failure = &run;
        first_failure_index = k;
      }
    }
    if (!r.missing_reason.empty()) continue;
    if (!per_assert) {
      r.score = n_passed == 1 ? 1.0 : 0.0;
      r.explanation = first_failure ? describe_failure(*first_failure, options_.stderr_lines) : "passed";
      continue;
    }
    r.score = double(n_passed) / double(n_runs);
    r.explanation = str(n_passed, "/", n_runs, " asserts passed");
    if (first_failure) {
      r.explanation += str("; first failure: ", task.test_list[first_failure_index], " -> ",
                           describe_failure(*first_failure, options_.stderr_lines));
    }
  }
  return results;
}

}  // namespace rlf
