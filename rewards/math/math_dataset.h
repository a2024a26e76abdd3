// Checking the verifier against a dataset of worked solutions: for each
// JSONL record, the final answer found in the solution must verify against
// the record's reference answer. Used by `rlf verify math --data` and tests.
//
// Record formats (auto-detected per record unless fields are given):
//   MATH     {"solution": "... \boxed{x} ...", "answer": "x"}
//   GSM8K    {"answer": "worked solution\n#### n"}: the whole reference solution
//            (calculator notes <<a*b=c>> removed, its "#### n" line kept) is the
//            solution and n the reference; with gsm8k_worked_only the "####" line
//            is dropped too, so the answer must come from the worked text alone
//            (a stricter check: the last number is not always the answer)
//   custom   --solution-field / --answer-field name the two fields; a
//            reference holding a "#### n" line is reduced to n
// A record without the needed fields is an error naming the file and line.
#pragma once

#include <string>
#include <vector>

#include "rewards/math/math_verify.h"
#include "util/json_util.h"

namespace rlf::math {

struct DatasetCheckOptions {
  std::string solution_field;  // "" = auto-detect (see above)
  std::string answer_field;    // "" = "answer"
  size_t max_failures = 10;    // failing records kept in the report (the rest are only counted)
  size_t limit = 0;            // records checked; 0 = all
  bool gsm8k_worked_only = false;  // GSM8K: drop the "#### n" line from the solution (see above)
  VerifyOptions verify;        // extraction format and tolerances
};

struct DatasetFailure {
  size_t line = 0;         // 1-based line in the file
  std::string extracted;   // the answer found in the solution
  std::string reference;   // the reference answer
  std::string reason;
};

struct DatasetReport {
  std::string file;
  std::string format;      // "math", "gsm8k", "custom" or "mixed"
  size_t total = 0;
  size_t agree = 0;
  std::vector<DatasetFailure> failures;  // the first max_failures
  double seconds = 0;      // wall time of the verification itself
  double rate() const { return total ? static_cast<double>(agree) / static_cast<double>(total) : 0.0; }
  Json to_json() const;
};

// One (solution, reference) pair taken from a record.
struct DatasetRecord {
  std::string solution;
  std::string reference;
  std::string format;  // "math", "gsm8k" or "custom"
};

// Splits a record into solution and reference; throws rlf::Error naming
// `source` (e.g. "'file.jsonl' line 3") when the fields are missing.
DatasetRecord dataset_record(const Json& record, const DatasetCheckOptions& options, const std::string& source);

// Reads a JSONL file and checks every record.
DatasetReport check_dataset(const std::string& path, const DatasetCheckOptions& options = {});

// The worked part of a GSM8K answer: the text before "####" without the
// "<<a*b=c>>" calculator annotations.
std::string gsm8k_worked_solution(const std::string& answer_field);

// Verifies a JSONL file of {"prediction": text, "reference": answer} pairs.
std::vector<MathVerdict> verify_pairs_file(const std::string& path, const VerifyOptions& options = {});

}  // namespace rlf::math
