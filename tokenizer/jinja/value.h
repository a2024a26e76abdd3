// Values of rlf's Jinja engine: the part of Python's data model that chat
// templates see, with Python's semantics where a template can observe them
// (str() and repr() text, truthiness, ==, ordering, `in`, int/float/bool
// arithmetic, dict key order). A Value is cheap to copy: strings are held by
// value, containers and objects by shared pointer (Python reference semantics;
// chat templates run in an immutable sandbox, so only namespaces change).
//
//   Kind       Python         notes
//   Undefined  jinja2.Undefined  prints "", false, iterates as empty; any other
//                             use raises the error it carries (UndefinedError,
//                             or SecurityError for a blocked attribute)
//   None/Bool/Int/Float/String  None/bool/int/float/str  (int is 64-bit: overflow is an error;
//                             a String may be a Markup, see MarkupText)
//   List       list or tuple  (is_tuple changes repr and json only)
//   Dict       dict           insertion-ordered
//   Object     namespace, loop context, cycler: named attributes
//   Callable   macro, builtin function, bound method
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "util/error.h"

namespace rlf::jinja {

// What kind of failure a template hit; Raised is raise_exception(message).
enum class ErrorKind { Syntax, Undefined, Type, Security, Raised, Unsupported, Runtime };

class Error : public rlf::Error {
 public:
  Error(ErrorKind kind, const std::string& message) : rlf::Error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] void raise(ErrorKind kind, const std::string& message);

class Value;
struct ListData;
struct DictData;
class Object;
class Callable;
class Interpreter;

// Arguments of a call: positional, then keyword in call order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// markupsafe's Markup: a str that escapes what is added to it (the `safe`
// and `escape` filters make one).
struct MarkupText {
  std::string text;
};

struct UndefinedData {
  std::string message;  // what raising says, e.g. "'foo' is undefined"
  ErrorKind kind = ErrorKind::Undefined;
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Object, Callable };

  Value() : data_(std::shared_ptr<const UndefinedData>()) {}  // undefined, no hint
  static Value undefined(std::string message, ErrorKind kind = ErrorKind::Undefined);
  static Value none();
  Value(bool b) : data_(b) {}
  Value(int64_t i) : data_(i) {}
  Value(int i) : data_(static_cast<int64_t>(i)) {}
  Value(double f) : data_(f) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(const char* s) : data_(std::string(s)) {}
  static Value markup(std::string s);
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict();  // empty, to fill with dict_set
  static Value object(std::shared_ptr<Object> o);
  static Value callable(std::shared_ptr<Callable> c);

  Kind kind() const;
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }  // bool is not int here; see is_integer()
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python's numbers.Number
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_tuple() const;
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_object() const { return kind() == Kind::Object; }
  bool is_callable() const { return kind() == Kind::Callable; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  const std::string& as_string() const;
  bool is_markup() const { return std::holds_alternative<MarkupText>(data_); }
  const std::vector<Value>& items() const;                     // list/tuple elements
  const std::vector<std::pair<Value, Value>>& entries() const;  // dict entries in order
  const std::shared_ptr<Object>& as_object() const { return std::get<std::shared_ptr<Object>>(data_); }
  const std::shared_ptr<Callable>& as_callable() const { return std::get<std::shared_ptr<Callable>>(data_); }
  const UndefinedData* undefined_data() const;

  // Dict access (the value must be a dict). dict_get returns nullptr when absent.
  const Value* dict_get(const Value& key) const;
  const Value* dict_get(std::string_view key) const;
  const Value* dict_get(const std::string& key) const { return dict_get(std::string_view(key)); }
  const Value* dict_get(const char* key) const { return dict_get(std::string_view(key)); }
  void dict_set(Value key, Value v);  // only while building a fresh dict

  // Raises the error an undefined value carries (UndefinedError by default).
  [[noreturn]] void fail_undefined() const;

  // Python's bool(x), str(x) and repr(x).
  bool truthy() const;
  std::string str() const;
  std::string repr() const;
  // Python's type name: "str", "int", "dict", "NoneType", ...
  std::string type_name() const;
  // Python's numeric value of a bool/int/float (raises for other kinds).
  double to_double() const;
  // int or bool as integer (raises for other kinds).
  int64_t to_int() const;

  // Python's ==.
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  using Data = std::variant<std::shared_ptr<const UndefinedData>, std::monostate, bool, int64_t, double, std::string,
                            std::shared_ptr<ListData>, std::shared_ptr<DictData>, std::shared_ptr<Object>,
                            std::shared_ptr<Callable>, MarkupText>;
  explicit Value(Data d) : data_(std::move(d)) {}
  Data data_;
};

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
};

struct DictData {
  std::vector<std::pair<Value, Value>> entries;
};

// Python's "<" for sortable values (numbers with numbers, str with str,
// lists/tuples element-wise); raises TypeError naming both types otherwise.
bool less_than(const Value& a, const Value& b);

// Python's `needle in haystack` (substring, element, dict key); raises for
// types without membership.
bool contains(const Value& haystack, const Value& needle);

// Iteration as Python's `for x in v`: list/tuple elements, dict keys, str code
// points, nothing for undefined; raises TypeError for the rest.
std::vector<Value> iterate(const Value& v);

// Python's len(); raises TypeError for unsized values (undefined is 0).
int64_t length(const Value& v);

// An object with named attributes (namespace, loop context).
class Object {
 public:
  virtual ~Object() = default;
  // The attribute, or nullopt-like undefined when absent.
  virtual Value get_attr(const std::string& name) const = 0;
  // Namespaces accept `{% set ns.attr = v %}`; others raise.
  virtual void set_attr(const std::string& name, const Value& v);
  virtual std::string type_name() const = 0;
  virtual std::string repr() const = 0;
};

// Anything a template can call.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual Value call(Interpreter& interp, CallArgs args) = 0;
  virtual std::string repr() const = 0;
};

// A Callable from a lambda (builtins and bound methods).
class NativeFunction : public Callable {
 public:
  using Fn = std::function<Value(Interpreter&, CallArgs&)>;
  NativeFunction(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  Value call(Interpreter& interp, CallArgs args) override { return fn_(interp, args); }
  std::string repr() const override { return "<built-in function " + name_ + ">"; }

 private:
  std::string name_;
  Fn fn_;
};

// A one-shot iterator (what jinja2's map, select, items, unique, batch and
// reverse filters return): always true, no len(), and empty once iterated.
class Iterator : public Object {
 public:
  explicit Iterator(std::vector<Value> items, std::string type = "generator")
      : items_(std::move(items)), type_(std::move(type)) {}
  std::vector<Value> drain() { return std::exchange(items_, {}); }
  Value get_attr(const std::string& name) const override;
  std::string type_name() const override { return type_; }
  std::string repr() const override { return "<" + type_ + " object>"; }

 private:
  std::vector<Value> items_;
  std::string type_;
};

// jinja2's namespace(): attributes that `set ns.x = ...` may change.
class Namespace : public Object {
 public:
  Value get_attr(const std::string& name) const override;
  void set_attr(const std::string& name, const Value& v) override;
  std::string type_name() const override { return "Namespace"; }
  std::string repr() const override { return "<Namespace " + attrs_.repr() + ">"; }

 private:
  Value attrs_ = Value::dict();
};

}  // namespace rlf::jinja
