// The structure of a normalised final answer, and when two answers are the
// same. An answer is one of:
//   Expression  "2\sqrt{2}", "x^2+2x+1", "\frac{1}{2}"
//   Equation    "y = 2x + 3" (one '='; "x = 5" against "5" compares 5)
//   Interval    "(a, b]", "[a, \infty)", and ordered tuples/points "(1, 2)"
//               (the brackets are kept, so "(1,2)" is not "[1,2]")
//   Union       "(0,9) \cup (9,36)" (members in any order)
//   Set         "\{1, 2\}" (order-insensitive)
//   List        "3, 5, 7" or "1 \pm \sqrt{5}" (solutions; order-insensitive)
//   Matrix      "\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}" (ordered)
//   Infinity    "\infty", "-\infty"
//   BaseNumber  "52_8", "4210_{5}" (equals "52_8" or the digits "52")
//   Text        anything else ("even", "\text{Navin}", unparsable input):
//               compared as text, case- and space-insensitively
//
// Scalars are compared by value (math_expr.h): exactly for rationals, with
// a relative tolerance when irrational, and at fixed sample points when they
// have free variables. Nesting and size are bounded (AnswerLimits).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rewards/math/math_expr.h"

namespace rlf::math {

enum class AnswerKind { Expression, Equation, Interval, Union, Set, List, Matrix, Infinity, BaseNumber, Text };

struct Answer {
  AnswerKind kind = AnswerKind::Text;
  std::string text;           // the normalised text this was parsed from
  std::optional<Expr> expr;   // Expression; the left side of an Equation
  std::optional<Expr> rhs;    // Equation: the right side
  char open = 0, close = 0;   // Interval: '(' or '[', ')' or ']'
  std::vector<Answer> items;  // Interval/Union/Set/List members; Matrix cells row-major
  size_t n_rows = 0, n_cols = 0;  // Matrix
  int sign = 1;               // Infinity: +1 or -1
};

struct AnswerLimits {
  int max_depth = 8;        // nesting of sets, tuples, unions
  size_t max_items = 64;    // members of one set/list/matrix
  size_t max_length = 4000; // characters of one answer
};

// Parses a normalised answer (see latex_normalize.h). Never throws.
Answer parse_answer(std::string_view normalized, const AnswerLimits& limits = {});

struct CompareOptions {
  Tolerance tolerance;          // for inexact values
  int n_sample_points = 6;      // evaluation points for free variables
  uint64_t sample_seed = 20240611;  // fixed: the same answer pair always gets the same verdict
};

// True when `prediction` is the same answer as `reference`; `reason` (when
// given) says why not, or how they matched.
bool answers_equal(const Answer& prediction, const Answer& reference, std::string* reason = nullptr,
                   const CompareOptions& options = {});

std::string_view kind_name(AnswerKind kind);

}  // namespace rlf::math
