// Countdown expression verifier (see countdown.h).
#include "data/countdown.h"

#include <map>
#include <numeric>
#include <optional>

namespace rlf {

namespace {

// An exact rational, den > 0, in lowest terms.
struct Rational {
  int64_t num = 0;
  int64_t den = 1;
};

std::string to_string(const Rational& r) {
  return r.den == 1 ? std::to_string(r.num) : str(r.num, "/", r.den);
}

// The failure that ends an evaluation (a parse error, reuse, overflow...).
struct Invalid {
  std::string reason;
};

std::optional<Rational> make(__int128 num, __int128 den) {
  if (den < 0) num = -num, den = -den;
  __int128 a = num < 0 ? -num : num, b = den;
  while (b != 0) {
    __int128 t = a % b;
    a = b;
    b = t;
  }
  if (a > 1) num /= a, den /= a;
  if (num > INT64_MAX || num < -INT64_MAX || den > INT64_MAX) return std::nullopt;
  return Rational{static_cast<int64_t>(num), static_cast<int64_t>(den)};
}

class Evaluator {
 public:
  // `numbers`: the numbers the expression may use (each at most as often as
  // given); nullptr = any number, any number of times.
  Evaluator(std::string_view text, const std::vector<int64_t>* numbers) : text_(text), restricted_(numbers != nullptr) {
    if (numbers)
      for (int64_t n : *numbers) ++available_[n];
  }

  Rational parse_all() {
    Rational v = expr(0);
    skip_spaces();
    if (pos_ < text_.size()) unexpected();
    return v;
  }

 private:
  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  char peek() {
    skip_spaces();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  [[noreturn]] void unexpected() {
    if (pos_ >= text_.size()) throw Invalid{"unexpected end of expression"};
    char c = text_[pos_];
    std::string hint = c == '-' ? " (unary minus is not allowed)" : "";
    throw Invalid{str("unexpected '", c, "' at offset ", pos_, hint)};
  }

  Rational apply(char op, const Rational& a, const Rational& b) {
    __int128 an = a.num, ad = a.den, bn = b.num, bd = b.den;
    std::optional<Rational> r;
    switch (op) {
      case '+': r = make(an * bd + bn * ad, ad * bd); break;
      case '-': r = make(an * bd - bn * ad, ad * bd); break;
      case '*': r = make(an * bn, ad * bd); break;
      default:
        if (bn == 0) throw Invalid{"division by zero"};
        r = make(an * bd, ad * bn);
    }
    if (!r) throw Invalid{"a value overflows 64-bit arithmetic"};
    return *r;
  }

  Rational expr(int depth) {
    Rational v = term(depth);
    for (char c = peek(); c == '+' || c == '-'; c = peek()) {
      ++pos_;
      v = apply(c, v, term(depth));
    }
    return v;
  }

  Rational term(int depth) {
    Rational v = factor(depth);
    for (char c = peek(); c == '*' || c == '/'; c = peek()) {
      ++pos_;
      v = apply(c, v, factor(depth));
    }
    return v;
  }

  Rational factor(int depth) {
    char c = peek();
    if (c == '(') {
      if (depth >= kMaxDepth) throw Invalid{str("parentheses nested deeper than ", kMaxDepth)};
      ++pos_;
      Rational v = expr(depth + 1);
      if (peek() != ')') unexpected();
      ++pos_;
      return v;
    }
    if (c < '0' || c > '9') unexpected();
    int64_t n = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, text_[pos_] - '0', &n))
        throw Invalid{"a number in the expression is too large"};
      ++pos_;
    }
    if (!restricted_) return Rational{n, 1};
    auto it = available_.find(n);
    if (it == available_.end()) throw Invalid{str("number ", n, " is not one of the given numbers")};
    if (it->second == 0) throw Invalid{str("number ", n, " is used more times than it is given")};
    --it->second;
    return Rational{n, 1};
  }

  std::string_view text_;
  size_t pos_ = 0;
  bool restricted_ = true;
  std::map<int64_t, int> available_;  // number -> uses left
};

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace

CountdownVerdict verify_countdown(std::string_view expression, const CountdownProblem& problem) {
  CountdownVerdict verdict;
  expression = trim(expression);
  if (expression.empty()) {
    verdict.reason = "empty expression";
    return verdict;
  }
  if (expression.size() > kMaxExpressionLength) {
    verdict.reason = str("expression longer than ", kMaxExpressionLength, " bytes");
    return verdict;
  }
  try {
    Rational value = Evaluator(expression, &problem.numbers).parse_all();
    verdict.value = to_string(value);
    verdict.correct = value.den == 1 && value.num == problem.target;
    verdict.reason = verdict.correct ? str("equals the target ", problem.target)
                                     : str("evaluates to ", verdict.value, ", not the target ", problem.target);
  } catch (const Invalid& e) {
    verdict.reason = e.reason;
  }
  return verdict;
}

ExactValue evaluate_exact(std::string_view expression) {
  ExactValue out;
  expression = trim(expression);
  if (expression.empty()) {
    out.reason = "empty expression";
    return out;
  }
  if (expression.size() > kMaxExpressionLength) {
    out.reason = str("expression longer than ", kMaxExpressionLength, " bytes");
    return out;
  }
  try {
    out.value = to_string(Evaluator(expression, nullptr).parse_all());
    out.ok = true;
  } catch (const Invalid& e) {
    out.reason = e.reason;
  }
  return out;
}

std::string countdown_answer(std::string_view completion) {
  size_t mark = completion.rfind("####");
  if (mark == std::string_view::npos) return "";
  std::string_view rest = completion.substr(mark + 4);
  rest = rest.substr(0, rest.find('\n'));
  rest = rest.substr(0, rest.find('='));
  return std::string(trim(rest));
}

CountdownProblem countdown_problem_from_record(const Json& record, const std::string& where) {
  CountdownProblem p;
  auto numbers = record.find("numbers");
  check(numbers != record.end() && numbers->is_array() && !numbers->empty(), where,
        ": a countdown record needs 'numbers', a non-empty list of integers");
  for (const Json& n : *numbers) {
    check(n.is_number_integer(), where, ": 'numbers' holds a non-integer value ", n.dump());
    p.numbers.push_back(n.get<int64_t>());
  }
  auto target = record.find("target");
  check(target != record.end() && target->is_number_integer(), where, ": a countdown record needs an integer 'target'");
  p.target = target->get<int64_t>();
  return p;
}

}  // namespace rlf
