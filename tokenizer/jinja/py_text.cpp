#include "tokenizer/jinja/py_text.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "tokenizer/jinja/value.h"
#include "tokenizer/unicode_text.h"

namespace rlf::jinja {

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) out.push_back(unicode::next_code_point(s, pos));
  return out;
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) unicode::append_utf8(out, c);
  return out;
}

bool py_isspace(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  switch (c) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000: return true;
    default: return c >= 0x2000 && c <= 0x200A;
  }
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string u = to_u32(s);
  std::u32string set = chars ? to_u32(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_it(u[b])) ++b;
  if (right)
    while (e > b && strip_it(u[e - 1])) --e;
  return to_utf8(std::u32string_view(u).substr(b, e - b));
}

std::string py_float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (f == 0.0) return std::signbit(f) ? "-0.0" : "0.0";
  // Shortest round-trip digits, as Python's repr (David Gay's algorithm).
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e_pos + 1));
  const int decpt = exp10 + 1;  // value = 0.digits * 10^decpt
  const int n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    std::string out = sign + digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof(e), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return out + e;
  }
  if (decpt <= 0) return sign + "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  if (decpt >= n) return sign + digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
  return sign + digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
}

namespace {

// Python's str.isprintable() for one code point.
bool py_isprintable(char32_t c) {
  if (c == ' ') return true;
  if (c < 0x7F) return c > 0x20;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONTROL_CHAR: case U_FORMAT_CHAR: case U_SURROGATE: case U_PRIVATE_USE_CHAR: case U_UNASSIGNED:
    case U_LINE_SEPARATOR: case U_PARAGRAPH_SEPARATOR: case U_SPACE_SEPARATOR: return false;
    default: return true;
  }
}

void append_hex_escape(std::string& out, const char* prefix, int width, uint32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%s%0*x", prefix, width, c);
  out += buf;
}

}  // namespace

std::string py_str_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : to_u32(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (py_isprintable(c)) {
      unicode::append_utf8(out, c);
    } else if (c < 0x100) {
      append_hex_escape(out, "\\x", 2, c);
    } else if (c < 0x10000) {
      append_hex_escape(out, "\\u", 4, c);
    } else {
      append_hex_escape(out, "\\U", 8, c);
    }
  }
  return out + quote;
}

namespace {

icu::UnicodeString to_icu(std::string_view s) {
  return icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<int32_t>(s.size())));
}

std::string from_icu(const icu::UnicodeString& u) {
  std::string out;
  u.toUTF8String(out);
  return out;
}

std::string map_code_point(char32_t c, bool upper) {
  icu::UnicodeString u(static_cast<UChar32>(c));
  if (upper)
    u.toUpper(icu::Locale::getRoot());
  else
    u.toLower(icu::Locale::getRoot());
  return from_icu(u);
}

std::string title_code_point(char32_t c) {
  // Full titlecase mapping of a lone character (e.g. "ß" -> "Ss").
  icu::UnicodeString u(static_cast<UChar32>(c));
  u.toTitle(nullptr, icu::Locale::getRoot(), U_TITLECASE_NO_LOWERCASE | U_TITLECASE_NO_BREAK_ADJUSTMENT);
  return from_icu(u);
}

bool is_cased(char32_t c) {
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_CASED) != 0;
}

}  // namespace

std::string py_upper(std::string_view s) { return from_icu(to_icu(s).toUpper(icu::Locale::getRoot())); }
std::string py_lower(std::string_view s) { return from_icu(to_icu(s).toLower(icu::Locale::getRoot())); }

std::string py_title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t c : to_u32(s)) {
    out += previous_cased ? map_code_point(c, false) : title_code_point(c);
    previous_cased = is_cased(c);
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::u32string u = to_u32(s);
  if (u.empty()) return "";
  return title_code_point(u[0]) + py_lower(to_utf8(std::u32string_view(u).substr(1)));
}

double py_round(double x, int ndigits) {
  if (!std::isfinite(x)) return x;
  if (ndigits > 300) return x;
  if (ndigits < -300) return 0.0 * x;
  // Correctly rounded decimal conversion (round half to even on the exact
  // binary value), then back: what CPython's round() does via dtoa.
  char buf[512];
  std::to_chars_result res;
  if (ndigits >= 0) {
    res = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::fixed, ndigits);
  } else {
    const double scale = std::pow(10.0, -ndigits);
    const double y = std::nearbyint(x / scale);  // FE_TONEAREST: half to even
    return y * scale;
  }
  double out = 0.0;
  std::from_chars(buf, res.ptr, out);
  return out;
}

namespace {

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : to_u32(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c > 0x7E)) {
          if (c >= 0x10000) {
            const char32_t v = c - 0x10000;
            append_hex_escape(out, "\\u", 4, 0xD800 + (v >> 10));
            append_hex_escape(out, "\\u", 4, 0xDC00 + (v & 0x3FF));
          } else {
            append_hex_escape(out, "\\u", 4, c);
          }
        } else {
          unicode::append_utf8(out, c);
        }
    }
  }
  out += '"';
}

std::string json_float(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
  return py_float_repr(f);
}

// A dict key as json.dumps writes it (str, or a scalar converted to str).
std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String: return k.as_string();
    case Value::Kind::Bool: return k.as_bool() ? "true" : "false";
    case Value::Kind::None: return "null";
    case Value::Kind::Int: return std::to_string(k.as_int());
    case Value::Kind::Float: return json_float(k.as_float());
    default: raise(ErrorKind::Type, "keys must be str, int, float, bool or None, not " + k.type_name());
  }
}

struct JsonWriter {
  const JsonDumpOptions& o;
  std::string item_sep, key_sep;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o.indent;
  }

  void write(const Value& v, int level) {
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.as_int()); return;
      case Value::Kind::Float: out += json_float(v.as_float()); return;
      case Value::Kind::String: json_string(out, v.as_string(), o.ensure_ascii); return;
      case Value::Kind::List: write_list(v.items(), level); return;
      case Value::Kind::Dict: write_dict(v, level); return;
      default: raise(ErrorKind::Type, "Object of type " + v.type_name() + " is not JSON serializable");
    }
  }

  void write_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += item_sep;
      if (o.indent) newline(level + 1);
      write(items[i], level + 1);
    }
    if (o.indent) newline(level);
    out += ']';
  }

  void write_dict(const Value& d, int level) {
    if (d.entries().empty()) {
      out += "{}";
      return;
    }
    std::vector<std::pair<std::string, const Value*>> entries;
    for (const auto& [k, v] : d.entries()) entries.emplace_back(json_key(k), &v);
    if (o.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out += item_sep;
      if (o.indent) newline(level + 1);
      json_string(out, entries[i].first, o.ensure_ascii);
      out += key_sep;
      write(*entries[i].second, level + 1);
    }
    if (o.indent) newline(level);
    out += '}';
  }
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  JsonWriter w{options, ", ", ": ", {}};
  if (options.indent) w.item_sep = ",";
  if (options.separators) {
    w.item_sep = options.separators->first;
    w.key_sep = options.separators->second;
  }
  w.write(v, 0);
  return w.out;
}

std::string py_strftime(const std::string& format, const CalendarTime& t) {
  std::tm tm{};
  tm.tm_year = t.year - 1900;
  tm.tm_mon = t.month - 1;
  tm.tm_mday = t.day;
  tm.tm_hour = t.hour;
  tm.tm_min = t.minute;
  tm.tm_sec = t.second;
  tm.tm_isdst = -1;
  std::tm copy = tm;
  std::mktime(&copy);  // fills weekday and day of year
  tm.tm_wday = copy.tm_wday;
  tm.tm_yday = copy.tm_yday;
  if (format.empty()) return "";
  std::string buf(format.size() * 8 + 64, '\0');
  for (int attempt = 0; attempt < 6; ++attempt) {
    const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
    if (n > 0) return buf.substr(0, n);
    buf.resize(buf.size() * 4);
  }
  return "";
}

CalendarTime calendar_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  return {tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec};
}

}  // namespace rlf::jinja
