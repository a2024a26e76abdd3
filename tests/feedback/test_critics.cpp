// Critics: the template critics' exact texts (Critique-GRPO's simple,
// simple_gt, text), placeholders and verdicts, the context-fitting rule of
// feedback prompts, a model critic on a tiny model (deterministic, fitted),
// the OpenAI-compatible endpoint critic against a local stand-in server
// (ok, failing, malformed, slow and refusing endpoints), and the [critic]
// table's errors.
#include <gtest/gtest.h>

#include <chrono>

#include "feedback/critic_config.h"
#include "feedback/endpoint_critic.h"
#include "feedback/feedback_prompt.h"
#include "feedback/model_critic.h"
#include "feedback/template_critic.h"
#include "tests/net/chat_stub.h"
#include "tests/support/test_env.h"
#include "tests/support/tiny_policy.h"
#include "tokenizer/tokenizer.h"

namespace rlf {
namespace {

using test::error_of;

PromptExample task(const std::string& prompt = "What is 12+34?", const std::string& reference = "46") {
  PromptExample t;
  t.id = "t0";
  t.prompt = prompt;
  t.reference = reference;
  t.where = "test #0";
  return t;
}

CritiqueRequest request(const PromptExample& t, const std::string& response, bool correct) {
  CritiqueRequest r;
  r.task = &t;
  r.prompt = t.prompt;
  r.response = response;
  r.correct = correct;
  r.reward = correct ? 1.0 : 0.0;
  r.explanation = correct ? "correct=1 (correct: expected 46, got 46)" : "correct=0 (expected 46, got 45)";
  return r;
}

TEST(FeedbackTemplate, FillsEveryPlaceholderAndLeavesOthers) {
  const PromptExample t = task();
  const CritiqueRequest r = request(t, " 45", false);
  EXPECT_EQ(fill_feedback_template("{prompt}|{response}|{reference}|{explanation}|{reward}|{verdict}|{critique}|{other}",
                                   r, "crit"),
            "What is 12+34?| 45|46|correct=0 (expected 46, got 45)|0|incorrect|crit|{other}");
  EXPECT_EQ(fill_feedback_template("{unclosed", r), "{unclosed");
}

TEST(FeedbackTemplate, VerdictIsTheLastVerdictLine) {
  EXPECT_EQ(parse_verdict("ok\nVerdict: correct"), std::optional<bool>(true));
  EXPECT_EQ(parse_verdict("**Verdict:** Incorrect."), std::optional<bool>(false));
  EXPECT_EQ(parse_verdict("Verdict: correct\nverdict: wrong"), std::optional<bool>(false));
  EXPECT_EQ(parse_verdict("the verdict: correct"), std::nullopt);  // not at a line start
  EXPECT_EQ(parse_verdict("no verdict here"), std::nullopt);
}

TEST(TemplateCritic, CritiqueGrpoTypesGiveTheseTexts) {
  const PromptExample t = task();
  const std::vector<CritiqueRequest> rs = {request(t, " 45", false), request(t, " 46", true)};
  auto texts = [&](const std::string& kind) {
    TemplateCriticOptions o;
    o.kind = kind;
    auto cs = TemplateCritic(o).critique(rs);
    EXPECT_TRUE(cs[0].ok && cs[1].ok);
    EXPECT_EQ(cs[0].verdict, std::optional<bool>(false));
    EXPECT_EQ(cs[1].verdict, std::optional<bool>(true));
    return std::make_pair(cs[0].text, cs[1].text);
  };
  EXPECT_EQ(texts("simple"), std::make_pair(std::string("The answer is incorrect."), std::string("The answer is correct.")));
  EXPECT_EQ(texts("simple_gt").first, "The answer is incorrect. The correct answer is 46.");
  EXPECT_EQ(texts("simple_gt").second, "The answer is correct.");
  EXPECT_EQ(texts("text").first, "The answer is incorrect. correct=0 (expected 46, got 45)");

  TemplateCriticOptions o;
  o.kind = "template";
  o.incorrect_text = "No: {explanation}. Expected {reference}.";
  auto cs = TemplateCritic(o).critique(rs);
  EXPECT_EQ(cs[0].text, "No: correct=0 (expected 46, got 45). Expected 46.");
  EXPECT_EQ(cs[1].text, "The answer is correct.");
}

TEST(TemplateCritic, SimpleGtWithoutAReferenceFailsThatRequestOnly) {
  const PromptExample no_ref = task("What is 1+1?", ""), with_ref = task();
  auto cs = TemplateCritic({}).critique({request(no_ref, " 3", false), request(with_ref, " 45", false)});
  EXPECT_FALSE(cs[0].ok);
  EXPECT_EQ(cs[0].error, "simple_gt: the task has no reference answer");
  EXPECT_TRUE(cs[1].ok);
}

class FitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_char_tokenizer(dir_ / "tok", printable_ascii());
    tok_ = load_tokenizer((dir_ / "tok").string());
  }
  test::TempDir dir_;
  std::shared_ptr<const Tokenizer> tok_;
};

TEST_F(FitTest, FitsAsIsThenCutsTheResponseFromItsStartThenTheCritique) {
  const PromptExample t = task("Q?", "4");
  CritiqueRequest r = request(t, "abcdefghij", false);
  const std::string templ = "{prompt}{response}|{critique}|";
  // Characters are tokens; BOS adds one. As is: 1 + 2 + 10 + 1 + 4 + 1 = 19 tokens, + room 5.
  auto f = fit_feedback_prompt(templ, r, "crit", *tok_, true, 5, 24);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->text, "Q?abcdefghij|crit|");
  EXPECT_FALSE(f->truncated);
  EXPECT_EQ(static_cast<int64_t>(f->ids.size()), 19);
  // Four tokens less: the response keeps its end after "..." (3 + 3 characters for the 10 it had).
  f = fit_feedback_prompt(templ, r, "crit", *tok_, true, 5, 20);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->text, "Q?...hij|crit|");
  EXPECT_TRUE(f->truncated);
  // No room for any response: the critique is cut from its end.
  f = fit_feedback_prompt(templ, r, "crit", *tok_, true, 5, 12);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->text, "Q?|cr|");
  // Not even the prompt and the template's own text fit: nothing.
  EXPECT_FALSE(fit_feedback_prompt(templ, r, "crit", *tok_, true, 5, 9));
}

class ModelCriticTest : public ::testing::Test {
 protected:
  test::TempDir dir_;
};

TEST_F(ModelCriticTest, GreedyCritiquesAreDeterministicAndFitTheContext) {
  Policy policy = test::tiny_policy(dir_, /*max_positions=*/64);
  ModelCriticOptions o;
  o.prompt = "{prompt}{response} Review:";
  o.max_new_tokens = 8;
  ModelCritic critic(policy, o);
  const PromptExample t = task();
  std::vector<CritiqueRequest> rs = {request(t, " 45", false), request(t, std::string(200, 'x'), false)};
  auto a = critic.critique(rs);
  auto b = critic.critique(rs);
  ASSERT_EQ(a.size(), 2u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ok, b[i].ok);
    EXPECT_EQ(a[i].text, b[i].text);
    if (!a[i].ok) {
      EXPECT_EQ(a[i].error, "empty critique");
    }
  }
  // The 200-character response does not fit a 64-token context: it was cut, not refused.
  EXPECT_NE(a[1].error, "the critique prompt does not fit the critic's context");
  EXPECT_EQ(error_of([&] {
              ModelCriticOptions bad;
              bad.prompt = "no response here";
              ModelCritic c(policy, bad);
            }),
            "critic.prompt must contain {response} (the answer to critique)");
}

EndpointCriticOptions endpoint_options(const std::string& base_url) {
  EndpointCriticOptions o;
  o.client.base_url = base_url;
  o.client.model = "stub";
  o.client.timeout_s = 0.5;
  o.client.max_retries = 1;
  o.client.backoff_s = 0.01;
  o.system = "";
  o.prompt = "{response}";  // the stub picks its behaviour from the last user message
  return o;
}

TEST(EndpointCritic, CritiquesComeBackInOrderAndFailuresStayPerRequest) {
  test::StubServer server;
  EndpointCritic critic(endpoint_options(server.base_url()));
  const PromptExample t = task();
  auto cs = critic.critique({request(t, "MODE:ok first", false), request(t, "MODE:status:500", false),
                             request(t, "MODE:malformed", false), request(t, "MODE:empty", false),
                             request(t, "MODE:slow:3000", false), request(t, "MODE:ok last", false)});
  ASSERT_EQ(cs.size(), 6u);
  EXPECT_TRUE(cs[0].ok);
  EXPECT_EQ(cs[0].text, "critique of: MODE:ok first");
  EXPECT_FALSE(cs[1].ok);
  EXPECT_NE(cs[1].error.find("HTTP 500"), std::string::npos) << cs[1].error;
  EXPECT_FALSE(cs[2].ok);
  EXPECT_NE(cs[2].error.find("malformed"), std::string::npos) << cs[2].error;
  EXPECT_FALSE(cs[3].ok);
  EXPECT_EQ(cs[3].error, "empty critique");
  EXPECT_FALSE(cs[4].ok);
  EXPECT_NE(cs[4].error.find("timeout"), std::string::npos) << cs[4].error;
  EXPECT_TRUE(cs[5].ok);
  EXPECT_EQ(cs[5].text, "critique of: MODE:ok last");
}

TEST(EndpointCritic, ARefusingEndpointStopsAtStartUp) {
  test::StubServer server({"--refuse", "401"});
  const std::string e = error_of([&] { EndpointCritic c(endpoint_options(server.base_url())); });
  EXPECT_NE(e.find("refused the probe request: HTTP 401"), std::string::npos) << e;
  EXPECT_NE(e.find("check critic.base_url, critic.model and critic.api_key_env"), std::string::npos) << e;
}

TEST(CriticConfig, TypesKeysAndErrors) {
  EXPECT_EQ(critic_config_from_json(Json(), "cfg").type, "simple_gt");
  EXPECT_EQ(critic_config_from_json(Json{{"type", "text"}}, "cfg").type, "text");
  EXPECT_EQ(error_of([] { critic_config_from_json(Json{{"type", "oracle"}}, "cfg [critic]"); }),
            "cfg [critic]: unknown critic type 'oracle'; valid types: columns, endpoint, model, self, simple, "
            "simple_gt, template, text");
  EXPECT_EQ(critic_config_from_json(Json{{"type", "columns"}}, "cfg").type, "columns");
  EXPECT_NE(error_of([] { critic_config_from_json(Json{{"type", "columns"}, {"prompt", "x"}}, "cfg [critic]"); })
                .find("prompt"),
            std::string::npos);
  EXPECT_NE(error_of([] { critic_config_from_json(Json{{"type", "simple"}, {"max_new_tokens", 3}}, "cfg [critic]"); })
                .find("max_new_tokens"),
            std::string::npos);
  EXPECT_EQ(error_of([] { critic_config_from_json(Json{{"type", "endpoint"}, {"model", "m"}}, "cfg [critic]"); }),
            "cfg [critic]: critic type 'endpoint': critic.base_url is required for type = \"endpoint\" (e.g. "
            "base_url = \"http://127.0.0.1:8000/v1\")");
  EXPECT_EQ(error_of([] { critic_config_from_json(Json{{"type", "model"}}, "cfg [critic]"); }),
            "cfg [critic]: critic type 'model': critic.path is required for type = \"model\": the critic's model "
            "directory");
  EXPECT_EQ(error_of([] { critic_config_from_json(Json{{"type", "template"}}, "cfg [critic]"); }),
            "cfg [critic]: critic type 'template': critic.incorrect_text is required for type = \"template\" (e.g. "
            "incorrect_text = \"Wrong: {explanation}\")");
}

TEST(CriticConfig, EndpointKeyComesFromTheNamedVariable) {
  test::StubServer server({"--refuse", "401"});  // never reached: the key check comes first
  test::TempDir dir;
  Policy policy = test::tiny_policy(dir, 64);
  CriticConfig c = critic_config_from_json(
      Json{{"type", "endpoint"}, {"base_url", server.base_url()}, {"model", "m"}, {"api_key_env", "RLF_TEST_KEY"}},
      "cfg [critic]");
  const EnvLookup none = [](const std::string&) { return std::nullopt; };
  EXPECT_EQ(error_of([&] { make_critic(c, policy, none, "cfg [critic]"); }),
            "cfg [critic]: critic type 'endpoint': critic.api_key_env names the environment variable RLF_TEST_KEY, "
            "which is not set (export it, or leave api_key_env out for an endpoint without a key)");
  // Set: the key is sent, and the refusing stub's answer stops the run at start-up.
  const EnvLookup some = [](const std::string& n) { return n == "RLF_TEST_KEY" ? std::optional<std::string>("k") : std::nullopt; };
  EXPECT_NE(error_of([&] { make_critic(c, policy, some, "cfg [critic]"); }).find("HTTP 401"), std::string::npos);
  EXPECT_EQ(make_critic(critic_config_from_json(Json{{"type", "self"}}, "cfg"), policy, none, "cfg")->name(), "model");
}

}  // namespace
}  // namespace rlf
