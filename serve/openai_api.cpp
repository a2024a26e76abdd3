#include "serve/openai_api.h"

#include <algorithm>
#include <set>

#include "serve/chat_request.h"
#include "tokenizer/tokenizer.h"

namespace rlf {

ApiError::ApiError(int status_, std::string message, std::string param_, std::string code_, std::string type_)
    : Error(std::move(message)), status(status_), param(std::move(param_)), code(std::move(code_)), type(std::move(type_)) {}

Json api_error_json(const std::string& message, const std::string& type, const std::string& param,
                    const std::string& code) {
  Json e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? Json(nullptr) : Json(param);
  e["code"] = code.empty() ? Json(nullptr) : Json(code);
  return Json{{"error", e}};
}

void reject_request(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, message, param, code);
}

namespace {

const char* type_name(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

double number_in(const Json& body, const std::string& key, double fallback, double lo, double hi) {
  if (!body.contains(key) || body.at(key).is_null()) return fallback;
  const Json& v = body.at(key);
  if (!v.is_number()) reject_request(key, "'" + key + "' must be a number (got " + type_name(v) + ")");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) reject_request(key, str("'", key, "' must be in [", lo, ", ", hi, "] (got ", x, ")"));
  return x;
}

int64_t integer_in(const Json& body, const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
  if (!body.contains(key) || body.at(key).is_null()) return fallback;
  const Json& v = body.at(key);
  if (!(v.is_number_integer() || v.is_number_unsigned()))
    reject_request(key, "'" + key + "' must be an integer (got " + type_name(v) + ")");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    reject_request(key, str("'", key, "' must be in [", lo, ", ", hi, "]"));
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) reject_request(key, str("'", key, "' must be in [", lo, ", ", hi, "] (got ", x, ")"));
  return x;
}

bool boolean(const Json& body, const std::string& key, bool fallback) {
  if (!body.contains(key) || body.at(key).is_null()) return fallback;
  const Json& v = body.at(key);
  if (!v.is_boolean()) reject_request(key, "'" + key + "' must be true or false (got " + type_name(v) + ")");
  return v.get<bool>();
}

// OpenAI fields rlf accepts only at their no-op values.
void refuse_unless_default(const Json& body, const std::string& key) {
  if (!body.contains(key)) return;
  const Json& v = body.at(key);
  const bool noop = v.is_null() || (v.is_number() && v.get<double>() == 0) || (v.is_object() && v.empty()) ||
                    (v.is_array() && v.empty()) || (v.is_string() && (v.get<std::string>().empty() || v == "none" || v == "auto"));
  if (!noop) throw ApiError(400, "'" + key + "' is not supported by rlf serve (leave it out)", key, "unsupported_parameter");
}

std::vector<int32_t> token_array(const Json& v, const std::string& key, int64_t vocab) {
  std::vector<int32_t> ids;
  for (const Json& t : v) {
    if (!(t.is_number_integer() || t.is_number_unsigned())) reject_request(key, "'" + key + "' token arrays must hold integers");
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id >= vocab) reject_request(key, str("'", key, "': token id ", id, " is outside the vocabulary [0, ", vocab, ")"));
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::vector<int32_t> encode_prompt(const Tokenizer& tok, const std::string& text) {
  auto ids = tok.encode(text, /*add_special=*/true);
  if (ids.empty() && tok.bos_id()) ids.push_back(*tok.bos_id());
  return ids;
}

std::string message_content(const Json& m, size_t i) {
  const std::string key = str("messages[", i, "].content");
  if (!m.contains("content") || m.at("content").is_null()) return {};
  const Json& c = m.at("content");
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) reject_request(key, "'" + key + "' must be a string or an array of text parts");
  std::string text;
  for (const Json& part : c) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part.at("text").is_string())
      reject_request(key, "'" + key + "' parts must be {\"type\": \"text\", \"text\": ...} (rlf serve takes text only)");
    text += part.at("text").get<std::string>();
  }
  return text;
}

}  // namespace

std::vector<ChatMessage> parse_chat_messages(const Json& ms) {
  if (!ms.is_array() || ms.empty()) reject_request("messages", "'messages' is required: a non-empty array of {\"role\", \"content\"}");
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < ms.size(); ++i) {
    const Json& m = ms[i];
    if (!m.is_object() || !m.contains("role") || !m.at("role").is_string())
      reject_request(str("messages[", i, "]"), str("'messages[", i, "]' must be an object with a string \"role\""));
    std::string role = m.at("role").get<std::string>();
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant")
      reject_request(str("messages[", i, "].role"), "role '" + role + "' is not supported (system, developer, user, assistant)");
    messages.push_back({role, message_content(m, i)});
  }
  return messages;
}

ApiRequest parse_api_request(Endpoint endpoint, const std::string& body_text, const ApiModel& model) {
  check(model.tokenizer != nullptr, "parse_api_request: the model has no tokenizer");
  const Tokenizer& tok = *model.tokenizer;
  Json body;
  try {
    body = Json::parse(body_text);
  } catch (const std::exception& e) {
    reject_request("", std::string("the request body is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) reject_request("", "the request body must be a JSON object");
  const bool chat = endpoint == Endpoint::Chat;

  const bool jinja_chat = chat && model.chat_template != nullptr;
  static const std::set<std::string> common = {"model", "max_tokens", "temperature", "top_p", "n", "stream",
      "stream_options", "stop", "seed", "logprobs", "presence_penalty", "frequency_penalty", "logit_bias", "user",
      "top_k", "min_p", "ignore_eos", "return_token_ids"};
  static const std::set<std::string> completions_only = {"prompt", "suffix", "echo", "best_of"};
  static const std::set<std::string> chat_only = {"messages", "max_completion_tokens", "top_logprobs", "tools",
      "tool_choice", "response_format", "parallel_tool_calls", "functions", "function_call"};
  for (const auto& [key, value] : body.items()) {
    (void)value;
    if (common.count(key) || (chat ? chat_only.count(key) : completions_only.count(key))) continue;
    throw ApiError(400, "unknown field '" + key + "' in a " + (chat ? "chat completion" : "completion") + " request",
                   key, "unknown_parameter");
  }
  for (const char* key : {"presence_penalty", "frequency_penalty", "logit_bias", "suffix", "functions", "function_call"})
    refuse_unless_default(body, key);
  if (!jinja_chat)
    for (const char* key : {"tools", "tool_choice"})
      if (body.contains(key) && !body.at(key).is_null() && !(body.at(key).is_array() && body.at(key).empty()) &&
          body.at(key) != "none" && body.at(key) != "auto")
        throw ApiError(400, "'" + std::string(key) + "' needs the model's own chat template: this model is served with a "
                            "fixed chat format, which cannot show tools (serve a model whose tokenizer_config.json has "
                            "a chat template, or pass --chat-template PATH.jinja)",
                       key, "unsupported_parameter");
  if (body.contains("parallel_tool_calls") && !body.at("parallel_tool_calls").is_null() &&
      !body.at("parallel_tool_calls").is_boolean())
    reject_request("parallel_tool_calls", "'parallel_tool_calls' must be true or false");
  if (body.contains("response_format") && !body.at("response_format").is_null() &&
      !(body.at("response_format").is_object() && body.at("response_format").value("type", "") == "text"))
    throw ApiError(400, "'response_format' other than {\"type\": \"text\"} is not supported by rlf serve",
                   "response_format", "unsupported_parameter");

  if (!body.contains("model") || !body.at("model").is_string()) reject_request("model", "'model' is required (a string: \"" + model.name + "\")");
  if (body.at("model").get<std::string>() != model.name)
    throw ApiError(404, "the model '" + body.at("model").get<std::string>() + "' does not exist; this server serves '" +
                   model.name + "'", "model", "model_not_found");

  ApiRequest r;
  r.endpoint = endpoint;
  const int64_t vocab = tok.vocab_size();
  if (chat) {
    if (!body.contains("messages") || !body.at("messages").is_array() || body.at("messages").empty())
      reject_request("messages", "'messages' is required: a non-empty array of {\"role\", \"content\"}");
    if (jinja_chat) {
      ChatPrompt prompt = render_chat_request(OrderedJson::parse(body_text), *model.chat_template,
                                              model.template_settings, model.tool_format);
      r.tool_format = prompt.tool_format;
      r.prompts.push_back(tok.encode(prompt.text, /*add_special=*/false));
    } else {
      if (!model.chat_format)
        reject_request("messages", "this model has no chat template: start rlf serve with --chat-template FORMAT, or use /v1/completions");
      std::vector<ChatMessage> messages = parse_chat_messages(body.at("messages"));
      std::string text;
      try {
        text = render_chat(*model.chat_format, messages, model.chat_options);
      } catch (const Error& e) {
        reject_request("messages", e.what());
      }
      auto ids = tok.encode(text, /*add_special=*/false);
      // Plain text formats write no BOS string: add the tokenizer's BOS as `rlf generate` does.
      if (*model.chat_format == ChatFormat::Plain && tok.bos_id() && (ids.empty() || ids[0] != *tok.bos_id()))
        ids.insert(ids.begin(), *tok.bos_id());
      r.prompts.push_back(std::move(ids));
    }
  } else {
    if (!body.contains("prompt")) reject_request("prompt", "'prompt' is required (a string, an array of strings, or token ids)");
    const Json& p = body.at("prompt");
    auto is_int = [](const Json& v) { return v.is_number_integer() || v.is_number_unsigned(); };
    if (p.is_string()) {
      r.prompt_texts.push_back(p.get<std::string>());
      r.prompts.push_back(encode_prompt(tok, r.prompt_texts.back()));
    } else if (p.is_array() && !p.empty() && is_int(p[0])) {
      r.prompts.push_back(token_array(p, "prompt", vocab));
      r.prompt_texts.push_back(tok.decode(r.prompts.back()));
    } else if (p.is_array() && !p.empty()) {
      if (static_cast<int64_t>(p.size()) > model.max_prompts)
        reject_request("prompt", str("'prompt' holds ", p.size(), " prompts; at most ", model.max_prompts, " per request"));
      for (const Json& e : p) {
        if (e.is_string()) {
          r.prompt_texts.push_back(e.get<std::string>());
          r.prompts.push_back(encode_prompt(tok, r.prompt_texts.back()));
        } else if (e.is_array() && !e.empty()) {
          r.prompts.push_back(token_array(e, "prompt", vocab));
          r.prompt_texts.push_back(tok.decode(r.prompts.back()));
        } else {
          reject_request("prompt", "'prompt' arrays must hold strings or non-empty arrays of token ids");
        }
      }
    } else {
      reject_request("prompt", str("'prompt' must be a string, an array of strings, or token ids (got ", type_name(p), ")"));
    }
    r.echo = boolean(body, "echo", false);
    if (body.contains("best_of") && !body.at("best_of").is_null() &&
        integer_in(body, "best_of", 1, 1, model.max_n) != integer_in(body, "n", 1, 1, model.max_n))
      throw ApiError(400, "'best_of' other than n is not supported by rlf serve", "best_of", "unsupported_parameter");
  }
  for (const auto& ids : r.prompts)
    if (ids.empty()) reject_request(chat ? "messages" : "prompt", "the prompt encodes to no tokens and the tokenizer has no BOS token");

  r.n = integer_in(body, "n", 1, 1, model.max_n);
  if (static_cast<int64_t>(r.prompts.size()) * r.n > model.max_n)
    reject_request("n", str("prompts x n = ", r.prompts.size() * r.n, " completions; at most ", model.max_n, " per request"));
  SamplingParams& sp = r.params;
  sp.temperature = number_in(body, "temperature", 1.0, 0, 2);
  sp.top_p = number_in(body, "top_p", 1.0, 0, 1);
  if (sp.top_p <= 0) reject_request("top_p", "'top_p' must be > 0");
  sp.top_k = integer_in(body, "top_k", 0, -1, vocab);
  if (sp.top_k < 0) sp.top_k = 0;  // vLLM's -1 = off
  sp.min_p = number_in(body, "min_p", 0.0, 0, 0.999999);
  sp.ignore_eos = boolean(body, "ignore_eos", false);
  if (body.contains("seed") && !body.at("seed").is_null())
    sp.seed = static_cast<uint64_t>(integer_in(body, "seed", 0, INT64_MIN, INT64_MAX));
  if (body.contains("stop") && !body.at("stop").is_null()) {
    const Json& s = body.at("stop");
    std::vector<std::string> stops;
    if (s.is_string()) stops.push_back(s.get<std::string>());
    else if (s.is_array()) {
      for (const Json& e : s) {
        if (!e.is_string()) reject_request("stop", "'stop' must be a string or an array of strings");
        stops.push_back(e.get<std::string>());
      }
    } else {
      reject_request("stop", "'stop' must be a string or an array of strings");
    }
    if (stops.size() > 16) reject_request("stop", str("'stop' holds ", stops.size(), " strings; at most 16"));
    for (const auto& x : stops)
      if (x.empty()) reject_request("stop", "'stop' strings must be non-empty");
    sp.stop_strings = std::move(stops);
  }
  r.stream = boolean(body, "stream", false);
  if (body.contains("stream_options") && !body.at("stream_options").is_null()) {
    const Json& so = body.at("stream_options");
    if (!so.is_object()) reject_request("stream_options", "'stream_options' must be an object");
    for (const auto& [k, v] : so.items()) {
      (void)v;
      if (k != "include_usage" && k != "continuous_usage_stats")
        throw ApiError(400, "unknown field 'stream_options." + k + "'", "stream_options." + k, "unknown_parameter");
    }
    if (!r.stream) reject_request("stream_options", "'stream_options' is only allowed with \"stream\": true");
    r.include_usage = boolean(so, "include_usage", false);
  }
  if (chat) {
    r.logprobs = boolean(body, "logprobs", false);
    r.top_logprobs = integer_in(body, "top_logprobs", 0, 0, 20);
    if (r.top_logprobs > 0 && !r.logprobs) reject_request("top_logprobs", "'top_logprobs' needs \"logprobs\": true");
  } else if (body.contains("logprobs") && !body.at("logprobs").is_null()) {
    r.logprobs = true;
    r.top_logprobs = integer_in(body, "logprobs", 0, 0, 20);
  }
  r.return_token_ids = boolean(body, "return_token_ids", false);

  // Lengths: the prompt must leave room, and max_tokens must fit after it.
  int64_t longest = 0;
  for (const auto& ids : r.prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(ids.size()));
  const int64_t L = model.context_limit;
  if (longest >= L)
    throw ApiError(400, str("the prompt has ", longest, " tokens but this model's context is ", L,
                            " tokens (prompt and completion together): shorten the prompt"),
                   chat ? "messages" : "prompt", "context_length_exceeded");
  const char* max_key = chat && body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  const int64_t fallback = chat ? L - longest : std::min<int64_t>(16, L - longest);
  sp.max_new_tokens = integer_in(body, max_key, fallback, 1, INT64_MAX);
  if (longest + sp.max_new_tokens > L)
    throw ApiError(400, str("this model's context is ", L, " tokens, but ", longest + sp.max_new_tokens, " were requested (",
                            longest, " in the prompt, ", sp.max_new_tokens, " in the completion): lower ", max_key),
                   max_key, "context_length_exceeded");
  with_context("invalid sampling parameters", [&] { sp.validate(""); });
  return r;
}

std::vector<GenerationRequest> generation_requests(const ApiRequest& request) {
  std::vector<GenerationRequest> out;
  for (const auto& ids : request.prompts) {
    GenerationRequest g;
    g.prompt_ids = ids;
    g.n = request.n;
    g.params = request.params;
    g.top_logprobs = request.logprobs ? std::max<int64_t>(request.top_logprobs, 0) : 0;
    out.push_back(std::move(g));
  }
  return out;
}

namespace {

Json bytes_of(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs}], "refusal": null}.
Json chat_logprobs(const ApiRequest& r, const Tokenizer& tok, const std::vector<int32_t>& ids,
                   const std::vector<float>& lps, const std::vector<std::vector<TokenLogprob>>& tops) {
  Json content = Json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string t = tok.token_bytes(ids[i]);
    Json e{{"token", t}, {"logprob", lps[i]}, {"bytes", bytes_of(t)}};
    Json top = Json::array();
    if (r.top_logprobs > 0 && i < tops.size())
      for (const auto& c : tops[i]) {
        const std::string ct = tok.token_bytes(c.id);
        top.push_back(Json{{"token", ct}, {"logprob", c.logprob}, {"bytes", bytes_of(ct)}});
      }
    e["top_logprobs"] = top;
    content.push_back(std::move(e));
  }
  return Json{{"content", content}, {"refusal", nullptr}};
}

// Completions: {tokens, token_logprobs, top_logprobs, text_offset}.
Json completion_logprobs(const ApiRequest& r, const Tokenizer& tok, const std::vector<int32_t>& ids,
                         const std::vector<float>& lps, const std::vector<std::vector<TokenLogprob>>& tops,
                         int64_t offset0) {
  Json tokens = Json::array(), values = Json::array(), top = Json::array(), offsets = Json::array();
  int64_t offset = offset0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string t = tok.token_bytes(ids[i]);
    tokens.push_back(t);
    values.push_back(lps[i]);
    offsets.push_back(offset);
    offset += static_cast<int64_t>(t.size());
    if (r.top_logprobs > 0) {
      Json d = Json::object();
      if (i < tops.size())
        for (const auto& c : tops[i]) d[tok.token_bytes(c.id)] = c.logprob;
      top.push_back(std::move(d));
    }
  }
  return Json{{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", r.top_logprobs > 0 ? top : Json(nullptr)},
              {"text_offset", offsets}};
}

Json header(const ApiRequest& r, const ApiModel& model, const std::string& id, int64_t created, bool chunk) {
  const bool chat = r.endpoint == Endpoint::Chat;
  return Json{{"id", id},
              {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
              {"created", created},
              {"model", model.name},
              {"system_fingerprint", nullptr}};
}

}  // namespace

Json api_response(const ApiRequest& r, const ApiModel& model, const std::string& id, int64_t created,
                  const std::vector<GeneratedSequence>& choices) {
  const Tokenizer& tok = *model.tokenizer;
  const bool chat = r.endpoint == Endpoint::Chat;
  Json out = header(r, model, id, created, false);
  Json cs = Json::array();
  int64_t completion_tokens = 0;
  for (size_t k = 0; k < choices.size(); ++k) {
    const GeneratedSequence& s = choices[k];
    const size_t prompt = k / static_cast<size_t>(r.n);
    Json c{{"index", k}, {"finish_reason", finish_reason_name(s.finish_reason)}};
    std::string prefix = !chat && r.echo ? r.prompt_texts[prompt] : std::string();
    if (chat && r.tool_format) {
      const ParsedOutput parsed = parse_tool_calls(*r.tool_format, s.text);
      Json message{{"role", "assistant"}, {"refusal", nullptr}};
      message["content"] = parsed.calls.empty() || !parsed.content.empty() ? Json(parsed.content) : Json(nullptr);
      if (!parsed.calls.empty()) {
        message["tool_calls"] = tool_calls_json(parsed.calls, *r.tool_format, id, static_cast<int64_t>(k), false);
        if (s.finish_reason == FinishReason::Stop) c["finish_reason"] = "tool_calls";
      }
      c["message"] = message;
      c["logprobs"] = r.logprobs ? chat_logprobs(r, tok, s.completion_ids, s.logprobs, s.top_logprobs) : Json(nullptr);
    } else if (chat) {
      c["message"] = Json{{"role", "assistant"}, {"content", s.text}, {"refusal", nullptr}};
      c["logprobs"] = r.logprobs ? chat_logprobs(r, tok, s.completion_ids, s.logprobs, s.top_logprobs) : Json(nullptr);
    } else {
      c["text"] = prefix + s.text;
      c["logprobs"] = r.logprobs ? completion_logprobs(r, tok, s.completion_ids, s.logprobs, s.top_logprobs,
                                                       static_cast<int64_t>(prefix.size()))
                                 : Json(nullptr);
    }
    if (r.return_token_ids) {
      c["prompt_token_ids"] = s.prompt_ids;
      c["token_ids"] = s.completion_ids;
    }
    completion_tokens += static_cast<int64_t>(s.completion_ids.size());
    cs.push_back(std::move(c));
  }
  int64_t prompt_tokens = 0;
  for (const auto& ids : r.prompts) prompt_tokens += static_cast<int64_t>(ids.size());
  out["choices"] = cs;
  out["usage"] = Json{{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
                      {"total_tokens", prompt_tokens + completion_tokens}};
  return out;
}

Json api_stream_chunk(const ApiRequest& r, const ApiModel& model, const std::string& id, int64_t created,
                      const StreamPiece& p) {
  const Tokenizer& tok = *model.tokenizer;
  const bool chat = r.endpoint == Endpoint::Chat;
  Json out = header(r, model, id, created, true);
  Json c{{"index", p.index}};
  c["finish_reason"] = p.finish_reason ? Json(finish_reason_name(*p.finish_reason)) : Json(nullptr);
  if (chat) {
    Json delta = Json::object();
    if (p.prompt_ids) delta["role"] = "assistant";
    if (!p.text.empty() || !p.finish_reason) delta["content"] = p.text;
    if (!p.tool_calls.empty() && r.tool_format) {
      delta["tool_calls"] = tool_calls_json(p.tool_calls, *r.tool_format, id, p.index, true);
      if (p.finish_reason == FinishReason::Stop) c["finish_reason"] = "tool_calls";
    }
    c["delta"] = delta;
    c["logprobs"] = r.logprobs && !p.token_ids.empty() ? chat_logprobs(r, tok, p.token_ids, p.logprobs, p.top_logprobs)
                                                       : Json(nullptr);
  } else {
    c["text"] = p.text;
    c["logprobs"] = r.logprobs && !p.token_ids.empty()
                        ? completion_logprobs(r, tok, p.token_ids, p.logprobs, p.top_logprobs, 0)
                        : Json(nullptr);
  }
  if (r.return_token_ids) {
    if (p.prompt_ids) c["prompt_token_ids"] = *p.prompt_ids;
    c["token_ids"] = p.token_ids;
  }
  out["choices"] = Json::array({c});
  if (r.include_usage) out["usage"] = nullptr;
  return out;
}

Json api_usage_chunk(const ApiRequest& r, const ApiModel& model, const std::string& id, int64_t created,
                     int64_t prompt_tokens, int64_t completion_tokens) {
  Json out = header(r, model, id, created, true);
  out["choices"] = Json::array();
  out["usage"] = Json{{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
                      {"total_tokens", prompt_tokens + completion_tokens}};
  return out;
}

Json api_models(const ApiModel& model, int64_t created) {
  return Json{{"object", "list"},
              {"data", Json::array({Json{{"id", model.name}, {"object", "model"}, {"created", created},
                                         {"owned_by", "rlf"}, {"max_model_len", model.context_limit}}})}};
}

}  // namespace rlf
