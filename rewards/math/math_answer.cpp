#include "rewards/math/math_answer.h"

#include <cctype>
#include <map>

#include "rewards/math/ascii.h"
#include "rewards/math/latex_normalize.h"

namespace rlf::math {
namespace {


std::string compact_lower(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string compact(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

// Bracket depth change at s[i] (and how many characters the bracket spans):
// ( [ { \{ \begin open, ) ] } \} \end close.
int bracket_delta(std::string_view s, size_t i, size_t* width) {
  *width = 1;
  char c = s[i];
  if (c == '\\' && i + 1 < s.size()) {
    if (s[i + 1] == '{') return *width = 2, +1;
    if (s[i + 1] == '}') return *width = 2, -1;
    if (s.substr(i, 6) == "\\begin") return *width = 6, +1;
    if (s.substr(i, 4) == "\\end") return *width = 4, -1;
    *width = 2;  // an escaped character, e.g. "\\" or "\,"
    return 0;
  }
  if (c == '(' || c == '[' || c == '{') return +1;
  if (c == ')' || c == ']' || c == '}') return -1;
  return 0;
}

// Positions of `sep` at bracket depth 0 (a command separator such as
// "\cup" must not continue as a longer command name).
std::vector<size_t> top_level_positions(std::string_view s, std::string_view sep) {
  std::vector<size_t> out;
  int depth = 0;
  for (size_t i = 0; i < s.size();) {
    if (depth == 0 && s.substr(i, sep.size()) == sep &&
        !(sep[0] == '\\' && is_alpha(sep.back()) && i + sep.size() < s.size() && is_alpha(s[i + sep.size()]))) {
      out.push_back(i);
      i += sep.size();
      continue;
    }
    size_t width = 1;
    depth += bracket_delta(s, i, &width);
    i += width;
  }
  return out;
}

std::vector<std::string> split_top_level(std::string_view s, std::string_view sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t p : top_level_positions(s, sep)) {
    parts.push_back(trim(s.substr(start, p - start)));
    start = p + sep.size();
  }
  parts.push_back(trim(s.substr(start)));
  return parts;
}

// True when the bracket opening at s[0] (width `open_width`) closes exactly at the end.
bool wraps_whole(std::string_view s) {
  int depth = 0;
  for (size_t i = 0; i < s.size();) {
    size_t width = 1;
    depth += bracket_delta(s, i, &width);
    i += width;
    if (depth == 0) return i == s.size();
  }
  return false;
}

bool is_infinity_text(std::string_view s, int* sign) {
  std::string t = compact_lower(s);
  *sign = 1;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    *sign = t[0] == '-' ? -1 : 1;
    t = t.substr(1);
  }
  return t == "\\infty" || t == "infty" || t == "inf" || t == "infinity" || t == "oo" || t == "\\infinity";
}

bool is_base_number(std::string_view s, std::string* digits, std::string* base) {
  size_t u = s.find('_');
  if (u == std::string_view::npos || u == 0) return false;
  std::string_view d = s.substr(0, u), b = s.substr(u + 1);
  if (b.size() >= 2 && b.front() == '{' && b.back() == '}') b = b.substr(1, b.size() - 2);
  auto all_digits = [](std::string_view x) {
    if (x.empty()) return false;
    for (char c : x) {
      if (!std::isalnum(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  if (!all_digits(d) || !all_digits(b) || !is_digit(b[0])) return false;
  for (char c : b) {
    if (!is_digit(c)) return false;
  }
  *digits = compact_lower(d);
  *base = std::string(b);
  return true;
}

// A word answer ("even", "Navin", "north east"): letters in space-separated
// tokens of two or more letters ("p - q" is an expression, not words).
bool is_word(std::string_view s) {
  size_t run = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    char c = i < s.size() ? s[i] : ' ';
    if (is_alpha(c) || c == '\'') {
      ++run;
    } else if (c == ' ') {
      if (run == 1) return false;
      run = 0;
    } else {
      return false;
    }
  }
  return !s.empty() && is_alpha(s[0]) && s.size() >= 2;
}

Answer text_answer(std::string_view s) {
  Answer a;
  a.kind = AnswerKind::Text;
  a.text = std::string(s);
  return a;
}

Answer parse_inner(std::string_view s, const AnswerLimits& limits, int depth);

// Parses each part, flattening "\pm" expansions into the parent's members.
std::vector<Answer> parse_members(const std::vector<std::string>& parts, const AnswerLimits& limits, int depth, bool* ok) {
  std::vector<Answer> out;
  for (const std::string& p : parts) {
    if (p.empty() || out.size() >= limits.max_items) {
      *ok = false;
      return out;
    }
    Answer a = parse_inner(p, limits, depth + 1);
    if (a.kind == AnswerKind::List) {
      for (Answer& m : a.items) out.push_back(std::move(m));
    } else {
      out.push_back(std::move(a));
    }
  }
  return out;
}

Answer parse_inner(std::string_view s_in, const AnswerLimits& limits, int depth) {
  std::string s = trim(s_in);
  if (s.empty() || depth > limits.max_depth || s.size() > limits.max_length) return text_answer(s);
  // Redundant outer parentheses: "((1/2))" is 1/2 (a loop, not recursion).
  while (s.size() >= 2 && s[0] == '(' && s.back() == ')' && wraps_whole(s) &&
         top_level_positions(std::string_view(s).substr(1, s.size() - 2), ",").empty()) {
    s = trim(std::string_view(s).substr(1, s.size() - 2));
  }
  if (s.empty()) return text_answer(s);
  Answer a;
  a.text = s;
  int sign = 1;
  if (is_infinity_text(s, &sign)) {
    a.kind = AnswerKind::Infinity;
    a.sign = sign;
    return a;
  }
  // Matrices and column vectors.
  for (std::string_view env : {"pmatrix", "bmatrix", "matrix", "vmatrix", "Bmatrix"}) {
    std::string begin = "\\begin{" + std::string(env) + "}", end = "\\end{" + std::string(env) + "}";
    if (s.rfind(begin, 0) == 0 && s.size() >= begin.size() + end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0) {
      std::string body = s.substr(begin.size(), s.size() - begin.size() - end.size());
      std::vector<std::string> rows = split_top_level(body, "\\\\");
      if (!rows.empty() && rows.back().empty()) rows.pop_back();
      a.kind = AnswerKind::Matrix;
      a.n_rows = rows.size();
      for (const std::string& row : rows) {
        std::vector<std::string> cells = split_top_level(row, "&");
        if (a.n_cols == 0) a.n_cols = cells.size();
        if (cells.size() != a.n_cols || a.items.size() + cells.size() > limits.max_items) return text_answer(s);
        for (const std::string& c : cells) a.items.push_back(parse_inner(c, limits, depth + 1));
      }
      if (a.n_rows == 0 || a.n_cols == 0) return text_answer(s);
      return a;
    }
  }
  // Unions of intervals.
  std::vector<std::string> union_parts = split_top_level(s, "\\cup");
  if (union_parts.size() > 1) {
    bool ok = true;
    a.kind = AnswerKind::Union;
    a.items = parse_members(union_parts, limits, depth, &ok);
    return ok ? a : text_answer(s);
  }
  // Sets.
  if (s.rfind("\\{", 0) == 0 && s.size() >= 4 && s.compare(s.size() - 2, 2, "\\}") == 0 && wraps_whole(s)) {
    bool ok = true;
    a.kind = AnswerKind::Set;
    std::string body = s.substr(2, s.size() - 4);
    a.items = trim(body).empty() ? std::vector<Answer>{} : parse_members(split_top_level(body, ","), limits, depth, &ok);
    return ok ? a : text_answer(s);
  }
  // Intervals and tuples; a parenthesised single value is just that value.
  if ((s[0] == '(' || s[0] == '[') && (s.back() == ')' || s.back() == ']') && wraps_whole(s)) {
    std::string body = s.substr(1, s.size() - 2);
    std::vector<std::string> parts = split_top_level(body, ",");
    if (parts.size() >= 2) {
      a.kind = AnswerKind::Interval;
      a.open = s[0];
      a.close = s.back();
      for (const std::string& p : parts) {
        if (p.empty() || a.items.size() >= limits.max_items) return text_answer(s);
        a.items.push_back(parse_inner(p, limits, depth + 1));
      }
      return a;
    }
    if (s[0] == '(' && s.back() == ')') return parse_inner(body, limits, depth + 1);
  }
  // Lists of solutions: "1, -2", "3; 5".
  for (std::string_view sep : {",", ";"}) {
    std::vector<std::string> parts = split_top_level(s, sep);
    if (parts.size() > 1) {
      bool ok = true;
      a.kind = AnswerKind::List;
      a.items = parse_members(parts, limits, depth, &ok);
      return ok ? a : text_answer(s);
    }
  }
  // "a \pm b" -> the list {a + b, a - b}.
  for (std::string_view pm : {"\\pm", "\\mp"}) {
    std::vector<size_t> at = top_level_positions(s, pm);
    if (!at.empty()) {
      std::string before = s.substr(0, at[0]), after = s.substr(at[0] + pm.size());
      bool ok = true;
      a.kind = AnswerKind::List;
      a.items = parse_members({before + "+" + after, before + "-" + after}, limits, depth, &ok);
      return ok ? a : text_answer(s);
    }
  }
  // Inequalities are compared as text.
  for (std::string_view rel : {"<", ">", "\\leq", "\\geq", "\\ne", "\\approx"}) {
    if (!top_level_positions(s, rel).empty()) return text_answer(s);
  }
  std::vector<std::string> sides = split_top_level(s, "=");
  if (sides.size() == 2) {
    auto lhs = parse_expression(sides[0]);
    auto rhs = parse_expression(sides[1]);
    if (lhs && rhs) {
      a.kind = AnswerKind::Equation;
      a.expr = std::move(lhs);
      a.rhs = std::move(rhs);
      return a;
    }
    return text_answer(s);
  }
  if (sides.size() > 2) return text_answer(s);
  std::string digits, base;
  if (is_base_number(s, &digits, &base)) {
    a.kind = AnswerKind::BaseNumber;
    a.text = digits + "_" + base;
    return a;
  }
  if (is_word(s)) return text_answer(s);
  if (auto e = parse_expression(s)) {
    a.kind = AnswerKind::Expression;
    a.expr = std::move(e);
    return a;
  }
  return text_answer(s);
}

// ---- comparison ----

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Sample point k: each variable gets a positive rational n/d, n in [1, 40], d in [2, 9].
std::map<std::string, Value> sample_point(const std::set<std::string>& vars, int k, uint64_t seed) {
  std::map<std::string, Value> out;
  int j = 0;
  for (const std::string& v : vars) {
    uint64_t r = splitmix64(seed ^ (static_cast<uint64_t>(k) << 32) ^ static_cast<uint64_t>(j++));
    int64_t n = 1 + static_cast<int64_t>(r % 40), d = 2 + static_cast<int64_t>((r >> 20) % 8);
    out[v] = Value::rational(n, d);
  }
  return out;
}

std::string join(const std::set<std::string>& s) {
  std::string out = "{";
  for (const std::string& x : s) out += (out.size() > 1 ? "," : "") + x;
  return out + "}";
}

bool set_reason(std::string* reason, const std::string& text, bool result) {
  if (reason) *reason = text;
  return result;
}

bool expressions_equal(const Expr& p, const Expr& r, std::string* reason, const CompareOptions& opt) {
  std::set<std::string> vp = p.variables(), vr = r.variables();
  if (vp != vr) return set_reason(reason, "different variables: " + join(vp) + " vs " + join(vr), false);
  if (vr.empty()) {
    Value a = p.evaluate({}), b = r.evaluate({});
    if (!a.finite() || !b.finite()) return set_reason(reason, "value is undefined or too large: " + a.to_string() + " vs " + b.to_string(), false);
    if (values_equal(a, b, opt.tolerance)) return set_reason(reason, "equal values: " + b.to_string(), true);
    return set_reason(reason, "values differ: " + a.to_string() + " vs " + b.to_string(), false);
  }
  int n_checked = 0;
  for (int k = 0; k < opt.n_sample_points; ++k) {
    auto point = sample_point(vr, k, opt.sample_seed);
    Value a = p.evaluate(point), b = r.evaluate(point);
    if (!a.finite() && !b.finite()) continue;
    if (!values_equal(a, b, opt.tolerance)) {
      return set_reason(reason, "differ at sample point " + std::to_string(k) + ": " + a.to_string() + " vs " + b.to_string(), false);
    }
    ++n_checked;
  }
  if (n_checked < 3) return set_reason(reason, "undefined at too many sample points", false);
  return set_reason(reason, "equal at " + std::to_string(n_checked) + " sample points", true);
}

Expr difference(const Expr& l, const Expr& r) {
  Expr d = l;
  int offset = static_cast<int>(d.nodes.size());
  for (Node n : r.nodes) {
    if (n.a >= 0) n.a += offset;
    if (n.b >= 0) n.b += offset;
    d.nodes.push_back(std::move(n));
  }
  Node sub;
  sub.kind = NodeKind::Sub;
  sub.a = l.root;
  sub.b = r.root + offset;
  d.nodes.push_back(sub);
  d.root = static_cast<int>(d.nodes.size()) - 1;
  return d;
}

// l1 = r1 and l2 = r2 are the same equation when l1 - r1 = c (l2 - r2) for a
// constant c != 0 ("y = 2x + 3" and "2x - y + 3 = 0").
bool equations_equal(const Answer& p, const Answer& r, std::string* reason, const CompareOptions& opt) {
  Expr dp = difference(*p.expr, *p.rhs), dr = difference(*r.expr, *r.rhs);
  std::set<std::string> vp = dp.variables(), vr = dr.variables();
  if (vp != vr) return set_reason(reason, "different variables: " + join(vp) + " vs " + join(vr), false);
  if (vr.empty()) return set_reason(reason, "equations without variables", false);
  std::optional<Value> ratio;
  int n_checked = 0;
  for (int k = 0; k < opt.n_sample_points + 4; ++k) {
    auto point = sample_point(vr, k, opt.sample_seed);
    Value a = dp.evaluate(point), b = dr.evaluate(point);
    if (!a.finite() || !b.finite()) continue;
    bool a_zero = values_equal(a, Value::rational(0, 1), opt.tolerance);
    bool b_zero = values_equal(b, Value::rational(0, 1), opt.tolerance);
    if (a_zero && b_zero) continue;
    if (a_zero != b_zero) return set_reason(reason, "equations differ at sample point " + std::to_string(k), false);
    Value q = div(a, b);
    if (!ratio) ratio = q;
    else if (!values_equal(q, *ratio, opt.tolerance)) return set_reason(reason, "equations differ at sample point " + std::to_string(k), false);
    ++n_checked;
  }
  if (n_checked < 3) return set_reason(reason, "equations undecidable at the sample points", false);
  return set_reason(reason, "same equation (scaled by " + ratio->to_string() + ")", true);
}

// A single-variable assignment "x = 5" -> its value side.
const Expr* assigned_value(const Answer& a) {
  if (a.kind != AnswerKind::Equation) return nullptr;
  const Node& l = a.expr->nodes[a.expr->root];
  if (l.kind == NodeKind::Variable) return &*a.rhs;
  const Node& r = a.rhs->nodes[a.rhs->root];
  if (r.kind == NodeKind::Variable) return &*a.expr;
  return nullptr;
}

bool unordered_equal(const std::vector<Answer>& p, const std::vector<Answer>& r, std::string* reason, const CompareOptions& opt) {
  if (p.size() != r.size()) {
    return set_reason(reason, "different number of members: " + std::to_string(p.size()) + " vs " + std::to_string(r.size()), false);
  }
  std::vector<bool> used(p.size(), false);
  for (size_t i = 0; i < r.size(); ++i) {
    bool found = false;
    for (size_t j = 0; j < p.size() && !found; ++j) {
      if (!used[j] && answers_equal(p[j], r[i], nullptr, opt)) used[j] = found = true;
    }
    if (!found) return set_reason(reason, "no match for member '" + r[i].text + "'", false);
  }
  return set_reason(reason, "same members", true);
}

bool ordered_equal(const std::vector<Answer>& p, const std::vector<Answer>& r, std::string* reason, const CompareOptions& opt) {
  if (p.size() != r.size()) {
    return set_reason(reason, "different number of entries: " + std::to_string(p.size()) + " vs " + std::to_string(r.size()), false);
  }
  for (size_t i = 0; i < r.size(); ++i) {
    std::string why;
    if (!answers_equal(p[i], r[i], &why, opt)) return set_reason(reason, "entry " + std::to_string(i + 1) + ": " + why, false);
  }
  return set_reason(reason, "same entries in order", true);
}

}  // namespace

std::string_view kind_name(AnswerKind kind) {
  switch (kind) {
    case AnswerKind::Expression: return "expression";
    case AnswerKind::Equation: return "equation";
    case AnswerKind::Interval: return "interval/tuple";
    case AnswerKind::Union: return "union";
    case AnswerKind::Set: return "set";
    case AnswerKind::List: return "list";
    case AnswerKind::Matrix: return "matrix";
    case AnswerKind::Infinity: return "infinity";
    case AnswerKind::BaseNumber: return "base-number";
    case AnswerKind::Text: return "text";
  }
  return "text";
}

Answer parse_answer(std::string_view normalized, const AnswerLimits& limits) { return parse_inner(normalized, limits, 0); }

bool answers_equal(const Answer& p, const Answer& r, std::string* reason, const CompareOptions& opt) {
  // Identical text is the same answer (letter case matters except for words).
  std::string tp = compact_lower(p.text), tr = compact_lower(r.text);
  bool same_text = p.kind == AnswerKind::Text ? tp == tr : compact(p.text) == compact(r.text);
  bool textual = p.kind == AnswerKind::Text || p.kind == AnswerKind::BaseNumber || p.kind == AnswerKind::Infinity;
  if (!tr.empty() && same_text && p.kind == r.kind && textual) return set_reason(reason, "same text", true);
  using K = AnswerKind;
  auto mismatch = [&] {
    return set_reason(reason, "different kinds: " + std::string(kind_name(p.kind)) + " vs " + std::string(kind_name(r.kind)), false);
  };
  // "x = 5" against "5", either way round.
  if (p.kind == K::Equation && r.kind == K::Expression) {
    const Expr* v = assigned_value(p);
    return v ? expressions_equal(*v, *r.expr, reason, opt) : mismatch();
  }
  if (p.kind == K::Expression && r.kind == K::Equation) {
    const Expr* v = assigned_value(r);
    return v ? expressions_equal(*p.expr, *v, reason, opt) : mismatch();
  }
  // Solutions: a set and a list of the same members match.
  bool p_coll = p.kind == K::Set || p.kind == K::List, r_coll = r.kind == K::Set || r.kind == K::List;
  if (p_coll && r_coll) return unordered_equal(p.items, r.items, reason, opt);
  if (p.kind == K::BaseNumber && r.kind == K::BaseNumber) {
    return set_reason(reason, tp == tr ? "same number and base" : "different numbers or bases", tp == tr);
  }
  if (p.kind == K::BaseNumber || r.kind == K::BaseNumber) {
    const Answer& based = p.kind == K::BaseNumber ? p : r;
    const Answer& other = p.kind == K::BaseNumber ? r : p;
    std::string digits = based.text.substr(0, based.text.find('_'));
    bool same = other.kind == K::Expression && compact_lower(other.text) == digits;
    return set_reason(reason, same ? "same digits (base omitted)" : "different digits", same);
  }
  if (p.kind != r.kind) return mismatch();
  switch (r.kind) {
    case K::Expression: return expressions_equal(*p.expr, *r.expr, reason, opt);
    case K::Equation: return equations_equal(p, r, reason, opt);
    case K::Interval:
      if (p.open != r.open || p.close != r.close) {
        return set_reason(reason, std::string("different brackets: ") + p.open + p.close + " vs " + r.open + r.close, false);
      }
      return ordered_equal(p.items, r.items, reason, opt);
    case K::Union: return unordered_equal(p.items, r.items, reason, opt);
    case K::Matrix:
      if (p.n_rows != r.n_rows || p.n_cols != r.n_cols) return set_reason(reason, "different matrix shapes", false);
      return ordered_equal(p.items, r.items, reason, opt);
    case K::Infinity: return set_reason(reason, p.sign == r.sign ? "same infinity" : "opposite infinities", p.sign == r.sign);
    case K::Text: return set_reason(reason, tr.empty() ? "empty answer" : "different text: '" + p.text + "' vs '" + r.text + "'", false);
    case K::Set:
    case K::List:
    case K::BaseNumber: break;  // handled above
  }
  return mismatch();
}

}  // namespace rlf::math
