#include "tokenizer/jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "tokenizer/jinja/attributes.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_text.h"

namespace rlf::jinja {

std::vector<std::optional<Value>> bind_args(const CallArgs& args, const std::string& fn,
                                            std::initializer_list<std::string_view> params, size_t n_required) {
  std::vector<std::string_view> names(params);
  std::vector<std::optional<Value>> out(names.size());
  if (args.positional.size() > names.size())
    raise(ErrorKind::Type, fn + "() takes at most " + std::to_string(names.size()) + " argument(s) (" +
                               std::to_string(args.positional.size()) + " given)");
  for (size_t i = 0; i < args.positional.size(); ++i) out[i] = args.positional[i];
  for (const auto& [k, v] : args.keyword) {
    auto it = std::find(names.begin(), names.end(), k);
    if (it == names.end()) raise(ErrorKind::Type, fn + "() got an unexpected keyword argument '" + k + "'");
    const size_t i = static_cast<size_t>(it - names.begin());
    if (out[i]) raise(ErrorKind::Type, fn + "() got multiple values for argument '" + k + "'");
    out[i] = v;
  }
  for (size_t i = 0; i < n_required; ++i)
    if (!out[i]) raise(ErrorKind::Type, fn + "() missing required argument '" + std::string(names[i]) + "'");
  return out;
}

namespace {

Value iterator(std::vector<Value> items) { return Value::object(std::make_shared<Iterator>(std::move(items))); }

bool flag(const std::optional<Value>& v, bool dflt = false) { return v ? v->truthy() : dflt; }

std::string soft_str(const Value& v) { return v.str(); }

// jinja2's make_attrgetter: "a.b.0" walks items; digits become integers.
Value attr_path(const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return get_item(item, attribute);
  Value cur = item;
  const std::string& path = attribute.as_string();
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = get_item(cur, digits ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(py_lower(v.as_string())) : v; }

// sorted(values, key=key): a stable sort with Python's ordering.
std::vector<Value> sorted_by(std::vector<Value> items, const std::function<Value(const Value&)>& key, bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& v : items) keyed.emplace_back(key(v), v);
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? less_than(b.first, a.first) : less_than(a.first, b.first);
  });
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(kv.second);
  return out;
}

// ---- filters ----

Value f_abs(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "abs", {});
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) return Value(v.to_int() < 0 ? -v.to_int() : v.to_int());
  raise(ErrorKind::Type, "bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_attr(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "attr", {"name"}, 1);
  if (v.is_dict() && builtin_method(v, p[0]->str()).is_undefined())
    return Value::undefined("'dict object' has no attribute '" + p[0]->str() + "'");
  return get_attribute(v, p[0]->str());
}

Value f_batch(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "batch", {"linecount", "fill_with"}, 1);
  const int64_t n = p[0]->to_int();
  std::vector<Value> out, tmp;
  for (const Value& item : iterate(v)) {
    if (static_cast<int64_t>(tmp.size()) == n) {
      out.push_back(Value::list(tmp));
      tmp.clear();
    }
    tmp.push_back(item);
  }
  if (!tmp.empty()) {
    if (p[1] && !p[1]->is_none())
      while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(*p[1]);
    out.push_back(Value::list(tmp));
  }
  return iterator(out);
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "capitalize", {});
  return Value(py_capitalize(soft_str(v)));
}

Value f_center(Interpreter& in, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "center", {"width"});
  CallArgs c;
  c.positional.push_back(p[0] ? *p[0] : Value(80));
  return in.call(builtin_method(Value(soft_str(v)), "center"), c);
}

Value f_default(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "default", {"default_value", "boolean"});
  const Value dflt = p[0] ? *p[0] : Value("");
  if (v.is_undefined() || (flag(p[1]) && !v.truthy())) return dflt;
  return v;
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) raise(ErrorKind::Type, "dictsort needs a dict, got " + v.type_name());
  const std::string by = p[1] ? p[1]->str() : "key";
  if (by != "key" && by != "value") raise(ErrorKind::Runtime, "You can only sort by either \"key\" or \"value\"");
  const size_t pos = by == "key" ? 0 : 1;
  const bool cs = flag(p[0]);
  std::vector<Value> items;
  for (const auto& [k, x] : v.entries()) items.push_back(Value::tuple({k, x}));
  return Value::list(sorted_by(items, [&](const Value& t) { return cs ? t.items()[pos] : ignore_case(t.items()[pos]); },
                               flag(p[2])));
}

Value f_escape(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "escape", {});
  return Value::markup(html_escape(v));
}

Value f_forceescape(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "forceescape", {});
  return Value::markup(html_escape(Value(v.str())));
}

Value f_first(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "first", {});
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

std::optional<double> parse_float(const std::string& text);

Value f_float(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "float", {"default"});
  const Value dflt = p[0] ? *p[0] : Value(0.0);
  if (v.is_number()) return Value(v.to_double());
  if (v.is_string())
    if (auto d = parse_float(v.as_string())) return Value(*d);
  return dflt;
}

Value f_format(Interpreter&, const Value& v, CallArgs& a) {
  if (!a.positional.empty() && !a.keyword.empty())
    raise(ErrorKind::Runtime, "can't handle positional and keyword arguments at the same time");
  if (!a.keyword.empty()) {
    Value d = Value::dict();
    for (auto& [k, x] : a.keyword) d.dict_set(Value(k), x);
    return Value(percent_format(soft_str(v), d));
  }
  return Value(percent_format(soft_str(v), Value::tuple(a.positional)));
}

Value f_indent(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "indent", {"width", "first", "blank"});
  std::string ind = "    ";
  if (p[0]) ind = p[0]->is_string() ? p[0]->as_string() : std::string(static_cast<size_t>(std::max<int64_t>(0, p[0]->to_int())), ' ');
  const std::string s = soft_str(v) + "\n";
  std::vector<Value> lines = iterate(call_method(Value(s), "splitlines", {}));
  std::string rv;
  if (flag(p[2])) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i].as_string();
  } else {
    rv = lines.empty() ? "" : lines[0].as_string();
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::string& l = lines[i].as_string();
      rv += "\n" + (l.empty() ? l : ind + l);
    }
  }
  if (flag(p[1])) rv = ind + rv;
  return Value(rv);
}

// Python's int(str, base) for base 10 (and 2/8/16 with or without prefix).
std::optional<int64_t> parse_int(const std::string& text, int base) {
  std::string s = py_strip(text, std::nullopt, true, true);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.erase(0, 1);
  }
  if (s.size() > 2 && s[0] == '0' && ((base == 16 && (s[1] == 'x' || s[1] == 'X')) ||
                                      (base == 8 && (s[1] == 'o' || s[1] == 'O')) ||
                                      (base == 2 && (s[1] == 'b' || s[1] == 'B'))))
    s.erase(0, 2);
  if (s.empty() || s.front() == '_' || s.back() == '_' || s.find("__") != std::string::npos) return std::nullopt;
  std::string clean;
  for (char c : s) {
    if (c == '_') continue;
    if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
    clean += c;
  }
  try {
    size_t used = 0;
    const long long x = std::stoll(clean, &used, base);
    if (used != clean.size()) return std::nullopt;
    return neg ? -x : x;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Python's float(str): decimal or exponent notation, inf, nan; nullopt otherwise.
std::optional<double> parse_float(const std::string& text) {
  std::string s = py_strip(text, std::nullopt, true, true);
  std::string clean;
  for (char c : s)
    if (c != '_') clean += c;
  if (clean.empty() || clean.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  try {
    size_t used = 0;
    const double d = std::stod(clean, &used);
    if (used == clean.size()) return d;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

Value f_int(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "int", {"default", "base"});
  const Value dflt = p[0] ? *p[0] : Value(0);
  const int base = p[1] ? static_cast<int>(p[1]->to_int()) : 10;
  if (v.is_int() || v.is_bool()) return Value(v.to_int());
  std::optional<double> d;
  if (v.is_float()) d = v.as_float();
  if (v.is_string()) {
    if (auto i = parse_int(v.as_string(), base)) return Value(*i);
    d = parse_float(v.as_string());
  }
  if (d && std::isfinite(*d) && std::fabs(*d) < 9.2e18) return Value(static_cast<int64_t>(std::trunc(*d)));
  return dflt;
}

Value f_items(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "items", {});
  if (v.is_undefined()) return iterator({});
  if (!v.is_dict()) raise(ErrorKind::Type, "Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, x] : v.entries()) out.push_back(Value::tuple({k, x}));
  return iterator(out);
}

Value f_join(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "join", {"d", "attribute"});
  const std::string sep = p[0] ? soft_str(*p[0]) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    out += (first ? "" : sep) + soft_str(p[1] && !p[1]->is_none() ? attr_path(item, *p[1]) : item);
    first = false;
  }
  return Value(out);
}

Value f_last(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "last", {});
  if (v.is_object()) raise(ErrorKind::Type, "'" + v.type_name() + "' object is not reversible");
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_length(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "length", {});
  return Value(length(v));
}

Value f_list(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "list", {});
  return Value::list(iterate(v));
}

Value f_lower(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "lower", {});
  return Value(py_lower(soft_str(v)));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "upper", {});
  return Value(py_upper(soft_str(v)));
}

Value min_max(const Value& v, CallArgs& a, bool want_max) {
  auto p = bind_args(a, want_max ? "max" : "min", {"case_sensitive", "attribute"});
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const bool cs = flag(p[0]);
  auto key = [&](const Value& x) {
    Value k = p[1] && !p[1]->is_none() ? attr_path(x, *p[1]) : x;
    return cs ? k : ignore_case(k);
  };
  Value best = items[0];
  Value best_key = key(best);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? less_than(best_key, k) : less_than(k, best_key)) {
      best = items[i];
      best_key = k;
    }
  }
  return best;
}

Value f_max(Interpreter&, const Value& v, CallArgs& a) { return min_max(v, a, true); }
Value f_min(Interpreter&, const Value& v, CallArgs& a) { return min_max(v, a, false); }

Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
  std::vector<Value> out;
  if (a.positional.empty()) {
    Value attribute, dflt = Value::none();
    bool has_attribute = false;
    for (auto& [k, x] : a.keyword) {
      if (k == "attribute") {
        attribute = x;
        has_attribute = true;
      } else if (k == "default") {
        dflt = x;
      } else {
        raise(ErrorKind::Runtime, "Unexpected keyword argument '" + k + "'");
      }
    }
    if (!has_attribute) raise(ErrorKind::Runtime, "map requires a filter argument");
    for (const Value& item : iterate(v)) {
      Value x = attr_path(item, attribute);
      out.push_back(x.is_undefined() && !dflt.is_none() ? dflt : x);
    }
    return iterator(out);
  }
  const std::string name = a.positional[0].str();
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : iterate(v)) out.push_back(in.filter(name, item, rest, 0));
  return iterator(out);
}

Value select_or_reject(Interpreter& in, const Value& v, CallArgs& a, bool select, bool by_attr) {
  if (!v.truthy()) return iterator({});
  size_t off = 0;
  Value attribute;
  if (by_attr) {
    if (a.positional.empty()) raise(ErrorKind::Runtime, "Missing parameter for attribute name");
    attribute = a.positional[0];
    off = 1;
  }
  const bool has_test = a.positional.size() > off;
  const std::string test = has_test ? a.positional[off].str() : "";
  CallArgs rest;
  if (has_test) rest.positional.assign(a.positional.begin() + static_cast<long>(off) + 1, a.positional.end());
  rest.keyword = a.keyword;
  std::vector<Value> out;
  for (const Value& item : iterate(v)) {
    const Value x = by_attr ? attr_path(item, attribute) : item;
    const bool ok = has_test ? in.test(test, x, rest, 0) : x.truthy();
    if (ok == select) out.push_back(item);
  }
  return iterator(out);
}

Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, false); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, true); }

Value f_replace(Interpreter& in, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "replace", {"old", "new", "count"}, 2);
  CallArgs c;
  c.positional = {Value(soft_str(*p[0])), Value(soft_str(*p[1]))};
  if (p[2] && !p[2]->is_none()) c.positional.push_back(*p[2]);
  return in.call(builtin_method(Value(soft_str(v)), "replace"), c);
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "reverse", {});
  if (v.is_string()) {
    std::u32string u = to_u32(v.as_string());
    std::reverse(u.begin(), u.end());
    return Value(to_utf8(u));
  }
  if (v.is_object()) {  // an iterator: list(value) reversed
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(items);
  }
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::object(std::make_shared<Iterator>(items, v.is_dict() ? "dict_reversekeyiterator" : "list_reverseiterator"));
}

Value f_round(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "round", {"precision", "method"});
  const int64_t precision = p[0] ? p[0]->to_int() : 0;
  const std::string method = p[1] ? p[1]->str() : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    raise(ErrorKind::Runtime, "method must be common, ceil or floor");
  if (method == "common") {
    if (v.is_int() || v.is_bool()) return Value(v.to_int());  // round(int, n) is the int for n >= 0
    return Value(py_round(v.to_double(), static_cast<int>(precision)));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.to_double() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "safe", {});
  return v.is_markup() ? v : Value::markup(soft_str(v));
}

Value f_slice(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "slice", {"slices", "fill_with"}, 1);
  std::vector<Value> seq = iterate(v);
  const int64_t slices = p[0]->to_int();
  if (slices <= 0) raise(ErrorKind::Runtime, "ZeroDivisionError: integer division or modulo by zero");
  const size_t length = seq.size();
  const size_t per = length / static_cast<size_t>(slices), extra = length % static_cast<size_t>(slices);
  size_t offset = 0;
  std::vector<Value> out;
  for (size_t n = 0; n < static_cast<size_t>(slices); ++n) {
    const size_t start = offset + n * per;
    if (n < extra) ++offset;
    const size_t end = offset + (n + 1) * per;
    std::vector<Value> tmp(seq.begin() + static_cast<long>(start), seq.begin() + static_cast<long>(end));
    if (p[1] && !p[1]->is_none() && n >= extra) tmp.push_back(*p[1]);
    out.push_back(Value::list(tmp));
  }
  return iterator(out);
}

Value f_sort(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "sort", {"reverse", "case_sensitive", "attribute"});
  const bool cs = flag(p[1]);
  std::vector<Value> attrs;
  if (p[2] && !p[2]->is_none()) {
    if (p[2]->is_string()) {
      for (const Value& part : iterate(call_method(*p[2], "split", CallArgs{{Value(",")}, {}})))
        attrs.push_back(part);
    } else {
      attrs.push_back(*p[2]);
    }
  }
  auto key = [&](const Value& x) {
    if (attrs.empty()) return std::vector<Value>{cs ? x : ignore_case(x)};
    std::vector<Value> k;
    for (const Value& at : attrs) k.push_back(cs ? attr_path(x, at) : ignore_case(attr_path(x, at)));
    return k;
  };
  return Value::list(sorted_by(iterate(v), [&](const Value& x) { return Value::list(key(x)); }, flag(p[0])));
}

Value f_string(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "string", {});
  return Value(soft_str(v));
}

Value f_sum(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "sum", {"attribute", "start"});
  Value total = p[1] ? *p[1] : Value(0);
  for (const Value& item : iterate(v))
    total = binary_op(BinOp::Add, total, p[0] && !p[0]->is_none() ? attr_path(item, *p[0]) : item);
  return total;
}

Value f_title(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "title", {});
  // jinja2 splits before runs of [-\s({\[<] and capitalizes each piece.
  const std::u32string s = to_u32(soft_str(v));
  auto is_sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c); };
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    const bool sep = is_sep(s[i]);
    while (j < s.size() && is_sep(s[j]) == sep) ++j;
    const std::u32string piece = s.substr(i, j - i);
    out += py_upper(to_utf8(piece.substr(0, 1))) + py_lower(to_utf8(piece.substr(1)));
    i = j;
  }
  return Value(out);
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = flag(p[0]);
  if (p[1] && !p[1]->is_none())
    o.indent = p[1]->is_string() ? p[1]->as_string() : std::string(static_cast<size_t>(std::max<int64_t>(0, p[1]->to_int())), ' ');
  if (p[2] && !p[2]->is_none()) {
    std::vector<Value> seps = iterate(*p[2]);
    if (seps.size() != 2) raise(ErrorKind::Runtime, "ValueError: separators must be a pair of strings");
    o.separators = std::make_pair(seps[0].str(), seps[1].str());
  }
  o.sort_keys = flag(p[3]);
  return Value(json_dumps(v, o));
}

Value f_trim(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "trim", {"chars"});
  std::optional<std::string> chars;
  if (p[0] && !p[0]->is_none()) chars = p[0]->str();
  return Value(py_strip(soft_str(v), chars, true, true));
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "truncate", {"length", "killwords", "end", "leeway"});
  const std::u32string s = to_u32(soft_str(v));
  const int64_t length = p[0] ? p[0]->to_int() : 255;
  const std::u32string end = to_u32(p[2] ? p[2]->str() : "...");
  const int64_t leeway = p[3] && !p[3]->is_none() ? p[3]->to_int() : 5;
  if (length < static_cast<int64_t>(end.size())) raise(ErrorKind::Runtime, "expected length >= " + std::to_string(end.size()));
  if (static_cast<int64_t>(s.size()) <= length + leeway) return Value(to_utf8(s));
  const std::u32string head = s.substr(0, static_cast<size_t>(length) - end.size());
  if (flag(p[1])) return Value(to_utf8(head + end));
  const size_t sp = head.rfind(U' ');
  return Value(to_utf8((sp == std::u32string::npos ? head : head.substr(0, sp)) + end));
}

Value f_unique(Interpreter&, const Value& v, CallArgs& a) {
  auto p = bind_args(a, "unique", {"case_sensitive", "attribute"});
  std::vector<Value> seen, out;
  for (const Value& item : iterate(v)) {
    Value k = p[1] && !p[1]->is_none() ? attr_path(item, *p[1]) : item;
    if (!flag(p[0])) k = ignore_case(k);
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return iterator(out);
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& a) {
  bind_args(a, "wordcount", {});
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : to_u32(soft_str(v))) {
    const bool w = c == '_' || (c < 0x80 ? std::isalnum(static_cast<int>(c)) != 0 : !py_isspace(c));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

const std::unordered_map<std::string, FilterFn>& filters() {
  static const std::unordered_map<std::string, FilterFn> m = {
      {"abs", f_abs}, {"attr", f_attr}, {"batch", f_batch}, {"capitalize", f_capitalize}, {"center", f_center},
      {"count", f_length}, {"d", f_default}, {"default", f_default}, {"dictsort", f_dictsort}, {"e", f_escape},
      {"escape", f_escape}, {"first", f_first}, {"float", f_float}, {"forceescape", f_forceescape}, {"format", f_format},
      {"indent", f_indent}, {"int", f_int}, {"items", f_items}, {"join", f_join}, {"last", f_last},
      {"length", f_length}, {"list", f_list}, {"lower", f_lower}, {"map", f_map}, {"max", f_max}, {"min", f_min},
      {"reject", f_reject}, {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},
      {"round", f_round}, {"safe", f_safe}, {"select", f_select}, {"selectattr", f_selectattr}, {"slice", f_slice},
      {"sort", f_sort}, {"string", f_string}, {"sum", f_sum}, {"title", f_title}, {"tojson", f_tojson},
      {"trim", f_trim}, {"truncate", f_truncate}, {"unique", f_unique}, {"upper", f_upper}, {"wordcount", f_wordcount},
  };
  return m;
}

// ---- tests ----

const Value& arg1(const CallArgs& a, const char* name) {
  if (a.positional.size() != 1 || !a.keyword.empty())
    raise(ErrorKind::Type, std::string("test '") + name + "' takes exactly one argument");
  return a.positional[0];
}

void no_test_args(const CallArgs& a, const char* name) {
  if (!a.positional.empty() || !a.keyword.empty())
    raise(ErrorKind::Type, std::string("test '") + name + "' takes no arguments");
}

int64_t mod_of(const Value& v, const Value& n) { return binary_op(BinOp::Mod, v, n).to_int(); }

bool sameas(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::None:
    case Value::Kind::Undefined: return true;
    case Value::Kind::Bool: return a.as_bool() == b.as_bool();
    case Value::Kind::Int: return a.as_int() == b.as_int() && a.as_int() >= -5 && a.as_int() <= 256;  // CPython's small ints
    case Value::Kind::List:
    case Value::Kind::Dict: return &a.items() == &b.items() || (a.is_dict() && &a.entries() == &b.entries());
    default: return a == b;
  }
}

#define RLF_TEST0(fn, name, expr)                 \
  bool fn(Interpreter&, const Value& v, CallArgs& a) { \
    no_test_args(a, name);                        \
    return expr;                                  \
  }
#define RLF_TEST1(fn, name, expr)                 \
  bool fn(Interpreter&, const Value& v, CallArgs& a) { \
    const Value& x = arg1(a, name);               \
    return expr;                                  \
  }

RLF_TEST0(t_boolean, "boolean", v.is_bool())
RLF_TEST0(t_callable, "callable", v.is_callable())
RLF_TEST0(t_defined, "defined", !v.is_undefined())
RLF_TEST0(t_undefined, "undefined", v.is_undefined())
RLF_TEST0(t_none, "none", v.is_none())
RLF_TEST0(t_false, "false", v.is_bool() && !v.as_bool())
RLF_TEST0(t_true, "true", v.is_bool() && v.as_bool())
RLF_TEST0(t_integer, "integer", v.is_int())
RLF_TEST0(t_float, "float", v.is_float())
RLF_TEST0(t_number, "number", v.is_number())
RLF_TEST0(t_string, "string", v.is_string())
RLF_TEST0(t_mapping, "mapping", v.is_dict())
RLF_TEST0(t_sequence, "sequence", v.is_string() || v.is_list() || v.is_dict())
RLF_TEST0(t_iterable, "iterable",
          v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() ||
              (v.is_object() && dynamic_cast<Iterator*>(v.as_object().get()) != nullptr))
RLF_TEST0(t_escaped, "escaped", v.is_markup())
RLF_TEST0(t_odd, "odd", mod_of(v, Value(2)) == 1)
RLF_TEST0(t_even, "even", mod_of(v, Value(2)) == 0)
RLF_TEST0(t_lower, "lower", call_method(Value(v.str()), "islower", {}).truthy())
RLF_TEST0(t_upper, "upper", call_method(Value(v.str()), "isupper", {}).truthy())
RLF_TEST1(t_divisibleby, "divisibleby", mod_of(v, x) == 0)
RLF_TEST1(t_eq, "eq", v == x)
RLF_TEST1(t_ne, "ne", v != x)
RLF_TEST1(t_lt, "lt", less_than(v, x))
RLF_TEST1(t_le, "le", !less_than(x, v))
RLF_TEST1(t_gt, "gt", less_than(x, v))
RLF_TEST1(t_ge, "ge", !less_than(v, x))
RLF_TEST1(t_in, "in", contains(x, v))
RLF_TEST1(t_sameas, "sameas", sameas(v, x))
RLF_TEST0(t_filter, "filter", v.is_string() && find_filter(v.as_string()) != nullptr)
RLF_TEST0(t_test, "test", v.is_string() && find_test(v.as_string()) != nullptr)
#undef RLF_TEST0
#undef RLF_TEST1

const std::unordered_map<std::string, TestFn>& tests() {
  static const std::unordered_map<std::string, TestFn> m = {
      {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined}, {"divisibleby", t_divisibleby},
      {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq}, {"escaped", t_escaped}, {"even", t_even}, {"false", t_false},
      {"filter", t_filter}, {"float", t_float}, {"ge", t_ge}, {">=", t_ge}, {"greaterthan", t_gt}, {"gt", t_gt},
      {">", t_gt}, {"in", t_in}, {"integer", t_integer}, {"iterable", t_iterable}, {"le", t_le}, {"<=", t_le},
      {"lessthan", t_lt}, {"lt", t_lt}, {"<", t_lt}, {"lower", t_lower}, {"mapping", t_mapping}, {"ne", t_ne},
      {"!=", t_ne}, {"none", t_none}, {"number", t_number}, {"odd", t_odd}, {"sameas", t_sameas},
      {"sequence", t_sequence}, {"string", t_string}, {"test", t_test}, {"true", t_true},
      {"undefined", t_undefined}, {"upper", t_upper},
  };
  return m;
}

// ---- globals ----

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

Value g_range(Interpreter&, CallArgs& a) {
  if (!a.keyword.empty()) raise(ErrorKind::Type, "range() takes no keyword arguments");
  const auto& p = a.positional;
  if (p.empty() || p.size() > 3) raise(ErrorKind::Type, "range expected 1 to 3 arguments, got " + std::to_string(p.size()));
  int64_t start = 0, stop = 0, step = 1;
  if (p.size() == 1) {
    stop = p[0].to_int();
  } else {
    start = p[0].to_int();
    stop = p[1].to_int();
    if (p.size() == 3) step = p[2].to_int();
  }
  if (step == 0) raise(ErrorKind::Runtime, "ValueError: range() arg 3 must not be zero");
  const int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                             : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (n > kMaxRange)
    raise(ErrorKind::Security, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.emplace_back(start + i * step);
  return Value::list(out);
}

Value g_dict(Interpreter&, CallArgs& a) {
  Value d = Value::dict();
  if (a.positional.size() > 1) raise(ErrorKind::Type, "dict expected at most 1 argument, got " + std::to_string(a.positional.size()));
  if (!a.positional.empty()) {
    const Value& src = a.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.entries()) d.dict_set(k, v);
    } else {
      for (const Value& pair : iterate(src)) {
        std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2) raise(ErrorKind::Runtime, "ValueError: dictionary update sequence element has wrong length");
        d.dict_set(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : a.keyword) d.dict_set(Value(k), v);
  return d;
}

Value g_namespace(Interpreter& in, CallArgs& a) {
  Value attrs = g_dict(in, a);
  auto ns = std::make_shared<Namespace>();
  for (const auto& [k, v] : attrs.entries()) {
    if (k.is_string() && k.as_string().rfind('_', 0) == 0)
      raise(ErrorKind::Security, "Chat templates cannot store underscore-prefixed attributes on a namespace, but got " +
                                     k.repr() + ". Please rename the attribute.");
    ns->set_attr(k.str(), v);
  }
  return Value::object(ns);
}

class Cycler : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  Value get_attr(const std::string& name) const override {
    auto self = const_cast<Cycler*>(this);
    if (name == "current") return items_[pos_];
    if (name == "next")
      return Value::callable(std::make_shared<NativeFunction>("next", [self](Interpreter&, CallArgs&) {
        Value v = self->items_[self->pos_];
        self->pos_ = (self->pos_ + 1) % self->items_.size();
        return v;
      }));
    if (name == "reset")
      return Value::callable(std::make_shared<NativeFunction>("reset", [self](Interpreter&, CallArgs&) {
        self->pos_ = 0;
        return Value::none();
      }));
    return Value::undefined("'Cycler object' has no attribute '" + name + "'");
  }
  std::string type_name() const override { return "Cycler"; }
  std::string repr() const override { return "<Cycler object>"; }

 private:
  std::vector<Value> items_;
  size_t pos_ = 0;
};

Value g_cycler(Interpreter&, CallArgs& a) {
  if (a.positional.empty()) raise(ErrorKind::Runtime, "at least one item has to be provided");
  return Value::object(std::make_shared<Cycler>(a.positional));
}

Value g_joiner(Interpreter&, CallArgs& a) {
  auto p = bind_args(a, "joiner", {"sep"});
  const std::string sep = p[0] ? p[0]->str() : ", ";
  auto used = std::make_shared<bool>(false);
  return Value::callable(std::make_shared<NativeFunction>("joiner", [sep, used](Interpreter&, CallArgs&) {
    if (!*used) {
      *used = true;
      return Value("");
    }
    return Value(sep);
  }));
}

}  // namespace

const FilterFn* find_filter(const std::string& name) {
  auto it = filters().find(name);
  return it == filters().end() ? nullptr : &it->second;
}

const TestFn* find_test(const std::string& name) {
  auto it = tests().find(name);
  return it == tests().end() ? nullptr : &it->second;
}

std::unordered_map<std::string, Value> default_globals() {
  auto fn = [](const char* name, NativeFunction::Fn f) {
    return Value::callable(std::make_shared<NativeFunction>(name, std::move(f)));
  };
  return {{"range", fn("range", g_range)},
          {"dict", fn("dict", g_dict)},
          {"namespace", fn("namespace", g_namespace)},
          {"cycler", fn("cycler", g_cycler)},
          {"joiner", fn("joiner", g_joiner)}};
}

}  // namespace rlf::jinja
