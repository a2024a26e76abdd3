// Tool-call text -> OpenAI tool calls (tokenizer/tool_calls.h): each family's
// format, malformed calls returned as content, streaming in pieces, and the
// round trip through real templates (a call rendered by the model's own
// template parses back to the same name and arguments).
#include <gtest/gtest.h>

#include "tests/support/test_env.h"
#include "tokenizer/jinja_chat_template.h"
#include "tokenizer/tool_calls.h"
#include "util/fs.h"

namespace rlf {
namespace {

using OJ = nlohmann::ordered_json;

TEST(ToolCalls, Hermes) {
  auto p = parse_tool_calls(ToolCallFormat::Hermes,
                            "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
                            "\"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": "
                            "\"{\\\"expression\\\": \\\"1+1\\\"}\"}\n</tool_call>");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.content, "Let me check.");
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments_json(), R"({"city":"Paris","days":2})");  // key order kept
  EXPECT_EQ(p.calls[1].arguments_json(), R"({"expression":"1+1"})");       // string arguments decoded
  EXPECT_TRUE(p.malformed.empty());
}

TEST(ToolCalls, MalformedCallsAreContent) {
  const std::vector<std::pair<ToolCallFormat, std::string>> bad = {
      {ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call>"},
      {ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}"},  // never closed
      {ToolCallFormat::Hermes, "<tool_call>\n{\"arguments\": {}}\n</tool_call>"},    // no name
      {ToolCallFormat::Hermes, "<tool_call>[1, 2]</tool_call>"},
      {ToolCallFormat::Llama3Json, "{\"name\": \"f\", \"parameters\": {\"x\": 1}"},
      {ToolCallFormat::Llama3Json, "{\"name\": \"f\", \"parameters\": 3}"},
      {ToolCallFormat::Llama3Json, "{\"name\": \"f\"} and then some words"},
      {ToolCallFormat::Mistral, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": 1}}"},
      {ToolCallFormat::Mistral, "[TOOL_CALLS]f[ARGS]not json"},
      {ToolCallFormat::Mistral, "[TOOL_CALLS]"},
  };
  for (const auto& [format, text] : bad) {
    auto p = parse_tool_calls(format, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
    EXPECT_FALSE(p.malformed.empty()) << text;
  }
  auto plain = parse_tool_calls(ToolCallFormat::Hermes, "No tools needed: 4.");
  EXPECT_TRUE(plain.calls.empty());
  EXPECT_TRUE(plain.malformed.empty());
  EXPECT_EQ(plain.content, "No tools needed: 4.");
}

TEST(ToolCalls, Llama3Json) {
  auto p = parse_tool_calls(ToolCallFormat::Llama3Json, "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"q\": \"x\"}}; "
                                                        "{\"name\": \"b\", \"parameters\": {}}");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "a");
  EXPECT_EQ(p.calls[0].arguments_json(), R"({"q":"x"})");
  EXPECT_EQ(p.calls[1].name, "b");
  EXPECT_EQ(p.content, "");
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::Llama3Json, "The answer is {x}.").calls.empty());
}

TEST(ToolCalls, Mistral) {
  auto a = parse_tool_calls(ToolCallFormat::Mistral,
                            "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": 1}}, {\"name\": \"g\", \"arguments\": {}}]");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[1].name, "g");
  auto b = parse_tool_calls(ToolCallFormat::Mistral, "Sure.[TOOL_CALLS]f[ARGS]{\"x\": [1, \"]\"]}[TOOL_CALLS]g[ARGS]{}");
  ASSERT_EQ(b.calls.size(), 2u);
  EXPECT_EQ(b.content, "Sure.");
  EXPECT_EQ(b.calls[0].arguments_json(), R"({"x":[1,"]"]})");
}

// Streamed in pieces of every size: released content + finish() equals the
// whole-text parse, and nothing of a call is released as content.
TEST(ToolCalls, StreamingMatchesWholeText) {
  const std::vector<std::pair<ToolCallFormat, std::string>> texts = {
      {ToolCallFormat::Hermes, "Checking <tool_ca"},
      {ToolCallFormat::Hermes, "Checking.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"<tool_call>\"}}\n</tool_call>"},
      {ToolCallFormat::Hermes, "<tool_call>\n{\"name\": broken}\n</tool_call> tail"},
      {ToolCallFormat::Llama3Json, "  {\"name\": \"f\", \"parameters\": {}}"},
      {ToolCallFormat::Llama3Json, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}"},
      {ToolCallFormat::Llama3Json, "<|pyth no, plain text"},
      {ToolCallFormat::Mistral, "Ok[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]"},
  };
  for (const auto& [format, text] : texts)
    for (size_t step : {1u, 2u, 3u, 7u, 1000u}) {
      ToolCallStream s(format);
      std::string released;
      for (size_t i = 0; i < text.size(); i += step) released += s.push(text.substr(i, step));
      const ParsedOutput end = s.finish();
      const ParsedOutput whole = parse_tool_calls(format, text);
      ASSERT_EQ(end.calls.size(), whole.calls.size()) << text;
      if (whole.calls.empty()) {
        EXPECT_EQ(released + end.content, text) << text << " step " << step;
      } else {
        EXPECT_EQ(released.find('{'), std::string::npos) << text << ": released " << released;
        for (size_t k = 0; k < whole.calls.size(); ++k) EXPECT_EQ(end.calls[k].arguments_json(), whole.calls[k].arguments_json());
      }
    }
}

TEST(ToolCalls, FormatDetectedFromTemplates) {
  auto src = [](const std::string& f) { return read_file(test::source_path("tests/tokenizer/chat_templates/" + f)); };
  EXPECT_EQ(detect_tool_call_format(src("Qwen-Qwen3-0.6B.jinja")), ToolCallFormat::Hermes);
  EXPECT_EQ(detect_tool_call_format(src("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja")), ToolCallFormat::Hermes);
  EXPECT_EQ(detect_tool_call_format(src("mistralai-Mistral-Nemo-Instruct-2407.jinja")), ToolCallFormat::Mistral);
  EXPECT_EQ(detect_tool_call_format(src("unsloth-mistral-Devstral-Small-2507.jinja")), ToolCallFormat::Mistral);
  EXPECT_EQ(detect_tool_call_format(read_file(test::shared_path("chat_templates/llama.cpp__meta-llama-Llama-3.1-8B-Instruct.jinja"))),
            ToolCallFormat::Llama3Json);
  EXPECT_EQ(detect_tool_call_format("{% for m in messages %}{{ m.content }}{% endfor %}"), std::nullopt);
}

// The assistant turn a template renders for a tool call parses back to it.
TEST(ToolCalls, RoundTripThroughRealTemplates) {
  const OJ call = {{"id", "a1b2c3d4e"},  // Mistral's template wants 9 alphanumerics
                   {"type", "function"},
                   {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}, {"unit", "celsius"}}}}}};
  struct Case {
    std::string path, open, close;
    ToolCallFormat format;
  };
  const std::vector<Case> cases = {
      {test::source_path("tests/tokenizer/chat_templates/Qwen-Qwen3-0.6B.jinja").string(), "<|im_start|>assistant\n",
       "<|im_end|>", ToolCallFormat::Hermes},
      {test::shared_path("chat_templates/llama.cpp__Qwen-Qwen2.5-7B-Instruct.jinja").string(), "<|im_start|>assistant\n",
       "<|im_end|>", ToolCallFormat::Hermes},
      {test::shared_path("chat_templates/llama.cpp__meta-llama-Llama-3.1-8B-Instruct.jinja").string(),
       "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", ToolCallFormat::Llama3Json},
      {test::source_path("tests/tokenizer/chat_templates/mistralai-Mistral-Nemo-Instruct-2407.jinja").string(),
       "[/INST]", "</s>", ToolCallFormat::Mistral},
  };
  for (const auto& c : cases) {
    ChatInput in;
    in.messages = OJ::array({{{"role", "user"}, {"content", "Weather?"}},
                             {{"role", "assistant"}, {"content", ""}, {"tool_calls", OJ::array({call})}}});
    in.eos_token = "</s>";
    in.bos_token = "<s>";
    ChatRenderSettings s;
    s.date = CalendarDate{2025, 1, 1};
    const std::string text = JinjaChatTemplate::load(c.path).render(in, s).text;
    const size_t open = text.rfind(c.open);
    ASSERT_NE(open, std::string::npos) << c.path << "\n" << text;
    const size_t begin = open + c.open.size();
    const size_t end = text.find(c.close, begin);
    ASSERT_NE(end, std::string::npos) << text;
    const ParsedOutput p = parse_tool_calls(c.format, text.substr(begin, end - begin));
    ASSERT_EQ(p.calls.size(), 1u) << c.path << ": " << text.substr(begin, end - begin) << " / " << p.malformed;
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(p.calls[0].arguments_json(), R"({"city":"Paris","unit":"celsius"})");
  }
}

}  // namespace
}  // namespace rlf
