// Python's text rules, for a Jinja engine whose output must equal CPython's
// byte for byte: str.isspace(), repr() of str and float, json.dumps as
// transformers' `tojson` calls it, case mapping (ICU), and the code-point view
// of UTF-8 strings that Python's indexing, slicing and len() use.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rlf::jinja {

class Value;

// UTF-8 <-> code points (input must be valid UTF-8, as all template text is).
std::u32string to_u32(std::string_view s);
std::string to_utf8(std::u32string_view s);

// Python's str.isspace() for one code point (also what the `\s` of Python's
// re module matches in str patterns).
bool py_isspace(char32_t c);

// str.strip/lstrip/rstrip: `chars` nullopt strips whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);

// repr() of a float and of a str.
std::string py_float_repr(double f);
std::string py_str_repr(std::string_view s);

// str.upper(), str.lower(), str.title(), str.capitalize() (full Unicode mappings).
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);

// Python's round(x, ndigits) for floats (correctly rounded, half to even).
double py_round(double x, int ndigits);

// json.dumps(v, ensure_ascii=..., indent=..., separators=..., sort_keys=...):
// transformers' `tojson` filter. `indent` nullopt is compact (", ", ": "),
// otherwise newlines and that indent string; separators default as Python's.
struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;
  std::optional<std::pair<std::string, std::string>> separators;  // item, key
  bool sort_keys = false;
};
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

// C strftime of `format` at the given calendar time (local time fields).
struct CalendarTime {
  int year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0;
};
std::string py_strftime(const std::string& format, const CalendarTime& t);
// Now, in local time.
CalendarTime calendar_now();

}  // namespace rlf::jinja
