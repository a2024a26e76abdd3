#include "feedback/columns_critic.h"

#include <optional>

#include "data/synthetic_tasks.h"
#include "util/error.h"

namespace rlf {

namespace {

// The name of column k (0 = units).
std::string column_name(size_t k) {
  static const char* names[] = {"units", "tens", "hundreds", "thousands", "ten-thousands"};
  return k < std::size(names) ? std::string(names[k]) : str("column ", k + 1);
}

// One piece of a worked response: its text and where it starts.
struct Piece {
  std::string text;
  int64_t at = 0;
};

// "7+8=15, 3+4+1=8. #### 85" -> steps {"7+8=15", "3+4+1=8"} and the answer "85" (with offsets).
struct Worked {
  std::vector<Piece> steps;
  std::optional<Piece> answer;
};

std::string trim_dots(const std::string& s, size_t& lead) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\n')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '.' || s[e - 1] == '\n')) --e;
  lead = b;
  return s.substr(b, e - b);
}

Worked parse_worked(const std::string& r) {
  Worked w;
  const size_t hash = r.find("####");
  const std::string body = r.substr(0, hash);
  size_t from = 0;
  while (from <= body.size()) {
    size_t comma = body.find(',', from);
    if (comma == std::string::npos) comma = body.size();
    size_t lead = 0;
    const std::string step = trim_dots(body.substr(from, comma - from), lead);
    if (!step.empty()) w.steps.push_back({step, static_cast<int64_t>(from + lead)});
    from = comma + 1;
  }
  if (hash != std::string::npos) {
    size_t b = hash + 4;
    while (b < r.size() && r[b] == ' ') ++b;
    size_t e = b;
    while (e < r.size() && (std::isdigit(static_cast<unsigned char>(r[e])) || (e == b && r[e] == '-'))) ++e;
    if (e > b) w.answer = Piece{r.substr(b, e - b), static_cast<int64_t>(b)};
  }
  return w;
}

Critique with_span(std::string text, const Piece& p) {
  Critique c;
  c.ok = true;
  c.verdict = false;
  c.text = std::move(text);
  c.spans.push_back({.begin = p.at, .end = p.at + static_cast<int64_t>(p.text.size()), .score = -1});
  return c;
}

}  // namespace

Critique critique_columns(int64_t a, int64_t b, const std::string& response) {
  const ColumnSum right = column_sum(a, b, false), dropped = column_sum(a, b, true);
  const Worked want = parse_worked(right.text), forgot = parse_worked(dropped.text), got = parse_worked(response);
  const std::string answer = std::to_string(right.answer);
  for (size_t k = 0; k < got.steps.size(); ++k) {
    const Piece& step = got.steps[k];
    if (k >= want.steps.size())
      return with_span(str("There is no ", column_name(k), " column: ", a, " + ", b, " has ", want.steps.size(), "."),
                       step);
    if (step.text == want.steps[k].text) continue;
    if (k > 0 && step.text == forgot.steps[k].text && want.steps[k].text != forgot.steps[k].text) {
      // The previous column's sum (as the right working writes it) carried 1 into this one.
      const std::string& prev = want.steps[k - 1].text;
      return with_span(str("The ", column_name(k), " column drops the carry: the ", column_name(k - 1), " column gave ",
                           prev.substr(prev.find('=') + 1), ", so it is ", want.steps[k].text, ", not ", step.text, "."),
                       step);
    }
    return with_span(str("The ", column_name(k), " column is wrong: it is ", want.steps[k].text, ", not ", step.text,
                         "."),
                     step);
  }
  if (got.steps.size() < want.steps.size() && !got.steps.empty()) {
    const size_t k = got.steps.size();
    const Piece mark = got.answer ? *got.answer : got.steps.back();
    return with_span(str("The ", column_name(k), " column is missing: it is ", want.steps[k].text, "."), mark);
  }
  if (!got.answer) {
    Critique c;
    c.ok = true;
    c.verdict = false;
    c.text = str("End with the answer after ####: it is ", answer, ".");
    return c;
  }
  if (got.answer->text != answer)
    return with_span(str(got.steps.empty() ? "The answer is wrong" : "The columns are right but the answer does not "
                                                                      "read them",
                         ": it is ", answer, "."),
                     *got.answer);
  Critique c;
  c.ok = true;
  c.verdict = true;
  c.text = "Correct.";
  return c;
}

std::vector<Critique> ColumnsCritic::critique(const std::vector<CritiqueRequest>& requests) {
  std::vector<Critique> out;
  for (const CritiqueRequest& r : requests) {
    const Json& rec = r.task->record;
    const bool addition = rec.is_object() && rec.contains("a") && rec.contains("b") && rec.contains("op") &&
                          rec["a"].is_number_integer() && rec["b"].is_number_integer() && rec["op"] == "+" &&
                          rec["a"].get<int64_t>() >= 0 && rec["b"].get<int64_t>() >= 0;
    if (!addition) {
      Critique c;
      c.error = "columns: " + r.task->where + " is not an addition record ({\"a\", \"b\", \"op\": \"+\"})";
      out.push_back(std::move(c));
      continue;
    }
    out.push_back(critique_columns(rec["a"].get<int64_t>(), rec["b"].get<int64_t>(), r.response));
  }
  return out;
}

}  // namespace rlf
