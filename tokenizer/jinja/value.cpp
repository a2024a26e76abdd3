#include "tokenizer/jinja/value.h"

#include <cmath>

#include "tokenizer/jinja/py_text.h"

namespace rlf::jinja {

void raise(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

Value Value::undefined(std::string message, ErrorKind kind) {
  return Value(Data(std::make_shared<const UndefinedData>(UndefinedData{std::move(message), kind})));
}
Value Value::none() { return Value(Data(std::monostate{})); }
Value Value::list(std::vector<Value> items) {
  return Value(Data(std::make_shared<ListData>(ListData{std::move(items), false})));
}
Value Value::tuple(std::vector<Value> items) {
  return Value(Data(std::make_shared<ListData>(ListData{std::move(items), true})));
}
Value Value::dict() { return Value(Data(std::make_shared<DictData>())); }
Value Value::object(std::shared_ptr<Object> o) { return Value(Data(std::move(o))); }
Value Value::callable(std::shared_ptr<Callable> c) { return Value(Data(std::move(c))); }

Value Value::markup(std::string s) { return Value(Data(MarkupText{std::move(s)})); }

Value::Kind Value::kind() const {
  if (is_markup()) return Kind::String;
  return static_cast<Kind>(data_.index());
}

const std::string& Value::as_string() const {
  if (const auto* m = std::get_if<MarkupText>(&data_)) return m->text;
  return std::get<std::string>(data_);
}

bool Value::is_tuple() const { return is_list() && std::get<std::shared_ptr<ListData>>(data_)->is_tuple; }

const std::vector<Value>& Value::items() const { return std::get<std::shared_ptr<ListData>>(data_)->items; }

const std::vector<std::pair<Value, Value>>& Value::entries() const {
  return std::get<std::shared_ptr<DictData>>(data_)->entries;
}

const UndefinedData* Value::undefined_data() const {
  return is_undefined() ? std::get<std::shared_ptr<const UndefinedData>>(data_).get() : nullptr;
}

const Value* Value::dict_get(const Value& key) const {
  for (const auto& [k, v] : entries())
    if (k == key) return &v;
  return nullptr;
}

const Value* Value::dict_get(std::string_view key) const {
  for (const auto& [k, v] : entries())
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void Value::dict_set(Value key, Value v) {
  auto& e = std::get<std::shared_ptr<DictData>>(data_)->entries;
  for (auto& [k, old] : e)
    if (k == key) {
      old = std::move(v);
      return;
    }
  e.emplace_back(std::move(key), std::move(v));
}

void Value::fail_undefined() const {
  const UndefinedData* u = undefined_data();
  if (u == nullptr) raise(ErrorKind::Type, "not an undefined value");
  raise(u->kind, u->message.empty() ? "value is undefined" : u->message);
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return as_bool();
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return as_float() != 0.0;
    case Kind::String: return !as_string().empty();
    case Kind::List: return !items().empty();
    case Kind::Dict: return !entries().empty();
    default: return true;
  }
}

std::string Value::str() const {
  switch (kind()) {
    case Kind::Undefined: return "";
    case Kind::String: return as_string();
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind()) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "None";
    case Kind::Bool: return as_bool() ? "True" : "False";
    case Kind::Int: return std::to_string(as_int());
    case Kind::Float: return py_float_repr(as_float());
    case Kind::String: return is_markup() ? "Markup(" + py_str_repr(as_string()) + ")" : py_str_repr(as_string());
    case Kind::List: {
      const bool tuple = is_tuple();
      std::string out = tuple ? "(" : "[";
      for (size_t i = 0; i < items().size(); ++i) out += (i ? ", " : "") + items()[i].repr();
      if (tuple && items().size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : entries()) {
        out += (first ? "" : ", ") + k.repr() + ": " + v.repr();
        first = false;
      }
      return out + "}";
    }
    case Kind::Object: return as_object()->repr();
    case Kind::Callable: return as_callable()->repr();
  }
  return "";
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return is_markup() ? "Markup" : "str";
    case Kind::List: return is_tuple() ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Object: return as_object()->type_name();
    case Kind::Callable: return "function";
  }
  return "object";
}

double Value::to_double() const {
  switch (kind()) {
    case Kind::Bool: return as_bool() ? 1.0 : 0.0;
    case Kind::Int: return static_cast<double>(as_int());
    case Kind::Float: return as_float();
    case Kind::Undefined: fail_undefined();
    default: raise(ErrorKind::Type, "must be real number, not " + type_name());
  }
}

int64_t Value::to_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  if (is_int()) return as_int();
  if (is_undefined()) fail_undefined();
  raise(ErrorKind::Type, "'" + type_name() + "' object cannot be interpreted as an integer");
}

namespace {

bool is_intlike(const Value& v) { return v.is_int() || v.is_bool(); }

// Python compares int and float exactly; a double outside int64 or with a
// fraction never equals an int64.
bool int_equals_float(int64_t i, double f) {
  if (std::isnan(f) || std::trunc(f) != f || std::abs(f) >= 9.3e18) return false;
  return static_cast<int64_t>(f) == i;
}

}  // namespace

bool operator==(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (is_intlike(a) && is_intlike(b)) return a.to_int() == b.to_int();
    if (a.is_float() && b.is_float()) return a.as_float() == b.as_float();
    if (a.is_float()) return int_equals_float(b.to_int(), a.as_float());
    return int_equals_float(a.to_int(), b.as_float());
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return a.as_string() == b.as_string();
    case K::List: return a.is_tuple() == b.is_tuple() && a.items() == b.items();
    case K::Dict: {
      if (a.entries().size() != b.entries().size()) return false;
      for (const auto& [k, v] : a.entries()) {
        const Value* w = b.dict_get(k);
        if (w == nullptr || !(*w == v)) return false;
      }
      return true;
    }
    case K::Object: return a.as_object() == b.as_object();
    case K::Callable: return a.as_callable() == b.as_callable();
    default: return false;
  }
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (is_intlike(a) && is_intlike(b)) return a.to_int() < b.to_int();
    return a.to_double() < b.to_double();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 order is code point order
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!(x[i] == y[i])) return less_than(x[i], y[i]);
    return x.size() < y.size();
  }
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  raise(ErrorKind::Type,
        "'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Value::Kind::String:
      if (!needle.is_string())
        raise(ErrorKind::Type, "'in <string>' requires string as left operand, not " + needle.type_name());
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : haystack.items())
        if (v == needle) return true;
      return false;
    case Value::Kind::Dict: return haystack.dict_get(needle) != nullptr;
    case Value::Kind::Undefined: return false;
    case Value::Kind::Object:
      if (dynamic_cast<Iterator*>(haystack.as_object().get()) != nullptr) {
        for (const Value& v : iterate(haystack))
          if (v == needle) return true;
        return false;
      }
      [[fallthrough]];
    default: raise(ErrorKind::Type, "argument of type '" + haystack.type_name() + "' is not iterable");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::List: return v.items();
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      for (const auto& e : v.entries()) keys.push_back(e.first);
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      for (char32_t c : to_u32(v.as_string())) chars.emplace_back(to_utf8(std::u32string(1, c)));
      return chars;
    }
    case Value::Kind::Undefined: return {};
    case Value::Kind::Object:
      if (auto* it = dynamic_cast<Iterator*>(v.as_object().get())) return it->drain();
      [[fallthrough]];
    default: raise(ErrorKind::Type, "'" + v.type_name() + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::List: return static_cast<int64_t>(v.items().size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.entries().size());
    case Value::Kind::String: return static_cast<int64_t>(to_u32(v.as_string()).size());
    case Value::Kind::Undefined: return 0;
    default: raise(ErrorKind::Type, "object of type '" + v.type_name() + "' has no len()");
  }
}

void Object::set_attr(const std::string& name, const Value&) {
  raise(ErrorKind::Security, "Cannot assign attribute '" + name + "' on a " + type_name() + " object");
}

Value Iterator::get_attr(const std::string& name) const {
  return Value::undefined("'" + type_ + " object' has no attribute '" + name + "'");
}

Value Namespace::get_attr(const std::string& name) const {
  const Value* v = attrs_.dict_get(name);
  return v ? *v : Value::undefined("'" + type_name() + " object' has no attribute '" + name + "'");
}

void Namespace::set_attr(const std::string& name, const Value& v) { attrs_.dict_set(Value(name), v); }

}  // namespace rlf::jinja
