// Black-box agents (env/agent_env.h) on stories260K: a Python agent calls the
// policy over the OpenAI-compatible endpoint twice per episode and reports a
// reward. The episode holds exactly the ids the policy sampled (which the
// agent also received, as the token_ids extension) and the rendered
// continuation of the conversation as an observation; agents that crash,
// hang, rewrite the history or never report end only their own episode.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "data/prompt_format.h"
#include "env/agent_env.h"
#include "env/episode_producer.h"
#include "tests/support/test_env.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace rlf {
namespace {

// The task's prompt says how the agent behaves: "normal", "crash", "hang",
// "rewrite" (changes its first message on the second call), "silent" (exits
// without a result line), "barrier N DIR" (waits until N agents have
// started), "peek" (looks for other agents' API keys in /proc), "spawn TOKEN"
// (leaves a setsid'd process carrying TOKEN behind).
const char* kAgent = R"PY(
import glob, json, os, sys, time, urllib.request
def chat(messages):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "x", "messages": messages, "temperature": 0.3}).encode(),
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(req, timeout=30) as r:
        c = json.load(r)["choices"][0]
        return c["message"]["content"], c["token_ids"]
start = json.loads(sys.stdin.readline())
mode = start["task"]["prompt"]
assert start["api_key"] == os.environ["OPENAI_API_KEY"] and start["base_url"] == os.environ["OPENAI_BASE_URL"]
if mode.startswith("barrier"):  # "barrier N DIR": wait until N agents have started (at once), then go on
    _, n, d = mode.split(" ", 2)
    open(os.path.join(d, start["episode"]), "w").close()
    while len(os.listdir(d)) < int(n): time.sleep(0.02)
if mode.startswith("spawn"):  # "spawn TOKEN": leave a setsid'd process behind
    import subprocess
    subprocess.Popen(["setsid", "sh", "-c", "sleep 1000; true", mode.split(" ")[1]])
found = []
if mode == "peek":  # look for the other agents' keys where they used to be readable
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            for kv in open(path, "rb").read().split(b"\0"):
                if kv.startswith(b"OPENAI_API_KEY=") and kv[15:].decode() != os.environ["OPENAI_API_KEY"]:
                    found.append(kv[15:].decode())
        except OSError:
            pass
messages = [{"role": "system", "content": "Stories only."}, {"role": "user", "content": "Tell me about " + mode + "."}]
a, ids_a = chat(messages)
if mode == "crash": os._exit(3)
if mode == "hang": time.sleep(60)
messages += [{"role": "assistant", "content": a}, {"role": "user", "content": "And then?"}]
if mode == "rewrite": messages[1]["content"] = "something else"
b, ids_b = chat(messages)
if mode == "silent": sys.exit(0)
print("a debug line on stdout", flush=True)
print(json.dumps({"reward": len(a + b) / 100.0, "feedback": json.dumps({"texts": [a, b], "ids": [ids_a, ids_b],
      "key": os.environ["OPENAI_API_KEY"], "others": sorted(set(found))})}), flush=True)
)PY";

struct Fixture {
  test::TempDir dir;
  Policy policy = load_policy(test::shared_path("models/stories260K/stories260K.bin"), "", LoadOptions{});
  AgentEnvOptions options(double timeout_s = 20) {
    const std::string path = (dir / "agent.py").string();
    std::ofstream(path) << kAgent;
    AgentEnvOptions o;
    o.command = {"/usr/bin/python3", "-u", path};
    o.timeout_s = timeout_s;
    o.echo_stderr = false;
    return o;
  }
  static PromptExample task(const std::string& mode) {
    PromptExample t;
    t.id = mode;
    t.prompt = mode;
    t.where = "tasks #0";
    return t;
  }
  std::vector<EpisodeGroup> produce(AgentEnvironment& env, const std::vector<PromptExample>& tasks, int64_t n) {
    EpisodeOptions eo;
    eo.max_turns = 3;
    eo.max_observation_tokens = 48;
    EpisodeProducer producer(policy, env, eo);
    SamplingParams p;
    p.temperature = 1.0;
    p.max_new_tokens = 24;
    std::vector<const PromptExample*> ptrs;
    std::vector<uint64_t> seeds;
    for (const auto& t : tasks) ptrs.push_back(&t), seeds.push_back(seeds.size() + 3);
    return producer.produce(ptrs, n, p, seeds, 0, nullptr);
  }
};

TEST(AgentEnv, EpisodesHoldExactlyWhatThePolicySampledAndWhatTheAgentSaid) {
  Fixture f;
  AgentEnvironment env(f.options());
  auto groups = f.produce(env, {Fixture::task("a cat")}, 3);
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].episodes.size(), 3u);
  const Tokenizer& tok = *f.policy.tokenizer;
  // The prompt: the first call's conversation in the plain format (the tokenizer has no template), BOS first.
  const std::vector<ChatMessage> first = {{"system", "Stories only."}, {"user", "Tell me about a cat."}};
  ChatRenderOptions ro = chat_options_for(tok);
  const std::string rendered = render_chat(ChatFormat::Plain, first, ro);
  EXPECT_EQ(groups[0].prompt, rendered);
  for (const Episode& e : groups[0].episodes) {
    ASSERT_EQ(e.env_error, "") << e.env_error;
    EXPECT_EQ(e.end_reason, "env");
    ASSERT_EQ(e.n_turns, 2);
    EXPECT_EQ(std::vector<int32_t>(e.tokens.begin(), e.tokens.begin() + e.n_prompt), tok.encode(rendered, true));
    // What the agent received, reported back through its result line's feedback.
    ASSERT_EQ(e.turn_feedback.size(), 2u);
    const Json got = Json::parse(e.turn_feedback[1]);
    std::vector<const Segment*> turns, observations;
    for (const Segment& s : e.segments) {
      if (s.role == SegmentRole::Policy) turns.push_back(&s);
      if (s.role == SegmentRole::Observation) observations.push_back(&s);
    }
    ASSERT_EQ(turns.size(), 2u);
    ASSERT_EQ(observations.size(), 1u);
    for (size_t k = 0; k < 2; ++k) {
      const std::vector<int32_t> sampled(e.tokens.begin() + turns[k]->begin, e.tokens.begin() + turns[k]->end);
      EXPECT_EQ(got.at("ids").at(k).get<std::vector<int32_t>>(), sampled) << "turn " << k;
      EXPECT_EQ(got.at("texts").at(k).get<std::string>(), turns[k]->text);
      for (int64_t i = turns[k]->begin; i < turns[k]->end; ++i) EXPECT_GT(e.loss_weight[i], 0.0f);
    }
    // The observation: the rest of the second call's conversation, as the format continues it.
    const std::vector<int32_t> obs(e.tokens.begin() + observations[0]->begin, e.tokens.begin() + observations[0]->end);
    std::vector<ChatMessage> both = first;
    both.push_back({"assistant", got.at("texts").at(0).get<std::string>()});
    const std::string before = [&] { auto o = ro; o.add_generation_prompt = false; return render_chat(ChatFormat::Plain, both, o); }();
    both.push_back({"user", "And then?"});
    const std::string after = render_chat(ChatFormat::Plain, both, ro);
    // What the format writes after the reply's content (here "\n\n"), then the new message and the generation prompt.
    const std::string reply = got.at("texts").at(0).get<std::string>();
    const std::string want = before.substr(before.rfind(reply) + reply.size()) + after.substr(before.size());
    EXPECT_EQ(want.substr(0, 8), "\n\nUser: ");
    std::vector<int32_t> want_ids = tok.encode(want, false);
    if (want_ids.size() > 48) want_ids.resize(48);
    EXPECT_EQ(obs, want_ids) << "observation text " << tok.decode(obs);
    for (int64_t i = observations[0]->begin; i < observations[0]->end; ++i) EXPECT_EQ(e.loss_weight[i], 0.0f);
    // The reward is the agent's.
    ASSERT_TRUE(e.turn_rewards[1].has_value());
    EXPECT_NEAR(*e.turn_rewards[1], (turns[0]->text.size() + turns[1]->text.size()) / 100.0, 1e-9);
  }
}

TEST(AgentEnv, BrokenAgentsEndOnlyTheirOwnEpisodes) {
  Fixture f;
  AgentEnvironment env(f.options(/*timeout_s=*/30));
  auto groups = f.produce(env, {Fixture::task("crash"), Fixture::task("rewrite"), Fixture::task("silent"),
                                Fixture::task("a dog")},
                          1);
  ASSERT_EQ(groups.size(), 4u);
  auto error_of = [&](size_t g) { return groups[g].episodes.at(0).env_error; };
  EXPECT_NE(error_of(0).find("exited with status 3"), std::string::npos) << error_of(0);
  EXPECT_NE(error_of(1).find("changed message 1"), std::string::npos) << error_of(1);
  EXPECT_NE(error_of(2).find("without printing"), std::string::npos) << error_of(2);
  EXPECT_EQ(error_of(3), "");
  EXPECT_EQ(groups[3].episodes[0].end_reason, "env");
  for (size_t g = 0; g < 3; ++g) EXPECT_EQ(groups[g].episodes[0].end_reason, "env_error");
  // A hanging agent: killed at timeout_s, its episode ended with the timeout as its error.
  AgentEnvironment short_env(f.options(/*timeout_s=*/3));
  auto hung = f.produce(short_env, {Fixture::task("hang")}, 1);
  EXPECT_NE(hung[0].episodes.at(0).env_error.find("no reply within 3 s"), std::string::npos) << hung[0].episodes[0].env_error;
  EXPECT_EQ(hung[0].episodes[0].end_reason, "env_error");
}


// An HTTP status for a chat call with `key` to `base_url` (python's urllib: an outside client).
int status_for_key(const std::string& base_url, const std::string& key) {
  const std::string code =
      "import json, sys, urllib.request, urllib.error\n"
      "req = urllib.request.Request(sys.argv[1] + '/chat/completions', data=json.dumps({'messages': [{'role': "
      "'user', 'content': 'hi'}]}).encode(), headers={'Authorization': 'Bearer ' + sys.argv[2]})\n"
      "try:\n  urllib.request.urlopen(req, timeout=10); print(200)\n"
      "except urllib.error.HTTPError as e: print(e.code)\n";
  auto r = test::run_command("python3 -c " + test::shell_quote(code) + " " + test::shell_quote(base_url) + " " +
                             test::shell_quote(key));
  return r.exit_code == 0 ? std::stoi(r.output) : -1;
}

TEST(AgentEnv, AStepsAgentsStartTogether) {
  // Each agent waits until all six have started before it calls the policy:
  // started one after another (each waiting for the previous one's first
  // call), the first would wait for the others until timeout_s.
  Fixture f;
  AgentEnvironment env(f.options(/*timeout_s=*/30));
  const std::string dir = (f.dir / "started").string();
  std::filesystem::create_directories(dir);
  auto groups = f.produce(env, {Fixture::task("barrier 6 " + dir), Fixture::task("barrier 6 " + dir)}, 3);
  for (const EpisodeGroup& g : groups)
    for (const Episode& e : g.episodes) EXPECT_EQ(e.env_error, "") << e.env_error;
}

TEST(AgentEnv, KeysAreRandomUnreadableBySiblingsAndOnlyTheirEpisodes) {
  Fixture f;
  std::vector<std::string> keys;
  std::string base_url;
  for (int run = 0; run < 2; ++run) {  // the same tasks and seeds twice
    AgentEnvironment env(f.options(/*timeout_s=*/30));
    base_url = env.base_url();
    // Every agent looks before its first call, when the agents started before it are running (the policy
    // answers none until all have called).
    auto groups = f.produce(env, {Fixture::task("peek")}, 4);
    for (const Episode& e : groups.at(0).episodes) {
      ASSERT_EQ(e.env_error, "") << e.env_error;
      const Json got = Json::parse(e.turn_feedback.at(1));
      EXPECT_EQ(got.at("others"), Json::array()) << "an agent read its siblings' keys";
      keys.push_back(got.at("key").get<std::string>());
    }
    // An ended episode's key is refused (its endpoint still serves).
    EXPECT_EQ(status_for_key(base_url, keys.back()), 401);
    EXPECT_EQ(status_for_key(base_url, "rlf-guess"), 401);
  }
  ASSERT_EQ(keys.size(), 8u);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::unique(keys.begin(), keys.end()), keys.end()) << "a key repeats across runs with the same seeds";
  for (const std::string& k : keys) {
    EXPECT_EQ(k.size(), 36u) << k;  // "rlf-" + 128 random bits in hex
    EXPECT_EQ(k.find_first_not_of("0123456789abcdef", 4), std::string::npos) << k;
  }
}

TEST(AgentEnv, WhatAnAgentStartsEndsWithIt) {
  // The agent leaves a setsid'd process behind and exits normally.
  Fixture f;
  const std::string token = test::unique_token("rlf-agent-orphan");
  {
    AgentEnvironment env(f.options());
    auto groups = f.produce(env, {Fixture::task("spawn " + token)}, 2);
    for (const Episode& e : groups.at(0).episodes) EXPECT_EQ(e.env_error, "") << e.env_error;
  }
  const std::vector<int> left = test::wait_until_gone(token, 3);
  EXPECT_EQ(left, std::vector<int>{}) << "an agent's descendants outlived it";
  test::kill_leftovers(left);
}

TEST(AgentEnv, ConfigErrorsNameTheOption) {
  AgentEnvOptions o;
  EXPECT_NE(test::error_of([&] { o.validate(); }).find("option 'command' is required"), std::string::npos);
  o.command = {"python3"};
  o.timeout_s = 0;
  EXPECT_NE(test::error_of([&] { o.validate(); }).find("option 'timeout_s' must be > 0"), std::string::npos);
  // Paths are checked at load, not found wrong by every episode.
  o.timeout_s = 5;
  o.working_dir = "/nonexistent/dir";
  EXPECT_EQ(test::error_of([&] { o.validate(); }),
            "option 'working_dir' must be an existing directory (got '/nonexistent/dir'; \"\" = rlf's working directory)");
  o.working_dir = "";
  o.command = {"/nonexistent/agent.sh"};
  EXPECT_EQ(test::error_of([&] { o.validate(); }),
            "option 'command': '/nonexistent/agent.sh' is not an executable file (No such file or directory)");
  o.command = {"python3", "agent.py"};  // looked up in PATH when it starts
  o.validate();
}

}  // namespace
}  // namespace rlf
