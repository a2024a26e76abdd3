// Chat formats against the real templates: the rendered Llama-3.1
// conversation in shared/chat_templates (text and ids), and transformers'
// apply_chat_template with the Jinja templates of Qwen2.5, Llama-3.1/3.2
// and Phi-3 (oracle Python).
#include <gtest/gtest.h>

#include "tests/support/test_env.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

std::unique_ptr<Tokenizer> load_hf(const std::string& dir) {
  return load_tokenizer(test::shared_path("tokenizers/hf/" + dir).string());
}

TEST(ChatTemplate, Llama31RenderedConversation) {
  Json ref = read_json_file(test::shared_path("chat_templates/llama31_chat_rendered.json").string());
  auto tok = load_hf("llama3.2");
  std::vector<ChatMessage> messages = {{"system", "You are a bot that responds to weather queries."},
                                       {"user", "Hey, what's the temperature in Paris right now?"}};
  std::string text = render_chat(ChatFormat::Llama31, messages, chat_options_for(*tok, false));
  EXPECT_EQ(text, ref["text"].get<std::string>());
  EXPECT_EQ(tok->encode(text, false), ref["ids"].get<std::vector<int32_t>>());
}

TEST(ChatTemplate, DetectsFormatsFromTemplates) {
  auto detect_file = [](const std::string& name) {
    return detect_chat_format(read_file(test::shared_path("chat_templates/" + name)));
  };
  EXPECT_EQ(detect_file("llama.cpp__meta-llama-Llama-3.1-8B-Instruct.jinja"), ChatFormat::Llama31);
  EXPECT_EQ(detect_file("llama.cpp__meta-llama-Llama-3.2-3B-Instruct.jinja"), ChatFormat::Llama31);
  EXPECT_EQ(detect_file("llama.cpp__Qwen-Qwen2.5-7B-Instruct.jinja"), ChatFormat::Qwen2);
  EXPECT_EQ(detect_file("llama.cpp__HuggingFaceTB-SmolLM3-3B.jinja"), ChatFormat::ChatML);
  EXPECT_EQ(detect_chat_format(load_hf("qwen2.5")->chat_template()), ChatFormat::Qwen2);
  EXPECT_EQ(detect_chat_format(load_hf("phi-3-mini")->chat_template()), ChatFormat::Phi3);
  EXPECT_EQ(detect_chat_format("{{ messages }}"), std::nullopt);
  EXPECT_EQ(detect_chat_format("{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}"), ChatFormat::Llama2);
  EXPECT_EQ(parse_chat_format("qwen2.5"), ChatFormat::Qwen2);
  try {
    parse_chat_format("jinja");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown chat format 'jinja' (expected plain, chatml, qwen2, llama3, llama31, llama2 or phi3)");
  }
}

TEST(ChatTemplate, QwenDefaultSystemPromptAndLlama2) {
  std::vector<ChatMessage> one = {{"user", "Hi"}};
  ChatRenderOptions o;
  EXPECT_EQ(render_chat(ChatFormat::Qwen2, one, o),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, one, o), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  o.bos_token = "<s>";
  o.eos_token = "</s>";
  std::vector<ChatMessage> conv = {{"system", "Be kind."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
  EXPECT_EQ(render_chat(ChatFormat::Llama2, conv, o),
            "<s>[INST] <<SYS>>\nBe kind.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  EXPECT_EQ(render_chat(ChatFormat::Plain, conv, o), "System: Be kind.\n\nUser: Hi\n\nAssistant: Hello!\n\nUser: Bye\n\nAssistant:");
  std::vector<ChatMessage> bad = {{"tool", "x"}};
  try {
    render_chat(ChatFormat::ChatML, bad, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "chat format 'chatml': unknown role 'tool' (expected system, user or assistant)");
  }
}

TEST(ChatTemplate, MatchesTransformersApplyChatTemplate) {
  RLF_REQUIRE_ORACLE();
  const char* script = R"PY(
import json, sys
try:
    import jinja2
except ImportError:
    print("NOJINJA"); sys.exit(0)
from transformers import AutoTokenizer
root, templates = sys.argv[1], sys.argv[2]
convs = json.loads(sys.argv[3])
setups = [("qwen2.5", "qwen2.5", None), ("llama3.2", "llama31", "llama.cpp__meta-llama-Llama-3.1-8B-Instruct.jinja"),
          ("llama3.2", "llama32", "llama.cpp__meta-llama-Llama-3.2-3B-Instruct.jinja"), ("phi-3-mini", "phi3", None)]
out = {}
for d, key, jinja in setups:
    tok = AutoTokenizer.from_pretrained(f"{root}/{d}")
    kw = {"date_string": "26 Jul 2024"}
    if jinja: kw["chat_template"] = open(f"{templates}/{jinja}").read()
    res = []
    for c in convs:
        msgs = c["messages"]
        if key == "phi3": msgs = [m for m in msgs if m["role"] != "system"]
        text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=c["gen"], **kw)
        ids = tok.apply_chat_template(msgs, tokenize=True, add_generation_prompt=c["gen"], **kw)
        res.append({"text": text, "ids": ids})
    out[key] = res
print("RESULT" + json.dumps(out))
)PY";
  Json convs = Json::array();
  auto conv = [&](std::vector<ChatMessage> msgs, bool gen) {
    Json m = Json::array();
    for (auto& x : msgs) m.push_back({{"role", x.role}, {"content", x.content}});
    convs.push_back({{"messages", m}, {"gen", gen}});
  };
  conv({{"user", "Hi there"}}, true);
  conv({{"system", "Be brief."}, {"user", "What is 2+2?"}, {"assistant", "4"}, {"user", "And 3+3?"}}, true);
  conv({{"user", "  padded \n"}, {"assistant", "ok "}}, false);
  std::string args = test::shell_quote(test::shared_path("tokenizers/hf").string()) + " " +
                     test::shell_quote(test::shared_path("chat_templates").string()) + " " + test::shell_quote(convs.dump());
  auto r = test::run_oracle_python(script, args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (r.output.find("NOJINJA") != std::string::npos) {
    const char* req = std::getenv("RLF_REQUIRE_ORACLE");
    if (req && std::string(req) == "1") FAIL() << "the oracle venv lacks jinja2 (needed by apply_chat_template)";
    GTEST_SKIP() << "the oracle venv lacks jinja2 (pip install jinja2)";
  }
  size_t at = r.output.find("RESULT");
  ASSERT_NE(at, std::string::npos) << r.output;
  Json oracle = parse_json(r.output.substr(at + 6), "oracle output");
  struct Setup {
    std::string key, dir;
    ChatFormat format;
  };
  for (const Setup& s : {Setup{"qwen2.5", "qwen2.5", ChatFormat::Qwen2}, Setup{"llama31", "llama3.2", ChatFormat::Llama31},
                         Setup{"llama32", "llama3.2", ChatFormat::Llama31}, Setup{"phi3", "phi-3-mini", ChatFormat::Phi3}}) {
    auto tok = load_hf(s.dir);
    for (size_t i = 0; i < convs.size(); ++i) {
      std::vector<ChatMessage> msgs;
      for (auto& m : convs[i]["messages"])
        if (!(s.format == ChatFormat::Phi3 && m["role"] == "system"))
          msgs.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
      std::string text = render_chat(s.format, msgs, chat_options_for(*tok, convs[i]["gen"].get<bool>()));
      EXPECT_EQ(text, oracle[s.key][i]["text"].get<std::string>()) << s.key << " conversation " << i;
      EXPECT_EQ(tok->encode(text, false), oracle[s.key][i]["ids"].get<std::vector<int32_t>>()) << s.key << " " << i;
    }
  }
}

}  // namespace
}  // namespace rlf
