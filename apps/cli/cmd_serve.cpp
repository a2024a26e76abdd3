// rlf serve: an OpenAI-compatible endpoint for a model (serve/server.h), so
// any OpenAI client, agent framework or judge can talk to it. Ctrl-C (SIGINT)
// or SIGTERM stops it after the requests being decoded finish (StopOnSignal).
// With --learn [CONFIG] it also learns from the feedback its users post
// (train/serve_learner.h; CONFIG: a TOML file with a [learn] table).
#include <filesystem>
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "rollout/policy.h"
#include "serve/server.h"
#include "train/serve_learner.h"
#include "setup/run_setup.h"
#include "util/error.h"

namespace rlf::cli {

namespace {

std::string default_model_name(const std::string& path) {
  std::filesystem::path p(path);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "dir/" -> "dir"
  std::string name = p.filename().string();
  if (p.has_extension() && std::filesystem::is_regular_file(p)) name = p.stem().string();
  return name.empty() ? "model" : name;
}

// --learn: the learner (null without it).
std::unique_ptr<ServeLearner> make_learner(const Args& args, Policy& policy, const std::string& dtype) {
  const bool learn = args.flag("learn");
  check(learn || (args.positional().empty() && !args.flag("resume") && !args.given("rollback-to")),
        "rlf serve: a learning config, --resume and --rollback-to need --learn");
  if (!learn) return nullptr;
  LearnOptions lo;
  if (!args.positional().empty()) lo = learn_options_from_file(args.positional()[0]);
  CausalLM frozen = nullptr;
  if (lo.distill_coef > 0 && lo.teacher == DistillTeacherKind::Frozen)
    frozen = load_run_policy(policy_spec_of(args, dtype)).model();  // the model as loaded: the teacher
  return std::make_unique<ServeLearner>(policy, frozen, lo, args.str("learn-dir"), args.flag("resume"),
                                        args.integer("rollback-to"));
}

int run_serve(const Args& args) {
  const std::string dtype = command_dtype(args, DtypeUse::Decoding);
  configure_threads(args, dtype, args.str("device"));
  Policy policy = load_run_policy(policy_spec_of(args, dtype));

  EngineOptions eo;
  eo.max_batch_rows = args.integer("max-batch");
  eo.max_seq_len = args.integer("max-seq-len");
  eo.eos_token_ids = policy.eos_token_ids;
  eo.seed = static_cast<uint64_t>(args.integer("seed"));

  ServeOptions so;
  so.host = args.str("host");
  so.port = args.integer("port");
  so.model_name = args.given("served-model-name") ? args.str("served-model-name") : default_model_name(args.str("model"));
  so.chat_template = args.str("chat-template");
  so.tool_parser = args.str("tool-parser");
  so.http.threads = args.integer("http-threads");
  so.http.header_timeout_s = args.number("header-timeout");
  so.http.max_connections_per_client = args.integer("max-connections-per-client");
  so.max_pending = args.integer("max-pending");
  if (args.given("api-key-env")) {
    const std::string var = args.str("api-key-env");
    auto key = read_process_env(var);
    check(key && !key->empty(), "rlf serve: --api-key-env ", var, " names an unset or empty environment variable; "
          "export ", var, "=<key> or leave --api-key-env out to serve without a key");
    so.api_key = *key;
  }
  with_context("rlf serve", [&] { so.validate("--"); });

  std::unique_ptr<ServeLearner> learner = make_learner(args, policy, dtype);
  Server server(policy, eo, so, learner.get());
  const int port = server.bind();
  StopOnSignal on_signal([&] {
    std::cerr << "rlf serve: stopping (finishing the requests being decoded)\n";
    server.stop();
  });
  std::cout << "rlf serve: model '" << so.model_name << "' on http://" << so.host << ":" << port << "/v1"
            << " (chat format " << server.chat_format() << (so.api_key.empty() ? "" : ", API key required") << ")"
            << std::endl;
  if (learner)
    std::cout << "rlf serve: learning from POST /v1/feedback into " << args.str("learn-dir") << " (serving version "
              << learner->version() << ")" << std::endl;
  server.run();
  const auto c = server.counters();
  std::cerr << "rlf serve: stopped after " << c.requests << " requests (" << c.errors_4xx << " refused, " << c.errors_5xx
            << " failed, " << c.cancelled << " streams cancelled by their clients)\n";
  return 0;
}

}  // namespace

CommandSpec make_serve_command() {
  CommandSpec c;
  c.name = "serve";
  c.summary = "serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions); "
              "--learn: learn from POST /v1/feedback while serving";
  c.usage = "[LEARN_CONFIG]";
  c.n_positional_max = 1;
  c.options = {
      {"model", OptKind::String, "", "model: a Hugging Face directory or a llama2.c checkpoint (.bin)", "PATH"},
      {"tokenizer", OptKind::String, "", "tokenizer.json, a directory with one, or a llama2.c tok*.bin (default: the model's)", "PATH"},
      {"adapter", OptKind::String, "", "a LoRA adapter directory in the PEFT layout applied to --model", "DIR"},
      {"host", OptKind::String, "127.0.0.1", "interface to listen on (0.0.0.0 = every interface)", "ADDR"},
      {"port", OptKind::Int, "8000", "TCP port; 0 = any free port (printed at start)", "N", 0, 65535},
      {"served-model-name", OptKind::String, "", "the model id clients send (default: the model's directory or file name)", "NAME"},
      {"api-key-env", OptKind::String, "", "require \"Authorization: Bearer <key>\" with the key read from this environment "
       "variable (e.g. RLF_API_KEY)", "VAR"},
      {"chat-template", OptKind::String, "auto", "chat for /v1/chat/completions: auto (the model's own Jinja template; plain without one), "
       "a .jinja file / tokenizer_config.json / model dir, none, or a fixed format: plain, chatml, qwen2, llama3, llama31, llama2, phi3", "FORMAT|PATH"},
      {"tool-parser", OptKind::String, "auto", "the model's tool-call format: auto (from its template), hermes, llama3_json, mistral, none", "NAME"},
      {"max-batch", OptKind::Int, "64", "sequences decoded together (continuous batching across requests)", "N", 1, 65536},
      {"pack-weights", OptKind::String, "on", "on|off: fp32 CPU decoding multiplies by a packed copy of the weights (off: no copy, less memory)", "ON|OFF"},
      {"max-seq-len", OptKind::Int, "0", "tokens per sequence (prompt + completion); 0 = the model's context", "N", 0, 1e7},
      {"http-threads", OptKind::Int, "256", "HTTP requests handled at once (a streamed reply holds one to its end)", "N", 1, 65536},
      {"header-timeout", OptKind::Float, "10", "seconds a client has to send a request's headers (then 408)", "S", 0.001, 3600},
      {"max-connections-per-client", OptKind::Int, "256", "open connections from one client address; more get 503", "N", 1, 65536},
      {"max-pending", OptKind::Int, "4096", "requests waiting for the engine beyond this get 503", "N", 1, 1e9},
      {"seed", OptKind::Int, "0", "seeds requests that carry no seed (in arrival order)", "N", 0, 9.2e18},
      {"dtype", OptKind::String, "auto", "compute dtype: auto (bf16 on a GPU, fp32 on a CPU: the fast ones for decoding), fp32 or bf16", "DTYPE"},
      {"learn", OptKind::Flag, "false", "learn from the feedback users POST to /v1/feedback while serving (docs/serve.md); "
       "LEARN_CONFIG: a TOML file with a [learn] table (defaults without one)", ""},
      {"learn-dir", OptKind::String, "runs/serve-learn", "--learn: where versions (checkpoints), feedback.jsonl and "
       "updates.jsonl go", "DIR"},
      {"resume", OptKind::Flag, "false", "--learn: continue the learning run in --learn-dir (its newest version, its unused feedback)", ""},
      {"rollback-to", OptKind::Int, "-1", "--learn --resume: serve version N's weights again, as a new version", "N", -1, 9.2e18},
  };
  c.run = [](const Args& a) {
    check(a.given("model"), "rlf serve: --model PATH is required");
    return run_serve(a);
  };
  return c;
}

}  // namespace rlf::cli
