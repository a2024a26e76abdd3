// `rlf verify math`: the math answer verifier from the command line.
//   rlf verify math --data FILE [--json]   agreement of a dataset's worked
//       solutions with its reference answers (GSM8K / MATH auto-detected,
//       or --solution-field/--answer-field), as one JSON object with agree,
//       total, rate and the first --max-failures failures
//   rlf verify math --pairs FILE [--json]  one verdict per {"prediction",
//       "reference"} line (JSONL with --json)
//   rlf verify math PREDICTION REFERENCE   one verdict
// The logic lives in rewards/math (math_dataset.h, math_verify.h).
#include <cstdio>
#include <iostream>

#include "apps/cli/cli.h"
#include "rewards/math/math_dataset.h"
#include "util/error.h"

namespace rlf::cli {
namespace {

Json verdict_json(const math::MathVerdict& v) {
  return Json{{"correct", v.correct}, {"extracted", v.extracted}, {"reason", v.reason}};
}

std::string dump(const Json& j, int indent = -1) { return j.dump(indent, ' ', false, Json::error_handler_t::replace); }

int run_verify_math(const Args& args) {
  math::VerifyOptions verify;
  verify.format = math::parse_answer_format(args.str("format"));
  bool json = args.flag("json");
  int n_modes = (args.given("data") ? 1 : 0) + (args.given("pairs") ? 1 : 0) + (args.positional().empty() ? 0 : 1);
  check(n_modes == 1, "verify math: give exactly one of --data FILE, --pairs FILE or PREDICTION REFERENCE");

  if (args.given("data")) {
    math::DatasetCheckOptions options;
    options.solution_field = args.str("solution-field");
    options.gsm8k_worked_only = args.flag("gsm8k-worked-only");
    options.answer_field = args.str("answer-field");
    check(args.integer("max-failures") >= 0, "verify math: --max-failures must be >= 0, got ", args.integer("max-failures"));
    check(args.integer("limit") >= 0, "verify math: --limit must be >= 0 (0 = all), got ", args.integer("limit"));
    options.max_failures = static_cast<size_t>(args.integer("max-failures"));
    options.limit = static_cast<size_t>(args.integer("limit"));
    options.verify = verify;
    math::DatasetReport report = math::check_dataset(args.str("data"), options);
    if (json) {
      std::cout << dump(report.to_json(), 1) << "\n";
    } else {
      std::printf("%s (%s): %zu/%zu agree (%.2f%%), %.0f pairs/s\n", report.file.c_str(), report.format.c_str(),
                  report.agree, report.total, 100.0 * report.rate(),
                  report.seconds > 0 ? static_cast<double>(report.total) / report.seconds : 0.0);
      for (const math::DatasetFailure& f : report.failures) {
        std::printf("  line %zu: extracted '%s', reference '%s': %s\n", f.line, f.extracted.c_str(), f.reference.c_str(),
                    f.reason.c_str());
      }
    }
    return 0;
  }
  if (args.given("pairs")) {
    size_t n_correct = 0, n = 0;
    for (const math::MathVerdict& v : math::verify_pairs_file(args.str("pairs"), verify)) {
      ++n;
      n_correct += v.correct;
      if (json) std::cout << dump(verdict_json(v)) << "\n";
      else std::printf("%s\t%s\t%s\n", v.correct ? "correct" : "wrong", v.extracted.c_str(), v.reason.c_str());
    }
    if (!json) std::printf("%zu/%zu correct\n", n_correct, n);
    return 0;
  }
  const auto& pos = args.positional();
  check(pos.size() == 2, "verify math: expected PREDICTION REFERENCE, got ", pos.size(), " argument(s)");
  math::MathVerdict v = math::verify_math(pos[0], pos[1], verify);
  if (json) std::cout << dump(verdict_json(v)) << "\n";
  else std::printf("%s (extracted '%s'): %s\n", v.correct ? "correct" : "wrong", v.extracted.c_str(), v.reason.c_str());
  return v.correct ? 0 : 1;
}

}  // namespace

CommandSpec make_verify_math_command() {
  CommandSpec cmd;
  cmd.name = "verify math";
  cmd.summary = "check math answers: a dataset's solutions against its answers, pairs, or one pair";
  cmd.usage = "[PREDICTION REFERENCE]";
  cmd.n_positional_min = 0;
  cmd.n_positional_max = 2;
  cmd.options = {
      {"data", OptKind::String, "", "JSONL of worked solutions and answers (GSM8K or MATH, auto-detected)", "FILE"},
      {"pairs", OptKind::String, "", "JSONL of {\"prediction\": text, \"reference\": answer}; one verdict per line", "FILE"},
      {"solution-field", OptKind::String, "", "--data: the field holding the solution text (default: auto)", "NAME"},
      {"answer-field", OptKind::String, "", "--data: the field holding the reference answer (default: answer)", "NAME"},
      {"format", OptKind::String, "auto", "where the answer is in a solution: auto, boxed, gsm8k, answer-is, last-number", "NAME"},
      {"max-failures", OptKind::Int, "10", "--data: failing records listed in the report", "N", 0, 1e9},
      {"limit", OptKind::Int, "0", "--data: records checked (0 = all)", "N", 0, 1e12},
      {"gsm8k-worked-only", OptKind::Flag, "false", "--data, GSM8K: find the answer in the worked text without its '#### n' line (stricter)", ""},
      {"json", OptKind::Flag, "false", "JSON output (one object for --data, one line per pair for --pairs)", ""},
  };
  cmd.run = run_verify_math;
  return cmd;
}

}  // namespace rlf::cli
