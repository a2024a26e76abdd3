// rlf's Jinja engine, one feature at a time, against jinja2 as transformers
// configures it: tests/tokenizer/jinja_cases.json holds small templates with
// what jinja2 3.1.6 renders (or raises) for them, made by
// tests/tokenizer/make_jinja_cases.py with transformers' own environment. No
// Python at test time, so this also runs under ASan + UBSan (label parser),
// with a fuzz test: mutated real templates must fail with an error, never crash.
#include <gtest/gtest.h>

#include <random>

#include "tests/support/test_env.h"
#include "tokenizer/jinja/template.h"
#include "tokenizer/jinja_chat_template.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

using jinja::ErrorKind;

std::unordered_map<std::string, jinja::Value> variables(const OrderedJson& vars) {
  std::unordered_map<std::string, jinja::Value> out;
  for (const auto& [k, v] : vars.items()) out[k] = jinja::from_json(v);
  for (const char* k : {"messages", "tools", "documents"}) out[k] = jinja::Value::none();
  out["add_generation_prompt"] = jinja::Value(false);
  out["raise_exception"] = jinja::Value::callable(std::make_shared<jinja::NativeFunction>(
      "raise_exception", [](jinja::Interpreter&, jinja::CallArgs& a) -> jinja::Value {
        jinja::raise(ErrorKind::Raised, a.positional.at(0).str());
      }));
  return out;
}

// The jinja2 exception each engine error kind stands for.
bool same_failure(ErrorKind kind, const std::string& python_type) {
  if (python_type == "TemplateError") return kind == ErrorKind::Raised;
  if (python_type == "UndefinedError") return kind == ErrorKind::Undefined;
  if (python_type == "SecurityError" || python_type == "OverflowError") return kind == ErrorKind::Security;
  if (python_type == "TypeError") return kind == ErrorKind::Type;
  if (python_type == "TemplateSyntaxError") return kind == ErrorKind::Syntax;
  if (python_type == "TemplateAssertionError") return kind == ErrorKind::Unsupported;  // an unknown filter or test
  return kind == ErrorKind::Runtime;  // ZeroDivisionError, ValueError, ...
}

TEST(JinjaEngine, MatchesJinja2CaseByCase) {
  const OrderedJson file = OrderedJson::parse(read_file(test::source_path("tests/tokenizer/jinja_cases.json")));
  const auto vars = variables(file["variables"]);
  size_t n = 0;
  for (const auto& c : file["cases"]) {
    const std::string src = c["template"].get<std::string>();
    SCOPED_TRACE(src);
    try {
      const jinja::Rendered r = jinja::Template(src).render(vars);
      ASSERT_FALSE(c.contains("error")) << "jinja2 raised " << c["error"] << ": " << c["message"] << "\n rlf rendered "
                                        << Json(r.text).dump();
      EXPECT_EQ(r.text, c["text"].get<std::string>());
      std::vector<std::pair<size_t, size_t>> spans;
      for (const auto& g : r.generation) spans.emplace_back(g.begin, g.end);
      EXPECT_EQ(spans, (c["generation"].get<std::vector<std::pair<size_t, size_t>>>()));
    } catch (const jinja::Error& e) {
      ASSERT_TRUE(c.contains("error")) << "rlf raised: " << e.what() << "\n jinja2 rendered " << c["text"].dump();
      const std::string type = c["error"].get<std::string>();
      EXPECT_TRUE(same_failure(e.kind(), type)) << "rlf: " << e.what() << "\n jinja2 " << type << ": " << c["message"];
      // Runtime messages are Python's (syntax errors add rlf's line number).
      if (type != "TemplateSyntaxError" && type != "TemplateAssertionError")
        EXPECT_EQ(std::string(e.what()), c["message"].get<std::string>());
    }
    ++n;
  }
  EXPECT_GE(n, 120u);
}

TEST(JinjaEngine, ErrorsNameTheLine) {
  try {
    jinja::Template("line 1\n{% if x %}\n{{ 1 + }}\n{% endif %}");
    FAIL() << "no error";
  } catch (const jinja::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Syntax);
    EXPECT_NE(std::string(e.what()).find("(line 3)"), std::string::npos) << e.what();
  }
}

TEST(JinjaEngine, TemplatesNeedingALoaderAreRefused) {
  for (const char* src : {"{% include 'x.jinja' %}", "{% extends 'base' %}", "{% import 'm' as m %}"}) {
    try {
      jinja::Template t(src);
      FAIL() << src;
    } catch (const jinja::Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
    }
  }
}

TEST(JinjaEngine, RecursionIsBounded) {
  jinja::Template t("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  try {
    t.render({});
    FAIL() << "no error";
  } catch (const jinja::Error& e) {
    EXPECT_EQ(std::string(e.what()), "maximum recursion depth exceeded in macro calls");
  }
}

// Mutations of real templates (bytes dropped, duplicated or replaced by Jinja
// punctuation) parse and render or fail with jinja::Error: never a crash, a
// hang or another exception.
TEST(JinjaEngine, MutatedTemplatesFailCleanly) {
  std::vector<std::string> sources;
  for (const char* f : {"Qwen-Qwen3-0.6B.jinja", "openai-gpt-oss-120b.jinja", "trl-qwen3_training.jinja",
                        "CohereForAI-c4ai-command-r-plus-tool_use.jinja", "meetkai-functionary-medium-v3.2.jinja"})
    sources.push_back(read_file(test::source_path(std::string("tests/tokenizer/chat_templates/") + f)));
  const ChatInput input =
      parse_chat_input(read_file(test::source_path("tests/tokenizer/chat_conversations/18_reasoning_tool_call.json")), "conv");
  std::mt19937 rng(1234);
  const std::string punct = "{}%#-+()[]|.,'\"~ \n";
  size_t n_rendered = 0, n_failed = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string s = sources[static_cast<size_t>(i) % sources.size()];
    for (int k = 0; k < 1 + i % 4; ++k) {
      const size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0: s.erase(at, 1 + rng() % 8); break;
        case 1: s.insert(at, s.substr(at, 1 + rng() % 8)); break;
        default: s[at] = punct[rng() % punct.size()];
      }
    }
    try {
      JinjaChatTemplate t(s, {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
      ChatRenderSettings settings;
      settings.date = CalendarDate{2025, 1, 2};
      t.render(input, settings);
      ++n_rendered;
    } catch (const jinja::Error&) {
      ++n_failed;
    }
  }
  EXPECT_GT(n_rendered, 100u);
  EXPECT_GT(n_failed, 100u);
}

}  // namespace
}  // namespace rlf
