#include "tokenizer/jinja/attributes.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <functional>
#include <map>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/py_text.h"

namespace rlf::jinja {
namespace {

std::string object_type_repr(const Value& obj) {
  if (obj.is_none()) return "None";
  return obj.type_name() + " object";
}

Value missing_attribute(const Value& obj, const std::string& name) {
  return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + name + "'");
}

Value missing_element(const Value& obj, const Value& key) {
  if (key.is_string()) return missing_attribute(obj, key.as_string());
  return Value::undefined(object_type_repr(obj) + " has no element " + key.repr());
}

Value unsafe(const Value& obj, const std::string& name) {
  return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.",
                          ErrorKind::Security);
}

bool is_dunder(const std::string& name) {
  return name.size() > 4 && name.rfind("__", 0) == 0 && name.compare(name.size() - 2, 2, "__") == 0;
}

// Python's index normalisation: negative counts from the end; nullopt when out of range.
std::optional<size_t> normalize_index(int64_t i, size_t n) {
  if (i < 0) i += static_cast<int64_t>(n);
  if (i < 0 || i >= static_cast<int64_t>(n)) return std::nullopt;
  return static_cast<size_t>(i);
}

// ---- argument helpers for methods ----

using Method = std::function<Value(const Value& self, CallArgs& args)>;

Value bound(const Value& self, const std::string& name, Method m) {
  return Value::callable(std::make_shared<NativeFunction>(
      name + " of " + self.type_name() + " object", [self, m](Interpreter&, CallArgs& a) { return m(self, a); }));
}

std::optional<std::string> opt_str(const std::optional<Value>& v, const char* what) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) raise(ErrorKind::Type, std::string(what) + " arg must be None or str");
  return v->as_string();
}

// Python's slice bounds (start, end) of str.find/count/startswith, in code points.
std::pair<size_t, size_t> sub_range(const std::optional<Value>& start, const std::optional<Value>& end, size_t n) {
  auto clamp = [n](const std::optional<Value>& v, int64_t dflt) -> size_t {
    int64_t i = (!v || v->is_none()) ? dflt : v->to_int();
    if (i < 0) i += static_cast<int64_t>(n);
    return static_cast<size_t>(std::clamp<int64_t>(i, 0, static_cast<int64_t>(n)));
  };
  return {clamp(start, 0), clamp(end, static_cast<int64_t>(n))};
}

// ---- str methods ----

Value split_whitespace(const std::u32string& s, int64_t maxsplit, bool from_right) {
  std::vector<std::u32string> parts;
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && py_isspace(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.push_back(s.substr(i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !py_isspace(s[j])) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
  } else {
    size_t i = s.size();
    while (true) {
      while (i > 0 && py_isspace(s[i - 1])) --i;
      if (i == 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.push_back(s.substr(0, i));
        break;
      }
      size_t j = i;
      while (j > 0 && !py_isspace(s[j - 1])) --j;
      parts.push_back(s.substr(j, i - j));
      i = j;
    }
    std::reverse(parts.begin(), parts.end());
  }
  std::vector<Value> out;
  for (const auto& p : parts) out.emplace_back(to_utf8(p));
  return Value::list(out);
}

Value split_on(const std::string& s, const std::string& sep, int64_t maxsplit, bool from_right) {
  if (sep.empty()) raise(ErrorKind::Runtime, "ValueError: empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    while (true) {
      const size_t at = (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) ? std::string::npos
                                                                                            : s.find(sep, start);
      if (at == std::string::npos) {
        parts.push_back(s.substr(start));
        break;
      }
      parts.push_back(s.substr(start, at - start));
      start = at + sep.size();
    }
  } else {
    size_t end = s.size();
    while (true) {
      const size_t at = (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) || end < sep.size()
                            ? std::string::npos
                            : s.rfind(sep, end - sep.size());
      if (at == std::string::npos) {
        parts.push_back(s.substr(0, end));
        break;
      }
      parts.push_back(s.substr(at + sep.size(), end - at - sep.size()));
      end = at;
    }
    std::reverse(parts.begin(), parts.end());
  }
  std::vector<Value> out;
  for (auto& p : parts) out.emplace_back(p);
  return Value::list(out);
}

Value str_split(const Value& self, CallArgs& a, bool from_right) {
  auto p = bind_args(a, from_right ? "rsplit" : "split", {"sep", "maxsplit"});
  const std::optional<std::string> sep = opt_str(p[0], "sep");
  const int64_t maxsplit = p[1] ? p[1]->to_int() : -1;
  if (!sep) return split_whitespace(to_u32(self.as_string()), maxsplit, from_right);
  return split_on(self.as_string(), *sep, maxsplit, from_right);
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

Value str_splitlines(const Value& self, CallArgs& a) {
  auto p = bind_args(a, "splitlines", {"keepends"});
  const bool keep = p[0] && p[0]->truthy();
  const std::u32string s = to_u32(self.as_string());
  std::vector<Value> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && !is_line_break(s[j])) ++j;
    size_t eol = j;
    if (j < s.size()) eol = (s[j] == '\r' && j + 1 < s.size() && s[j + 1] == '\n') ? j + 2 : j + 1;
    out.emplace_back(to_utf8(s.substr(i, (keep ? eol : j) - i)));
    i = eol;
  }
  return Value::list(out);
}

Value str_find(const Value& self, CallArgs& a, const char* name, bool from_right, bool raise_missing) {
  auto p = bind_args(a, name, {"sub", "start", "end"}, 1);
  if (!p[0]->is_string()) raise(ErrorKind::Type, "must be str, not " + p[0]->type_name());
  const std::u32string s = to_u32(self.as_string()), sub = to_u32(p[0]->as_string());
  auto [b, e] = sub_range(p[1], p[2], s.size());
  int64_t found = -1;
  if (e >= b && e - b >= sub.size()) {
    const std::u32string_view window = std::u32string_view(s).substr(b, e - b);
    const size_t at = from_right ? window.rfind(sub) : window.find(sub);
    if (at != std::u32string_view::npos) found = static_cast<int64_t>(b + at);
  }
  if (found < 0 && raise_missing) raise(ErrorKind::Runtime, "ValueError: substring not found");
  return Value(found);
}

Value str_count(const Value& self, CallArgs& a) {
  auto p = bind_args(a, "count", {"sub", "start", "end"}, 1);
  if (!p[0]->is_string()) raise(ErrorKind::Type, "must be str, not " + p[0]->type_name());
  const std::u32string s = to_u32(self.as_string()), sub = to_u32(p[0]->as_string());
  auto [b, e] = sub_range(p[1], p[2], s.size());
  if (e < b) return Value(0);
  if (sub.empty()) return Value(static_cast<int64_t>(e - b + 1));
  int64_t n = 0;
  for (size_t i = b; i + sub.size() <= e;) {
    if (s.compare(i, sub.size(), sub) == 0) {
      ++n;
      i += sub.size();
    } else {
      ++i;
    }
  }
  return Value(n);
}

Value str_affix(const Value& self, CallArgs& a, bool prefix) {
  const char* name = prefix ? "startswith" : "endswith";
  auto p = bind_args(a, name, {"prefix", "start", "end"}, 1);
  const std::u32string s = to_u32(self.as_string());
  auto [b, e] = sub_range(p[1], p[2], s.size());
  std::vector<Value> options = p[0]->is_tuple() ? p[0]->items() : std::vector<Value>{*p[0]};
  for (const Value& o : options) {
    if (!o.is_string())
      raise(ErrorKind::Type, std::string(name) + " first arg must be str or a tuple of str, not " + o.type_name());
    const std::u32string x = to_u32(o.as_string());
    if (e < b || e - b < x.size()) continue;
    if (prefix ? s.compare(b, x.size(), x) == 0 : s.compare(e - x.size(), x.size(), x) == 0) return Value(true);
  }
  return Value(false);
}

Value str_replace(const Value& self, CallArgs& a) {
  auto p = bind_args(a, "replace", {"old", "new", "count"}, 2);
  if (!p[0]->is_string() || !p[1]->is_string()) raise(ErrorKind::Type, "replace() arguments must be str");
  int64_t count = p[2] ? p[2]->to_int() : -1;
  const std::string& s = self.as_string();
  const std::string &old = p[0]->as_string(), &rep = p[1]->as_string();
  std::string out;
  if (old.empty()) {
    const std::u32string u = to_u32(s);
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count != 0) {
        out += rep;
        --count;
      }
      if (i < u.size()) out += to_utf8(u.substr(i, 1));
    }
    return Value(out);
  }
  size_t start = 0;
  while (count != 0) {
    const size_t at = s.find(old, start);
    if (at == std::string::npos) break;
    out += s.substr(start, at - start) + rep;
    start = at + old.size();
    --count;
  }
  return Value(out + s.substr(start));
}

Value str_join(const Value& self, CallArgs& a) {
  auto p = bind_args(a, "join", {"iterable"}, 1);
  std::string out;
  bool first = true;
  for (const Value& v : iterate(*p[0])) {
    if (!v.is_string()) raise(ErrorKind::Type, "sequence item: expected str instance, " + v.type_name() + " found");
    if (!first) out += self.as_string();
    out += v.as_string();
    first = false;
  }
  return Value(out);
}

Value str_partition(const Value& self, CallArgs& a, bool from_right) {
  auto p = bind_args(a, from_right ? "rpartition" : "partition", {"sep"}, 1);
  if (!p[0]->is_string()) raise(ErrorKind::Type, "must be str, not " + p[0]->type_name());
  const std::string& s = self.as_string();
  const std::string& sep = p[0]->as_string();
  if (sep.empty()) raise(ErrorKind::Runtime, "ValueError: empty separator");
  const size_t at = from_right ? s.rfind(sep) : s.find(sep);
  if (at == std::string::npos)
    return from_right ? Value::tuple({Value(""), Value(""), Value(s)}) : Value::tuple({Value(s), Value(""), Value("")});
  return Value::tuple({Value(s.substr(0, at)), Value(sep), Value(s.substr(at + sep.size()))});
}

Value str_justify(const Value& self, CallArgs& a, const char* name) {
  auto p = bind_args(a, name, {"width", "fillchar"}, 1);
  const std::u32string s = to_u32(self.as_string());
  const int64_t width = p[0]->to_int();
  const std::u32string fill = p[1] ? to_u32(p[1]->as_string()) : std::u32string(U" ");
  if (fill.size() != 1) raise(ErrorKind::Type, "The fill character must be exactly one character long");
  if (width <= static_cast<int64_t>(s.size())) return self;
  const size_t total = static_cast<size_t>(width) - s.size();
  size_t left = 0;
  const std::string n(name);
  if (n == "rjust") left = total;
  if (n == "center") left = total / 2 + (total & static_cast<size_t>(width) & 1);
  return Value(to_utf8(std::u32string(left, fill[0]) + s + std::u32string(total - left, fill[0])));
}

template <typename Pred>
Value all_chars(const Value& self, Pred pred) {
  const std::u32string s = to_u32(self.as_string());
  if (s.empty()) return Value(false);
  for (char32_t c : s)
    if (!pred(static_cast<UChar32>(c))) return Value(false);
  return Value(true);
}

Value cased_check(const Value& self, bool upper) {
  bool any_cased = false;
  for (char32_t c : to_u32(self.as_string())) {
    const UChar32 u = static_cast<UChar32>(c);
    if (upper ? u_islower(u) || u_istitle(u) : u_isupper(u) || u_istitle(u)) return Value(false);
    if (upper ? u_isupper(u) : u_islower(u)) any_cased = true;
  }
  return Value(any_cased);
}

bool is_alpha(UChar32 c) { return u_hasBinaryProperty(c, UCHAR_ALPHABETIC) && u_isalpha(c); }
bool is_decimal(UChar32 c) { return u_charType(c) == U_DECIMAL_DIGIT_NUMBER; }
bool is_digit(UChar32 c) {
  const int t = u_getIntPropertyValue(c, UCHAR_NUMERIC_TYPE);
  return t == U_NT_DECIMAL || t == U_NT_DIGIT;
}
bool is_numeric(UChar32 c) { return u_getIntPropertyValue(c, UCHAR_NUMERIC_TYPE) != U_NT_NONE; }

// str.format with positional and keyword fields ({}, {0}, {name}); format
// specs and conversions are not supported.
Value str_format(const Value& self, CallArgs& a) {
  const std::string& f = self.as_string();
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (f[i] == '{') {
      const size_t close = f.find('}', i);
      if (close == std::string::npos) raise(ErrorKind::Runtime, "ValueError: unmatched '{' in format string");
      const std::string field = f.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!.[") != std::string::npos)
        raise(ErrorKind::Unsupported, "str.format field '{" + field + "}' is not supported");
      if (field.empty() || std::all_of(field.begin(), field.end(), ::isdigit)) {
        const size_t k = field.empty() ? auto_index++ : std::stoul(field);
        if (k >= a.positional.size()) raise(ErrorKind::Runtime, "IndexError: Replacement index out of range");
        out += a.positional[k].str();
      } else {
        bool found = false;
        for (const auto& [name, v] : a.keyword)
          if (name == field) {
            out += v.str();
            found = true;
          }
        if (!found) raise(ErrorKind::Runtime, "KeyError: " + py_str_repr(field));
      }
      i = close;
    } else {
      out += f[i];
    }
  }
  return Value(out);
}

Value no_args(CallArgs& a, const char* name, std::function<Value()> fn) {
  bind_args(a, name, {});
  return fn();
}

const std::map<std::string, Method>& str_methods() {
  static const std::map<std::string, Method> m = {
      {"strip", [](const Value& s, CallArgs& a) { auto p = bind_args(a, "strip", {"chars"}); return Value(py_strip(s.as_string(), opt_str(p[0], "strip"), true, true)); }},
      {"lstrip", [](const Value& s, CallArgs& a) { auto p = bind_args(a, "lstrip", {"chars"}); return Value(py_strip(s.as_string(), opt_str(p[0], "lstrip"), true, false)); }},
      {"rstrip", [](const Value& s, CallArgs& a) { auto p = bind_args(a, "rstrip", {"chars"}); return Value(py_strip(s.as_string(), opt_str(p[0], "rstrip"), false, true)); }},
      {"split", [](const Value& s, CallArgs& a) { return str_split(s, a, false); }},
      {"rsplit", [](const Value& s, CallArgs& a) { return str_split(s, a, true); }},
      {"splitlines", str_splitlines},
      {"startswith", [](const Value& s, CallArgs& a) { return str_affix(s, a, true); }},
      {"endswith", [](const Value& s, CallArgs& a) { return str_affix(s, a, false); }},
      {"replace", str_replace},
      {"upper", [](const Value& s, CallArgs& a) { return no_args(a, "upper", [&] { return Value(py_upper(s.as_string())); }); }},
      {"lower", [](const Value& s, CallArgs& a) { return no_args(a, "lower", [&] { return Value(py_lower(s.as_string())); }); }},
      {"casefold", [](const Value& s, CallArgs& a) { return no_args(a, "casefold", [&] { return Value(py_lower(s.as_string())); }); }},
      {"title", [](const Value& s, CallArgs& a) { return no_args(a, "title", [&] { return Value(py_title(s.as_string())); }); }},
      {"capitalize", [](const Value& s, CallArgs& a) { return no_args(a, "capitalize", [&] { return Value(py_capitalize(s.as_string())); }); }},
      {"find", [](const Value& s, CallArgs& a) { return str_find(s, a, "find", false, false); }},
      {"rfind", [](const Value& s, CallArgs& a) { return str_find(s, a, "rfind", true, false); }},
      {"index", [](const Value& s, CallArgs& a) { return str_find(s, a, "index", false, true); }},
      {"rindex", [](const Value& s, CallArgs& a) { return str_find(s, a, "rindex", true, true); }},
      {"count", str_count},
      {"join", str_join},
      {"partition", [](const Value& s, CallArgs& a) { return str_partition(s, a, false); }},
      {"rpartition", [](const Value& s, CallArgs& a) { return str_partition(s, a, true); }},
      {"center", [](const Value& s, CallArgs& a) { return str_justify(s, a, "center"); }},
      {"ljust", [](const Value& s, CallArgs& a) { return str_justify(s, a, "ljust"); }},
      {"rjust", [](const Value& s, CallArgs& a) { return str_justify(s, a, "rjust"); }},
      {"zfill", [](const Value& s, CallArgs& a) {
         auto p = bind_args(a, "zfill", {"width"}, 1);
         std::u32string u = to_u32(s.as_string());
         const int64_t w = p[0]->to_int();
         if (w <= static_cast<int64_t>(u.size())) return s;
         const size_t sign = !u.empty() && (u[0] == '+' || u[0] == '-') ? 1 : 0;
         u.insert(sign, std::u32string(static_cast<size_t>(w) - u.size(), U'0'));
         return Value(to_utf8(u));
       }},
      {"removeprefix", [](const Value& s, CallArgs& a) {
         auto p = bind_args(a, "removeprefix", {"prefix"}, 1);
         const std::string& x = p[0]->as_string();
         return s.as_string().rfind(x, 0) == 0 ? Value(s.as_string().substr(x.size())) : s;
       }},
      {"removesuffix", [](const Value& s, CallArgs& a) {
         auto p = bind_args(a, "removesuffix", {"suffix"}, 1);
         const std::string& x = p[0]->as_string();
         const std::string& v = s.as_string();
         return !x.empty() && v.size() >= x.size() && v.compare(v.size() - x.size(), x.size(), x) == 0
                    ? Value(v.substr(0, v.size() - x.size()))
                    : s;
       }},
      {"isdigit", [](const Value& s, CallArgs& a) { return no_args(a, "isdigit", [&] { return all_chars(s, is_digit); }); }},
      {"isdecimal", [](const Value& s, CallArgs& a) { return no_args(a, "isdecimal", [&] { return all_chars(s, is_decimal); }); }},
      {"isnumeric", [](const Value& s, CallArgs& a) { return no_args(a, "isnumeric", [&] { return all_chars(s, is_numeric); }); }},
      {"isalpha", [](const Value& s, CallArgs& a) { return no_args(a, "isalpha", [&] { return all_chars(s, is_alpha); }); }},
      {"isalnum", [](const Value& s, CallArgs& a) { return no_args(a, "isalnum", [&] { return all_chars(s, [](UChar32 c) { return is_alpha(c) || is_numeric(c); }); }); }},
      {"isspace", [](const Value& s, CallArgs& a) { return no_args(a, "isspace", [&] { return all_chars(s, [](UChar32 c) { return py_isspace(static_cast<char32_t>(c)); }); }); }},
      {"isupper", [](const Value& s, CallArgs& a) { return no_args(a, "isupper", [&] { return cased_check(s, true); }); }},
      {"islower", [](const Value& s, CallArgs& a) { return no_args(a, "islower", [&] { return cased_check(s, false); }); }},
      {"format", str_format},
  };
  return m;
}

// ---- dict and list methods ----

Value dict_items(const Value& d) {
  std::vector<Value> out;
  for (const auto& [k, v] : d.entries()) out.push_back(Value::tuple({k, v}));
  return Value::list(out);
}

const std::map<std::string, Method>& dict_methods() {
  static const std::map<std::string, Method> m = {
      {"items", [](const Value& d, CallArgs& a) { return no_args(a, "items", [&] { return dict_items(d); }); }},
      {"keys", [](const Value& d, CallArgs& a) { return no_args(a, "keys", [&] { return Value::list(iterate(d)); }); }},
      {"values", [](const Value& d, CallArgs& a) {
         return no_args(a, "values", [&] {
           std::vector<Value> out;
           for (const auto& e : d.entries()) out.push_back(e.second);
           return Value::list(out);
         });
       }},
      {"get", [](const Value& d, CallArgs& a) {
         auto p = bind_args(a, "get", {"key", "default"}, 1);
         const Value* v = d.dict_get(*p[0]);
         return v ? *v : (p[1] ? *p[1] : Value::none());
       }},
      {"copy", [](const Value& d, CallArgs& a) {
         return no_args(a, "copy", [&] {
           Value out = Value::dict();
           for (const auto& [k, v] : d.entries()) out.dict_set(k, v);
           return out;
         });
       }},
  };
  return m;
}

const std::map<std::string, Method>& list_methods() {
  static const std::map<std::string, Method> m = {
      {"index", [](const Value& l, CallArgs& a) {
         auto p = bind_args(a, "index", {"value"}, 1);
         for (size_t i = 0; i < l.items().size(); ++i)
           if (l.items()[i] == *p[0]) return Value(static_cast<int64_t>(i));
         raise(ErrorKind::Runtime, "ValueError: " + p[0]->repr() + " is not in list");
       }},
      {"count", [](const Value& l, CallArgs& a) {
         auto p = bind_args(a, "count", {"value"}, 1);
         return Value(static_cast<int64_t>(std::count(l.items().begin(), l.items().end(), *p[0])));
       }},
      {"copy", [](const Value& l, CallArgs& a) { return no_args(a, "copy", [&] { return Value::list(l.items()); }); }},
  };
  return m;
}

bool is_mutating(const Value& self, const std::string& name) {
  static const char* kList[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};
  static const char* kDict[] = {"pop", "popitem", "setdefault", "update", "clear"};
  if (self.is_list() && !self.is_tuple())
    return std::find(std::begin(kList), std::end(kList), name) != std::end(kList);
  if (self.is_dict()) return std::find(std::begin(kDict), std::end(kDict), name) != std::end(kDict);
  return false;
}

}  // namespace

Value builtin_method(const Value& self, const std::string& name) {
  if (is_mutating(self, name)) return unsafe(self, name);
  const std::map<std::string, Method>* table = nullptr;
  if (self.is_string()) table = &str_methods();
  if (self.is_dict()) table = &dict_methods();
  if (self.is_list()) table = &list_methods();
  if (table != nullptr) {
    auto it = table->find(name);
    if (it != table->end()) {
      if (self.is_tuple() && name == "copy") return Value();
      return bound(self, name, it->second);
    }
  }
  return Value();
}

Value call_method(const Value& self, const std::string& name, CallArgs args) {
  const std::map<std::string, Method>* table = self.is_string() ? &str_methods()
                                               : self.is_dict()  ? &dict_methods()
                                               : self.is_list()  ? &list_methods()
                                                                 : nullptr;
  if (table != nullptr) {
    auto it = table->find(name);
    if (it != table->end()) return it->second(self, args);
  }
  raise(ErrorKind::Type, "'" + self.type_name() + "' object has no method '" + name + "'");
}

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (is_dunder(name)) return unsafe(obj, name);
  if (obj.is_object()) return obj.as_object()->get_attr(name);
  Value m = builtin_method(obj, name);
  if (!m.is_undefined() || m.undefined_data() != nullptr) return m;
  if (obj.is_dict())
    if (const Value* v = obj.dict_get(name)) return *v;
  return missing_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_get(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    if (obj.is_list()) {
      if (auto i = normalize_index(key.to_int(), obj.items().size())) return obj.items()[*i];
    } else {
      const std::u32string s = to_u32(obj.as_string());
      if (auto i = normalize_index(key.to_int(), s.size())) return Value(to_utf8(s.substr(*i, 1)));
    }
    return missing_element(obj, key);
  } else if (obj.is_object() && key.is_string()) {
    return obj.as_object()->get_attr(key.as_string());
  }
  if (key.is_string()) {
    if (is_dunder(key.as_string())) return unsafe(obj, key.as_string());
    Value m = builtin_method(obj, key.as_string());
    if (!m.is_undefined() || m.undefined_data() != nullptr) return m;
  }
  return missing_element(obj, key);
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (!obj.is_list() && !obj.is_string()) return Value::undefined("'" + object_type_repr(obj) + "' is not subscriptable");
  auto part = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool())
      raise(ErrorKind::Type, std::string("slice ") + what + " must be an integer or None, not " + v.type_name());
    return v.to_int();
  };
  const std::optional<int64_t> st = part(step, "step");
  const int64_t k = st.value_or(1);
  if (k == 0) raise(ErrorKind::Runtime, "ValueError: slice step cannot be zero");
  const std::u32string chars = obj.is_string() ? to_u32(obj.as_string()) : std::u32string();
  const int64_t n = obj.is_string() ? static_cast<int64_t>(chars.size()) : static_cast<int64_t>(obj.items().size());
  // PySlice_AdjustIndices
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = *v;
    if (i < 0) {
      i += n;
      if (i < 0) i = k < 0 ? -1 : 0;
    } else if (i >= n) {
      i = k < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t b = adjust(part(start, "start"), k < 0 ? n - 1 : 0);
  const int64_t e = adjust(part(stop, "stop"), k < 0 ? -1 : n);
  std::vector<int64_t> idx;
  for (int64_t i = b; k > 0 ? i < e : i > e; i += k) idx.push_back(i);
  if (obj.is_string()) {
    std::u32string out;
    for (int64_t i : idx) out += chars[static_cast<size_t>(i)];
    return Value(to_utf8(out));
  }
  std::vector<Value> out;
  for (int64_t i : idx) out.push_back(obj.items()[static_cast<size_t>(i)]);
  return obj.is_tuple() ? Value::tuple(out) : Value::list(out);
}

}  // namespace rlf::jinja
