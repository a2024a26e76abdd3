#include "tokenizer/chat_turns.h"

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace rlf {
namespace {

// Stands in for the last assistant turn's content: plain ASCII that no
// template strips, splits or escapes.
constexpr const char* kMarker = "RLFTURNMARKER7f3a";

std::string render_text(const JinjaChatTemplate& t, ChatInput in, bool add_generation_prompt,
                        const ChatRenderSettings& s) {
  in.add_generation_prompt = add_generation_prompt;
  return t.render(in, s).text;
}

ChatInput prefix_of(const ChatInput& conv, size_t n_messages) {
  ChatInput in = conv;
  in.messages = OrderedJson::array();
  for (size_t i = 0; i < n_messages; ++i) in.messages.push_back(conv.messages[i]);
  return in;
}

bool is_assistant(const OrderedJson& m) { return m.is_object() && m.value("role", "") == "assistant"; }

// Earliest occurrence at or after `from` of any stop text: (position, length).
std::optional<std::pair<size_t, size_t>> find_stop(const std::string& text, size_t from,
                                                   const std::vector<std::string>& stops) {
  std::optional<std::pair<size_t, size_t>> best;
  for (const auto& s : stops) {
    if (s.empty()) continue;
    const size_t at = text.find(s, from);
    if (at != std::string::npos && (!best || at < best->first)) best = std::make_pair(at, s.size());
  }
  return best;
}

std::string context(const std::string& s, size_t at) {
  const size_t from = at > 30 ? at - 30 : 0;
  return s.substr(from, 80);
}

PrefixStep compare(const std::string& what, const std::string& earlier, const std::string& later, const Tokenizer* tok) {
  PrefixStep step;
  step.what = what;
  if (tok != nullptr) {
    const std::vector<int32_t> a = tok->encode(earlier, false), b = tok->encode(later, false);
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    step.ok = i == a.size();
    step.diverge_at = i;
    if (!step.ok) {
      auto window = [&](const std::vector<int32_t>& ids) {
        const size_t from = i > 3 ? i - 3 : 0;
        return tok->decode(std::vector<int32_t>(ids.begin() + static_cast<long>(from),
                                                ids.begin() + static_cast<long>(std::min(ids.size(), i + 6))));
      };
      step.earlier = window(a);
      step.later = window(b);
    }
    return step;
  }
  size_t i = 0;
  while (i < earlier.size() && i < later.size() && earlier[i] == later[i]) ++i;
  step.ok = i == earlier.size();
  step.diverge_at = i;
  if (!step.ok) {
    step.earlier = context(earlier, i);
    step.later = context(later, i);
  }
  return step;
}

}  // namespace

std::string render_bridge(const JinjaChatTemplate& tmpl, const ChatInput& history, const OrderedJson& new_messages,
                          const std::vector<std::string>& stop_texts, const ChatRenderSettings& settings) {
  check(!history.messages.empty() && is_assistant(history.messages.back()),
        "render_bridge: the history must end with the policy's assistant message");
  check(new_messages.is_array() && !new_messages.empty(), "render_bridge: no messages to append");
  check(!stop_texts.empty(), "render_bridge: no stop texts (the model's end-of-turn tokens)");
  ChatInput next = history;
  for (const auto& m : new_messages) next.messages.push_back(m);
  const std::string after = render_text(tmpl, next, true, settings);
  // A template that renders the turn the same way once messages follow it:
  // the bridge is what the longer rendering adds after the turn's stop text.
  const std::string before = render_text(tmpl, history, false, settings);
  size_t cut = std::string::npos;
  for (const auto& stop : stop_texts) {
    const size_t at = before.rfind(stop);
    if (at != std::string::npos && (cut == std::string::npos || at + stop.size() > cut)) cut = at + stop.size();
  }
  if (cut != std::string::npos && after.compare(0, cut, before, 0, cut) == 0) return after.substr(cut);
  // A template that rewrites the turn (drops its reasoning, re-serialises its
  // tool calls): find where the turn ends by rendering a marker as its content.
  ChatInput in = next;
  OrderedJson& last = in.messages[history.messages.size() - 1];
  last["content"] = kMarker;
  for (const char* k : {"reasoning_content", "thinking", "reasoning"}) last.erase(k);
  const std::string text = render_text(tmpl, in, true, settings);
  const size_t marker = text.rfind(kMarker);
  check(marker != std::string::npos, "chat template '", tmpl.origin(),
        "': rewrites the assistant turn when messages follow it and does not render its content, so the end of the "
        "turn cannot be located");
  const auto stop = find_stop(text, marker + std::string(kMarker).size(), stop_texts);
  if (!stop) {
    std::string list;
    for (const auto& st : stop_texts) list += (list.empty() ? "" : ", ") + st;
    fail("chat template '", tmpl.origin(), "' writes none of the stop texts (", list,
         ") after an assistant turn; give the model's end-of-turn token");
  }
  return text.substr(stop->first + stop->second);
}

std::vector<std::string> infer_stop_texts(const JinjaChatTemplate& tmpl, const Tokenizer& tok,
                                          const ChatRenderSettings& settings) {
  ChatInput in;
  in.messages = OrderedJson::array({{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", kMarker}}});
  const std::string text = render_text(tmpl, in, false, settings);
  const size_t at = text.rfind(kMarker);
  if (at == std::string::npos) return {};
  for (int32_t id : tok.encode(text.substr(at + std::string(kMarker).size()), false))
    if (tok.is_special(id)) return {tok.token_string(id)};
  return {};
}

ChatInput probe_conversation() {
  const OrderedJson tool = {
      {"type", "function"},
      {"function",
       {{"name", "calculator"},
        {"description", "Evaluate an arithmetic expression."},
        {"parameters",
         {{"type", "object"},
          {"properties", {{"expression", {{"type", "string"}, {"description", "e.g. 6*7"}}}}},
          {"required", {"expression"}}}}}}};
  ChatInput in;
  in.tools = OrderedJson::array({tool});
  in.messages = OrderedJson::array({
      {{"role", "system"}, {"content", "You are a careful assistant."}},
      {{"role", "user"}, {"content", "What is 6 times 7?"}},
      {{"role", "assistant"}, {"reasoning_content", "6*7 = 42."}, {"content", "42."}},
      {{"role", "user"}, {"content", "Now add 8, using the calculator."}},
      {{"role", "assistant"},
       {"reasoning_content", "Call the tool."},
       {"content", ""},
       {"tool_calls",
        OrderedJson::array({{{"id", "call_1"},
                             {"type", "function"},
                             {"function", {{"name", "calculator"}, {"arguments", {{"expression", "42+8"}}}}}}})}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"name", "calculator"}, {"content", "50"}},
      {{"role", "assistant"}, {"content", "50."}},
  });
  return in;
}

PrefixReport check_prefix_preservation(const JinjaChatTemplate& tmpl, const ChatInput& conversation,
                                       const Tokenizer* tok, const ChatRenderSettings& settings) {
  PrefixReport report;
  report.compared_tokens = tok != nullptr;
  std::optional<std::string> previous_turn;  // rendering that ended with the previous assistant message
  size_t n_turn = 0;
  for (size_t k = 0; k < conversation.messages.size(); ++k) {
    if (!is_assistant(conversation.messages[k])) continue;
    ++n_turn;
    const std::string prompt = render_text(tmpl, prefix_of(conversation, k), true, settings);
    const std::string turn = render_text(tmpl, prefix_of(conversation, k + 1), false, settings);
    if (previous_turn)
      report.steps.push_back(compare("before turn " + std::to_string(n_turn) + ": history after turn " +
                                         std::to_string(n_turn - 1) + " -> next generation prompt",
                                     *previous_turn, prompt, tok));
    report.steps.push_back(
        compare("turn " + std::to_string(n_turn) + ": generation prompt -> rendered turn", prompt, turn, tok));
    previous_turn = turn;
  }
  check(n_turn > 0, "check_prefix_preservation: the conversation has no assistant message");
  for (const auto& s : report.steps) report.preserving = report.preserving && s.ok;
  return report;
}

LossMaskReport explain_loss_mask(const JinjaChatTemplate& tmpl, const ChatInput& conversation,
                                 const std::vector<std::string>& stop_texts, const ChatRenderSettings& settings) {
  LossMaskReport report;
  ChatInput whole = conversation;
  whole.add_generation_prompt = false;
  const RenderedChat full = tmpl.render(whole, settings);
  report.text = full.text;
  for (const auto& g : full.generation) report.generation.push_back({g.begin, g.end});
  for (size_t k = 0; k < conversation.messages.size(); ++k) {
    if (!is_assistant(conversation.messages[k])) continue;
    const std::string prompt = render_text(tmpl, prefix_of(conversation, k), true, settings);
    const std::string turn = render_text(tmpl, prefix_of(conversation, k + 1), false, settings);
    size_t begin = 0;  // where the generated text starts: after the generation prompt
    while (begin < prompt.size() && begin < turn.size() && prompt[begin] == turn[begin]) ++begin;
    const auto stop = find_stop(turn, begin, stop_texts);
    const size_t end = stop ? stop->first + stop->second : turn.size();
    PolicySegment t;
    t.message_index = k;
    t.trained = turn.substr(begin, end - begin);
    // It sits where it was generated only if re-rendering the whole
    // conversation kept everything up to its end (a prefix-preserving template).
    if (begin == prompt.size() && full.text.compare(0, end, turn, 0, end) == 0) t.in_text = MaskedSpan{begin, end};
    report.turns.push_back(std::move(t));
  }
  return report;
}

}  // namespace rlf
