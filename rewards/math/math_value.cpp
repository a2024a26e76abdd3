#include "rewards/math/math_value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>

namespace rlf::math {
namespace {

using i128 = __int128;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

bool fits(i128 x) { return x <= kMax && x >= -kMax; }

// Reduces p/q (q != 0) into a Value, or falls back to a double on overflow.
Value make_exact(i128 p, i128 q) {
  if (q < 0) {
    p = -p;
    q = -q;
  }
  i128 a = p < 0 ? -p : p, b = q;
  while (b != 0) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  if (a > 1) {
    p /= a;
    q /= a;
  }
  if (!fits(p) || !fits(q)) return Value::real(static_cast<double>(p) / static_cast<double>(q));
  Value v;
  v.num = static_cast<int64_t>(p);
  v.den = static_cast<int64_t>(q);
  v.approx = static_cast<double>(v.num) / static_cast<double>(v.den);
  return v;
}

// Exact integer k-th root of x >= 0 when x is a perfect k-th power.
std::optional<int64_t> exact_root(int64_t x, int64_t k) {
  if (x < 0 || k < 1) return std::nullopt;
  if (x <= 1 || k == 1) return x;
  double guess = std::pow(static_cast<double>(x), 1.0 / static_cast<double>(k));
  for (int64_t r = static_cast<int64_t>(std::llround(guess)) - 1; r <= static_cast<int64_t>(std::llround(guess)) + 1; ++r) {
    if (r < 0) continue;
    i128 acc = 1;
    bool over = false;
    for (int64_t i = 0; i < k && !over; ++i) {
      acc *= r;
      if (acc > kMax) over = true;
    }
    if (!over && acc == x) return r;
  }
  return std::nullopt;
}

}  // namespace

Value Value::rational(int64_t num, int64_t den) {
  if (den == 0) return real(std::nan(""));
  return make_exact(num, den);
}

Value Value::real(double x) {
  Value v;
  v.exact = false;
  v.approx = x;
  return v;
}

bool Value::finite() const { return std::isfinite(approx); }

std::string Value::to_string() const {
  if (exact) return den == 1 ? std::to_string(num) : std::to_string(num) + "/" + std::to_string(den);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", approx);
  return buf;
}

std::optional<Value> parse_decimal(std::string_view text) {
  size_t i = 0, n = text.size();
  std::string int_digits, frac_digits;
  while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) int_digits += text[i++];
  if (i < n && text[i] == '.') {
    ++i;
    while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) frac_digits += text[i++];
  }
  if (int_digits.empty() && frac_digits.empty()) return std::nullopt;
  int64_t exp10 = 0;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < n && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    std::string e;
    while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) e += text[i++];
    if (e.empty() || e.size() > 6) return std::nullopt;
    exp10 = std::stoll(e) * (negative ? -1 : 1);
  }
  if (i != n) return std::nullopt;
  std::string digits = int_digits + frac_digits;
  size_t first = digits.find_first_not_of('0');
  digits = first == std::string::npos ? "0" : digits.substr(first);
  int64_t scale = exp10 - static_cast<int64_t>(frac_digits.size());  // value = digits * 10^scale
  if (digits.size() <= 18 && scale >= -18 && scale <= 18) {
    i128 p = std::stoll(digits), q = 1;
    for (int64_t k = 0; k < (scale < 0 ? -scale : scale); ++k) (scale < 0 ? q : p) *= 10;
    if (fits(p) && fits(q)) return make_exact(p, q);
  }
  std::string plain(text);
  return Value::real(std::strtod(plain.c_str(), nullptr));
}

Value add(const Value& a, const Value& b) {
  if (a.exact && b.exact) return make_exact(static_cast<i128>(a.num) * b.den + static_cast<i128>(b.num) * a.den, static_cast<i128>(a.den) * b.den);
  return Value::real(a.approx + b.approx);
}

Value neg(const Value& a) {
  if (a.exact) return make_exact(-static_cast<i128>(a.num), a.den);
  return Value::real(-a.approx);
}

Value sub(const Value& a, const Value& b) { return add(a, neg(b)); }

Value mul(const Value& a, const Value& b) {
  if (a.exact && b.exact) return make_exact(static_cast<i128>(a.num) * b.num, static_cast<i128>(a.den) * b.den);
  return Value::real(a.approx * b.approx);
}

Value div(const Value& a, const Value& b) {
  if (b.exact && b.num == 0) return Value::real(std::nan(""));
  if (a.exact && b.exact) return make_exact(static_cast<i128>(a.num) * b.den, static_cast<i128>(a.den) * b.num);
  if (b.approx == 0) return Value::real(std::nan(""));
  return Value::real(a.approx / b.approx);
}

Value power(const Value& a, const Value& b) {
  if (a.exact && b.exact && b.den == 1) {
    if (a.num == 0 && b.num <= 0) return Value::real(std::nan(""));
    if (a.num == 0 || (a.num == 1 && a.den == 1)) return a;
    if (a.num == -1 && a.den == 1) return Value::rational(b.num % 2 == 0 ? 1 : -1, 1);
    if (b.num >= -126 && b.num <= 126) {  // |base| >= 2 overflows 64 bits beyond this anyway
      int64_t e = b.num < 0 ? -b.num : b.num;
      i128 p = 1, q = 1;
      bool over = false;
      for (int64_t k = 0; k < e && !over; ++k) {
        p *= a.num;
        q *= a.den;
        over = !fits(p) || !fits(q);
      }
      if (!over) return b.num < 0 ? make_exact(q, p) : make_exact(p, q);
    }
  }
  if (a.exact && b.exact && b.num > 0 && b.den > 1 && b.den <= 64 && a.num >= 0) {
    // Rational exponent p/q on a perfect q-th power stays exact: 8^(2/3) = 4.
    auto rn = exact_root(a.num, b.den), rd = exact_root(a.den, b.den);
    if (rn && rd) return power(Value::rational(*rn, *rd), Value::rational(b.num, 1));
  }
  double base = a.approx, e = b.approx;
  if (base < 0 && b.exact && b.den % 2 == 1) {  // odd root of a negative: real
    double r = std::pow(-base, e);
    return Value::real(b.num % 2 == 0 ? r : -r);
  }
  if (base == 0 && e <= 0) return Value::real(std::nan(""));
  return Value::real(std::pow(base, e));
}

Value sqrt_value(const Value& a) {
  if (a.exact && a.num >= 0) {
    auto rn = exact_root(a.num, 2), rd = exact_root(a.den, 2);
    if (rn && rd) return Value::rational(*rn, *rd);
  }
  if (a.approx < 0) return Value::real(std::nan(""));
  return Value::real(std::sqrt(a.approx));
}

Value factorial(const Value& a) {
  if (!a.is_integer() || a.num < 0) return Value::real(std::nan(""));
  if (a.num <= 20) {
    int64_t r = 1;
    for (int64_t k = 2; k <= a.num; ++k) r *= k;
    return Value::rational(r, 1);
  }
  if (a.num > 170) return Value::real(std::numeric_limits<double>::infinity());
  return Value::real(std::tgamma(static_cast<double>(a.num) + 1.0));
}

bool values_equal(const Value& a, const Value& b, const Tolerance& tol) {
  if (!a.finite() || !b.finite()) return false;
  if (a.exact && b.exact) return a.num == b.num && a.den == b.den;
  double diff = std::fabs(a.approx - b.approx);
  double scale = std::max(std::fabs(a.approx), std::fabs(b.approx));
  return diff <= tol.abs || diff <= tol.rel * scale;
}

}  // namespace rlf::math
