// verify_math per completion; the explanation quotes the reduced reference and the extracted answer.
#include "rewards/exact_match.h"

#include <algorithm>

#include "rewards/math/math_verify.h"

namespace rlf {
namespace {

// A reference written as a worked solution: its final answer, for messages
// (verify_math reduces it the same way for the comparison itself).
std::string reference_answer_text(const std::string& reference) {
  if (reference.find("\\boxed") != std::string::npos || reference.find("\\fbox") != std::string::npos) {
    if (auto a = math::extract_boxed(reference)) return *a;
  }
  if (reference.find("####") != std::string::npos) {
    if (auto a = math::extract_answer(reference, math::AnswerFormat::Gsm8k)) return *a;
  }
  return reference;
}

// Keeps explanations one short line.
std::string one_line(std::string s, size_t max_len = 80) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > max_len) s = s.substr(0, max_len) + "...";
  return s;
}

}  // namespace

math::AnswerFormat parse_reward_answer_format(const std::string& name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (auto f : {math::AnswerFormat::Auto, math::AnswerFormat::Gsm8k, math::AnswerFormat::Boxed,
                 math::AnswerFormat::AnswerIs, math::AnswerFormat::LastNumber}) {
    if (math::format_name(f) == dashed) return f;
  }
  fail("option 'answer_format' is '", name, "'; use one of: auto, gsm8k, boxed, answer_is, last_number");
}

void validate(const ExactMatchOptions& options) {
  parse_reward_answer_format(options.answer_format);
  check(options.correct_score != options.incorrect_score, "options 'correct_score' and 'incorrect_score' are both ",
        options.correct_score, "; give a correct answer a different score than a wrong one");
}

ExactMatchOptions read_exact_match_options(OptionReader& reader) {
  ExactMatchOptions o;
  o.answer_format = reader.get_string("answer_format", o.answer_format);
  o.reference_field = reader.get_string("reference_field", o.reference_field);
  o.correct_score = reader.get_double("correct_score", o.correct_score);
  o.incorrect_score = reader.get_double("incorrect_score", o.incorrect_score);
  return o;
}

ExactMatchReward::ExactMatchReward(ExactMatchOptions options) : options_(std::move(options)) {
  validate(options_);
  format_ = parse_reward_answer_format(options_.answer_format);
}

std::string ExactMatchReward::reference_of(const Json& record, const std::string& reference,
                                           const std::string& where) const {
  std::string ref = reference;
  if (!options_.reference_field.empty()) {
    auto it = record.is_object() ? record.find(options_.reference_field) : record.end();
    check(record.is_object() && it != record.end() && (it->is_string() || it->is_number()), where,
          ": math reward needs a reference answer in field '", options_.reference_field,
          "' (option reference_field), but the record has none");
    ref = it->is_string() ? it->get<std::string>() : it->dump();
  }
  check(ref.find_first_not_of(" \t\r\n") != std::string::npos, where,
        ": math reward needs a reference answer, but the record has none (give the dataset an answer field, "
        "or set the reward's reference_field)");
  return ref;
}

void ExactMatchReward::check_record(const Json& record, const std::string& reference, const std::string& where) const {
  reference_of(record, reference, where);
}

std::vector<RewardResult> ExactMatchReward::score(const RewardGroup& group) {
  const std::string reference = reference_of(group.record, group.reference, "math reward");
  const std::string expected = one_line(reference_answer_text(reference));
  math::VerifyOptions verify;
  verify.format = format_;
  std::vector<RewardResult> results(group.samples.size());
  for (size_t i = 0; i < group.samples.size(); ++i) {
    math::MathVerdict v = math::verify_math(group.samples[i].completion, reference, verify);
    RewardResult& r = results[i];
    r.score = v.correct ? options_.correct_score : options_.incorrect_score;
    if (v.extracted.empty() && !v.correct) {
      r.explanation = str("no answer found (format ", options_.answer_format, ")");
    } else {
      r.explanation = str(v.correct ? "correct: " : "", "expected ", expected, ", got ", one_line(v.extracted));
    }
  }
  return results;
}

}  // namespace rlf
