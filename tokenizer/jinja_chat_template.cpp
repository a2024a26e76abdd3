#include "tokenizer/jinja_chat_template.h"

#include <regex>

#include "tokenizer/jinja/py_text.h"
#include "util/error.h"
#include "util/fs.h"

namespace rlf {
namespace {

OrderedJson parse_ordered(const std::string& text, const std::string& source) {
  try {
    return OrderedJson::parse(text);
  } catch (const std::exception& e) {
    fail(source, ": invalid JSON: ", e.what());
  }
}

// A special token field of tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> token_text(const OrderedJson& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

// transformers 5's _normalize_chat_messages + _alias_reasoning_fields.
OrderedJson prepare_messages_v5(const OrderedJson& messages) {
  OrderedJson out = OrderedJson::array();
  for (const auto& m : messages) {
    if (!m.is_object()) {
      out.push_back(m);
      continue;
    }
    OrderedJson kept = OrderedJson::object();
    for (const auto& [k, v] : m.items())
      if (!v.is_null()) kept[k] = v;
    const OrderedJson* reasoning = nullptr;
    for (const char* key : {"reasoning_content", "thinking", "reasoning"})
      if (kept.contains(key)) {
        reasoning = &kept[key];
        break;
      }
    if (reasoning == nullptr) {
      out.push_back(std::move(kept));
      continue;
    }
    OrderedJson aliased = OrderedJson::object();
    aliased["thinking"] = *reasoning;  // {"thinking": r, **message, "reasoning_content": r}
    for (const auto& [k, v] : kept.items()) aliased[k] = v;
    aliased["reasoning_content"] = *reasoning;
    out.push_back(std::move(aliased));
  }
  return out;
}

jinja::Value native(const std::string& name, jinja::NativeFunction::Fn fn) {
  return jinja::Value::callable(std::make_shared<jinja::NativeFunction>(name, std::move(fn)));
}

jinja::CalendarTime render_time(const ChatRenderSettings& s) {
  if (!s.date) return jinja::calendar_now();
  jinja::CalendarTime t;
  t.year = s.date->year;
  t.month = s.date->month;
  t.day = s.date->day;
  return t;
}

}  // namespace

ChatInput parse_chat_input(const std::string& json_text, const std::string& source) {
  const OrderedJson j = parse_ordered(json_text, source);
  check(j.is_object(), source, ": a conversation must be a JSON object with a 'messages' array");
  ChatInput in;
  for (const auto& [k, v] : j.items()) {
    if (k == "messages") {
      check(v.is_array(), source, ": 'messages' must be an array of message objects");
      in.messages = v;
    } else if (k == "tools") {
      check(v.is_array() || v.is_null(), source, ": 'tools' must be an array of function schemas or null");
      in.tools = v;
    } else if (k == "documents") {
      check(v.is_array() || v.is_null(), source, ": 'documents' must be an array or null");
      in.documents = v;
    } else if (k == "add_generation_prompt") {
      check(v.is_boolean(), source, ": 'add_generation_prompt' must be true or false");
      in.add_generation_prompt = v.get<bool>();
    } else if (k == "bos_token" || k == "eos_token") {
      check(v.is_string(), source, ": '", k, "' must be a string");
      (k == "bos_token" ? in.bos_token : in.eos_token) = v.get<std::string>();
    } else if (k == "kwargs") {
      check(v.is_object(), source, ": 'kwargs' must be an object of extra template variables");
      in.kwargs = v;
    } else {
      fail(source, ": unknown key '", k,
           "' (expected messages, tools, documents, add_generation_prompt, bos_token, eos_token, kwargs)");
    }
  }
  check(j.contains("messages"), source, ": missing 'messages'");
  return in;
}

TransformersCompat parse_transformers_compat(const std::string& name) {
  if (name == "4" || name == "4.46") return TransformersCompat::V4;
  if (name == "5") return TransformersCompat::V5;
  fail("transformers compatibility '", name, "': expected 4 or 5");
}

CalendarDate parse_calendar_date(const std::string& text, const std::string& key) {
  static const std::regex re(R"((\d{4})-(\d{2})-(\d{2}))");
  std::smatch m;
  check(std::regex_match(text, m, re), key, ": expected a date YYYY-MM-DD, got '", text, "'");
  CalendarDate d{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3])};
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  check(d.month >= 1 && d.month <= 12 && d.day >= 1 && d.day <= kDays[d.month - 1], key, ": '", text,
        "' is not a calendar date");
  return d;
}

JinjaChatTemplate::JinjaChatTemplate(std::string source, std::map<std::string, std::string> special_tokens,
                                     std::map<std::string, std::string> named, std::string origin)
    : source_(std::move(source)),
      special_tokens_(std::move(special_tokens)),
      named_(std::move(named)),
      origin_(std::move(origin)) {
  parsed_[source_] = std::make_shared<const jinja::Template>(source_);
  for (const auto& [name, text] : named_)
    if (!parsed_.count(text)) parsed_[text] = std::make_shared<const jinja::Template>(text);
}

JinjaChatTemplate JinjaChatTemplate::load(const std::string& path) {
  const fs::path p(path);
  std::optional<std::string> jinja_text;
  fs::path config;
  if (fs::is_directory(p)) {
    if (fs::exists(p / "chat_template.jinja")) jinja_text = read_file(p / "chat_template.jinja");
    if (fs::exists(p / "tokenizer_config.json")) config = p / "tokenizer_config.json";
    check(jinja_text || !config.empty(), path, ": no chat_template.jinja or tokenizer_config.json in this directory");
  } else if (p.extension() == ".json") {
    config = p;
  } else {
    jinja_text = read_file(p);
  }
  std::map<std::string, std::string> tokens, named;
  std::string source;
  if (!config.empty()) {
    const OrderedJson cfg = parse_ordered(read_file(config), config.string());
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"})
      if (cfg.contains(key))
        if (auto t = token_text(cfg[key])) tokens[key] = *t;
    if (!jinja_text && cfg.contains("chat_template")) {
      const OrderedJson& ct = cfg["chat_template"];
      if (ct.is_string()) {
        source = ct.get<std::string>();
      } else if (ct.is_array()) {
        for (const auto& entry : ct) {
          check(entry.is_object() && entry.contains("name") && entry.contains("template"), config.string(),
                ": field 'chat_template' entries must be {\"name\": ..., \"template\": ...}");
          named[entry["name"].get<std::string>()] = entry["template"].get<std::string>();
        }
        check(named.count("default"), config.string(), ": field 'chat_template' lists no 'default' template");
        source = named["default"];
      } else {
        fail(config.string(), ": field 'chat_template' must be a string or a list of named templates");
      }
    }
    check(jinja_text || !source.empty(), config.string(), ": has no 'chat_template' (the model ships no chat template)");
  }
  if (jinja_text) source = *jinja_text;
  return with_context("chat template '" + path + "'", [&] {
    return JinjaChatTemplate(source, tokens, named, path);
  });
}

void JinjaChatTemplate::add_missing_special_tokens(const std::map<std::string, std::string>& tokens) {
  for (const auto& [k, v] : tokens) special_tokens_.emplace(k, v);
}

const std::string& JinjaChatTemplate::source_for(const ChatInput& input) const {
  const bool has_tools = input.tools.is_array();
  if (has_tools && named_.count("tool_use")) return named_.at("tool_use");
  return source_;
}

RenderedChat JinjaChatTemplate::render(const ChatInput& input, const ChatRenderSettings& settings) const {
  std::unordered_map<std::string, jinja::Value> vars;
  const OrderedJson messages =
      settings.compat == TransformersCompat::V5 ? prepare_messages_v5(input.messages) : input.messages;
  vars["messages"] = jinja::from_json(messages);
  vars["tools"] = jinja::from_json(input.tools);
  vars["documents"] = jinja::from_json(input.documents);
  vars["add_generation_prompt"] = jinja::Value(input.add_generation_prompt);
  for (const auto& [k, v] : special_tokens_) vars[k] = jinja::Value(v);
  if (input.bos_token) vars["bos_token"] = jinja::Value(*input.bos_token);
  if (input.eos_token) vars["eos_token"] = jinja::Value(*input.eos_token);
  for (const auto& [k, v] : input.kwargs.items()) vars[k] = jinja::from_json(v);
  vars["raise_exception"] = native("raise_exception", [](jinja::Interpreter&, jinja::CallArgs& a) -> jinja::Value {
    jinja::raise(jinja::ErrorKind::Raised, a.positional.empty() ? "" : a.positional[0].str());
  });
  const jinja::CalendarTime when = render_time(settings);
  vars["strftime_now"] = native("strftime_now", [when](jinja::Interpreter&, jinja::CallArgs& a) {
    if (a.positional.size() != 1 || !a.positional[0].is_string())
      jinja::raise(jinja::ErrorKind::Type, "strftime_now() takes one format string");
    return jinja::Value(jinja::py_strftime(a.positional[0].as_string(), when));
  });
  jinja::InterpreterOptions options;
  options.generation_after_output_only = settings.compat == TransformersCompat::V4;
  const jinja::Rendered r = parsed_.at(source_for(input))->render(vars, options);
  return RenderedChat{r.text, r.generation};
}

}  // namespace rlf
