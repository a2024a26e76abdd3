// JSONL reading and the bad-record policy (see jsonl_reader.h).
#include "data/jsonl_reader.h"

#include "util/fs.h"

namespace rlf {

OnBadRecord parse_on_bad_record(std::string_view name) {
  if (name == "error") return OnBadRecord::Error;
  if (name == "skip") return OnBadRecord::Skip;
  fail("on_bad_record: unknown value '", std::string(name), "' (expected \"error\" or \"skip\")");
}

void BadRecords::report(const std::string& message) {
  if (policy_ == OnBadRecord::Error) throw Error(message);
  ++count_;
  if (examples_.size() < kMaxExamples) examples_.push_back(message);
}

std::string jsonl_where(const std::string& path, size_t line) { return str("'", path, "' line ", line); }

std::vector<JsonlRecord> read_jsonl(const std::string& path, BadRecords& bad) {
  std::string text = read_file_maybe_gz(path);
  std::vector<std::string> lines = split_lines(text);
  std::vector<JsonlRecord> records;
  records.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    std::string where = jsonl_where(path, i + 1);
    try {
      Json value = parse_json(lines[i], where);
      check(value.is_object(), where, ": expected a JSON object, got ", value.type_name());
      records.push_back({std::move(value), i + 1, std::move(where)});
    } catch (const Error& e) {
      bad.report(e.what());
    }
  }
  return records;
}

std::optional<std::string> record_text(const Json& record, const std::string& field, const std::string& where) {
  auto it = record.find(field);
  if (it == record.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  check(it->is_number() || it->is_boolean(), where, ": field '", field, "' must be a string, not ", it->type_name());
  return it->dump();
}

std::string require_record_text(const Json& record, const std::string& field, const std::string& where, bool non_empty) {
  std::optional<std::string> text = record_text(record, field, where);
  check(text.has_value(), where, ": missing field '", field, "'");
  check(!non_empty || !text->empty(), where, ": field '", field, "' is empty");
  return *text;
}

std::string first_present_field(const Json& record, const std::vector<std::string>& candidates) {
  for (const std::string& c : candidates) {
    auto it = record.find(c);
    if (it != record.end() && !it->is_null()) return c;
  }
  return "";
}

}  // namespace rlf
