// Code-generation datasets with unit tests (HumanEval, MBPP) and the programs
// that check a solution against them, as the datasets' own harnesses build
// them:
//   HumanEval: prompt + completion + "\n" + test + "\n" + "check(<entry_point>)"
//   MBPP:      code + "\n" + test_setup_code + "\n" + the test_list asserts, one per line
// A program passes when it exits with status 0 in the sandbox.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/run_many.h"
#include "sandbox/sandbox.h"

namespace rlf::sandbox {

enum class CodeDataset { humaneval, mbpp };

const char* dataset_name(CodeDataset dataset);

struct CodeTask {
  CodeDataset dataset = CodeDataset::humaneval;
  std::string task_id;          // "HumanEval/0"; MBPP's integer id as text ("1")
  std::string prompt;           // HumanEval: signature + docstring; MBPP: the problem text
  std::string reference;        // HumanEval canonical_solution (a completion); MBPP code (a whole solution)
  std::string test;             // HumanEval: the check() function
  std::string entry_point;      // HumanEval: the function under test
  std::string test_setup_code;  // MBPP: run between the solution and the asserts
  std::vector<std::string> test_list;  // MBPP: assert statements
  std::string origin;           // "file:line", for messages
};

// Loads a JSONL (optionally .gz) file of HumanEval or MBPP records, detected per
// record by its fields. A record without tests, or with neither set of fields,
// is an rlf::Error naming the file and line.
std::vector<CodeTask> load_code_tasks(const std::string& path);

// The program that checks a HumanEval completion (the code after the prompt).
std::string build_humaneval_program(const CodeTask& task, const std::string& completion);

// The program that checks an MBPP solution (a whole module defining the function).
std::string build_mbpp_program(const CodeTask& task, const std::string& code);

// build_humaneval_program or build_mbpp_program, by task.dataset.
std::string build_test_program(const CodeTask& task, const std::string& solution);

struct TaskFailure {
  std::string task_id;
  ExecResult result;
};

struct VerifyReport {
  int64_t passed = 0;
  int64_t total = 0;
  std::vector<TaskFailure> failures;  // in dataset order
  int64_t wall_ms = 0;
};

// Runs each task's reference solution against its tests, `n_workers` at a time.
VerifyReport verify_references(const std::vector<CodeTask>& tasks, const SandboxOptions& options,
                               int n_workers = 0);

}  // namespace rlf::sandbox
