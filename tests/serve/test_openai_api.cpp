// serve/openai_api: request parsing rules and response shapes, without HTTP
// (stories260K's tokenizer, a 512-token context).
#include <gtest/gtest.h>

#include "serve/openai_api.h"
#include "tests/support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace rlf {
namespace {

struct Fixture {
  std::unique_ptr<Tokenizer> tok = load_tokenizer(test::shared_path("models/stories260K/tok512.bin").string());
  ApiModel model;
  Fixture() {
    model.name = "m";
    model.tokenizer = tok.get();
    model.chat_format = ChatFormat::Plain;
    model.chat_options = chat_options_for(*tok);
    model.context_limit = 512;
    model.max_n = 8;
  }
  ApiRequest parse(Endpoint e, const Json& body) const { return parse_api_request(e, body.dump(), model); }
  // The ApiError's param for a refused body.
  std::string refused(Endpoint e, const Json& body, int status = 400) const {
    try {
      parse(e, body);
    } catch (const ApiError& err) {
      EXPECT_EQ(err.status, status) << err.what();
      return err.param.empty() ? "(none)" : err.param;
    }
    ADD_FAILURE() << "accepted " << body.dump();
    return "";
  }
};

TEST(OpenAIApi, CompletionDefaultsAndPrompts) {
  Fixture f;
  ApiRequest r = f.parse(Endpoint::Completions, {{"model", "m"}, {"prompt", "Once upon a time"}});
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0], f.tok->encode("Once upon a time", true));
  EXPECT_EQ(r.params.max_new_tokens, 16);  // OpenAI's default for completions
  EXPECT_EQ(r.params.temperature, 1.0);
  EXPECT_FALSE(r.params.seed.has_value());
  EXPECT_FALSE(r.logprobs);

  r = f.parse(Endpoint::Completions, {{"model", "m"}, {"prompt", {"a", "b"}}, {"n", 3}, {"logprobs", 2}, {"seed", -5},
                                      {"stop", "x"}, {"top_k", -1}});
  EXPECT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.n, 3);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_EQ(r.params.seed, static_cast<uint64_t>(int64_t{-5}));
  EXPECT_EQ(r.params.stop_strings, std::vector<std::string>{"x"});
  EXPECT_EQ(r.params.top_k, 0);
  auto gen = generation_requests(r);
  ASSERT_EQ(gen.size(), 2u);
  EXPECT_EQ(gen[1].n, 3);
  EXPECT_EQ(gen[1].top_logprobs, 2);

  r = f.parse(Endpoint::Completions, {{"model", "m"}, {"prompt", {1, 200, 300}}});
  EXPECT_EQ(r.prompts[0], (std::vector<int32_t>{1, 200, 300}));
  r = f.parse(Endpoint::Completions, {{"model", "m"}, {"prompt", {{1, 2}, {1, 3, 4}}}});
  EXPECT_EQ(r.prompts.size(), 2u);
}

TEST(OpenAIApi, RefusalsNameTheField) {
  Fixture f;
  const Endpoint C = Endpoint::Completions, Ch = Endpoint::Chat;
  EXPECT_EQ(f.refused(C, {{"model", "m"}}), "prompt");
  EXPECT_EQ(f.refused(C, {{"prompt", "x"}}), "model");
  EXPECT_EQ(f.refused(C, {{"model", "other"}, {"prompt", "x"}}, 404), "model");
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"n", 3}, {"prompt", {"a", "b", "c"}}}), "n");  // 9 > max_n
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", {1, 512}}}), "prompt");  // outside the vocabulary
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", "x"}, {"temperature", 3}}), "temperature");
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", "x"}, {"top_p", 0}}), "top_p");
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", "x"}, {"stop", {""}}}), "stop");
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", "x"}, {"stream_options", {{"include_usage", true}}}}), "stream_options");
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", "x"}, {"presence_penalty", 0.5}}), "presence_penalty");
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", "x"}, {"best_of", 2}}), "best_of");
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", "x"}, {"messages", Json::array()}}), "messages");  // a chat field
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", "x"}, {"max_tokens", 0}}), "max_tokens");
  EXPECT_EQ(f.refused(C, {{"model", "m"}, {"prompt", "x"}, {"max_tokens", 510}}), "max_tokens");  // 5 + 510 > 512
  EXPECT_EQ(f.refused(Ch, {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 2}}),
            "top_logprobs");
  EXPECT_EQ(f.refused(Ch, {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", 5}}}}}), "messages[0].content");
  EXPECT_EQ(f.refused(Ch, {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", {{{"type", "function"}}}}}),
            "tools");
  EXPECT_EQ(f.refused(Ch, {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"prompt", "x"}}), "prompt");
  // Accepted at their no-op values.
  f.parse(C, {{"model", "m"}, {"prompt", "x"}, {"presence_penalty", 0}, {"logit_bias", Json::object()}, {"user", "u"},
              {"best_of", 1}, {"suffix", nullptr}});
}

TEST(OpenAIApi, ChatRendersThePlainFormatWithBosAndDefaultsToTheRestOfTheContext) {
  Fixture f;
  ApiRequest r = f.parse(Endpoint::Chat, {{"model", "m"},
                                          {"messages", {{{"role", "developer"}, {"content", "Be brief."}},
                                                        {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Hi"}}}}}}},
                                          {"logprobs", true},
                                          {"top_logprobs", 3}});
  ASSERT_EQ(r.prompts.size(), 1u);
  const auto& ids = r.prompts[0];
  EXPECT_EQ(ids[0], *f.tok->bos_id());
  const std::string text = f.tok->decode(ids, true);
  EXPECT_NE(text.find("Be brief."), std::string::npos) << text;
  EXPECT_NE(text.find("User: Hi"), std::string::npos) << text;
  EXPECT_EQ(r.params.max_new_tokens, 512 - static_cast<int64_t>(ids.size()));
  EXPECT_EQ(r.top_logprobs, 3);
}

TEST(OpenAIApi, ResponsesAndChunksHaveTheOpenAIShape) {
  Fixture f;
  ApiRequest r = f.parse(Endpoint::Completions, {{"model", "m"}, {"prompt", "Once"}, {"n", 2}, {"echo", true},
                                                  {"logprobs", 1}, {"return_token_ids", true}});
  GeneratedSequence a, b;
  a.prompt_ids = b.prompt_ids = r.prompts[0];
  a.completion_ids = f.tok->encode(" upon a", false);
  a.logprobs.assign(a.completion_ids.size(), -0.5f);
  a.top_logprobs.assign(a.completion_ids.size(), {TokenLogprob{a.completion_ids[0], -0.25f}});
  a.text = " upon a";
  b.completion_ids = {2};
  b.logprobs = {-1.0f};
  b.top_logprobs = {{TokenLogprob{2, -1.0f}}};
  b.finish_reason = FinishReason::Stop;
  Json j = api_response(r, f.model, "cmpl-1", 7, {a, b});
  EXPECT_EQ(j.at("object"), "text_completion");
  EXPECT_EQ(j.at("choices").size(), 2u);
  EXPECT_EQ(j.at("choices")[0].at("text"), "Once upon a");  // echo
  EXPECT_EQ(j.at("choices")[0].at("logprobs").at("text_offset")[0], 4);
  EXPECT_EQ(j.at("choices")[1].at("finish_reason"), "stop");
  EXPECT_EQ(j.at("choices")[1].at("index"), 1);
  EXPECT_EQ(j.at("choices")[0].at("token_ids").get<std::vector<int32_t>>(), a.completion_ids);
  EXPECT_EQ(j.at("usage").at("prompt_tokens"), r.prompts[0].size());
  EXPECT_EQ(j.at("usage").at("completion_tokens"), a.completion_ids.size() + 1);

  ApiRequest c = f.parse(Endpoint::Chat, {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                          {"stream", true}, {"stream_options", {{"include_usage", true}}}});
  StreamPiece p;
  p.index = 0;
  p.text = "Hel";
  p.token_ids = {5};
  p.logprobs = {-0.1f};
  p.prompt_ids = &c.prompts[0];
  Json first = api_stream_chunk(c, f.model, "chatcmpl-1", 7, p);
  EXPECT_EQ(first.at("object"), "chat.completion.chunk");
  EXPECT_EQ(first.at("choices")[0].at("delta").at("role"), "assistant");
  EXPECT_EQ(first.at("choices")[0].at("delta").at("content"), "Hel");
  EXPECT_TRUE(first.at("choices")[0].at("finish_reason").is_null());
  EXPECT_TRUE(first.at("usage").is_null());
  p.prompt_ids = nullptr;
  p.text.clear();
  p.finish_reason = FinishReason::Length;
  Json last = api_stream_chunk(c, f.model, "chatcmpl-1", 7, p);
  EXPECT_FALSE(last.at("choices")[0].at("delta").contains("role"));
  EXPECT_EQ(last.at("choices")[0].at("finish_reason"), "length");
  Json usage = api_usage_chunk(c, f.model, "chatcmpl-1", 7, 4, 9);
  EXPECT_TRUE(usage.at("choices").empty());
  EXPECT_EQ(usage.at("usage").at("total_tokens"), 13);
}

}  // namespace
}  // namespace rlf
