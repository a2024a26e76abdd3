#include "tokenizer/jinja/operators.h"

#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/py_text.h"

namespace rlf::jinja {
namespace {

bool intlike(const Value& v) { return v.is_int() || v.is_bool(); }

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  raise(ErrorKind::Type, std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" +
                             b.type_name() + "'");
}

[[noreturn]] void overflow() {
  raise(ErrorKind::Unsupported, "integer overflow: rlf's Jinja integers are 64-bit");
}

template <typename Op>
int64_t checked(Op op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (op(a, b, &r)) overflow();
  return r;
}
bool add_ovf(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_ovf(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_ovf(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

Value repeat(const Value& seq, int64_t n) {
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(out);
  }
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return seq.is_tuple() ? Value::tuple(out) : Value::list(out);
}

Value add(const Value& a, const Value& b) {
  // Markup + str escapes the str (and str + Markup likewise).
  if (a.is_markup() && (b.is_string())) return Value::markup(a.as_string() + html_escape(b));
  if (b.is_markup() && a.is_string()) return Value::markup(html_escape(a) + b.as_string());
  if (intlike(a) && intlike(b)) {
    return Value(checked(add_ovf, a.to_int(), b.to_int()));
  }
  if (a.is_number() && b.is_number()) return Value(a.to_double() + b.to_double());
  if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    std::vector<Value> out = a.items();
    out.insert(out.end(), b.items().begin(), b.items().end());
    return a.is_tuple() ? Value::tuple(out) : Value::list(out);
  }
  if (a.is_string() || a.is_list())
    raise(ErrorKind::Type, "can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
  unsupported("+", a, b);
}

Value multiply(const Value& a, const Value& b) {
  if (intlike(a) && intlike(b)) {
    return Value(checked(mul_ovf, a.to_int(), b.to_int()));
  }
  if (a.is_number() && b.is_number()) return Value(a.to_double() * b.to_double());
  if ((a.is_string() || a.is_list()) && intlike(b)) return repeat(a, b.to_int());
  if (intlike(a) && (b.is_string() || b.is_list())) return repeat(b, a.to_int());
  if (a.is_string() || a.is_list() || b.is_string() || b.is_list())
    raise(ErrorKind::Type, "can't multiply sequence by non-int of type '" +
                               (a.is_string() || a.is_list() ? b : a).type_name() + "'");
  unsupported("*", a, b);
}

Value floor_divide(const Value& a, const Value& b, bool want_mod) {
  if (intlike(a) && intlike(b)) {
    const int64_t x = a.to_int(), y = b.to_int();
    if (y == 0) raise(ErrorKind::Runtime, "integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) overflow();
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) {
      r += y;
      --q;
    }
    return Value(want_mod ? r : q);
  }
  const double x = a.to_double(), y = b.to_double();
  if (y == 0.0) raise(ErrorKind::Runtime, want_mod ? "float modulo" : "float floor division by zero");
  // CPython's float_divmod.
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0.0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, x / y);
  }
  return Value(want_mod ? mod : floordiv);
}

Value power(const Value& a, const Value& b) {
  if (intlike(a) && intlike(b) && b.to_int() >= 0) {
    int64_t base = a.to_int(), e = b.to_int(), r = 1;
    while (e > 0) {
      if (e & 1) r = checked(mul_ovf, r, base);
      e >>= 1;
      if (e > 0) base = checked(mul_ovf, base, base);
    }
    return Value(r);
  }
  const double x = a.to_double(), y = b.to_double();
  if (x == 0.0 && y < 0) raise(ErrorKind::Runtime, "0.0 cannot be raised to a negative power");
  return Value(std::pow(x, y));
}

}  // namespace

Value binary_op(BinOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  static const char* kNames[] = {"+", "-", "*", "/", "//", "%", "** or pow()"};
  const char* name = kNames[static_cast<int>(op)];
  if (op == BinOp::Add) return add(a, b);
  if (op == BinOp::Mul) return multiply(a, b);
  if (op == BinOp::Mod && a.is_markup()) {
    std::vector<Value> escaped;
    for (const Value& x : b.is_tuple() ? b.items() : std::vector<Value>{b})
      escaped.push_back(x.is_string() || x.is_markup() ? Value::markup(html_escape(x)) : x);
    return Value::markup(percent_format(a.as_string(), b.is_tuple() ? Value::tuple(escaped) : escaped[0]));
  }
  if (op == BinOp::Mod && a.is_string()) return Value(percent_format(a.as_string(), b));
  if (!a.is_number() || !b.is_number()) unsupported(name, a, b);
  switch (op) {
    case BinOp::Sub:
      if (intlike(a) && intlike(b)) {
        return Value(checked(sub_ovf, a.to_int(), b.to_int()));
      }
      return Value(a.to_double() - b.to_double());
    case BinOp::Div:
      if (b.to_double() == 0.0) raise(ErrorKind::Runtime, "division by zero");
      return Value(a.to_double() / b.to_double());
    case BinOp::FloorDiv: return floor_divide(a, b, false);
    case BinOp::Mod: return floor_divide(a, b, true);
    case BinOp::Pow: return power(a, b);
    default: unsupported(name, a, b);
  }
}

Value unary_op(bool negate, const Value& a) {
  if (a.is_undefined()) a.fail_undefined();
  if (intlike(a)) {
    if (negate && a.to_int() == INT64_MIN) overflow();
    return Value(negate ? -a.to_int() : a.to_int());
  }
  if (a.is_float()) return Value(negate ? -a.as_float() : a.as_float());
  raise(ErrorKind::Type, std::string("bad operand type for unary ") + (negate ? "-" : "+") + ": '" + a.type_name() + "'");
}

namespace {

struct Spec {
  std::string key;  // %(key)s
  std::string flags;
  int width = -1, precision = -1;
  char type = 's';
};

std::string pad(const std::string& s, const Spec& sp) {
  const int64_t n = static_cast<int64_t>(to_u32(s).size());
  if (sp.width <= n) return s;
  const std::string fill(static_cast<size_t>(sp.width - n), ' ');
  return sp.flags.find('-') != std::string::npos ? s + fill : fill + s;
}

std::string format_one(const Spec& sp, const Value& v) {
  std::string cfmt = "%" + sp.flags;
  if (sp.width >= 0) cfmt += std::to_string(sp.width);
  if (sp.precision >= 0) cfmt += "." + std::to_string(sp.precision);
  char buf[512];
  switch (sp.type) {
    case 's':
    case 'r': {
      std::string s = sp.type == 's' ? v.str() : v.repr();
      if (sp.precision >= 0) s = to_utf8(to_u32(s).substr(0, static_cast<size_t>(sp.precision)));
      return pad(s, sp);
    }
    case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': {
      if (!v.is_number()) raise(ErrorKind::Type, std::string("%") + sp.type + " format: a real number is required, not " + v.type_name());
      const long long i = v.is_float() ? static_cast<long long>(std::trunc(v.as_float())) : v.to_int();
      const char t = sp.type == 'i' || sp.type == 'u' ? 'd' : sp.type;
      std::snprintf(buf, sizeof(buf), (cfmt + "ll" + t).c_str(), i);
      return buf;
    }
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': {
      if (!v.is_number()) raise(ErrorKind::Type, "must be real number, not " + v.type_name());
      std::snprintf(buf, sizeof(buf), (cfmt + sp.type).c_str(), v.to_double());
      return buf;
    }
    case 'c': {
      if (v.is_string()) return pad(v.as_string(), sp);
      std::string s;
      s += to_utf8(std::u32string(1, static_cast<char32_t>(v.to_int())));
      return pad(s, sp);
    }
    default: raise(ErrorKind::Runtime, std::string("unsupported format character '") + sp.type + "'");
  }
}

}  // namespace

std::string percent_format(const std::string& format, const Value& args) {
  std::vector<Value> positional;
  if (args.is_tuple())
    positional = args.items();
  else
    positional.push_back(args);
  size_t next_arg = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) raise(ErrorKind::Runtime, "incomplete format");
    if (format[i] == '%') {
      out += '%';
      continue;
    }
    Spec sp;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string::npos) raise(ErrorKind::Runtime, "incomplete format key");
      sp.key = format.substr(i + 1, close - i - 1);
      i = close + 1;
    }
    while (i < format.size() && std::string("-+ #0").find(format[i]) != std::string::npos) sp.flags += format[i++];
    auto number = [&]() {
      int n = 0;
      while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) n = n * 10 + (format[i++] - '0');
      return n;
    };
    if (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) sp.width = number();
    if (i < format.size() && format[i] == '.') {
      ++i;
      sp.precision = number();
    }
    if (i >= format.size()) raise(ErrorKind::Runtime, "incomplete format");
    sp.type = format[i];
    if (!sp.key.empty()) {
      if (!args.is_dict()) raise(ErrorKind::Type, "format requires a mapping");
      const Value* v = args.dict_get(sp.key);
      if (v == nullptr) raise(ErrorKind::Runtime, "KeyError: " + py_str_repr(sp.key));
      used_mapping = true;
      out += format_one(sp, *v);
      continue;
    }
    if (next_arg >= positional.size()) raise(ErrorKind::Type, "not enough arguments for format string");
    out += format_one(sp, positional[next_arg++]);
  }
  if (!used_mapping && next_arg < positional.size() && !(args.is_dict() && next_arg == 0))
    raise(ErrorKind::Type, "not all arguments converted during string formatting");
  return out;
}

std::string html_escape(const Value& v) {
  if (v.is_markup()) return v.as_string();
  std::string out;
  for (char c : v.str()) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace rlf::jinja
