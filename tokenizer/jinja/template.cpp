#include "tokenizer/jinja/template.h"

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/parser.h"

namespace rlf::jinja {

Template::Template(const std::string& source)
    : ast_(std::make_shared<const TemplateAst>(parse_template(source))) {}

Rendered Template::render(const std::unordered_map<std::string, Value>& variables, InterpreterOptions options) const {
  std::unordered_map<std::string, Value> globals = default_globals();
  for (const auto& [k, v] : variables) globals[k] = v;
  Interpreter interp(std::move(globals), options);
  Rendered out;
  out.text = interp.render(*ast_);
  out.generation = interp.generation_spans();
  return out;
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) raise(ErrorKind::Unsupported, "integer " + j.dump() + " does not fit in 64 bits");
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      for (const auto& x : j) items.push_back(from_json(x));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = Value::dict();
      for (const auto& [k, v] : j.items()) d.dict_set(Value(k), from_json(v));
      return d;
    }
    default: raise(ErrorKind::Type, "JSON value of type " + std::string(j.type_name()) + " has no template value");
  }
}

}  // namespace rlf::jinja
