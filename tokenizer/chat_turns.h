// Multi-turn rendering with a model's own chat template, token-exact:
//
//  * render_bridge: the text to append after a policy turn that ended with a
//    stop token, up to the next generation prompt. An environment keeps the
//    sampled ids and appends only the tokens of this bridge, so history is
//    never re-rendered or re-tokenised, even for templates that rewrite it
//    (Qwen3 drops earlier reasoning, some templates re-serialise tool calls).
//  * check_prefix_preservation: whether re-rendering the whole conversation
//    after each turn only appends (the property re-tokenising trainers need),
//    and where it breaks when it does not.
//  * explain_loss_mask: which text a policy segment trains (from the
//    generation prompt to the end of the turn, stop token included), next to
//    the template's own {% generation %} spans when it has them.
//
// The bridge is found structurally: the last assistant message is rendered
// with a marker as its content, and the bridge is what follows the first stop
// text (the model's end-of-turn token, e.g. "<|im_end|>") after the marker.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja_chat_template.h"

namespace rlf {

class Tokenizer;

// The text after the policy's last turn (which the model ended by sampling
// one of `stop_texts`) through the next generation prompt, for appending
// `new_messages` (tool results, a user turn). `history` must end with that
// assistant message. Throws rlf::Error when the template writes none of
// `stop_texts` after the turn (then the stop texts are wrong for this model).
std::string render_bridge(const JinjaChatTemplate& tmpl, const ChatInput& history, const OrderedJson& new_messages,
                          const std::vector<std::string>& stop_texts, const ChatRenderSettings& settings);

// The strings a model ends its turn with: the special tokens the template
// writes right after an assistant message's content (found by rendering a
// probe), e.g. {"<|im_end|>"} for ChatML. Empty when none is a special token.
std::vector<std::string> infer_stop_texts(const JinjaChatTemplate& tmpl, const Tokenizer& tok,
                                          const ChatRenderSettings& settings);

// A multi-turn conversation that probes what templates rewrite: a system
// prompt, reasoning, a tool call with its result, several user turns.
ChatInput probe_conversation();

struct PrefixStep {
  std::string what;        // "turn 2: generation prompt -> rendered turn", ...
  bool ok = true;
  size_t diverge_at = 0;   // byte offset (or token index when tokens were compared)
  std::string earlier, later;  // context around the divergence
};

struct PrefixReport {
  bool preserving = true;
  bool compared_tokens = false;  // ids when a tokenizer was given, else text
  std::vector<PrefixStep> steps;
};

// Renders every prefix of `conversation` that ends before / after an
// assistant message and checks that each rendering extends the previous one.
PrefixReport check_prefix_preservation(const JinjaChatTemplate& tmpl, const ChatInput& conversation,
                                       const Tokenizer* tok, const ChatRenderSettings& settings);

struct MaskedSpan {
  size_t begin = 0, end = 0;  // bytes of the rendered conversation
};

// One assistant turn as the policy generated it: the text from its
// generation prompt through its stop text.
struct PolicySegment {
  size_t message_index = 0;
  std::string trained;
  std::optional<MaskedSpan> in_text;  // where it sits in the whole rendering; nullopt when re-rendering rewrote it
};

struct LossMaskReport {
  std::string text;                       // the whole conversation, rendered
  std::vector<PolicySegment> turns;          // what rlf trains
  std::vector<MaskedSpan> generation;     // the template's {% generation %} spans (may be empty)
};

// The policy segments of `conversation` (each assistant turn from its
// generation prompt through its stop text) and the template's generation spans.
LossMaskReport explain_loss_mask(const JinjaChatTemplate& tmpl, const ChatInput& conversation,
                                 const std::vector<std::string>& stop_texts, const ChatRenderSettings& settings);

}  // namespace rlf
