#include "tokenizer/tool_calls.h"

#include "tokenizer/jinja/py_text.h"
#include "util/error.h"

namespace rlf {
namespace {

using OJ = nlohmann::ordered_json;

constexpr const char* kHermesOpen = "<tool_call>";
constexpr const char* kHermesClose = "</tool_call>";
constexpr const char* kMistralCalls = "[TOOL_CALLS]";
constexpr const char* kMistralArgs = "[ARGS]";
constexpr const char* kPythonTag = "<|python_tag|>";

std::string trim(const std::string& s) { return jinja::py_strip(s, std::nullopt, true, true); }

// The end (one past the closing brace or bracket) of the JSON object or array
// that starts at `from`, honouring strings; npos when it does not close.
size_t json_value_end(const std::string& s, size_t from) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string::npos;
}

std::optional<OJ> parse_json(const std::string& s) {
  try {
    return OJ::parse(s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// {"name": ..., "arguments" | "parameters": {...} or a JSON string of one}.
std::optional<ToolCall> call_from(const OJ& j, std::string& why) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty()) {
    why = "a tool call must be an object with a \"name\" string";
    return std::nullopt;
  }
  ToolCall c;
  c.name = j["name"].get<std::string>();
  for (const char* key : {"arguments", "parameters"}) {
    if (!j.contains(key)) continue;
    const OJ& a = j[key];
    if (a.is_string()) {
      auto parsed = parse_json(a.get<std::string>());
      if (!parsed || !parsed->is_object()) {
        why = "the arguments of '" + c.name + "' are not a JSON object";
        return std::nullopt;
      }
      c.arguments = *parsed;
    } else if (a.is_object()) {
      c.arguments = a;
    } else {
      why = "the arguments of '" + c.name + "' are not a JSON object";
      return std::nullopt;
    }
    break;
  }
  return c;
}

ParsedOutput as_content(const std::string& text, std::string why) {
  ParsedOutput out;
  out.content = text;
  out.malformed = std::move(why);
  return out;
}

ParsedOutput parse_hermes(const std::string& text) {
  size_t pos = text.find(kHermesOpen);
  if (pos == std::string::npos) return as_content(text, "");
  ParsedOutput out;
  std::string content = text.substr(0, pos);
  while (pos != std::string::npos) {
    const size_t body = pos + std::string(kHermesOpen).size();
    const size_t close = text.find(kHermesClose, body);
    if (close == std::string::npos) return as_content(text, "no closing </tool_call>");
    auto j = parse_json(trim(text.substr(body, close - body)));
    std::string why = "the text inside <tool_call> is not JSON";
    std::optional<ToolCall> c = j ? call_from(*j, why) : std::nullopt;
    if (!c) return as_content(text, why);
    out.calls.push_back(std::move(*c));
    const size_t after = close + std::string(kHermesClose).size();
    pos = text.find(kHermesOpen, after);
    content += text.substr(after, pos == std::string::npos ? std::string::npos : pos - after);
  }
  out.content = trim(content);
  return out;
}

ParsedOutput parse_llama3(const std::string& text) {
  std::string t = trim(text);
  if (t.rfind(kPythonTag, 0) == 0) t = trim(t.substr(std::string(kPythonTag).size()));
  if (t.empty() || t[0] != '{') return as_content(text, "");
  ParsedOutput out;
  size_t pos = 0;
  while (pos < t.size()) {
    const size_t end = json_value_end(t, pos);
    if (end == std::string::npos) return as_content(text, "the JSON tool call does not close");
    auto j = parse_json(t.substr(pos, end - pos));
    std::string why = "the tool call is not valid JSON";
    std::optional<ToolCall> c = j ? call_from(*j, why) : std::nullopt;
    if (!c) return as_content(text, why);
    out.calls.push_back(std::move(*c));
    pos = end;
    while (pos < t.size() && (t[pos] == ';' || jinja::py_isspace(static_cast<unsigned char>(t[pos])))) ++pos;
    if (pos < t.size() && t[pos] != '{') return as_content(text, "text after the JSON tool call");
  }
  return out;
}

ParsedOutput parse_mistral(const std::string& text) {
  size_t pos = text.find(kMistralCalls);
  if (pos == std::string::npos) return as_content(text, "");
  ParsedOutput out;
  out.content = trim(text.substr(0, pos));
  while (pos != std::string::npos) {
    size_t p = pos + std::string(kMistralCalls).size();
    while (p < text.size() && jinja::py_isspace(static_cast<unsigned char>(text[p]))) ++p;
    if (p < text.size() && text[p] == '[') {  // [TOOL_CALLS][{...}, ...]
      const size_t end = json_value_end(text, p);
      auto j = end == std::string::npos ? std::nullopt : parse_json(text.substr(p, end - p));
      if (!j || !j->is_array() || j->empty()) return as_content(text, "[TOOL_CALLS] is not followed by a JSON array of calls");
      for (const auto& item : *j) {
        std::string why;
        auto c = call_from(item, why);
        if (!c) return as_content(text, why);
        out.calls.push_back(std::move(*c));
      }
      p = end;
    } else {  // [TOOL_CALLS]name[ARGS]{...}
      const size_t args = text.find(kMistralArgs, p);
      if (args == std::string::npos) return as_content(text, "[TOOL_CALLS] without [ARGS]");
      ToolCall c;
      c.name = trim(text.substr(p, args - p));
      size_t a = args + std::string(kMistralArgs).size();
      while (a < text.size() && jinja::py_isspace(static_cast<unsigned char>(text[a]))) ++a;
      const size_t end = a < text.size() && text[a] == '{' ? json_value_end(text, a) : std::string::npos;
      auto j = end == std::string::npos ? std::nullopt : parse_json(text.substr(a, end - a));
      if (c.name.empty() || !j || !j->is_object()) return as_content(text, "[ARGS] is not followed by a JSON object");
      c.arguments = *j;
      out.calls.push_back(std::move(c));
      p = end;
    }
    pos = text.find(kMistralCalls, p);
    if (pos == std::string::npos && !trim(text.substr(p)).empty()) out.content += (out.content.empty() ? "" : "\n") + trim(text.substr(p));
  }
  return out;
}

// Length of the longest suffix of `s` that is a proper prefix of `marker`.
size_t partial_marker(const std::string& s, const std::string& marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
    if (s.compare(s.size() - n, n, marker, 0, n) == 0) return n;
  return 0;
}

}  // namespace

ToolCallFormat parse_tool_call_format(const std::string& name) {
  if (name == "hermes" || name == "qwen") return ToolCallFormat::Hermes;
  if (name == "llama3_json" || name == "llama3") return ToolCallFormat::Llama3Json;
  if (name == "mistral") return ToolCallFormat::Mistral;
  fail("unknown tool-call format '", name, "' (expected hermes, llama3_json or mistral)");
}

std::string tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::Hermes: return "hermes";
    case ToolCallFormat::Llama3Json: return "llama3_json";
    case ToolCallFormat::Mistral: return "mistral";
  }
  return "";
}

std::optional<ToolCallFormat> detect_tool_call_format(const std::string& src) {
  if (src.find(kHermesOpen) != std::string::npos) return ToolCallFormat::Hermes;
  if (src.find(kMistralCalls) != std::string::npos) return ToolCallFormat::Mistral;
  if (src.find(kPythonTag) != std::string::npos ||
      (src.find("<|start_header_id|>") != std::string::npos && src.find("\"parameters\"") != std::string::npos))
    return ToolCallFormat::Llama3Json;
  return std::nullopt;
}

std::string ToolCall::arguments_json() const { return arguments.dump(); }

ParsedOutput parse_tool_calls(ToolCallFormat format, const std::string& text) {
  switch (format) {
    case ToolCallFormat::Hermes: return parse_hermes(text);
    case ToolCallFormat::Llama3Json: return parse_llama3(text);
    case ToolCallFormat::Mistral: return parse_mistral(text);
  }
  return as_content(text, "");
}

std::string ToolCallStream::push(const std::string& delta) {
  all_ += delta;
  if (in_call_) return "";
  size_t hold_from = all_.size();  // release [released_, hold_from)
  if (format_ == ToolCallFormat::Llama3Json) {
    // A call is the whole message: decide at the first non-space character.
    size_t first = 0;
    while (first < all_.size() && jinja::py_isspace(static_cast<unsigned char>(all_[first]))) ++first;
    if (released_ == 0) {
      if (first == all_.size()) return "";  // only spaces so far
      const std::string head = all_.substr(first);
      const std::string tag(kPythonTag);
      if (head[0] == '{' || head.rfind(tag, 0) == 0) {
        in_call_ = true;
        return "";
      }
      if (tag.compare(0, head.size(), head) == 0) return "";  // maybe the start of <|python_tag|>
    }
  } else {
    const std::string marker = format_ == ToolCallFormat::Hermes ? kHermesOpen : kMistralCalls;
    const size_t at = all_.find(marker, released_);
    if (at != std::string::npos) {
      in_call_ = true;
      hold_from = at;
    } else {
      hold_from = all_.size() - partial_marker(all_, marker);
    }
  }
  if (hold_from <= released_) return "";
  std::string out = all_.substr(released_, hold_from - released_);
  released_ = hold_from;
  return out;
}

ParsedOutput ToolCallStream::finish() {
  ParsedOutput whole = parse_tool_calls(format_, all_);
  if (whole.calls.empty()) {  // no call, or a malformed one: everything held is content
    whole.content = all_.substr(released_);
    return whole;
  }
  // The content released before the call went out already; what is left is
  // the text between and after the calls.
  ParsedOutput rest = whole;
  const std::string released = trim(all_.substr(0, released_));
  rest.content = whole.content.rfind(released, 0) == 0 ? trim(whole.content.substr(released.size())) : "";
  return rest;
}

}  // namespace rlf
