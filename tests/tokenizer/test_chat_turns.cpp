// Multi-turn rendering with real chat templates (tokenizer/chat_turns.h):
// the stop text a template ends turns with, prefix preservation (Qwen2.5 keeps
// history; Qwen3 drops earlier reasoning), the bridge rlf appends after a
// sampled turn, and token-exact episodes built from sampled ids + bridges.
#include <gtest/gtest.h>

#include "tests/support/test_env.h"
#include "tokenizer/chat_turns.h"
#include "tokenizer/tokenizer.h"

namespace rlf {
namespace {

JinjaChatTemplate shared_template(const std::string& name) {
  return JinjaChatTemplate::load(test::shared_path("chat_templates/llama.cpp__" + name + ".jinja").string());
}

JinjaChatTemplate collected(const std::string& file) {
  return JinjaChatTemplate::load(test::source_path("tests/tokenizer/chat_templates/" + file).string());
}

const Tokenizer& qwen_tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = load_tokenizer(test::shared_path("tokenizers/hf/qwen2.5").string());
  return *tok;
}

ChatRenderSettings fixed_date() {
  ChatRenderSettings s;
  s.date = CalendarDate{2025, 3, 14};
  return s;
}

ChatInput first(const ChatInput& conv, size_t n, bool gen) {
  ChatInput in = conv;
  in.messages = OrderedJson::array();
  for (size_t i = 0; i < n; ++i) in.messages.push_back(conv.messages[i]);
  in.add_generation_prompt = gen;
  return in;
}

OrderedJson slice(const OrderedJson& messages, size_t from, size_t to) {
  OrderedJson out = OrderedJson::array();
  for (size_t i = from; i < to; ++i) out.push_back(messages[i]);
  return out;
}

TEST(ChatTurns, StopTextIsTheSpecialTokenAfterATurn) {
  const auto s = fixed_date();
  EXPECT_EQ(infer_stop_texts(shared_template("Qwen-Qwen2.5-7B-Instruct"), qwen_tokenizer(), s), std::vector<std::string>{"<|im_end|>"});
  auto llama = load_tokenizer(test::shared_path("tokenizers/hf/llama3.2").string());
  EXPECT_EQ(infer_stop_texts(shared_template("meta-llama-Llama-3.2-3B-Instruct"), *llama, s),
            std::vector<std::string>{"<|eot_id|>"});
}

TEST(ChatTurns, PrefixPreservationQwen25KeepsHistoryQwen3DropsReasoning) {
  const auto s = fixed_date();
  const Tokenizer* tok = &qwen_tokenizer();
  const ChatInput probe = probe_conversation();
  PrefixReport q25 = check_prefix_preservation(shared_template("Qwen-Qwen2.5-7B-Instruct"), probe, tok, s);
  EXPECT_TRUE(q25.compared_tokens);
  EXPECT_TRUE(q25.preserving);
  EXPECT_EQ(q25.steps.size(), 5u);  // 3 turns, 2 transitions between them
  PrefixReport q3 = check_prefix_preservation(collected("Qwen-Qwen3-0.6B.jinja"), probe, tok, s);
  EXPECT_FALSE(q3.preserving);
  // Re-rendering drops turn 1's reasoning once the user speaks again.
  bool found = false;
  for (const auto& step : q3.steps)
    if (!step.ok && step.what.find("history after turn 1") != std::string::npos) {
      found = true;
      EXPECT_NE(step.earlier.find("<think>"), std::string::npos) << step.earlier;
    }
  EXPECT_TRUE(found);
}

// For a prefix-preserving template, the history up to the stop text plus the
// bridge is exactly the re-rendered conversation.
TEST(ChatTurns, BridgeCompletesTheRerenderingOfPreservingTemplates) {
  const auto s = fixed_date();
  const ChatInput probe = probe_conversation();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"Qwen-Qwen2.5-7B-Instruct", "<|im_end|>"}, {"meta-llama-Llama-3.1-8B-Instruct", "<|eot_id|>"}};
  for (const auto& [name, stop] : cases) {
    const JinjaChatTemplate t = shared_template(name);
    for (size_t k : {2u, 4u}) {  // after a plain answer (user follows), after a tool call (tool result follows)
      size_t next = k + 1;
      while (probe.messages[next].value("role", "") != "assistant") ++next;
      const std::string before = t.render(first(probe, k + 1, false), s).text;
      const std::string after = t.render(first(probe, next, true), s).text;
      const std::string bridge = render_bridge(t, first(probe, k + 1, false), slice(probe.messages, k + 1, next), {stop}, s);
      const size_t cut = before.rfind(stop) + stop.size();
      EXPECT_EQ(before.substr(0, cut) + bridge, after) << name << " after message " << k;
    }
  }
}

// An episode built as rlf's environments build it (prompt ids, then each
// sampled turn's ids, then the bridge's ids) is token-exact: for Qwen2.5 it
// equals tokenising the re-rendered conversation; for Qwen3, whose
// re-rendering drops the first turn's reasoning, the episode keeps the ids
// that were sampled and still ends with the template's own next prompt.
TEST(ChatTurns, EpisodesFromSampledIdsAndBridgesAreTokenExact) {
  const auto s = fixed_date();
  const Tokenizer* tok = &qwen_tokenizer();
  const ChatInput probe = probe_conversation();
  for (const char* which : {"qwen2.5", "qwen3"}) {
    const JinjaChatTemplate t =
        std::string(which) == "qwen2.5" ? shared_template("Qwen-Qwen2.5-7B-Instruct") : collected("Qwen-Qwen3-0.6B.jinja");
    const std::vector<std::string> stops = infer_stop_texts(t, *tok, s);
    ASSERT_EQ(stops, std::vector<std::string>{"<|im_end|>"});
    std::vector<int32_t> episode = tok->encode(t.render(first(probe, 2, true), s).text, false);
    std::vector<int32_t> sampled_turn1;
    size_t k = 2;
    while (true) {
      // What the policy samples at this turn: the template's rendering of the turn through its stop token.
      const std::string prompt = t.render(first(probe, k, true), s).text;
      const std::string turn = t.render(first(probe, k + 1, false), s).text;
      ASSERT_EQ(turn.compare(0, prompt.size(), prompt), 0);
      const std::string sampled = turn.substr(prompt.size(), turn.find("<|im_end|>", prompt.size()) + 10 - prompt.size());
      const std::vector<int32_t> ids = tok->encode(sampled, false);
      if (k == 2) sampled_turn1 = ids;
      episode.insert(episode.end(), ids.begin(), ids.end());
      size_t next = k + 1;
      while (next < probe.messages.size() && probe.messages[next].value("role", "") != "assistant") ++next;
      if (next >= probe.messages.size()) break;
      const std::string bridge = render_bridge(t, first(probe, k + 1, false), slice(probe.messages, k + 1, next), stops, s);
      const std::vector<int32_t> bridge_ids = tok->encode(bridge, false);
      episode.insert(episode.end(), bridge_ids.begin(), bridge_ids.end());
      // The episode so far ends with the template's own generation prompt for the next turn.
      const std::string next_prompt = t.render(first(probe, next, true), s).text;
      ASSERT_GE(next_prompt.size(), bridge.size());
      EXPECT_EQ(next_prompt.substr(next_prompt.size() - bridge.size()), bridge) << which;
      k = next;
    }
    const std::vector<int32_t> rerendered = tok->encode(t.render(first(probe, probe.messages.size(), false), s).text, false);
    if (std::string(which) == "qwen2.5") {
      ASSERT_LE(episode.size(), rerendered.size());
      EXPECT_TRUE(std::equal(episode.begin(), episode.end(), rerendered.begin()));
    } else {
      EXPECT_NE(std::vector<int32_t>(rerendered.begin(), rerendered.begin() + static_cast<long>(std::min(episode.size(), rerendered.size()))),
                episode);
      // The first turn's sampled reasoning is still in the episode.
      EXPECT_NE(tok->decode(sampled_turn1).find("6*7 = 42."), std::string::npos);
      EXPECT_NE(tok->decode(episode).find("6*7 = 42."), std::string::npos);
    }
  }
}

TEST(ChatTurns, LossMaskMatchesGenerationBlocksOfATrainingTemplate) {
  const auto s = fixed_date();
  const JinjaChatTemplate t = collected("trl-qwen3_training.jinja");
  const ChatInput probe = probe_conversation();
  const LossMaskReport r = explain_loss_mask(t, probe, {"<|im_end|>"}, s);
  ASSERT_EQ(r.turns.size(), 3u);
  ASSERT_FALSE(r.generation.empty());
  for (const auto& turn : r.turns) {
    ASSERT_TRUE(turn.in_text) << "message " << turn.message_index << " rewritten: " << turn.trained;
    EXPECT_EQ(r.text.substr(turn.in_text->begin, turn.in_text->end - turn.in_text->begin), turn.trained);
    EXPECT_EQ(turn.trained.substr(turn.trained.size() - 10), "<|im_end|>");
  }
  // Each {% generation %} span starts where rlf's policy segment starts and
  // holds the same text, plus the newline TRL's template adds after the stop
  // token (which the model never samples: rlf renders it in the bridge).
  ASSERT_EQ(r.generation.size(), r.turns.size());
  for (size_t i = 0; i < r.turns.size(); ++i) {
    EXPECT_EQ(r.generation[i].begin, r.turns[i].in_text->begin);
    EXPECT_EQ(r.text.substr(r.generation[i].begin, r.generation[i].end - r.generation[i].begin), r.turns[i].trained + "\n");
  }
}

TEST(ChatTurns, BridgeNeedsTheModelsStopText) {
  const auto s = fixed_date();
  const ChatInput probe = probe_conversation();
  const std::string err = test::error_of([&] {
    render_bridge(shared_template("Qwen-Qwen2.5-7B-Instruct"), first(probe, 3, false), slice(probe.messages, 3, 4),
                  {"<|eot_id|>"}, s);
  });
  EXPECT_NE(err.find("writes none of the stop texts (<|eot_id|>)"), std::string::npos) << err;
}

}  // namespace
}  // namespace rlf
