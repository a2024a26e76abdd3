// Reading JSONL (and JSONL.gz) record files with line-numbered errors, and
// the policy for bad records: stop with an error naming the file and line, or
// skip the record and count it (the count is reported as a metric).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/json_util.h"

namespace rlf {

enum class OnBadRecord { Error, Skip };

// "error" | "skip"; throws rlf::Error naming the accepted values.
OnBadRecord parse_on_bad_record(std::string_view name);

// Collects bad records while a file loads. With Error, report() throws the
// message; with Skip it counts it and keeps the first few messages for logs.
class BadRecords {
 public:
  static constexpr size_t kMaxExamples = 5;
  explicit BadRecords(OnBadRecord policy) : policy_(policy) {}

  // Reports one bad record; `message` starts with its location.
  void report(const std::string& message);

  size_t count() const { return count_; }
  const std::vector<std::string>& examples() const { return examples_; }  // the first kMaxExamples messages

 private:
  OnBadRecord policy_;
  size_t count_ = 0;
  std::vector<std::string> examples_;
};

struct JsonlRecord {
  Json value;         // the line's JSON object
  size_t line = 0;    // 1-based line number in the file
  std::string where;  // "'path' line N", the prefix of every message about it
};

// The location prefix used in messages: "'path' line N".
std::string jsonl_where(const std::string& path, size_t line);

// Reads `path` (gunzipped when it ends in ".gz"): one JSON object per line,
// blank lines ignored. A line that is not valid JSON, or not an object, is
// reported to `bad` ("'path' line 17: malformed JSON at byte 5: ...").
// Throws rlf::Error when the file cannot be read.
std::vector<JsonlRecord> read_jsonl(const std::string& path, BadRecords& bad);

// The text of record[field]: a string as it is, a number or boolean as JSON;
// nullopt when the field is missing or null. Throws rlf::Error naming `where`
// for an array or object.
std::optional<std::string> record_text(const Json& record, const std::string& field, const std::string& where);

// Like record_text but the field must be present (and, with `non_empty`, not
// ""): "'path' line 17: missing field 'question'".
std::string require_record_text(const Json& record, const std::string& field, const std::string& where,
                                bool non_empty = true);

// The first of `candidates` the record has (not null), or "".
std::string first_present_field(const Json& record, const std::vector<std::string>& candidates);

// Runs `fn(record)` for each record, reporting an rlf::Error it throws to
// `bad` (the message already names the location) instead of propagating it.
template <typename Fn>
void for_each_record(const std::vector<JsonlRecord>& records, BadRecords& bad, Fn&& fn) {
  for (const JsonlRecord& r : records) {
    try {
      fn(r);
    } catch (const Error& e) {
      bad.report(e.what());
    }
  }
}

}  // namespace rlf
