// The verifier on real data: every GSM8K and MATH-500 reference solution
// verifies against its own answer (in every form models write it), and no
// perturbed or foreign answer verifies.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <cstdlib>
#include <set>

#include "rewards/math/latex_normalize.h"
#include "rewards/math/math_dataset.h"
#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf::math {
namespace {

struct Gsm8kRecord {
  std::string answer_field;  // worked solution + "#### n"
  std::string worked;        // the text before "####"
  std::string n;             // the final answer as written after "####"
};

const std::vector<Gsm8kRecord>& gsm8k() {
  static const std::vector<Gsm8kRecord> records = [] {
    std::vector<Gsm8kRecord> out;
    for (const std::string& line : split_lines(read_file(test::shared_path("data/gsm8k/test.jsonl")))) {
      if (line.empty()) continue;
      std::string a = parse_json(line, "gsm8k")["answer"].get<std::string>();
      size_t j = a.rfind("####");
      out.push_back({a, a.substr(0, j), trim(a.substr(j + 4))});
    }
    return out;
  }();
  return records;
}

struct Math500Record {
  std::string solution, answer;
};

const std::vector<Math500Record>& math500() {
  static const std::vector<Math500Record> records = [] {
    std::vector<Math500Record> out;
    for (const std::string& line : split_lines(read_file(test::shared_path("data/math500/test.jsonl")))) {
      if (line.empty()) continue;
      Json j = parse_json(line, "math500");
      out.push_back({j["solution"].get<std::string>(), j["answer"].get<std::string>()});
    }
    return out;
  }();
  return records;
}

// "70000" -> "70,000" (integers only; others unchanged).
std::string with_commas(const std::string& n) {
  bool negative = !n.empty() && n[0] == '-';
  std::string digits = negative ? n.substr(1) : n;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return n;
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (negative ? "-" : "") + out;
}

TEST(MathRealData, Gsm8kHasAllRecords) { EXPECT_EQ(gsm8k().size(), 1319u); }

TEST(MathRealData, Gsm8kEveryReferenceSolutionVerifiesInEveryForm) {
  // Each form replaces the "#### n" line with what models actually write.
  const std::vector<std::pair<std::string, std::function<std::string(const std::string&)>>> forms = {
      {"#### n (original)", [](const std::string& n) { return "#### " + n; }},
      {"The answer is n.", [](const std::string& n) { return "The answer is " + n + "."; }},
      {"\\boxed{n}", [](const std::string& n) { return "So the total is $\\boxed{" + n + "}$."; }},
      {"thousands separators", [](const std::string& n) { return "The answer is " + with_commas(n) + "."; }},
      {"a $ sign", [](const std::string& n) { return "The answer is $" + n + "."; }},
      {"a trailing .00", [](const std::string& n) { return "The answer is " + n + ".00."; }},
      {"$, separators and .00", [](const std::string& n) { return "The answer is $" + with_commas(n) + ".00"; }},
      {"#### with separators", [](const std::string& n) { return "#### " + with_commas(n); }},
      {"answer: n", [](const std::string& n) { return "Final answer: " + n; }},
  };
  for (const auto& [name, render] : forms) {
    size_t agree = 0;
    for (const Gsm8kRecord& r : gsm8k()) {
      std::string text = r.worked + render(r.n);
      MathVerdict v = verify_math(text, r.n);
      if (v.correct) ++agree;
      else ADD_FAILURE() << name << ": '" << render(r.n) << "' extracted '" << v.extracted << "': " << v.reason;
    }
    EXPECT_EQ(agree, gsm8k().size()) << name;
  }
}

// The worked solution alone (no "####" line): its last number is the final
// answer in all but these records, where the solution ends on another number
// or writes the answer in words / with a space separator (docs/verifiers.md).
TEST(MathRealData, Gsm8kWorkedSolutionsLastNumber) {
  const std::set<size_t> known_exceptions = {21,  36,  148, 267, 288, 309, 310, 325, 440,  452,  494,  506,
                                             539, 575, 594, 602, 606, 608, 624, 636, 639,  646,  670,  675,
                                             761, 815, 854, 1002, 1039, 1052, 1086, 1118, 1222, 1244, 1301, 1315};
  DatasetCheckOptions options;
  options.max_failures = 1000;
  options.gsm8k_worked_only = true;  // the stricter check; the default keeps the "#### n" line (1,319/1,319)
  DatasetReport report = check_dataset(test::shared_path("data/gsm8k/test.jsonl").string(), options);
  EXPECT_EQ(report.format, "gsm8k");
  EXPECT_EQ(report.total, 1319u);
  std::set<size_t> failing;
  for (const DatasetFailure& f : report.failures) failing.insert(f.line);
  EXPECT_EQ(failing, known_exceptions);
  EXPECT_GE(report.agree, 1283u);
}

TEST(MathRealData, Math500EveryBoxedAnswerVerifies) {
  DatasetCheckOptions options;
  options.max_failures = 1000;
  DatasetReport report = check_dataset(test::shared_path("data/math500/test.jsonl").string(), options);
  EXPECT_EQ(report.format, "math");
  EXPECT_EQ(report.total, 500u);
  // Measured: 500/500. Any exception is a regression (docs/verifiers.md).
  EXPECT_GE(report.rate(), 1.0);
  for (const DatasetFailure& f : report.failures) {
    ADD_FAILURE() << "line " << f.line << ": '" << f.extracted << "' vs '" << f.reference << "': " << f.reason;
  }
}

TEST(MathRealData, Math500AnswersInOtherWrappings) {
  for (const Math500Record& r : math500()) {
    for (const std::string& text : {"The answer is $" + r.answer + "$.", "Final answer: $\\boxed{" + r.answer + "}$",
                                    "$" + r.answer + "$"}) {
      MathVerdict v = verify_math(text, r.answer);
      EXPECT_TRUE(v.correct) << text << " -> '" << v.extracted << "': " << v.reason;
    }
  }
}

// ---- wrong answers never verify ----

struct Perturbation {
  std::string name;
  std::string text;
};

// Perturbs the last integer in `answer` that is not part of a decimal, a
// subscript or a command: n+1, n*10 and n with its last two digits swapped.
std::vector<Perturbation> perturb_numbers(const std::string& answer) {
  std::vector<Perturbation> out;
  size_t end = answer.size();
  while (end > 0) {
    while (end > 0 && !std::isdigit(static_cast<unsigned char>(answer[end - 1]))) --end;
    size_t start = end;
    while (start > 0 && std::isdigit(static_cast<unsigned char>(answer[start - 1]))) --start;
    if (end == 0) break;
    char before = start > 0 ? answer[start - 1] : ' ';
    char after = end < answer.size() ? answer[end] : ' ';
    bool in_unit = answer.rfind("box{", start) != std::string::npos || answer.rfind("text{", start) != std::string::npos;
    if (before == '.' || before == '_' || after == '.' || after == '_' || before == ',' || after == ',' || end - start > 15 ||
        in_unit) {
      end = start;
      continue;
    }
    std::string digits = answer.substr(start, end - start);
    long long n = std::stoll(digits);
    auto with = [&](const std::string& d) { return answer.substr(0, start) + d + answer.substr(end); };
    out.push_back({"n+1", with(std::to_string(n + 1))});
    if (n != 0) out.push_back({"n*10", with(std::to_string(n * 10))});
    if (digits.size() >= 2 && digits[digits.size() - 1] != digits[digits.size() - 2] && !(digits.size() == 2 && digits[1] == '0')) {
      std::string swapped = digits;
      std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
      out.push_back({"swapped digits", with(swapped)});
    }
    break;
  }
  return out;
}

TEST(MathRealData, Gsm8kPerturbedAndForeignAnswersNeverVerify) {
  const auto& records = gsm8k();
  size_t n_checked = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const Gsm8kRecord& r = records[i];
    std::vector<Perturbation> wrong = perturb_numbers(r.n);
    // Another record's answer (the next one with a different value).
    for (size_t k = 1; k < records.size(); ++k) {
      const std::string& other = records[(i + k) % records.size()].n;
      if (std::strtod(other.c_str(), nullptr) != std::strtod(r.n.c_str(), nullptr)) {
        wrong.push_back({"other record", other});
        break;
      }
    }
    for (const Perturbation& p : wrong) {
      for (const std::string& text : {r.worked + "The answer is " + p.text + ".", r.worked + "\\boxed{" + p.text + "}",
                                      r.worked + "#### " + with_commas(p.text)}) {
        MathVerdict v = verify_math(text, r.n);
        EXPECT_FALSE(v.correct) << p.name << ": '" << p.text << "' verified against '" << r.n << "': " << v.reason;
        ++n_checked;
      }
    }
  }
  EXPECT_GT(n_checked, 1319u * 3 * 3);
}

TEST(MathRealData, Math500PerturbedAndForeignAnswersNeverVerify) {
  const auto& records = math500();
  size_t n_checked = 0;
  auto compact = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (!std::isspace(static_cast<unsigned char>(c))) out += c;
    }
    return out;
  };
  for (size_t i = 0; i < records.size(); ++i) {
    const Math500Record& r = records[i];
    std::vector<Perturbation> wrong = perturb_numbers(r.answer);
    // Other records' answers: the next three whose text differs.
    int added = 0;
    for (size_t k = 1; k < records.size() && added < 3; ++k) {
      const std::string& other = records[(i + k) % records.size()].answer;
      // "x=5" is the answer 5 (a single-variable assignment).
      auto value_side = [&](const std::string& a) {
        std::string c = compact(a);
        return c.size() > 2 && std::isalpha(static_cast<unsigned char>(c[0])) && c[1] == '=' ? c.substr(2) : c;
      };
      if (value_side(other) == value_side(r.answer)) continue;
      wrong.push_back({"other record", other});
      ++added;
    }
    for (const Perturbation& p : wrong) {
      MathVerdict v = verify_math("Thus the answer is $\\boxed{" + p.text + "}$.", r.answer);
      EXPECT_FALSE(v.correct) << p.name << ": '" << p.text << "' verified against '" << r.answer << "': " << v.reason;
      ++n_checked;
    }
  }
  EXPECT_GT(n_checked, 500u * 4);
}

// ---- repeated verification (and its speed, printed, never asserted) ----

// The verifier keeps no state between calls: five rounds over the whole
// solutions give the same verdict and reason every time.
TEST(MathRealData, Math500VerdictsRepeatAcrossRounds) {
  const auto& records = math500();
  const int n_rounds = 5;
  std::vector<MathVerdict> first;
  for (const Math500Record& r : records) first.push_back(verify_math(r.solution, r.answer));
  auto start = std::chrono::steady_clock::now();
  size_t agree = 0, same = 0;
  for (int round = 1; round < n_rounds; ++round) {
    for (size_t i = 0; i < records.size(); ++i) {
      const MathVerdict v = verify_math(records[i].solution, records[i].answer);
      agree += v.correct;
      same += v.correct == first[i].correct && v.reason == first[i].reason && v.extracted == first[i].extracted;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double n_pairs = static_cast<double>((n_rounds - 1) * records.size());
  std::printf("MATH-500: %.0f pairs/s (%.1f us per pair, whole solutions)\n", n_pairs / seconds, 1e6 * seconds / n_pairs);
  EXPECT_EQ(same, (n_rounds - 1) * records.size());
  EXPECT_EQ(agree, (n_rounds - 1) * records.size()) << "every whole solution verifies against its answer";
}

}  // namespace
}  // namespace rlf::math

namespace rlf::math {
namespace {

// `rlf verify math --data gsm8k/test.jsonl`: every reference solution (its
// "#### n" line included, as a model would write it) verifies against n.
TEST(MathRealData, Gsm8kReferenceSolutionsVerifyAgainstTheirFinalAnswer) {
  DatasetReport report = check_dataset(test::shared_path("data/gsm8k/test.jsonl").string());
  EXPECT_EQ(report.total, 1319u);
  EXPECT_EQ(report.agree, 1319u);
}

}  // namespace
}  // namespace rlf::math
