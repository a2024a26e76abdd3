// rlf's Jinja chat templates against transformers, byte for byte: every real
// template in tests/tokenizer/chat_templates (sources in its README) and
// shared/chat_templates, rendered with every conversation in
// tests/tokenizer/chat_conversations, by rlf and by transformers' own chat
// template code (tests/tokenizer/chat_template_oracle.py, one Python process
// for all cases): transformers 4.46 (the oracle venv) with rlf's V4 input
// handling, transformers 5.x (the peer venv) with V5. The rendered text and
// the {% generation %} spans must be identical; where transformers raises,
// rlf must raise too, with the same message when the template raised it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "tests/support/test_env.h"
#include "tokenizer/jinja_chat_template.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

constexpr const char* kDate = "2025-03-14";

std::map<std::string, std::string> collect_templates() {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(test::source_path("tests/tokenizer/chat_templates"))) {
    const std::string name = e.path().filename().string();
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".jinja") == 0)
      out[name.substr(0, name.size() - 6)] = e.path().string();
    const std::string suffix = ".tokenizer_config.json";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out[name.substr(0, name.size() - suffix.size())] = e.path().string();
  }
  for (const auto& e : fs::directory_iterator(test::shared_path("chat_templates")))
    if (e.path().extension() == ".jinja") out["shared/" + e.path().stem().string()] = e.path().string();
  return out;
}

std::map<std::string, std::string> collect_conversations() {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(test::source_path("tests/tokenizer/chat_conversations")))
    if (e.path().extension() == ".json") out[e.path().stem().string()] = e.path().string();
  return out;
}

struct Outcome {
  bool ok = false;
  std::string text;                      // rendered text, or the error message
  std::string error_type;                // "TemplateError" for raise_exception
  std::vector<std::pair<size_t, size_t>> generation;
};

Outcome render_rlf(const JinjaChatTemplate& t, const ChatInput& in, TransformersCompat compat) {
  ChatRenderSettings s;
  s.date = parse_calendar_date(kDate, "date");
  s.compat = compat;
  Outcome o;
  try {
    RenderedChat r = t.render(in, s);
    o.ok = true;
    o.text = r.text;
    for (const auto& g : r.generation) o.generation.emplace_back(g.begin, g.end);
  } catch (const jinja::Error& e) {
    o.text = e.what();
    o.error_type = e.kind() == jinja::ErrorKind::Raised ? "TemplateError" : "error";
  }
  return o;
}

std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const size_t from = i > 40 ? i - 40 : 0;
  return "at byte " + std::to_string(i) + "\n   rlf: " + Json(a.substr(from, 120)).dump() +
         "\n  want: " + Json(b.substr(from, 120)).dump();
}

void compare_with(const std::string& python, TransformersCompat compat) {
  const auto templates = collect_templates();
  const auto conversations = collect_conversations();
  ASSERT_GE(templates.size(), 40u);
  ASSERT_GE(conversations.size(), 20u);
  test::TempDir dir;
  Json cases = {{"date", kDate}, {"templates", templates}, {"conversations", conversations}};
  std::ofstream(dir / "cases.json") << cases.dump();
  const auto r = test::run_command(test::shell_quote(python) + " " +
                                   test::shell_quote(test::source_path("tests/tokenizer/chat_template_oracle.py").string()) +
                                   " " + test::shell_quote((dir / "cases.json").string()) + " " +
                                   test::shell_quote((dir / "out.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json oracle = read_json_file((dir / "out.json").string());
  std::map<std::string, ChatInput> inputs;
  for (const auto& [name, path] : conversations) inputs[name] = parse_chat_input(read_file(path), path);

  size_t n_text = 0, n_error = 0, n_bad = 0, n_spans = 0;
  for (const auto& [tname, tpath] : templates) {
    std::optional<JinjaChatTemplate> tmpl;
    std::string load_error;
    try {
      tmpl.emplace(JinjaChatTemplate::load(tpath));
    } catch (const std::exception& e) {
      load_error = e.what();
    }
    for (const auto& [cname, input] : inputs) {
      const std::string key = tname + "|" + cname;
      const Json& want = oracle["results"][key];
      Outcome got;
      if (tmpl) {
        got = render_rlf(*tmpl, input, compat);
      } else {
        got.text = load_error;
        got.error_type = "error";
      }
      std::string problem;
      if (want.contains("error")) {
        ++n_error;
        if (got.ok)
          problem = "transformers raised " + want["error"].get<std::string>() + ": " + want["message"].get<std::string>() +
                    "\n  rlf rendered " + Json(got.text.substr(0, 200)).dump();
        else if (want["error"] == "TemplateError" &&
                 (got.error_type != "TemplateError" || got.text != want["message"].get<std::string>()))
          problem = "raise_exception message differs:\n   rlf: " + got.text + "\n  want: " + want["message"].get<std::string>();
      } else {
        ++n_text;
        const std::string text = want["text"].get<std::string>();
        std::vector<std::pair<size_t, size_t>> spans;
        for (const auto& s : want["generation"]) spans.emplace_back(s[0].get<size_t>(), s[1].get<size_t>());
        n_spans += !spans.empty();
        if (!got.ok)
          problem = "rlf raised: " + got.text;
        else if (got.text != text)
          problem = "text differs " + first_difference(got.text, text);
        else if (got.generation != spans)
          problem = "generation spans differ";
      }
      if (!problem.empty() && n_bad++ < 8) ADD_FAILURE() << key << ": " << problem;
    }
  }
  EXPECT_EQ(n_bad, 0u) << "mismatches out of " << (n_text + n_error) << " cases";
  // Most cases must render: a suite of errors would prove little.
  EXPECT_GT(n_text, 3 * n_error) << n_text << " rendered, " << n_error << " raised";
  EXPECT_GT(n_spans, 100u) << "renderings with {% generation %} spans";
  std::cout << "transformers " << oracle["version"].get<std::string>() << ": " << n_text << " renderings ("
            << n_spans << " with generation spans) and " << n_error << " raised errors identical (" << templates.size() << " templates x " << inputs.size()
            << " conversations)\n";
}

TEST(JinjaOracle, Transformers4SameTextAndSpans) {
  RLF_REQUIRE_ORACLE();
  compare_with(test::oracle_python(), TransformersCompat::V4);
}

TEST(JinjaOracle, Transformers5SameTextAndSpans) {
  RLF_REQUIRE_PEER();
  compare_with(test::peer_python(), TransformersCompat::V5);
}

}  // namespace
}  // namespace rlf
