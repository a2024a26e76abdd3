// A declarative option schema for JSON/TOML configs: one table of entries
// {key, type, default, unit, help} drives validation (unknown keys, wrong
// types, missing required keys, defaults) and the documentation table, so the
// docs list every key with its default, unit and meaning.
//
//   const ConfigSchema kSchema = {
//     {"optimizer.lr", OptionType::Float, 1e-6, "", "peak learning rate"},
//     {"lr_schedule.kind", OptionType::String, "constant", "", "shape after warm-up",
//      {"constant", "linear", "cosine"}},
//     {"model.path", OptionType::String, nullptr, "", "HF directory or llama2.c .bin"},  // required
//   };
//   Json cfg = validate_config(read_toml_file(path), kSchema, path);
//
// Keys are dotted paths; their prefixes are tables ("optimizer" above).
// Errors name `source` and the key, and say how to fix the value.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/json_util.h"

namespace rlf {

enum class OptionType {
  Bool,
  Int,         // JSON integer
  Float,       // any JSON number (integers are converted)
  String,      // optionally restricted to `choices`
  IntList,     // array of integers
  FloatList,   // array of numbers
  StringList,  // array of strings
  Any,         // anything (a sub-structure the caller validates itself)
};

// "bool", "int", "float", "string", "int list", "float list", "string list", "any".
std::string option_type_name(OptionType type);

struct SchemaEntry {
  // A constructor (not aggregate init) so that tables may leave `choices` out
  // without -Wmissing-field-initializers warnings.
  SchemaEntry(std::string key_, OptionType type_, Json default_value_, std::string unit_, std::string help_,
              std::vector<std::string> choices_ = {})
      : key(std::move(key_)), type(type_), default_value(std::move(default_value_)), unit(std::move(unit_)),
        help(std::move(help_)), choices(std::move(choices_)) {}

  std::string key;                   // dotted path, e.g. "optimizer.lr"
  OptionType type = OptionType::String;
  Json default_value;                // null: required (a config without it is an error)
  std::string unit;                  // "steps", "tokens", ... ("" when none)
  std::string help;                  // one line: what the option means
  std::vector<std::string> choices;  // String only: the allowed values (empty: any string)
  std::optional<std::pair<double, double>> range;  // Int/Float: the accepted [min, max] (none: any)

  // The entry with an accepted range: {"run.steps", T::Int, 100, ...}.in(1, 1e12).
  SchemaEntry in(double min, double max) && {
    range = std::make_pair(min, max);
    return std::move(*this);
  }
};

using ConfigSchema = std::vector<SchemaEntry>;

// Checks the schema itself: non-empty unique keys, no key both a value and a
// table, defaults of the declared type, choices only for strings. Errors name the key.
void check_schema(const ConfigSchema& schema);

// Validates `config` (a JSON object, e.g. from read_toml_file) against
// `schema` and returns it with every missing optional key set to its default
// and integer Float values converted. Errors (the first one found):
//   "<source>: unknown key 'optimizer.lrr' (did you mean 'optimizer.lr'?; valid keys in 'optimizer': beta1, lr)"
//   "<source>: key 'optimizer.lr' must be a float, got string \"abc\" (e.g. optimizer.lr = 1e-06)"
//   "<source>: key 'lr_schedule.kind' must be one of constant, linear, cosine, got \"cosin\""
//   "<source>: key 'rollout.group_size' must be in [1, 65536], got 0"
//   "<source>: missing required key 'model.path' (HF directory or llama2.c .bin)"
Json validate_config(const Json& config, const ConfigSchema& schema, const std::string& source);

// A Markdown table of the schema: | key | type | default | unit | meaning |,
// in schema order; required keys show "required", choices are listed.
std::string schema_markdown(const ConfigSchema& schema);

// A TOML file listing every key of the schema under its table, each with its
// default and a comment (meaning, unit, choices). Required keys and keys of
// type Any are commented out (`# model.path = ...`), so the file parses as is
// and a user uncomments what they set.
std::string schema_toml_template(const ConfigSchema& schema);

}  // namespace rlf
