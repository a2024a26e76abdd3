// A small math expression tree, parsed from normalised LaTeX or plain text,
// and evaluated with exact rationals where possible (see math_value.h).
//
// Grammar (precedence low to high): + -, then * / \cdot \times \div and
// implicit multiplication ("2x", "3\sqrt{2}", "(a+1)(b+2)"), then unary
// minus, then ^ (right-associative; "x^{2}", "x^2", "2^10" all read the whole
// exponent), then postfix "!". Primaries: numbers ("12", "0.5", ".5",
// "1.5e-3"), single-letter variables with optional subscripts ("x", "a_1",
// "x_{10}"), Greek letters (variables), \pi and e (constants), groups ( ) { }
// [ ], |x|, \frac{a}{b} (also \frac12), \sqrt{x}, \sqrt2, \sqrt[n]{x},
// \binom{n}{k}, \lfloor/\lceil, and functions (sin cos tan cot sec csc, arc-
// and hyperbolic forms, log, ln, log_b, exp, abs, sqrt) with or without
// parentheses ("\sin x", "\sin^2 x", "\log_2 8"). A mixed number "1\frac{4}{5}"
// means 1 + 4/5. Anything else (an unknown command, \infty, \pm, "=", ",")
// is a parse error, so the caller can fall back to comparing text.
//
// Work is bounded: the input length, nesting depth and node count are capped
// (ParseLimits), and evaluation walks the node array once, without recursion.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rewards/math/math_value.h"

namespace rlf::math {

enum class NodeKind {
  Number,     // value
  Constant,   // name: "pi" or "e"
  Variable,   // name: "x", "a_1", "alpha"
  Add,        // a + b
  Sub,        // a - b
  Mul,        // a * b
  Div,        // a / b
  Pow,        // a ^ b
  Neg,        // -a
  Function,   // name(a), or name(a, b) for "log" with a base b and "binom"
  Factorial,  // a!
};

struct Node {
  NodeKind kind = NodeKind::Number;
  Value value;       // Number
  std::string name;  // Constant, Variable, Function
  int a = -1;        // first operand (index into Expr::nodes, always < own index)
  int b = -1;        // second operand
};

struct ParseLimits {
  size_t max_length = 2000;  // characters; longer inputs are not parsed
  int max_depth = 200;       // parser recursion (about 3 levels per bracket pair)
  size_t max_nodes = 2000;   // tree size
};

class Expr {
 public:
  std::vector<Node> nodes;  // children always precede their parent
  int root = -1;

  // Names of the free variables.
  std::set<std::string> variables() const;
  // Evaluates with the given values for the variables (a missing one is NaN).
  Value evaluate(const std::map<std::string, Value>& vars) const;
  // A canonical text form, for messages and tests: "(x+1)^2" -> "((x+1)^2)".
  std::string to_string() const;
};

// Parses `text`; on failure returns nullopt and, when `error` is given, says why.
std::optional<Expr> parse_expression(std::string_view text, std::string* error = nullptr,
                                     const ParseLimits& limits = {});

}  // namespace rlf::math
