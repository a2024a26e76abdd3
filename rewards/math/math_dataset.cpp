#include "rewards/math/math_dataset.h"

#include <chrono>

#include "rewards/math/latex_normalize.h"
#include "util/fs.h"

namespace rlf::math {

Json DatasetReport::to_json() const {
  Json j;
  j["file"] = file;
  j["format"] = format;
  j["agree"] = agree;
  j["total"] = total;
  j["rate"] = rate();
  j["seconds"] = seconds;
  j["pairs_per_second"] = seconds > 0 ? static_cast<double>(total) / seconds : 0.0;
  j["failures"] = Json::array();
  for (const DatasetFailure& f : failures) {
    j["failures"].push_back({{"line", f.line}, {"extracted", f.extracted}, {"reference", f.reference}, {"reason", f.reason}});
  }
  return j;
}

std::string gsm8k_worked_solution(const std::string& answer_field) {
  std::string worked = answer_field.substr(0, answer_field.rfind("####"));
  std::string out;
  size_t i = 0;
  while (i < worked.size()) {
    size_t open = worked.find("<<", i);
    size_t close = open == std::string::npos ? std::string::npos : worked.find(">>", open);
    if (close == std::string::npos) break;
    out.append(worked, i, open - i);
    i = close + 2;
  }
  out.append(worked, i, std::string::npos);
  return out;
}

namespace {

std::string require_string(const Json& record, const std::string& field, const std::string& source) {
  check(record.is_object(), source, ": expected a JSON object per line");
  auto it = record.find(field);
  check(it != record.end() && !it->is_null(), source, ": missing field '", field,
        "' (use --solution-field/--answer-field to name the fields)");
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  fail(source, ": field '", field, "' should be a string or a number, not ", it->type_name());
}

std::string gsm8k_reference(const std::string& text) {
  size_t j = text.rfind("####");
  if (j == std::string::npos) return text;
  std::string rest = text.substr(j + 4);
  return trim(rest.substr(0, rest.find('\n')));
}

}  // namespace

DatasetRecord dataset_record(const Json& record, const DatasetCheckOptions& options, const std::string& source) {
  check(record.is_object(), source, ": expected a JSON object per line");
  std::string answer_field = options.answer_field.empty() ? "answer" : options.answer_field;
  DatasetRecord r;
  if (!options.solution_field.empty()) {
    r.solution = require_string(record, options.solution_field, source);
    r.reference = gsm8k_reference(require_string(record, answer_field, source));
    r.format = "custom";
    return r;
  }
  if (record.contains("solution")) {
    r.solution = require_string(record, "solution", source);
    r.reference = require_string(record, answer_field, source);
    r.format = "math";
    return r;
  }
  if (record.contains(answer_field)) {
    std::string answer = require_string(record, answer_field, source);
    check(answer.find("####") != std::string::npos, source, ": field '", answer_field,
          "' has no '#### n' line and there is no 'solution' field: cannot tell the record's format "
          "(use --solution-field/--answer-field)");
    r.solution = gsm8k_worked_solution(answer);
    if (!options.gsm8k_worked_only) r.solution += answer.substr(answer.rfind("####"));
    r.reference = gsm8k_reference(answer);
    r.format = "gsm8k";
    return r;
  }
  fail(source, ": cannot tell the record's format: expected 'solution' and '", answer_field, "' (MATH) or '",
       answer_field, "' with a '#### n' line (GSM8K); use --solution-field/--answer-field");
}

DatasetReport check_dataset(const std::string& path, const DatasetCheckOptions& options) {
  DatasetReport report;
  report.file = path;
  std::vector<std::string> lines = split_lines(read_file_maybe_gz(path));
  std::vector<std::pair<size_t, DatasetRecord>> records;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (trim(lines[i]).empty()) continue;
    if (options.limit > 0 && records.size() >= options.limit) break;
    std::string source = "'" + path + "' line " + std::to_string(i + 1);
    records.emplace_back(i + 1, dataset_record(parse_json(lines[i], source), options, source));
  }
  check(!records.empty(), "'", path, "': no records (expected one JSON object per line)");
  auto start = std::chrono::steady_clock::now();
  for (const auto& [line, rec] : records) {
    if (report.format.empty()) report.format = rec.format;
    else if (report.format != rec.format) report.format = "mixed";
    MathVerdict v = verify_math(rec.solution, rec.reference, options.verify);
    ++report.total;
    if (v.correct) {
      ++report.agree;
    } else if (report.failures.size() < options.max_failures) {
      report.failures.push_back({line, v.extracted, rec.reference, v.reason});
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::vector<MathVerdict> verify_pairs_file(const std::string& path, const VerifyOptions& options) {
  std::vector<MathVerdict> out;
  std::vector<std::string> lines = split_lines(read_file_maybe_gz(path));
  for (size_t i = 0; i < lines.size(); ++i) {
    if (trim(lines[i]).empty()) continue;
    std::string source = "'" + path + "' line " + std::to_string(i + 1);
    Json j = parse_json(lines[i], source);
    std::string prediction = json_require<std::string>(j, "prediction", source);
    std::string reference = json_require<std::string>(j, "reference", source);
    out.push_back(verify_math(prediction, reference, options));
  }
  return out;
}

}  // namespace rlf::math
