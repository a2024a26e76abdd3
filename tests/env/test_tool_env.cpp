// The tool environment (env/tool_env.h) with real chat templates and the
// Qwen2.5 tokenizer: the prompt is the template's own rendering with the
// tools; a tool call in the model's format runs the tool and the observation
// is the bridge, so prompt + turn + stop + observation is exactly the
// template's rendering of the conversation so far (Qwen2.5) or its next
// generation prompt (Qwen3, which rewrites history); built-in, external and
// unknown tools; malformed calls end the episode as answers.
#include <gtest/gtest.h>

#include <fstream>

#include "env/env_registry.h"
#include "env/tool_env.h"
#include "sandbox/sandbox.h"
#include "tests/support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace rlf {
namespace {

std::shared_ptr<const Tokenizer> qwen() {
  static const std::shared_ptr<const Tokenizer> tok = load_tokenizer(test::shared_path("tokenizers/hf/qwen2.5").string());
  return tok;
}

std::string qwen25_template() { return test::shared_path("chat_templates/llama.cpp__Qwen-Qwen2.5-7B-Instruct.jinja").string(); }

PromptExample tool_task(const std::string& prompt) {
  PromptExample t;
  t.prompt = prompt;
  t.where = "test";
  return t;
}

PolicyTurn tool_turn(const std::string& text, const std::string& stop = "eos") {
  PolicyTurn t;
  t.text = text;
  t.stop = stop;
  return t;
}

std::unique_ptr<ToolEnvironment> make_env(const std::string& tmpl, std::vector<std::string> tools = {"calculator"}) {
  ToolEnvOptions o;
  o.chat_template = tmpl;
  o.tools = std::move(tools);
  o.date = "2025-03-14";
  auto env = std::make_unique<ToolEnvironment>(o);
  env->use_tokenizer(qwen());
  return env;
}

const std::string kCall = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"347*58\"}}\n</tool_call>";

TEST(ToolEnv, PromptAndBridgeAreTheTemplatesOwnRendering) {
  auto envp = make_env(qwen25_template());
  ToolEnvironment& env = *envp;
  EXPECT_EQ(env.stop_texts(), std::vector<std::string>{"<|im_end|>"});
  EXPECT_EQ(env.tool_format(), ToolCallFormat::Hermes);
  std::string prompt;
  auto session = env.reset(tool_task("What is 347*58?"), 1, &prompt);
  EXPECT_NE(prompt.find("\"name\": \"calculator\""), std::string::npos) << prompt;
  EXPECT_EQ(prompt.substr(prompt.size() - 22), "<|im_start|>assistant\n");

  EnvStep s = session->step(tool_turn(kCall));
  EXPECT_FALSE(s.done);
  EXPECT_TRUE(s.tool_call);
  EXPECT_FALSE(s.tool_error);
  EXPECT_EQ(s.observation, "\n<|im_start|>user\n<tool_response>\n20126\n</tool_response><|im_end|>\n<|im_start|>assistant\n");

  // What the episode holds equals the template's rendering of the conversation.
  ChatInput conv;
  conv.tools = env.tool_schemas();
  conv.messages = OrderedJson::array(
      {{{"role", "user"}, {"content", "What is 347*58?"}},
       {{"role", "assistant"},
        {"content", ""},
        {"tool_calls", OrderedJson::array({{{"id", "call_1"}, {"type", "function"},
                                             {"function", {{"name", "calculator"}, {"arguments", {{"expression", "347*58"}}}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "20126"}}});
  conv.add_generation_prompt = true;
  EXPECT_EQ(prompt + kCall + "<|im_end|>" + s.observation, env.chat_template().render(conv, env.render_settings()).text);

  EnvStep answer = session->step(tool_turn("#### 20126"));
  EXPECT_TRUE(answer.done);
  EXPECT_FALSE(answer.tool_call);
}

TEST(ToolEnv, TemplatesThatRewriteHistoryStillGetTheNextPrompt) {
  auto envp = make_env(test::source_path("tests/tokenizer/chat_templates/Qwen-Qwen3-0.6B.jinja").string());
  ToolEnvironment& env = *envp;
  std::string prompt;
  auto session = env.reset(tool_task("What is 347*58?"), 1, &prompt);
  EnvStep s = session->step(tool_turn("<think>\nUse the tool.\n</think>\n\n" + kCall));
  EXPECT_EQ(s.observation, "\n<|im_start|>user\n<tool_response>\n20126\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
}

TEST(ToolEnv, ToolErrorsUnknownToolsAndMalformedCalls) {
  auto envp = make_env(qwen25_template());
  std::string prompt;
  auto session = envp->reset(tool_task("Q"), 1, &prompt);
  EnvStep bad_expr = session->step(tool_turn("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1/0\"}}\n</tool_call>"));
  EXPECT_TRUE(bad_expr.tool_error);
  EXPECT_NE(bad_expr.observation.find("error: "), std::string::npos) << bad_expr.observation;
  EnvStep unknown = session->step(tool_turn("<tool_call>\n{\"name\": \"weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_TRUE(unknown.tool_error);
  EXPECT_NE(unknown.observation.find("there is no tool named 'weather'"), std::string::npos);
  // A turn cut by a stop string gets the stop token before the bridge.
  EnvStep cut = session->step(tool_turn(kCall, "</tool_call>"));
  EXPECT_EQ(cut.observation.rfind("<|im_end|>\n<|im_start|>user", 0), 0u) << cut.observation;
  EnvStep malformed = session->step(tool_turn("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\n</tool_call>"));
  EXPECT_TRUE(malformed.done);
  EXPECT_NE(malformed.feedback.find("malformed tool call"), std::string::npos);
}

TEST(ToolEnv, CallsBeyondTheLimitEndTheEpisode) {
  ToolEnvOptions o;
  o.chat_template = qwen25_template();
  o.max_calls = 1;
  ToolEnvironment env(o);
  env.use_tokenizer(qwen());
  std::string prompt;
  auto session = env.reset(tool_task("Q"), 1, &prompt);
  EXPECT_FALSE(session->step(tool_turn(kCall)).done);
  EnvStep second = session->step(tool_turn(kCall));
  EXPECT_TRUE(second.done);
  EXPECT_TRUE(second.tool_error);
}

TEST(ToolEnv, ExternalProgramTools) {
  test::TempDir dir;
  std::ofstream(dir / "tools.py") << R"PY(
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "list_tools":
        out = {"tools": [{"type": "function", "function": {"name": "reverse", "description": "Reverse a string.",
               "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}]}
    elif req["name"] == "reverse":
        out = {"content": req["arguments"]["text"][::-1]}
    else:
        out = {"error": "no such tool"}
    print(json.dumps(out), flush=True)
)PY";
  ToolEnvOptions o;
  o.chat_template = qwen25_template();
  o.tools = {"calculator"};
  o.external_command = {"python3", (dir / "tools.py").string()};
  ToolEnvironment env(o);
  env.use_tokenizer(qwen());
  ASSERT_EQ(env.tool_schemas().size(), 2u);
  std::string prompt;
  auto session = env.reset(tool_task("Reverse abc"), 1, &prompt);
  EXPECT_NE(prompt.find("\"name\": \"reverse\""), std::string::npos);
  EnvStep s = session->step(tool_turn("<tool_call>\n{\"name\": \"reverse\", \"arguments\": {\"text\": \"abc\"}}\n</tool_call>"));
  EXPECT_FALSE(s.tool_error);
  EXPECT_NE(s.observation.find("<tool_response>\ncba\n</tool_response>"), std::string::npos) << s.observation;
}

TEST(ToolEnv, PythonToolRunsInTheSandbox) {
  try {
    sandbox::check_sandbox_supported(sandbox::SandboxOptions{});
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no sandbox on this host: " << e.what();
  }
  auto envp = make_env(qwen25_template(), {"python"});
  std::string prompt;
  auto session = envp->reset(tool_task("Compute"), 1, &prompt);
  EnvStep s = session->step(tool_turn("<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"print(6*7)\"}}\n</tool_call>"));
  EXPECT_FALSE(s.tool_error) << s.observation;
  EXPECT_NE(s.observation.find("<tool_response>\n42\n\n</tool_response>"), std::string::npos) << s.observation;
}

TEST(ToolEnv, ConfiguredByTheRegistry) {
  const Json table = {{"type", "tools"}, {"tools", {"calculator"}}, {"chat_template", qwen25_template()}, {"max_calls", 2}};
  EnvConfig c = env_config_from_json(table, "[env]");
  EXPECT_EQ(c.type, "tools");
  auto env = make_environment(c, "[env]");
  EXPECT_EQ(env->name(), "tools");
  const std::string err = test::error_of([&] {
    env_config_from_json({{"type", "tools"}, {"tools", {"abacus"}}}, "[env]");
    make_environment(env_config_from_json({{"type", "tools"}, {"tools", {"abacus"}}}, "[env]"), "[env]");
  });
  EXPECT_NE(err.find("unknown built-in tool 'abacus'"), std::string::npos) << err;
}

}  // namespace
}  // namespace rlf
