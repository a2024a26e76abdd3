// A number for answer checking: an exact rational (int64 numerator and
// denominator) when every step so far was exact, otherwise a double.
//
// Arithmetic stays exact while it fits in 64 bits (products are formed in
// 128 bits and checked); on overflow, or for irrational operations (sqrt of a
// non-square, trig, logs), the value degrades to its double approximation.
// Undefined results (division by zero, log of a negative) are NaN; huge ones
// are +-inf. No operation loops more than ~64 times, whatever its inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rlf::math {

struct Value {
  bool exact = true;   // true: the value is exactly num/den
  int64_t num = 0;     // numerator (valid when exact)
  int64_t den = 1;     // denominator > 0, gcd(num, den) == 1 (valid when exact)
  double approx = 0;   // the value as a double; always set (may be inf or NaN)

  static Value rational(int64_t num, int64_t den);  // reduces; den == 0 gives NaN
  static Value real(double x);                       // an inexact value
  bool finite() const;                               // not NaN, not +-inf
  bool is_integer() const { return exact && den == 1; }
  std::string to_string() const;                     // "3/4", "2", or "%.17g"
};

// Parses a decimal literal ("12", "0.5", ".35", "1.5e-3"; no sign) exactly
// when it fits, else as a double. Returns nullopt when `text` is not one.
std::optional<Value> parse_decimal(std::string_view text);

Value add(const Value& a, const Value& b);
Value sub(const Value& a, const Value& b);
Value mul(const Value& a, const Value& b);
Value div(const Value& a, const Value& b);
Value neg(const Value& a);
// a^b: exact for exact a and integer b (and perfect powers for b = 1/k).
Value power(const Value& a, const Value& b);
Value sqrt_value(const Value& a);
Value factorial(const Value& a);

// Options for deciding that two numbers are the same answer.
struct Tolerance {
  double rel = 1e-8;   // relative tolerance when either side is inexact
  double abs = 1e-12;  // absolute floor, for values near zero
};

// True when a and b are equal: exactly when both are exact, else within the
// tolerance. Non-finite values are never equal to anything.
bool values_equal(const Value& a, const Value& b, const Tolerance& tol = {});

}  // namespace rlf::math
