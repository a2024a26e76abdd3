#include "serve/chat_request.h"

#include "serve/openai_api.h"
#include "util/hash.h"

namespace rlf {
namespace {

std::string at(const char* what, size_t i) { return str(what, "[", i, "]"); }

// A message's content as the template sees it: a string (text parts joined), or null.
OrderedJson content_of(const OrderedJson& m, const std::string& where) {
  if (!m.contains("content") || m["content"].is_null()) return nullptr;
  const OrderedJson& c = m["content"];
  if (c.is_string()) return c;
  if (!c.is_array()) reject_request(where + ".content", "'" + where + ".content' must be a string or an array of text parts");
  std::string text;
  for (const auto& part : c) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      reject_request(where + ".content", "'" + where + ".content' parts must be {\"type\": \"text\", \"text\": ...} (rlf serve takes text only)");
    text += part["text"].get<std::string>();
  }
  return text;
}

OrderedJson tool_calls_for_template(const OrderedJson& calls, const std::string& where) {
  if (!calls.is_array()) reject_request(where, "'" + where + "' must be an array");
  OrderedJson out = OrderedJson::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const std::string w = at(where.c_str(), k);
    const OrderedJson& c = calls[k];
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
        !c["function"]["name"].is_string())
      reject_request(w, "'" + w + "' must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
    OrderedJson call = c;
    OrderedJson& args = call["function"]["arguments"];
    if (args.is_string()) {  // the wire form: a JSON string; templates want the object
      try {
        OrderedJson parsed = OrderedJson::parse(args.get<std::string>());
        if (parsed.is_object()) args = std::move(parsed);
      } catch (const std::exception&) {
      }
    }
    out.push_back(std::move(call));
  }
  return out;
}

OrderedJson messages_for_template(const OrderedJson& ms) {
  if (!ms.is_array() || ms.empty()) reject_request("messages", "'messages' is required: a non-empty array of {\"role\", \"content\"}");
  OrderedJson out = OrderedJson::array();
  for (size_t i = 0; i < ms.size(); ++i) {
    const std::string w = at("messages", i);
    const OrderedJson& m = ms[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      reject_request(w, "'" + w + "' must be an object with a string \"role\"");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      reject_request(w + ".role", "role '" + role + "' is not supported (system, developer, user, assistant, tool)");
    OrderedJson msg = OrderedJson::object();
    msg["role"] = role;
    msg["content"] = content_of(m, w);
    for (const auto& [k, v] : m.items()) {
      if (k == "role" || k == "content") continue;
      if (k == "tool_calls") {
        if (role != "assistant") reject_request(w + ".tool_calls", "only assistant messages carry tool_calls");
        if (!v.is_null()) msg["tool_calls"] = tool_calls_for_template(v, w + ".tool_calls");
      } else if (k == "tool_call_id" || k == "name" || k == "reasoning_content" || k == "reasoning") {
        msg[k] = v;
      }
    }
    if (role == "tool" && !m.contains("tool_call_id"))
      reject_request(w + ".tool_call_id", "'" + w + "' is a tool message without 'tool_call_id'");
    out.push_back(std::move(msg));
  }
  return out;
}

void check_tools(const OrderedJson& tools) {
  if (!tools.is_array()) reject_request("tools", "'tools' must be an array of {\"type\": \"function\", \"function\": {...}}");
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string w = at("tools", i);
    const OrderedJson& t = tools[i];
    if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object() ||
        !t["function"].contains("name") || !t["function"]["name"].is_string())
      reject_request(w, "'" + w + "' must be {\"type\": \"function\", \"function\": {\"name\", \"description\", \"parameters\"}}");
    if (t["function"].contains("parameters") && !t["function"]["parameters"].is_object())
      reject_request(w + ".function.parameters", "'" + w + ".function.parameters' must be a JSON schema object");
  }
}

}  // namespace

ChatPrompt render_chat_request(const OrderedJson& body, const JinjaChatTemplate& tmpl, const ChatRenderSettings& settings,
                               std::optional<ToolCallFormat> tool_format) {
  ChatInput in;
  in.messages = messages_for_template(body.contains("messages") ? body["messages"] : OrderedJson());
  in.add_generation_prompt = true;
  const bool has_tools = body.contains("tools") && !body["tools"].is_null() && !body["tools"].empty();
  ChatPrompt out;
  if (has_tools) {
    check_tools(body["tools"]);
    in.tools = body["tools"];
    std::string choice = "auto";
    if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
      const OrderedJson& c = body["tool_choice"];
      if (!c.is_string() || (c != "auto" && c != "none" && c != "required"))
        throw ApiError(400, "'tool_choice' naming a function needs constrained decoding, which rlf serve does not have: "
                            "use \"auto\" (the model decides) or \"none\"",
                       "tool_choice", "unsupported_parameter");
      choice = c.get<std::string>();
    }
    if (choice == "required")
      throw ApiError(400, "'tool_choice': \"required\" needs constrained decoding, which rlf serve does not have: use \"auto\"",
                     "tool_choice", "unsupported_parameter");
    if (choice == "auto") {
      if (!tool_format)
        reject_request("tools", "rlf serve does not know this model's tool-call format: start it with --tool-parser hermes, "
                     "llama3_json or mistral");
      out.tool_format = tool_format;
    }
  } else if (body.contains("tool_choice") && !body["tool_choice"].is_null() && body["tool_choice"] != "none" &&
             body["tool_choice"] != "auto") {
    reject_request("tool_choice", "'tool_choice' needs 'tools'");
  }
  try {
    out.text = tmpl.render(in, settings).text;
  } catch (const jinja::Error& e) {
    reject_request("messages", (e.kind() == jinja::ErrorKind::Raised ? "the model's chat template rejected the conversation: "
                                                          : "the model's chat template failed: ") +
                        std::string(e.what()));
  }
  return out;
}

std::string tool_call_id(ToolCallFormat format, const std::string& response_id, int64_t choice, size_t k) {
  const std::string h = fnv1a64_hex(str(response_id, "/", choice, "/", k)) + fnv1a64_hex(str(k, "/", response_id));
  if (format != ToolCallFormat::Mistral) return "call_" + h.substr(0, 24);
  static const char* kAlnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id;
  for (size_t i = 0; i < 9; ++i) id += kAlnum[std::stoul(h.substr(i * 2, 2), nullptr, 16) % 62];
  return id;
}

Json tool_calls_json(const std::vector<ToolCall>& calls, ToolCallFormat format, const std::string& response_id,
                     int64_t choice, bool with_index) {
  Json out = Json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    Json c;
    if (with_index) c["index"] = k;
    c["id"] = tool_call_id(format, response_id, choice, k);
    c["type"] = "function";
    c["function"] = Json{{"name", calls[k].name}, {"arguments", calls[k].arguments_json()}};
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace rlf
