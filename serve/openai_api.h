// The OpenAI wire format of `rlf serve`: request bodies of /v1/completions and
// /v1/chat/completions parsed into generation requests, and responses, stream
// chunks and error objects written back. No HTTP and no model here (the
// server, serve/server.h, does those), so every rule is testable alone.
//
// Requests are strict: an unknown field, a field of the wrong type, a value
// out of range, or an OpenAI field rlf does not implement with a non-default
// value (logit_bias, presence_penalty, ...) is an ApiError (HTTP 400)
// naming the field. Chat requests are rendered with the model's own Jinja
// chat template when it has one (tools, tool_calls and tool messages
// included, serve/chat_request.h), else with a fixed format (no tools). A prompt that leaves no room for one new token, or a
// max_tokens that runs past the context, is a 400 with code
// "context_length_exceeded" (OpenAI's own). Extensions (rlf's, vLLM's
// names): top_k, min_p, ignore_eos, return_token_ids.
//
// Log-probs are the policy's at temperature 1 with no filtering (what the
// trainer uses; vLLM's default "raw" log-probs), one entry per completion
// token, a final EOS token included. A token's text is its bytes in the
// vocabulary (e.g. " the" for "▁the"); "bytes" lists them as integers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rollout/engine.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja_chat_template.h"
#include "tokenizer/tool_calls.h"
#include "util/error.h"
#include "util/json_util.h"

namespace rlf {

class Tokenizer;

// An error with the HTTP status and OpenAI error fields it is reported with.
class ApiError : public Error {
 public:
  ApiError(int status, std::string message, std::string param = "", std::string code = "",
           std::string type = "invalid_request_error");
  int status;
  std::string param;  // the request field at fault; "" = none
  std::string code;   // e.g. "context_length_exceeded", "invalid_api_key"; "" = none
  std::string type;   // "invalid_request_error", "authentication_error", "server_error", ...
};

// Throws ApiError(400, message, param, code): the request field `param` is at fault.
[[noreturn]] void reject_request(const std::string& param, const std::string& message, const std::string& code = "");

// {"error": {"message", "type", "param", "code"}} (null for empty param/code).
Json api_error_json(const std::string& message, const std::string& type, const std::string& param = "",
                    const std::string& code = "");

enum class Endpoint { Completions, Chat };

// What parsing needs to know about the served model.
struct ApiModel {
  std::string name;                          // the id clients send as "model"
  const Tokenizer* tokenizer = nullptr;      // required
  std::shared_ptr<const JinjaChatTemplate> chat_template;  // the model's own template; preferred when set
  ChatRenderSettings template_settings;      // strftime_now's date (default: today), transformers 5 input handling
  std::optional<ToolCallFormat> tool_format; // how the model writes tool calls; nullopt: requests with tools refused
  std::optional<ChatFormat> chat_format;     // without chat_template: a fixed format; nullopt: chat refused
  ChatRenderOptions chat_options;            // BOS/EOS strings for rendering
  int64_t context_limit = 0;                 // tokens a sequence may hold (prompt + completion)
  int64_t max_n = 128;                       // the largest n (and prompts x n) one request may ask for
  int64_t max_prompts = 64;                  // prompts in one /v1/completions request
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::vector<std::vector<int32_t>> prompts;  // token ids, one entry per prompt (chat: one)
  int64_t n = 1;                              // samples per prompt; choice index = prompt * n + sample
  SamplingParams params;                      // max_new_tokens = max_tokens
  bool stream = false;
  bool include_usage = false;                 // stream_options.include_usage
  bool logprobs = false;                      // chat: logprobs; completions: logprobs != null
  int64_t top_logprobs = 0;                   // chat: top_logprobs; completions: the logprobs integer
  bool echo = false;                          // completions: prepend the prompt text to the choice text
  bool return_token_ids = false;              // extension: prompt and completion token ids in every choice
  std::vector<std::string> prompt_texts;      // completions: the prompt texts (for echo)
  std::optional<ToolCallFormat> tool_format;  // chat with tools and tool_choice "auto": parse tool calls
};

// The "messages" array of a chat request: roles system (or developer),
// user, assistant; content a string or text parts. Throws ApiError (400)
// naming the message at fault.
std::vector<ChatMessage> parse_chat_messages(const Json& messages);

// Parses and validates a request body. Throws ApiError.
ApiRequest parse_api_request(Endpoint endpoint, const std::string& body, const ApiModel& model);

// The engine requests of a parsed request, one per prompt.
std::vector<GenerationRequest> generation_requests(const ApiRequest& request);

// A whole (non-streamed) response. `choices[k]` is choice k (prompt k / n,
// sample k % n).
Json api_response(const ApiRequest& request, const ApiModel& model, const std::string& id, int64_t created,
                  const std::vector<GeneratedSequence>& choices);

// One server-sent-events chunk for choice `index`: `text`, and the tokens
// [token_begin, token_begin + n) of `seq`'s ids/log-probs (only their count
// and values are read). `finish_reason` is set on the choice's last chunk;
// `first` adds the chat role and, with return_token_ids, the prompt ids.
struct StreamPiece {
  int64_t index = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  const std::vector<int32_t>* prompt_ids = nullptr;  // set on the first chunk of a choice
  std::optional<FinishReason> finish_reason;
  std::vector<ToolCall> tool_calls;                  // parsed at the end of a choice (then finish_reason "tool_calls")
};
Json api_stream_chunk(const ApiRequest& request, const ApiModel& model, const std::string& id, int64_t created,
                      const StreamPiece& piece);
// The last chunk when stream_options.include_usage: empty choices, usage.
Json api_usage_chunk(const ApiRequest& request, const ApiModel& model, const std::string& id, int64_t created,
                     int64_t prompt_tokens, int64_t completion_tokens);

// GET /v1/models.
Json api_models(const ApiModel& model, int64_t created);

}  // namespace rlf
