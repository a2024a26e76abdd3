#include "rewards/math/math_expr.h"

#include <cctype>
#include <cmath>
#include <numbers>

#include "rewards/math/ascii.h"

namespace rlf::math {
namespace {

enum class TokKind { Number, Word, Command, Symbol, End };

struct Token {
  TokKind kind = TokKind::End;
  std::string text;  // digits, a word ("x", "sin"), a command name ("frac", "{"), a symbol
};


// Plain-text words that name a function or constant; any other run of
// letters is read as single-letter variables multiplied together ("xy").
const std::set<std::string>& function_names() {
  static const std::set<std::string> names = {
      "sin",  "cos",  "tan",  "cot",  "sec",  "csc",    "arcsin", "arccos", "arctan", "sinh", "cosh",
      "tanh", "log",  "ln",   "lg",   "exp",  "sqrt",   "abs",    "floor",  "ceil",   "asin", "acos",
      "atan", "arccot"};
  return names;
}

const std::set<std::string>& greek_names() {
  static const std::set<std::string> names = {
      "alpha", "beta",   "gamma", "delta", "epsilon", "varepsilon", "zeta",  "eta",   "theta", "vartheta",
      "iota",  "kappa",  "lambda", "mu",   "nu",      "xi",         "rho",   "sigma", "tau",   "upsilon",
      "phi",   "varphi", "chi",   "psi",   "omega",   "Gamma",      "Delta", "Theta", "Lambda", "Xi",
      "Sigma", "Phi",    "Psi",   "Omega"};
  return names;
}

struct ParseError {
  std::string message;
};

[[noreturn]] void parse_fail(const std::string& message) { throw ParseError{message}; }

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0, n = s.size();
  while (i < n) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (is_digit(c) || (c == '.' && i + 1 < n && is_digit(s[i + 1]))) {
      size_t start = i;
      while (i < n && is_digit(s[i])) ++i;
      if (i < n && s[i] == '.' && i + 1 < n && is_digit(s[i + 1])) {
        ++i;
        while (i < n && is_digit(s[i])) ++i;
      } else if (i < n && s[i] == '.' && !(i + 1 < n && is_alpha(s[i + 1]))) {
        ++i;  // "18." is 18
      }
      // Scientific notation "1.5e-3", "2E5": only when digits follow.
      if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (s[j] == '+' || s[j] == '-')) ++j;
        if (j < n && is_digit(s[j])) {
          i = j;
          while (i < n && is_digit(s[i])) ++i;
        }
      }
      std::string text(s.substr(start, i - start));
      if (!text.empty() && text.back() == '.') text.pop_back();
      out.push_back({TokKind::Number, text});
      continue;
    }
    if (is_alpha(c)) {
      size_t start = i;
      while (i < n && is_alpha(s[i])) ++i;
      std::string word(s.substr(start, i - start));
      if (function_names().count(word) || word == "pi" || greek_names().count(word)) {
        out.push_back({TokKind::Word, word});
      } else {
        for (char ch : word) out.push_back({TokKind::Word, std::string(1, ch)});
      }
      continue;
    }
    if (c == '\\') {
      size_t start = ++i;
      if (i < n && is_alpha(s[i])) {
        while (i < n && is_alpha(s[i])) ++i;
        out.push_back({TokKind::Command, std::string(s.substr(start, i - start))});
      } else if (i < n) {
        out.push_back({TokKind::Command, std::string(1, s[i++])});
      } else {
        parse_fail("trailing backslash");
      }
      continue;
    }
    out.push_back({TokKind::Symbol, std::string(1, c)});
    ++i;
  }
  out.push_back({TokKind::End, ""});
  return out;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, const ParseLimits& limits) : toks_(std::move(tokens)), limits_(limits) {}

  Expr parse() {
    int root = parse_sum();
    if (peek().kind != TokKind::End) parse_fail("unexpected '" + peek().text + "'");
    expr_.root = root;
    return std::move(expr_);
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > p_.limits_.max_depth) parse_fail("nesting deeper than " + std::to_string(p_.limits_.max_depth));
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  const Token& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  Token next() {
    Token t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool is_sym(const std::string& s, size_t ahead = 0) const {
    return peek(ahead).kind == TokKind::Symbol && peek(ahead).text == s;
  }
  bool is_cmd(const std::string& s) const { return peek().kind == TokKind::Command && peek().text == s; }
  void expect_sym(const std::string& s) {
    if (!is_sym(s)) parse_fail("expected '" + s + "' before '" + peek().text + "'");
    next();
  }

  int add(Node node) {
    if (expr_.nodes.size() >= limits_.max_nodes) parse_fail("expression larger than " + std::to_string(limits_.max_nodes) + " nodes");
    expr_.nodes.push_back(std::move(node));
    return static_cast<int>(expr_.nodes.size()) - 1;
  }
  int binary(NodeKind kind, int a, int b) {
    Node n;
    n.kind = kind;
    n.a = a;
    n.b = b;
    return add(std::move(n));
  }
  int number(const Value& v) {
    Node n;
    n.value = v;
    return add(std::move(n));
  }
  int function(const std::string& name, int a, int b = -1) {
    Node n;
    n.kind = NodeKind::Function;
    n.name = name;
    n.a = a;
    n.b = b;
    return add(std::move(n));
  }

  int parse_sum() {
    DepthGuard guard(*this);
    int left = parse_product();
    while (is_sym("+") || is_sym("-")) {
      bool plus = next().text == "+";
      int right = parse_product();
      left = binary(plus ? NodeKind::Add : NodeKind::Sub, left, right);
    }
    return left;
  }

  // Whether the next token can start an implicitly multiplied factor.
  bool starts_factor() const {
    const Token& t = peek();
    switch (t.kind) {
      case TokKind::Number:
      case TokKind::Word:
        return true;
      case TokKind::Command:
        return t.text != "cdot" && t.text != "times" && t.text != "div" && t.text != "}" && t.text != "{" &&
               t.text != "rfloor" && t.text != "rceil";
      case TokKind::Symbol:
        return t.text == "(" || t.text == "{" || (t.text == "|" && abs_depth_ == 0);
      case TokKind::End:
        return false;
    }
    return false;
  }

  int parse_product() {
    int left = parse_unary();
    while (true) {
      if (is_sym("*") || is_cmd("cdot") || is_cmd("times")) {
        next();
        left = binary(NodeKind::Mul, left, parse_unary());
      } else if (is_sym("/") || is_cmd("div")) {
        next();
        left = binary(NodeKind::Div, left, parse_unary());
      } else if (starts_factor()) {
        if (peek().kind == TokKind::Number && last_was_number_) parse_fail("two numbers in a row");
        bool mixed_candidate = last_was_integer_literal_ && is_cmd("frac");
        int left_literal = left;
        int right = parse_power();
        if (mixed_candidate && last_frac_integer_ && expr_.nodes[left_literal].kind == NodeKind::Number &&
            !starts_factor() && !is_sym("^")) {
          left = binary(NodeKind::Add, left, right);  // 1\frac{4}{5} = 1 + 4/5
        } else {
          left = binary(NodeKind::Mul, left, right);
        }
      } else {
        return left;
      }
    }
  }

  int parse_unary() {
    if (is_sym("-")) {
      next();
      DepthGuard guard(*this);
      Node n;
      n.kind = NodeKind::Neg;
      n.a = parse_unary();
      return add(std::move(n));
    }
    if (is_sym("+")) {
      next();
      DepthGuard guard(*this);
      return parse_unary();
    }
    return parse_power();
  }

  int parse_power() {
    DepthGuard guard(*this);
    int base = parse_postfix();
    if (is_sym("^")) {
      next();
      int exponent = parse_exponent();
      last_was_number_ = false;
      last_was_integer_literal_ = false;
      return binary(NodeKind::Pow, base, exponent);
    }
    return base;
  }

  int parse_exponent() {
    if (is_sym("-") || is_sym("+")) {
      bool minus = next().text == "-";
      int e = parse_exponent();
      if (!minus) return e;
      Node n;
      n.kind = NodeKind::Neg;
      n.a = e;
      return add(std::move(n));
    }
    return parse_power();
  }

  int parse_postfix() {
    int x = parse_primary();
    while (is_sym("!")) {
      next();
      Node n;
      n.kind = NodeKind::Factorial;
      n.a = x;
      x = add(std::move(n));
      last_was_number_ = false;
    }
    return x;
  }

  // A braced group "{...}" or, LaTeX-style, one character / command: the
  // argument of \frac, \sqrt when written without braces ("\frac12", "\sqrt2").
  int parse_latex_argument(bool* integer_literal = nullptr) {
    DepthGuard guard(*this);
    if (integer_literal) *integer_literal = false;
    if (is_sym("{")) {
      next();
      if (integer_literal && peek().kind == TokKind::Number && is_sym("}", 1) &&
          peek().text.find_first_not_of("0123456789") == std::string::npos) {
        *integer_literal = true;
      }
      int inner = parse_sum();
      expect_sym("}");
      return inner;
    }
    if (peek().kind == TokKind::Number) {
      Token& t = toks_[pos_];
      std::string first(1, t.text[0]);
      if (t.text.size() > 1 && is_digit(t.text[0])) {
        t.text.erase(0, 1);  // "\frac12": the 1 now, the 2 next
      } else {
        first = t.text;
        next();
      }
      if (integer_literal) *integer_literal = true;
      return number(*parse_decimal(first));
    }
    if (peek().kind == TokKind::Word && peek().text.size() == 1) {
      return variable_or_constant(next().text);
    }
    if (peek().kind == TokKind::Command) return parse_primary();
    parse_fail("missing argument before '" + peek().text + "'");
  }

  int variable_or_constant(const std::string& name) {
    Node n;
    if (name == "e" || name == "pi") {
      n.kind = NodeKind::Constant;
      n.name = name;
      return add(std::move(n));
    }
    n.kind = NodeKind::Variable;
    n.name = name;
    // Subscripts: "a_1", "x_{10}", "a_n".
    if (is_sym("_")) {
      next();
      std::string sub;
      if (is_sym("{")) {
        next();
        while (!is_sym("}")) {
          if (peek().kind == TokKind::End) parse_fail("unclosed subscript");
          sub += next().text;
        }
        next();
      } else {
        if (peek().kind == TokKind::End) parse_fail("empty subscript");
        sub = next().text;
      }
      n.name += "_" + sub;
    }
    return add(std::move(n));
  }

  // The argument of a function written without parentheses: "\sin 2x" is
  // sin(2x), "\sin x \cos x" is sin(x)cos(x).
  int parse_function_argument() {
    DepthGuard guard(*this);
    if (is_sym("(")) {
      next();
      int inner = parse_sum();
      expect_sym(")");
      return inner;
    }
    if (is_sym("-")) {
      next();
      Node n;
      n.kind = NodeKind::Neg;
      n.a = parse_function_argument();
      return add(std::move(n));
    }
    int x = parse_power();
    while (starts_factor() && !starts_function()) x = binary(NodeKind::Mul, x, parse_power());
    return x;
  }

  bool starts_function() const {
    const Token& t = peek();
    return (t.kind == TokKind::Word || t.kind == TokKind::Command) && function_names().count(t.text) > 0;
  }

  int parse_function(std::string name) {
    if (name == "asin") name = "arcsin";
    if (name == "acos") name = "arccos";
    if (name == "atan") name = "arctan";
    if (name == "lg") name = "log10";
    int base = -1;
    if ((name == "log") && is_sym("_")) {
      next();
      base = parse_latex_argument();
    }
    int power = -1;
    if (is_sym("^")) {  // \sin^2 x = (sin x)^2; \sin^{-1} x = arcsin x
      next();
      power = parse_exponent();
      const Node& p = expr_.nodes[power];
      bool minus_one = p.kind == NodeKind::Neg && expr_.nodes[p.a].kind == NodeKind::Number &&
                       expr_.nodes[p.a].value.exact && expr_.nodes[p.a].value.num == 1 && expr_.nodes[p.a].value.den == 1;
      if (minus_one && (name == "sin" || name == "cos" || name == "tan")) {
        name = "arc" + name;
        power = -1;
      }
    }
    int arg = parse_function_argument();
    int f = function(name == "log" ? "ln" : name, arg, base);
    if (power >= 0) f = binary(NodeKind::Pow, f, power);
    return f;
  }

  int parse_primary() {
    DepthGuard guard(*this);
    last_was_number_ = false;
    last_was_integer_literal_ = false;
    last_frac_integer_ = false;
    Token t = next();
    switch (t.kind) {
      case TokKind::End:
        parse_fail("unexpected end of expression");
      case TokKind::Number: {
        auto v = parse_decimal(t.text);
        if (!v) parse_fail("bad number '" + t.text + "'");
        int x = number(*v);
        last_was_number_ = true;
        last_was_integer_literal_ = t.text.find_first_not_of("0123456789") == std::string::npos;
        return x;
      }
      case TokKind::Word:
        if (function_names().count(t.text)) return parse_function(t.text);
        return variable_or_constant(t.text);
      case TokKind::Symbol:
        if (t.text == "(" || t.text == "[" || t.text == "{") {
          std::string close = t.text == "(" ? ")" : t.text == "[" ? "]" : "}";
          int inner = parse_sum();
          expect_sym(close);
          return inner;
        }
        if (t.text == "|") {
          ++abs_depth_;
          int inner = parse_sum();
          --abs_depth_;
          expect_sym("|");
          return function("abs", inner);
        }
        parse_fail("unexpected '" + t.text + "'");
      case TokKind::Command:
        return parse_command(t.text);
    }
    parse_fail("unexpected token");
  }

  int parse_command(const std::string& cmd) {
    if (cmd == "frac" || cmd == "dfrac" || cmd == "tfrac" || cmd == "cfrac") {
      bool num_int = false, den_int = false;
      int a = parse_latex_argument(&num_int);
      int b = parse_latex_argument(&den_int);
      int x = binary(NodeKind::Div, a, b);
      last_frac_integer_ = num_int && den_int;
      last_was_number_ = false;
      last_was_integer_literal_ = false;
      return x;
    }
    if (cmd == "sqrt") {
      if (is_sym("[")) {
        next();
        int index = parse_sum();
        expect_sym("]");
        int radicand = parse_latex_argument();
        int inv = binary(NodeKind::Div, number(Value::rational(1, 1)), index);
        return binary(NodeKind::Pow, radicand, inv);
      }
      return function("sqrt", parse_latex_argument());
    }
    if (cmd == "binom" || cmd == "dbinom" || cmd == "tbinom") {
      int a = parse_latex_argument();
      int b = parse_latex_argument();
      return function("binom", a, b);
    }
    if (cmd == "pi") return variable_or_constant("pi");
    if (cmd == "{") {
      int inner = parse_sum();
      if (!is_cmd("}")) parse_fail("expected '\\}'");
      next();
      return inner;
    }
    if (cmd == "lfloor" || cmd == "lceil") {
      int inner = parse_sum();
      if (!is_cmd(cmd == "lfloor" ? "rfloor" : "rceil")) parse_fail("unclosed \\" + cmd);
      next();
      return function(cmd == "lfloor" ? "floor" : "ceil", inner);
    }
    if (function_names().count(cmd)) return parse_function(cmd);
    if (greek_names().count(cmd)) return variable_or_constant(cmd);
    parse_fail("unsupported command '\\" + cmd + "'");
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  ParseLimits limits_;
  Expr expr_;
  int depth_ = 0;
  int abs_depth_ = 0;
  bool last_was_number_ = false;           // the last primary was a number literal
  bool last_was_integer_literal_ = false;  // ... an integer literal (for mixed numbers)
  bool last_frac_integer_ = false;         // the last \frac had integer-literal parts
};

Value apply_function(const std::string& name, const Value& x, const Value* y) {
  if (name == "sqrt") return sqrt_value(x);
  if (name == "abs") return x.exact ? (x.num < 0 ? neg(x) : x) : Value::real(std::fabs(x.approx));
  if (name == "floor" || name == "ceil") {
    if (!x.finite()) return Value::real(std::nan(""));
    if (x.exact) {
      int64_t q = x.num / x.den;
      if (x.num % x.den != 0 && ((x.num < 0) == (name == "floor"))) q += name == "floor" ? -1 : 1;
      return Value::rational(q, 1);
    }
    return Value::real(name == "floor" ? std::floor(x.approx) : std::ceil(x.approx));
  }
  if (name == "binom") {
    if (!y || !x.is_integer() || !y->is_integer() || y->num < 0 || x.num < 0 || y->num > x.num) {
      return Value::real(std::nan(""));
    }
    int64_t k = std::min(y->num, x.num - y->num);
    if (k > 200) return Value::real(std::nan(""));
    Value r = Value::rational(1, 1);
    for (int64_t i = 1; i <= k; ++i) r = div(mul(r, Value::rational(x.num - k + i, 1)), Value::rational(i, 1));
    return r;
  }
  double v = x.approx;
  if (name == "ln" && y) {  // log with a base: log_b(x)
    Value b = *y;
    // Exact when x is an integer power of an integer base.
    if (x.is_integer() && b.is_integer() && b.num >= 2 && x.num >= 1) {
      int64_t p = 0, acc = 1;
      while (acc < x.num && acc <= x.num / b.num) {
        acc *= b.num;
        ++p;
      }
      if (acc == x.num) return Value::rational(p, 1);
    }
    if (v <= 0 || b.approx <= 0 || b.approx == 1) return Value::real(std::nan(""));
    return Value::real(std::log(v) / std::log(b.approx));
  }
  if (name == "ln") {
    if (x.exact && x.num == 1 && x.den == 1) return Value::rational(0, 1);
    return Value::real(v > 0 ? std::log(v) : std::nan(""));
  }
  if (name == "log10") return Value::real(v > 0 ? std::log10(v) : std::nan(""));
  if (name == "exp") return x.exact && x.num == 0 ? Value::rational(1, 1) : Value::real(std::exp(v));
  if (x.exact && x.num == 0) {
    if (name == "sin" || name == "tan" || name == "arcsin" || name == "arctan" || name == "sinh" || name == "tanh") {
      return Value::rational(0, 1);
    }
    if (name == "cos" || name == "sec" || name == "cosh") return Value::rational(1, 1);
  }
  if (name == "sin") return Value::real(std::sin(v));
  if (name == "cos") return Value::real(std::cos(v));
  if (name == "tan") return Value::real(std::tan(v));
  if (name == "cot") return Value::real(std::sin(v) == 0 ? std::nan("") : std::cos(v) / std::sin(v));
  if (name == "sec") return Value::real(std::cos(v) == 0 ? std::nan("") : 1 / std::cos(v));
  if (name == "csc") return Value::real(std::sin(v) == 0 ? std::nan("") : 1 / std::sin(v));
  if (name == "arcsin") return Value::real(std::asin(v));
  if (name == "arccos") return Value::real(std::acos(v));
  if (name == "arctan") return Value::real(std::atan(v));
  if (name == "arccot") return Value::real(std::numbers::pi / 2 - std::atan(v));
  if (name == "sinh") return Value::real(std::sinh(v));
  if (name == "cosh") return Value::real(std::cosh(v));
  if (name == "tanh") return Value::real(std::tanh(v));
  return Value::real(std::nan(""));
}

}  // namespace

std::set<std::string> Expr::variables() const {
  std::set<std::string> out;
  for (const Node& n : nodes) {
    if (n.kind == NodeKind::Variable) out.insert(n.name);
  }
  return out;
}

Value Expr::evaluate(const std::map<std::string, Value>& vars) const {
  if (root < 0) return Value::real(std::nan(""));
  std::vector<Value> v(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    const Value* a = n.a >= 0 ? &v[n.a] : nullptr;
    const Value* b = n.b >= 0 ? &v[n.b] : nullptr;
    switch (n.kind) {
      case NodeKind::Number: v[i] = n.value; break;
      case NodeKind::Constant: v[i] = Value::real(n.name == "pi" ? std::numbers::pi : std::numbers::e); break;
      case NodeKind::Variable: {
        auto it = vars.find(n.name);
        v[i] = it == vars.end() ? Value::real(std::nan("")) : it->second;
        break;
      }
      case NodeKind::Add: v[i] = add(*a, *b); break;
      case NodeKind::Sub: v[i] = sub(*a, *b); break;
      case NodeKind::Mul: v[i] = mul(*a, *b); break;
      case NodeKind::Div: v[i] = div(*a, *b); break;
      case NodeKind::Pow: v[i] = power(*a, *b); break;
      case NodeKind::Neg: v[i] = neg(*a); break;
      case NodeKind::Factorial: v[i] = factorial(*a); break;
      case NodeKind::Function: v[i] = apply_function(n.name, *a, b); break;
    }
  }
  return v[root];
}

std::string Expr::to_string() const {
  std::vector<std::string> s(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    auto A = [&] { return s[n.a]; };
    auto B = [&] { return s[n.b]; };
    switch (n.kind) {
      case NodeKind::Number: s[i] = n.value.to_string(); break;
      case NodeKind::Constant:
      case NodeKind::Variable: s[i] = n.name; break;
      case NodeKind::Add: s[i] = "(" + A() + "+" + B() + ")"; break;
      case NodeKind::Sub: s[i] = "(" + A() + "-" + B() + ")"; break;
      case NodeKind::Mul: s[i] = "(" + A() + "*" + B() + ")"; break;
      case NodeKind::Div: s[i] = "(" + A() + "/" + B() + ")"; break;
      case NodeKind::Pow: s[i] = "(" + A() + "^" + B() + ")"; break;
      case NodeKind::Neg: s[i] = "(-" + A() + ")"; break;
      case NodeKind::Factorial: s[i] = "(" + A() + "!)"; break;
      case NodeKind::Function: s[i] = n.name + "(" + A() + (n.b >= 0 ? "," + B() : "") + ")"; break;
    }
  }
  return root >= 0 ? s[root] : "";
}

std::optional<Expr> parse_expression(std::string_view text, std::string* error, const ParseLimits& limits) {
  auto set_error = [&](const std::string& m) {
    if (error) *error = m;
  };
  if (text.size() > limits.max_length) {
    set_error("expression longer than " + std::to_string(limits.max_length) + " characters");
    return std::nullopt;
  }
  try {
    Parser parser(tokenize(text), limits);
    return parser.parse();
  } catch (const ParseError& e) {
    set_error(e.message);
    return std::nullopt;
  }
}

}  // namespace rlf::math
