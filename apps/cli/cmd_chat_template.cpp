// `rlf chat-template render` and `rlf chat-template check`: a model's own
// Jinja chat template rendered as transformers renders it, and what it means
// for multi-turn training (prefix preservation, the bridge rlf appends between
// turns, the loss mask). The work is in tokenizer/jinja_chat_template.h and
// tokenizer/chat_turns.h; see docs/chat_templates.md.
#include <filesystem>
#include <iostream>

#include "apps/cli/cli.h"
#include "tokenizer/chat_turns.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf::cli {

namespace {

ChatRenderSettings render_settings(const Args& args) {
  ChatRenderSettings s;
  if (args.given("date")) s.date = parse_calendar_date(args.str("date"), "--date");
  s.compat = with_context("--transformers", [&] { return parse_transformers_compat(args.str("transformers")); });
  return s;
}

std::vector<OptionSpec> shared_options() {
  return {
      {"template", OptKind::String, "", "the chat template: a .jinja file, a tokenizer_config.json or a model directory", "PATH"},
      {"date", OptKind::String, "", "the date strftime_now gives (default: today), for reproducible renderings", "YYYY-MM-DD"},
      {"transformers", OptKind::String, "5", "input handling of transformers 5 (null keys dropped, reasoning aliases) or 4", "4|5"},
  };
}

int run_render(const Args& args) {
  check(args.given("template"), "chat-template render: --template PATH is required");
  check(args.given("conversation"), "chat-template render: --conversation FILE.json is required");
  const JinjaChatTemplate tmpl = JinjaChatTemplate::load(args.str("template"));
  const ChatInput input = parse_chat_input(read_file(args.str("conversation")), args.str("conversation"));
  RenderedChat out;
  try {
    out = tmpl.render(input, render_settings(args));
  } catch (const jinja::Error& e) {
    fail(e.kind() == jinja::ErrorKind::Raised ? "the chat template raised: " : "rendering failed: ", e.what());
  }
  if (args.flag("json")) {
    Json spans = Json::array();
    for (const auto& g : out.generation) spans.push_back({g.begin, g.end});
    std::cout << json_line(Json{{"text", out.text}, {"generation", spans}}) << "\n";
  } else {
    std::cout << out.text << std::flush;
  }
  return 0;
}

// The tokenizer to compare ids with: --tokenizer, else the model directory's own.
std::unique_ptr<Tokenizer> check_tokenizer(const Args& args) {
  if (args.given("tokenizer")) return load_tokenizer(args.str("tokenizer"));
  const fs::path t(args.str("template"));
  if (fs::is_directory(t) && fs::exists(t / "tokenizer.json")) return load_tokenizer(t.string());
  return nullptr;
}

std::string shown(const std::string& s) { return json_line(Json(s)); }

void print_prefix_report(const PrefixReport& r) {
  std::cout << "prefix-preserving (" << (r.compared_tokens ? "token ids" : "text; give --tokenizer for ids") << "): "
            << (r.preserving ? "yes" : "no") << "\n";
  for (const auto& s : r.steps) {
    std::cout << "  " << s.what << ": ";
    if (s.ok) {
      std::cout << "extends\n";
      continue;
    }
    std::cout << "DIVERGES at " << (r.compared_tokens ? "token " : "byte ") << s.diverge_at << "\n      was "
              << shown(s.earlier) << "\n   becomes " << shown(s.later) << "\n";
  }
  if (!r.preserving)
    std::cout << "  -> re-rendering rewrites history; rlf's environments keep the sampled ids and append only the\n"
                 "     bridge below, so multi-turn episodes stay token-exact with this template.\n";
}

void print_bridges(const JinjaChatTemplate& tmpl, const ChatInput& conv, const std::vector<std::string>& stops,
                   const ChatRenderSettings& s) {
  std::cout << "bridges rlf appends after a turn that ended with " << shown(stops[0]) << ":\n";
  for (size_t k = 0; k + 1 < conv.messages.size(); ++k) {
    if (conv.messages[k].value("role", "") != "assistant") continue;
    ChatInput history = conv;
    history.messages = OrderedJson::array();
    for (size_t i = 0; i <= k; ++i) history.messages.push_back(conv.messages[i]);
    OrderedJson next = OrderedJson::array();
    for (size_t i = k + 1; i < conv.messages.size() && conv.messages[i].value("role", "") != "assistant"; ++i)
      next.push_back(conv.messages[i]);
    if (next.empty()) continue;
    std::string roles;
    for (const auto& m : next) roles += (roles.empty() ? "" : "+") + m.value("role", "?");
    std::cout << "  after message " << k << ", " << roles << ": " << shown(render_bridge(tmpl, history, next, stops, s))
              << "\n";
  }
}

void print_loss_mask(const LossMaskReport& r, const Tokenizer* tok) {
  std::cout << "loss mask: what a policy segment trains (one assistant turn, as generated, stop text included)\n";
  std::string marked = r.text;
  for (auto it = r.turns.rbegin(); it != r.turns.rend(); ++it)
    if (it->in_text) {
      marked.insert(it->in_text->end, "]]");
      marked.insert(it->in_text->begin, "[[");
    }
  for (const auto& t : r.turns) {
    std::cout << "  message " << t.message_index << (t.in_text ? "" : " (rewritten when re-rendered)") << ": "
              << shown(t.trained);
    if (tok != nullptr) std::cout << " (" << tok->encode(t.trained, false).size() << " tokens)";
    std::cout << "\n";
  }
  std::cout << "  the whole conversation, trained text in [[ ]]:\n" << marked << "\n";
  if (r.generation.empty()) {
    std::cout << "  the template has no {% generation %} blocks\n";
    return;
  }
  std::cout << "  the template's {% generation %} spans (transformers' assistant mask):\n";
  for (const auto& g : r.generation) std::cout << "    " << shown(r.text.substr(g.begin, g.end - g.begin)) << "\n";
}

int run_check(const Args& args) {
  check(args.given("template"), "chat-template check: --template PATH is required");
  const JinjaChatTemplate tmpl = JinjaChatTemplate::load(args.str("template"));
  const ChatRenderSettings settings = render_settings(args);
  const std::unique_ptr<Tokenizer> tok = check_tokenizer(args);
  ChatInput conv = probe_conversation();
  if (args.given("conversation")) conv = parse_chat_input(read_file(args.str("conversation")), args.str("conversation"));
  std::vector<std::string> stops = args.list("stop");
  if (stops.empty() && tok) stops = infer_stop_texts(tmpl, *tok, settings);
  if (stops.empty() && tmpl.special_tokens().count("eos_token")) stops = {tmpl.special_tokens().at("eos_token")};
  std::cout << "chat template " << tmpl.origin() << " (transformers " << args.str("transformers")
            << " input handling)\n";
  try {
    print_prefix_report(check_prefix_preservation(tmpl, conv, tok.get(), settings));
    if (stops.empty()) {
      std::cout << "no stop text known: give --stop TEXT (the model's end-of-turn token) or --tokenizer for the "
                   "bridges and the loss mask\n";
      return 0;
    }
    print_bridges(tmpl, conv, stops, settings);
    print_loss_mask(explain_loss_mask(tmpl, conv, stops, settings), tok.get());
  } catch (const jinja::Error& e) {
    fail("rendering the ", args.given("conversation") ? "conversation" : "probe conversation", " failed: ", e.what());
  }
  return 0;
}

}  // namespace

CommandSpec make_chat_template_render_command() {
  CommandSpec c;
  c.name = "chat-template render";
  c.summary = "render a conversation with a model's own Jinja chat template, exactly as transformers does";
  c.options = shared_options();
  c.options.push_back({"conversation", OptKind::String, "",
                       "{\"messages\": [...], \"tools\", \"documents\", \"add_generation_prompt\", \"bos_token\", "
                       "\"eos_token\", \"kwargs\": {...}}",
                       "FILE.json"});
  c.options.push_back({"json", OptKind::Flag, "false",
                       "print {\"text\": ..., \"generation\": [[begin, end], ...]} (byte spans of {% generation %})", ""});
  c.run = run_render;
  return c;
}

CommandSpec make_chat_template_check_command() {
  CommandSpec c;
  c.name = "chat-template check";
  c.summary = "check a chat template for multi-turn training: prefix preservation, turn bridges, loss mask";
  c.options = shared_options();
  c.options.push_back({"conversation", OptKind::String, "",
                       "conversation to check (default: a built-in probe with reasoning, a tool call and several turns)",
                       "FILE.json"});
  c.options.push_back({"tokenizer", OptKind::String, "",
                       "compare token ids with this tokenizer (default: the model directory's own, if --template is one)",
                       "PATH"});
  c.options.push_back({"stop", OptKind::List, "",
                       "the model's end-of-turn text (repeatable; default: the special token the template writes after "
                       "an assistant turn)",
                       "TEXT"});
  c.run = run_check;
  return c;
}

}  // namespace rlf::cli
