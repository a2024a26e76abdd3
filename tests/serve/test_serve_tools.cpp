// Native tool calls through `rlf serve`: a tiny character-level Llama trained
// in the test (a few seconds) to answer three chat prompts, rendered by a
// Hermes-style Jinja chat template, with (1) a tool call, (2) the final answer
// once the tool result is in, (3) a malformed call. Checked over HTTP with
// and without streaming, and with the official `openai` client (oracle venv).
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "model/loader.h"
#include "net/chat_client.h"
#include "rollout/policy.h"
#include "serve/server.h"
#include "tests/serve/server_thread.h"
#include "tests/support/test_env.h"
#include "tokenizer/char_vocab.h"
#include "tokenizer/jinja_chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace rlf {
namespace {

// One line: the character tokenizer has printable ASCII only.
const char* kTemplate =
    "{%- if tools %}<|system|>You may call: {{ tools | map(attribute='function') | map(attribute='name') | join(', ') }} "
    "{% endif %}{% for m in messages %}<|{{ m.role }}|>{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>"
    "{\"name\": \"{{ c.function.name }}\", \"arguments\": {{ c.function.arguments | tojson }}}</tool_call>{% endfor %}"
    "{% else %}{{ m.content }}{% endif %} {% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";

const OrderedJson kTools = OrderedJson::parse(R"([{"type": "function", "function": {"name": "calculator",
  "description": "Evaluate arithmetic.", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
  "required": ["expression"]}}}])");

const std::string kCall = R"(<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>)";
const std::string kAnswer = "The answer is 42.";
const std::string kBroken = R"(<tool_call>{"name": broken</tool_call>)";

OrderedJson user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }

OrderedJson follow_up_messages(const OrderedJson& tool_calls) {
  return OrderedJson::array({user("What is 6*7?"), {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tool_calls}},
                             {{"role", "tool"}, {"tool_call_id", tool_calls[0]["id"]}, {"content", "42"}}});
}

// The prompts the server renders, with the completions the model learns.
std::vector<std::pair<std::string, std::string>> lessons(const JinjaChatTemplate& t) {
  auto render = [&](OrderedJson messages) {
    ChatInput in;
    in.messages = std::move(messages);
    in.tools = kTools;
    in.add_generation_prompt = true;
    return t.render(in, {}).text;
  };
  const OrderedJson call = OrderedJson::parse(
      R"([{"id": "x", "type": "function", "function": {"name": "calculator", "arguments": {"expression": "6*7"}}}])");
  return {{render(OrderedJson::array({user("What is 6*7?")})), kCall},
          {render(follow_up_messages(call)), kAnswer},
          {render(OrderedJson::array({user("Break it")})), kBroken}};
}

// Trains until greedy decoding gives every completion with a margin.
Policy trained_policy(const test::TempDir& dir, const JinjaChatTemplate& t) {
  write_char_tokenizer(dir / "tok", printable_ascii());
  auto tok = load_tokenizer((dir / "tok").string());
  ModelConfig c;
  c.vocab_size = 3 + static_cast<int64_t>(printable_ascii().size());
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 512;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  c.tie_word_embeddings = false;
  torch::manual_seed(7);
  auto model = make_random_model(c, 7, torch::kFloat32, torch::kCPU);
  std::vector<std::vector<int64_t>> rows;
  std::vector<std::pair<size_t, size_t>> targets;  // completion positions [begin, end) in each row
  size_t width = 0;
  for (const auto& [prompt, completion] : lessons(t)) {
    auto ids = tok->encode(prompt, false);
    const size_t begin = ids.size();
    for (int32_t id : tok->encode(completion, false)) ids.push_back(id);
    ids.push_back(2);
    rows.emplace_back(ids.begin(), ids.end());
    targets.emplace_back(begin, ids.size());
    width = std::max(width, ids.size());
  }
  torch::Tensor input = torch::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)}, torch::kLong);
  torch::Tensor mask = torch::zeros_like(input, torch::kFloat);
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i = 0; i < rows[r].size(); ++i) input[r][i] = rows[r][i];
    for (size_t i = targets[r].first; i < targets[r].second; ++i) mask[r][i] = 1.0;
  }
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(3e-3));
  const torch::Tensor x = input.slice(1, 0, -1), y = input.slice(1, 1), m = mask.slice(1, 1);
  for (int step = 0; step < 2000; ++step) {
    opt.zero_grad();
    torch::Tensor logits = model->forward(x);
    torch::Tensor nll = torch::nn::functional::cross_entropy(
        logits.reshape({-1, logits.size(-1)}), y.reshape({-1}), torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    torch::Tensor loss = (nll * m.reshape({-1})).sum() / m.sum();
    loss.backward();
    opt.step();
    if (step % 25 == 0 && loss.item<float>() < 0.02f) {
      const bool exact = ((logits.argmax(-1) == y).to(torch::kFloat) * m).sum().item<float>() == m.sum().item<float>();
      if (exact) break;
    }
  }
  SaveOptions so;
  so.tokenizer_source = dir / "tok";
  save_model(*model, dir / "model", so);
  return load_policy(dir / "model", "", LoadOptions{});
}

struct ToolServer {
  test::TempDir dir;
  Policy policy;
  test::ServerThread serving;  // after the policy: stops first
  Server* server = nullptr;
  int port = 0;

  ToolServer() {
    std::ofstream(dir / "chat.jinja") << kTemplate;
    policy = trained_policy(dir, JinjaChatTemplate::load((dir / "chat.jinja").string()));
    EngineOptions eo;
    eo.eos_token_ids = policy.eos_token_ids;
    ServeOptions so;
    so.port = 0;
    so.model_name = "toolbot";
    so.chat_template = (dir / "chat.jinja").string();
    server = serving.start(std::make_unique<Server>(policy, eo, so));
    port = serving.port();
  }
  Json chat(OrderedJson body, int want_status = 200) {
    body["model"] = "toolbot";
    body["temperature"] = 0;
    httplib::Client c = serving.client();
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return Json();
    EXPECT_EQ(r->status, want_status) << r->body;
    if (!body.value("stream", false)) return Json::parse(r->body);
    Json chunks = Json::array();
    std::istringstream lines(r->body);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("data: {", 0) == 0) chunks.push_back(Json::parse(line.substr(6)));
    return chunks;
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }
};

ToolServer& shared_server() {
  static ToolServer s;
  return s;
}

TEST(ServeTools, TheServerSaysWhatItRendersWith) {
  EXPECT_NE(shared_server().server->chat_format().find("tool calls hermes"), std::string::npos)
      << shared_server().server->chat_format();
}

TEST(ServeTools, AToolCallComesBackAsOpenAIToolCalls) {
  ToolServer& s = shared_server();
  const Json r = s.chat({{"messages", OrderedJson::array({user("What is 6*7?")})}, {"tools", kTools}});
  const Json& choice = r["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.dump();
  EXPECT_TRUE(choice["message"]["content"].is_null()) << r.dump();
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.dump();
  const Json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "calculator");
  EXPECT_EQ(Json::parse(call["function"]["arguments"].get<std::string>()), Json({{"expression", "6*7"}}));
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);

  // The result goes back as a tool message; the model answers.
  const Json tool_calls = choice["message"]["tool_calls"];
  const Json next = s.chat({{"messages", follow_up_messages(OrderedJson::parse(tool_calls.dump()))}, {"tools", kTools}});
  EXPECT_EQ(next["choices"][0]["message"]["content"], kAnswer) << next.dump();
  EXPECT_EQ(next["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(next["choices"][0]["message"].contains("tool_calls"));
}

TEST(ServeTools, StreamedToolCallsMatchTheWholeResponse) {
  ToolServer& s = shared_server();
  const Json chunks = s.chat({{"messages", OrderedJson::array({user("What is 6*7?")})}, {"tools", kTools}, {"stream", true}});
  std::string content;
  Json calls = Json::array();
  std::string finish;
  for (const auto& ch : chunks) {
    const Json& c = ch["choices"][0];
    if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
    if (c["delta"].contains("tool_calls"))
      for (const auto& tc : c["delta"]["tool_calls"]) calls.push_back(tc);
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(content, "") << chunks.dump();  // nothing of the call leaks as content
  EXPECT_EQ(finish, "tool_calls");
  ASSERT_EQ(calls.size(), 1u) << chunks.dump();
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"]["name"], "calculator");
  EXPECT_EQ(Json::parse(calls[0]["function"]["arguments"].get<std::string>()), Json({{"expression", "6*7"}}));
}

TEST(ServeTools, MalformedCallsAreContentAndChoiceNoneParsesNothing) {
  ToolServer& s = shared_server();
  for (bool stream : {false, true}) {
    const Json r = s.chat({{"messages", OrderedJson::array({user("Break it")})}, {"tools", kTools}, {"stream", stream}});
    std::string content, finish;
    bool any_call = false;
    for (const auto& ch : stream ? r : Json::array({r})) {
      const Json& c = ch["choices"][0];
      const Json& m = stream ? c["delta"] : c["message"];
      if (m.contains("content") && m["content"].is_string()) content += m["content"].get<std::string>();
      any_call = any_call || m.contains("tool_calls");
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    }
    EXPECT_EQ(content, kBroken) << r.dump();
    EXPECT_FALSE(any_call);
    EXPECT_EQ(finish, "stop");
  }
  const Json none = s.chat({{"messages", OrderedJson::array({user("What is 6*7?")})}, {"tools", kTools}, {"tool_choice", "none"}});
  EXPECT_EQ(none["choices"][0]["message"]["content"], kCall);
  EXPECT_EQ(none["choices"][0]["finish_reason"], "stop");
  const Json req = s.chat({{"messages", OrderedJson::array({user("Hi")})}, {"tools", kTools}, {"tool_choice", "required"}}, 400);
  EXPECT_EQ(req["error"]["param"], "tool_choice") << req.dump();
}

TEST(ServeTools, RlfsChatClientSendsToolsAndGetsToolCalls) {
  ToolServer& s = shared_server();
  ChatClientOptions o;
  o.base_url = s.base_url();
  o.model = "toolbot";
  o.max_tokens = 100;
  o.tools = Json::parse(kTools.dump());
  ChatClient client(o);
  const ChatResult r = client.complete({{"user", "What is 6*7?"}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0]["function"]["name"], "calculator");
  const ChatResult plain = client.complete({{"user", "Break it"}});
  ASSERT_TRUE(plain.ok) << plain.error;
  EXPECT_EQ(plain.content, kBroken);
  EXPECT_TRUE(plain.tool_calls.empty());
}

TEST(ServeToolsOracle, TheOpenAIClientRoundTripsToolCalls) {
  RLF_REQUIRE_ORACLE();
  ToolServer& s = shared_server();
  auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                             test::shell_quote(test::source_path("tests/oracle/openai_tools_check.py").string()) + " " +
                             test::shell_quote(s.base_url()) + " toolbot");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tool calls round-trip"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace rlf
