// Config keys bound to options-struct members: each key is declared once, in
// one table, with its type, unit, range, help and choices; its default is read
// from a default-constructed struct, and the same table sets the struct from a
// validated config. The schema (validation, docs/config.md, the TOML template)
// and the loader cannot disagree.
//
//   const ConfigBindings<RunOptions>& bindings() {
//     static const ConfigBindings<RunOptions> b = {
//         field("run.steps", "steps", "trainer steps", RLF_MEMBER(steps)).in(1, 1e12),
//         choice("run.schedule", "", "shape after warm-up", RLF_MEMBER(schedule), schedule_name, parse_schedule,
//                {"constant", "cosine"}),
//         section("run.data", Json::object(), "the dataset table (docs/data.md)",
//                 [](RunOptions& o, const Json& v, const std::string& src) { o.data = data_from_json(v, src); }),
//     };
//     return b;
//   }
//   const ConfigSchema schema = schema_of(bindings());           // defaults from RunOptions{}
//   RunOptions o;
//   apply_bindings(bindings(), validate_config(cfg, schema, path), o, path);
//
// Types follow the member: bool → bool; integers → int (unsigned members are
// read as int64 and refused when negative: "c.toml: key 'eval.seed' must be
// >= 0, got -1"); floating point → float; std::string and
// std::filesystem::path → string; vectors of those → lists; Json → any.
// Options whose values span keys (e.g. warm-up <= optimiser steps) are checked
// by the caller after apply_bindings.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/config_schema.h"
#include "config/enum_names.h"
#include "util/json_util.h"

// The accessor of a (nested) member, for field() and choice():
// RLF_MEMBER(rl.sampling.top_k) reads and writes `config.rl.sampling.top_k`.
#define RLF_MEMBER(path) [](auto& rlf_options_) -> auto& { return rlf_options_.path; }

namespace rlf {

template <class S>
struct ConfigBinding {
  SchemaEntry entry;                                                  // the key; default_value filled by schema_of
  std::function<Json(const S&)> get;                                  // the member as the config writes it (empty:
                                                                      // entry.default_value as declared)
  std::function<void(S&, const Json& value, const std::string& source)> set;  // from a validated value (empty:
                                                                              // validated only)
};

template <class S>
using ConfigBindings = std::vector<ConfigBinding<S>>;

namespace config_detail {

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {
  using element = T;
};

// The schema type of a member type.
template <class M>
constexpr OptionType option_type_of() {
  if constexpr (std::is_same_v<M, bool>) return OptionType::Bool;
  else if constexpr (std::is_integral_v<M>) return OptionType::Int;
  else if constexpr (std::is_floating_point_v<M>) return OptionType::Float;
  else if constexpr (std::is_same_v<M, std::string> || std::is_same_v<M, std::filesystem::path>) return OptionType::String;
  else if constexpr (std::is_same_v<M, Json>) return OptionType::Any;
  else if constexpr (is_vector<M>::value) {
    using E = typename is_vector<M>::element;
    if constexpr (std::is_same_v<E, std::string>) return OptionType::StringList;
    else if constexpr (std::is_integral_v<E> && !std::is_same_v<E, bool>) return OptionType::IntList;
    else {
      static_assert(std::is_floating_point_v<E>, "config binding: unsupported list element type");
      return OptionType::FloatList;
    }
  } else {
    static_assert(std::is_same_v<M, void>, "config binding: unsupported member type (use choice() or bind())");
  }
}

template <class M>
Json to_json(const M& x) {
  if constexpr (std::is_same_v<M, std::filesystem::path>) return x.string();
  else if constexpr (std::is_integral_v<M> && std::is_unsigned_v<M> && !std::is_same_v<M, bool>)
    return static_cast<int64_t>(x);
  else return Json(x);
}

// The member's value from a validated value; `key` and `source` name it in errors.
template <class M>
M from_json(const Json& v, const std::string& key, const std::string& source) {
  if constexpr (std::is_same_v<M, std::filesystem::path>) {
    return v.get<std::string>();
  } else if constexpr (std::is_integral_v<M> && std::is_unsigned_v<M> && !std::is_same_v<M, bool>) {
    const int64_t x = v.get<int64_t>();
    check(x >= 0, source, ": key '", key, "' must be >= 0, got ", x);
    return static_cast<M>(x);
  } else {
    return v.get<M>();
  }
}

// A binding before it knows its struct: converts to ConfigBinding<S> for the
// table it is written in (get and set are generic lambdas).
// `Access` (field() only): the member accessor whose type gives the key's type.
template <class Get, class Set, class Access = std::nullptr_t>
struct Spec {
  SchemaEntry entry;
  Get get;
  Set set;
  Access access = nullptr;

  // The accepted [min, max] of a number.
  Spec in(double min, double max) && {
    entry = std::move(entry).in(min, max);
    return std::move(*this);
  }

  template <class S>
  operator ConfigBinding<S>() && {
    ConfigBinding<S> b{std::move(entry), {}, {}};
    if constexpr (!std::is_same_v<Access, std::nullptr_t>)
      b.entry.type = option_type_of<std::remove_cvref_t<decltype(access(std::declval<S&>()))>>();
    if constexpr (!std::is_same_v<Get, std::nullptr_t>) b.get = [g = get](const S& s) -> Json { return g(s); };
    b.set = [f = set](S& s, const Json& v, const std::string& source) { f(s, v, source); };
    return b;
  }
};

template <class Get, class Set, class Access = std::nullptr_t>
Spec<Get, Set, Access> make_spec(SchemaEntry entry, Get get, Set set, Access access = nullptr) {
  return Spec<Get, Set, Access>{std::move(entry), std::move(get), std::move(set), std::move(access)};
}

}  // namespace config_detail

// A key stored as is in a member: its type and default come from the member;
// a string member may list its accepted `choices`.
template <class Access>
auto field(std::string key, std::string unit, std::string help, Access access, std::vector<std::string> choices = {}) {
  auto get = [access](const auto& s) -> Json {
    return config_detail::to_json(access(s));
  };
  auto set = [access, key](auto& s, const Json& v, const std::string& source) {
    auto& m = access(s);
    m = config_detail::from_json<std::remove_cvref_t<decltype(m)>>(v, key, source);
  };
  return config_detail::make_spec(
      SchemaEntry(std::move(key), OptionType::Any, nullptr, std::move(unit), std::move(help), std::move(choices)),
      std::move(get), std::move(set), access);
}

// A string key naming one value of an enum member: `name` writes it (the
// default), `parse` reads it; `choices` are the accepted names.
template <class Access, class Name, class Parse>
auto choice(std::string key, std::string unit, std::string help, Access access, Name name, Parse parse,
            std::vector<std::string> choices) {
  auto get = [access, name](const auto& s) -> Json { return std::string(name(access(s))); };
  auto set = [access, parse](auto& s, const Json& v, const std::string&) { access(s) = parse(v.get<std::string>()); };
  return config_detail::make_spec(
      SchemaEntry(std::move(key), OptionType::String, nullptr, std::move(unit), std::move(help), std::move(choices)),
      std::move(get), std::move(set));
}

// A key of `type` that maps onto the struct in its own way: get(const S&) -> Json
// gives the default, set(S&, const Json& value, const std::string& source)
// reads it (errors name `source` and the key).
template <class Get, class Set>
auto bind(std::string key, OptionType type, std::string unit, std::string help, Get get, Set set,
          std::vector<std::string> choices = {}) {
  return config_detail::make_spec(
      SchemaEntry(std::move(key), type, nullptr, std::move(unit), std::move(help), std::move(choices)), std::move(get),
      std::move(set));
}

// An enum member named by its table (config/enum_names.h): the choices,
// the default's name and the parse come from `names`.
template <class Access, class E>
auto choice(std::string key, std::string unit, std::string help, Access access, const EnumNames<E>& names) {
  auto get = [access, names](const auto& s) -> Json { return names.name(access(s)); };
  auto set = [access, names](auto& s, const Json& v, const std::string&) { access(s) = names.parse(v.get<std::string>()); };
  return config_detail::make_spec(
      SchemaEntry(std::move(key), OptionType::String, nullptr, std::move(unit), std::move(help), names.choices()),
      std::move(get), std::move(set));
}

// A bool member written as one of two strings: `off` (false) or `on` (true).
template <class Access>
auto two_way(std::string key, std::string unit, std::string help, Access access, std::string off, std::string on) {
  auto get = [access, off, on](const auto& s) -> Json { return access(s) ? on : off; };
  auto set = [access, on](auto& s, const Json& v, const std::string&) { access(s) = v.get<std::string>() == on; };
  return config_detail::make_spec(SchemaEntry(std::move(key), OptionType::String, nullptr, std::move(unit), std::move(help),
                                              {std::move(off), std::move(on)}),
                                  std::move(get), std::move(set));
}

// A sub-structure (type any) parsed by its own library:
// read(S&, const Json& value, const std::string& source), with the given default.
template <class Read>
auto section(std::string key, Json default_value, std::string help, Read read) {
  return config_detail::make_spec(SchemaEntry(std::move(key), OptionType::Any, std::move(default_value), "", std::move(help)),
                                  nullptr, std::move(read));
}

// The schema of `bindings`, in their order, each default read from `defaults`
// (field, choice, bind) or as declared (section); checked by check_schema.
template <class S>
ConfigSchema schema_of(const ConfigBindings<S>& bindings, const S& defaults = S{}) {
  ConfigSchema schema;
  for (const ConfigBinding<S>& b : bindings) {
    schema.push_back(b.entry);
    if (b.get) schema.back().default_value = b.get(defaults);
  }
  check_schema(schema);
  return schema;
}

// Sets `out` from `config`, a JSON object validated against schema_of(bindings)
// (every key present), in the bindings' order. `source` names it in errors.
template <class S>
void apply_bindings(const ConfigBindings<S>& bindings, const Json& config, S& out, const std::string& source) {
  for (const ConfigBinding<S>& b : bindings) {
    if (!b.set) continue;
    std::string ptr = "/" + b.entry.key;
    for (char& ch : ptr)
      if (ch == '.') ch = '/';
    b.set(out, config.at(Json::json_pointer(ptr)), source);
  }
}

}  // namespace rlf
