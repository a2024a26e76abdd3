// `rlf chat-template render` and `rlf chat-template check` as a user runs
// them: the rendering is exactly the library's (itself checked against
// transformers in tests/tokenizer/test_jinja_oracle.cpp) with nothing added,
// a template that raises exits 1 with its message, and check reports prefix
// preservation, bridges and the loss mask.
#include <gtest/gtest.h>

#include "tests/support/test_env.h"
#include "tokenizer/jinja_chat_template.h"
#include "util/fs.h"

namespace rlf {
namespace {

std::string rlf_bin() { return test::shell_quote(test::binary_path("apps/cli/rlf").string()); }
std::string tmpl(const std::string& f) { return test::source_path("tests/tokenizer/chat_templates/" + f).string(); }
std::string conv(const std::string& f) { return test::source_path("tests/tokenizer/chat_conversations/" + f).string(); }

TEST(ChatTemplateCli, RenderPrintsExactlyTheRendering) {
  test::TempDir dir;
  // Llama 3.2's template writes today's date with strftime_now.
  const std::string t = test::shared_path("chat_templates/llama.cpp__meta-llama-Llama-3.2-3B-Instruct.jinja").string();
  const std::string c = conv("06_tool_call_roundtrip.json");
  const std::string cmd = rlf_bin() + " chat-template render --template " + test::shell_quote(t) + " --conversation " +
                          test::shell_quote(c) + " --date 2025-03-14 > " + test::shell_quote((dir / "out.txt").string());
  ASSERT_EQ(test::run_command(cmd).exit_code, 0);
  ChatRenderSettings s;
  s.date = CalendarDate{2025, 3, 14};
  const std::string want = JinjaChatTemplate::load(t).render(parse_chat_input(read_file(c), c), s).text;
  EXPECT_EQ(read_file(dir / "out.txt"), want);
  EXPECT_NE(want.find("Today Date: 14 Mar 2025"), std::string::npos);
}

TEST(ChatTemplateCli, RenderJsonGivesGenerationSpans) {
  const auto r = test::run_command(rlf_bin() + " chat-template render --json --template " +
                                   test::shell_quote(tmpl("trl-qwen3_training.jinja")) + " --conversation " +
                                   test::shell_quote(conv("03_multi_turn.json")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"generation\":[["), std::string::npos) << r.output;
}

TEST(ChatTemplateCli, ATemplateThatRaisesExitsOneWithItsMessage) {
  const auto r = test::run_command(rlf_bin() + " chat-template render --template " +
                                   test::shell_quote(tmpl("google-gemma-2-2b-it.jinja")) + " --conversation " +
                                   test::shell_quote(conv("02_system_user.json")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("System role not supported"), std::string::npos) << r.output;
}

TEST(ChatTemplateCli, CheckReportsPrefixPreservationBridgesAndLossMask) {
  const auto r = test::run_command(rlf_bin() + " chat-template check --template " +
                                   test::shell_quote(tmpl("Qwen-Qwen3-0.6B.jinja")) + " --tokenizer " +
                                   test::shell_quote(test::shared_path("tokenizers/hf/qwen2.5").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("prefix-preserving (token ids): no"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bridges rlf appends after a turn that ended with \"<|im_end|>\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("<tool_response>\\n50\\n</tool_response>"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("loss mask"), std::string::npos) << r.output;
  const auto q25 = test::run_command(rlf_bin() + " chat-template check --template " +
                                     test::shell_quote(test::shared_path("chat_templates/llama.cpp__Qwen-Qwen2.5-7B-Instruct.jinja").string()) +
                                     " --stop '<|im_end|>'");
  ASSERT_EQ(q25.exit_code, 0) << q25.output;
  EXPECT_NE(q25.output.find("prefix-preserving (text; give --tokenizer for ids): yes"), std::string::npos) << q25.output;
}

}  // namespace
}  // namespace rlf
