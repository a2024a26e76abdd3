// PromptDataset against the real datasets in shared/data (exact record
// counts, references), field mapping, prompt templates, chat templates
// (checked against transformers' apply_chat_template), shuffle, split, and
// bad-record handling with exact error texts.
#include <gtest/gtest.h>
#include <zlib.h>

#include <set>

#include "data/prompt_dataset.h"
#include "tests/data/data_fixtures.h"
#include "tokenizer/tokenizer.h"

namespace rlf {
namespace {

using test::error_of;
using test::shared_path;
using test::write_fixture;

PromptDataset load_preset(const std::string& rel_path, const std::string& preset) {
  // The two-line config.
  Json table = {{"path", shared_path(rel_path).string()}, {"preset", preset}};
  return PromptDataset::load(prompt_dataset_options_from_json(table, "test config"));
}

TEST(PromptDataset, Gsm8kTrainAndTestWithPreset) {
  PromptDataset train = load_preset("data/gsm8k/train.jsonl", "gsm8k");
  PromptDataset test = load_preset("data/gsm8k/test.jsonl", "gsm8k");
  ASSERT_EQ(train.train().size(), 7473u);
  ASSERT_EQ(test.train().size(), 1319u);
  EXPECT_TRUE(train.eval().empty());
  EXPECT_EQ(train.n_skipped(), 0u);
  for (const PromptDataset* ds : {&train, &test})
    for (const PromptExample& e : ds->train()) {
      ASSERT_NE(e.reference.find("#### "), std::string::npos) << e.where;
      ASSERT_FALSE(e.raw_prompt.empty()) << e.where;
    }
  const PromptExample& first = train.train()[0];
  EXPECT_EQ(first.raw_prompt.substr(0, 47), "Natalia sold clips to 48 of her friends in Apri");
  EXPECT_EQ(first.reference.substr(first.reference.size() - 7), "#### 72");
  EXPECT_EQ(first.prompt, first.raw_prompt +
                              "\nSolve it step by step, then write the final answer on its own line as \"#### <number>\".");
  EXPECT_EQ(first.id, "train.jsonl:1");
  EXPECT_EQ(first.where, "'" + shared_path("data/gsm8k/train.jsonl").string() + "' line 1");
  EXPECT_EQ(first.record["question"], first.raw_prompt);
  EXPECT_EQ(train.summary(),
            "gsm8k '" + shared_path("data/gsm8k/train.jsonl").string() + "': 7473 records (7473 train, 0 eval), 0 skipped");
}

TEST(PromptDataset, Math500WithPreset) {
  PromptDataset ds = load_preset("data/math500/test.jsonl", "math500");
  ASSERT_EQ(ds.train().size(), 500u);
  std::set<std::string> ids;
  for (const PromptExample& e : ds.train()) {
    ASSERT_FALSE(e.reference.empty()) << e.where;
    ids.insert(e.id);
  }
  EXPECT_EQ(ids.size(), 500u);  // unique_id is the id
  const PromptExample& first = ds.train()[0];
  EXPECT_EQ(first.id, "test/precalculus/807.json");
  EXPECT_EQ(first.reference, "\\left( 3, \\frac{\\pi}{2} \\right)");  // the short answer, not the solution
  EXPECT_EQ(first.prompt, first.raw_prompt + "\nPlease reason step by step, and put your final answer within \\boxed{}.");
  EXPECT_EQ(first.record["level"], 2);
}

TEST(PromptDataset, GenericPresetFindsFields) {
  PromptDatasetOptions o;
  o.path = shared_path("data/math500/test.jsonl").string();
  PromptDataset ds = PromptDataset::load(o);
  ASSERT_EQ(ds.train().size(), 500u);
  // "problem" is the prompt, "answer" (tried before "solution") the reference, the prompt unchanged.
  EXPECT_EQ(ds.train()[0].reference, "\\left( 3, \\frac{\\pi}{2} \\right)");
  EXPECT_EQ(ds.train()[0].prompt, ds.train()[0].raw_prompt);
  EXPECT_EQ(ds.train()[0].id, "test.jsonl:1");
}

TEST(PromptDataset, GzippedFileLoadsLikePlain) {
  test::TempDir dir;
  std::string text = "{\"prompt\": \"a\", \"answer\": 1}\n\n{\"prompt\": \"b\", \"answer\": \"2\"}\n";
  std::string gz = (dir / "p.jsonl.gz").string();
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  PromptDatasetOptions o;
  o.path = gz;
  PromptDataset ds = PromptDataset::load(o);
  ASSERT_EQ(ds.train().size(), 2u);
  EXPECT_EQ(ds.train()[0].reference, "1");  // a number becomes its JSON text
  EXPECT_EQ(ds.train()[1].reference, "2");
  EXPECT_EQ(ds.train()[1].id, "p.jsonl.gz:3");  // line numbers count the blank line
}

TEST(PromptDataset, FieldMappingAndTemplateSubstitution) {
  test::TempDir dir;
  std::string path = write_fixture(dir, "tasks.jsonl",
                                   "{\"q\": \"Sort these\", \"sol\": \"done\", \"key\": \"t-1\", \"lang\": \"C++\", \"n\": 3, "
                                   "\"tests\": [\"assert f()\"]}\n");
  PromptDatasetOptions o;
  o.path = path;
  o.prompt_field = "q";
  o.reference_field = "sol";
  o.id_field = "key";
  o.prompt_template = "[{lang}] {prompt} ({n} items) \\boxed{} {not a field} {}";
  PromptDataset ds = PromptDataset::load(o);
  ASSERT_EQ(ds.train().size(), 1u);
  const PromptExample& e = ds.train()[0];
  EXPECT_EQ(e.id, "t-1");
  EXPECT_EQ(e.reference, "done");
  EXPECT_EQ(e.prompt, "[C++] Sort these (3 items) \\boxed{} {not a field} {}");
  EXPECT_EQ(e.record["tests"][0], "assert f()");  // the rest of the record is kept for rewards

  o.prompt_template = "{prompt} in {language}";
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "'" + path + "' line 1: prompt_template names field 'language', which this record lacks");
}

TEST(PromptDataset, SystemPromptWithoutChatTemplate) {
  test::TempDir dir;
  PromptDatasetOptions o;
  o.path = write_fixture(dir, "p.jsonl", "{\"question\": \"Q?\"}\n");
  o.system_prompt = "Be brief.";
  PromptDataset ds = PromptDataset::load(o);
  EXPECT_EQ(ds.train()[0].prompt, "Be brief.\n\nQ?");
  EXPECT_EQ(ds.train()[0].reference, "");  // generic: a reference is optional
}

TEST(PromptDataset, QwenChatTemplateWithSystemPrompt) {
  TokenizerChat qwen = read_tokenizer_chat(shared_path("tokenizers/hf/qwen2.5").string());
  EXPECT_EQ(qwen.eos_token, "<|im_end|>");
  PromptDatasetOptions o;
  o.path = shared_path("data/gsm8k/test.jsonl").string();
  o.preset = "gsm8k";
  o.system_prompt = "You are a careful math tutor.";
  o.chat_template = "auto";
  o.max_records = 3;
  PromptDataset ds = PromptDataset::load(o, &qwen);
  ASSERT_EQ(ds.train().size(), 3u);
  const PromptExample& e = ds.train()[0];
  std::string user = e.raw_prompt +
                     "\nSolve it step by step, then write the final answer on its own line as \"#### <number>\".";
  EXPECT_EQ(e.prompt, "<|im_start|>system\nYou are a careful math tutor.<|im_end|>\n<|im_start|>user\n" + user +
                          "<|im_end|>\n<|im_start|>assistant\n");

  // Named format, no system prompt: Qwen's template adds its default one.
  o.chat_template = "qwen2";
  o.system_prompt = "";
  PromptDataset named = PromptDataset::load(o);
  std::string qwen_system =
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\n";
  EXPECT_EQ(named.train()[0].prompt.substr(0, qwen_system.size()), qwen_system);
}

// The same prompts through transformers' apply_chat_template with Qwen2.5's own Jinja template.
TEST(PromptDataset, ChatPromptsMatchTransformers) {
  RLF_REQUIRE_ORACLE();
  std::string dir = shared_path("tokenizers/hf/qwen2.5").string();
  TokenizerChat qwen = read_tokenizer_chat(dir);
  PromptDatasetOptions o;
  o.path = shared_path("data/math500/test.jsonl").string();
  o.preset = "math500";
  o.chat_template = "auto";
  o.max_records = 20;
  for (std::string system : {"", "You are a careful math tutor."}) {
    o.system_prompt = system;
    PromptDataset ds = PromptDataset::load(o, &qwen);
    Json users = Json::array();
    for (const PromptExample& e : ds.train()) users.push_back(e.record["problem"].get<std::string>() +
        "\nPlease reason step by step, and put your final answer within \\boxed{}.");
    test::TempDir tmp;
    std::string in = write_fixture(tmp, "users.json", Json({{"system", system}, {"users", users}}).dump());
    auto result = test::run_oracle_python(R"(
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
spec = json.load(open(sys.argv[2]))
out = []
for u in spec["users"]:
    msgs = ([{"role": "system", "content": spec["system"]}] if spec["system"] else []) + [{"role": "user", "content": u}]
    out.append(tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True))
print(json.dumps(out))
)", test::shell_quote(dir) + " " + test::shell_quote(in));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::string out = result.output.substr(result.output.find("[\""));
    Json expected = Json::parse(out.substr(0, out.rfind(']') + 1));
    ASSERT_EQ(expected.size(), ds.train().size());
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(ds.train()[i].prompt, expected[i].get<std::string>()) << i;
  }
}

TEST(PromptDataset, TokenizerChatFromALoadedTokenizerMatchesItsConfig) {
  std::string dir = shared_path("tokenizers/hf/phi-3-mini").string();
  TokenizerChat from_config = read_tokenizer_chat(dir);
  TokenizerChat from_tokenizer = tokenizer_chat_of(*load_tokenizer(dir));
  EXPECT_EQ(from_tokenizer.jinja_template, from_config.jinja_template);
  EXPECT_EQ(from_tokenizer.bos_token, "<s>");
  EXPECT_EQ(from_config.bos_token, "<s>");
  EXPECT_EQ(from_config.source, "'" + dir + "/tokenizer_config.json'");
  test::TempDir tmp;
  PromptDatasetOptions o;
  o.path = write_fixture(tmp, "p.jsonl", "{\"prompt\": \"Hi\"}\n");
  o.chat_template = "auto";
  EXPECT_EQ(PromptDataset::load(o, &from_tokenizer).train()[0].prompt, "<s><|user|>\nHi<|end|>\n<|assistant|>\n");
}

TEST(PromptDataset, AutoChatTemplateOfABaseTokenizerIsPlainText) {
  TokenizerChat gpt2 = read_tokenizer_chat(shared_path("tokenizers/hf/gpt2/tokenizer_config.json").string());
  EXPECT_EQ(gpt2.jinja_template, "");
  TokenizerChat llama2 = read_tokenizer_chat(shared_path("tokenizers/hf/llama2").string());
  EXPECT_EQ(llama2.bos_token, "<s>");  // written as an AddedToken object
  test::TempDir dir;
  PromptDatasetOptions o;
  o.path = write_fixture(dir, "p.jsonl", "{\"prompt\": \"Hi\"}\n");
  o.chat_template = "auto";
  EXPECT_EQ(PromptDataset::load(o, &gpt2).train()[0].prompt, "Hi");
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "chat_template = \"auto\" needs the model's tokenizer (tokenizer_config.json); name a format instead "
            "(plain, chatml, qwen2, llama3, llama31, llama2, phi3) or \"\" for none");
  o.chat_template = "phi3";
  o.system_prompt = "S";
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "chat_template 'phi3' with system_prompt: chat format 'phi3': role 'system' is not rendered by Phi-3's "
            "template (only user and assistant)");
  o.chat_template = "vicuna";
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "chat_template: unknown chat format 'vicuna' (expected plain, chatml, qwen2, llama3, llama31, llama2 or phi3)");
}

std::vector<std::string> ids_of(const std::vector<PromptExample>& v) {
  std::vector<std::string> ids;
  for (const PromptExample& e : v) ids.push_back(e.id);
  return ids;
}

TEST(PromptDataset, ShuffleIsDeterministicBySeed) {
  PromptDatasetOptions o;
  o.path = shared_path("data/gsm8k/test.jsonl").string();
  o.preset = "gsm8k";
  o.shuffle = true;
  o.seed = 7;
  auto a = ids_of(PromptDataset::load(o).train());
  auto b = ids_of(PromptDataset::load(o).train());
  o.seed = 8;
  auto c = ids_of(PromptDataset::load(o).train());
  o.shuffle = false;
  auto plain = ids_of(PromptDataset::load(o).train());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, plain);
  std::set<std::string> sa(a.begin(), a.end()), sp(plain.begin(), plain.end());
  EXPECT_EQ(sa, sp);  // a permutation of the same records
  EXPECT_EQ(sa.size(), 1319u);

  // max_records after a shuffle takes a random subset, otherwise the first lines.
  o.max_records = 10;
  EXPECT_EQ(ids_of(PromptDataset::load(o).train()), std::vector<std::string>(plain.begin(), plain.begin() + 10));
  o.shuffle = true;
  o.seed = 7;
  EXPECT_EQ(ids_of(PromptDataset::load(o).train()), std::vector<std::string>(a.begin(), a.begin() + 10));
}

TEST(PromptDataset, SplitSizesAndDisjointness) {
  PromptDatasetOptions o;
  o.path = shared_path("data/gsm8k/train.jsonl").string();
  o.preset = "gsm8k";
  o.eval_size = 200;
  o.seed = 3;
  PromptDataset ds = PromptDataset::load(o);
  EXPECT_EQ(ds.train().size(), 7273u);
  EXPECT_EQ(ds.eval().size(), 200u);
  std::set<std::string> train_ids;
  for (const auto& id : ids_of(ds.train())) train_ids.insert(id);
  std::set<std::string> all = train_ids;
  for (const auto& id : ids_of(ds.eval())) {
    EXPECT_EQ(train_ids.count(id), 0u) << id;
    all.insert(id);
  }
  EXPECT_EQ(all.size(), 7473u);
  EXPECT_EQ(ids_of(PromptDataset::load(o).eval()), ids_of(ds.eval()));  // deterministic
  o.seed = 4;
  EXPECT_NE(ids_of(PromptDataset::load(o).eval()), ids_of(ds.eval()));

  o.eval_size = 0;
  o.eval_fraction = 0.1;
  PromptDataset frac = PromptDataset::load(o);
  EXPECT_EQ(frac.eval().size(), 747u);  // round(747.3)
  EXPECT_EQ(frac.train().size(), 6726u);

  o.eval_size = 5;
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }), "dataset: set eval_fraction or eval_size, not both");
  o.eval_fraction = 0;
  o.eval_size = 7473;
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "gsm8k '" + o.path + "': the eval split (7473 records) leaves no training records out of 7473; lower "
            "eval_size or eval_fraction");
}

TEST(PromptDataset, BadLinesNameFileAndLine) {
  test::TempDir dir;
  std::string good = "{\"question\": \"q\", \"answer\": \"#### 1\"}\n";
  std::string path = write_fixture(dir, "train.jsonl", good + good + "{\"question\": tru}\n" + good);
  PromptDatasetOptions o;
  o.path = path;
  o.preset = "gsm8k";
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "'" + path + "' line 3: malformed JSON at byte 17: [json.exception.parse_error.101] parse error at line 1, "
            "column 17: syntax error while parsing value - invalid literal; last read: '\"question\": tru}'");

  path = write_fixture(dir, "missing.jsonl", good + "{\"prompt\": \"q\", \"answer\": \"#### 2\"}\n");
  o.path = path;
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }), "'" + path + "' line 2: missing field 'question'");

  path = write_fixture(dir, "types.jsonl", "[1, 2]\n{\"question\": [\"q\"], \"answer\": \"1\"}\n{\"question\": \"\", \"answer\": \"1\"}\n");
  o.path = path;
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }), "'" + path + "' line 1: expected a JSON object, got array");
  o.on_bad_record = "skip";
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "gsm8k '" + path + "': no usable records (3 skipped; first: '" + path +
                "' line 1: expected a JSON object, got array)");

  o.preset = "generic";
  o.on_bad_record = "error";
  o.path = write_fixture(dir, "noprompt.jsonl", "{\"text\": \"q\"}\n");
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "'" + o.path + "' line 1: no prompt field (tried 'prompt', 'question', 'problem'); set prompt_field");
  o.on_bad_record = "ignore";
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "on_bad_record: unknown value 'ignore' (expected \"error\" or \"skip\")");
}

TEST(PromptDataset, SkipCountsBadRecords) {
  test::TempDir dir;
  std::string good = "{\"question\": \"q\", \"answer\": \"#### 1\"}\n";
  std::string path = write_fixture(dir, "train.jsonl",
                                   good + "not json\n" + good + "{\"question\": \"q\"}\n" + "\n" + good + "{\"q\": 1}\n");
  PromptDatasetOptions o;
  o.path = path;
  o.preset = "gsm8k";
  o.on_bad_record = "skip";
  PromptDataset ds = PromptDataset::load(o);
  EXPECT_EQ(ds.train().size(), 3u);
  EXPECT_EQ(ds.n_skipped(), 3u);
  ASSERT_EQ(ds.skipped_examples().size(), 3u);
  EXPECT_EQ(ds.skipped_examples()[1], "'" + path + "' line 4: missing field 'answer'");
  EXPECT_EQ(ds.skipped_examples()[2], "'" + path + "' line 7: missing field 'question'");
  EXPECT_EQ(ds.train()[2].where, "'" + path + "' line 6");
  EXPECT_EQ(ds.summary(), "gsm8k '" + path + "': 3 records (3 train, 0 eval), 3 skipped");
}

TEST(PromptDataset, OptionsFromConfigTable) {
  EXPECT_EQ(error_of([] { prompt_dataset_options_from_json({{"path", "x"}, {"shufle", true}}, "[data]"); }),
            "[data]: unknown key 'shufle' (expected one of path, preset, prompt_field, reference_field, id_field, "
            "system_prompt, chat_template, prompt_template, shuffle, seed, eval_fraction, eval_size, max_records, "
            "on_bad_record, arithmetic, countdown, guess)");
  EXPECT_EQ(error_of([] { prompt_dataset_options_from_json({{"seed", "one"}}, "[data]"); }).substr(0, 50),
            "[data]: field 'seed' has the wrong type (string): ");
  EXPECT_EQ(error_of([] { prompt_dataset_options_from_json({{"seed", -1}}, "[data]"); }),
            "[data]: seed must be a non-negative integer");
  EXPECT_EQ(error_of([] { prompt_dataset_options_from_json({{"arithmetic", {{"digits", 2}}}}, "[data]"); }),
            "[data] arithmetic: unknown key 'digits' (expected one of n_problems, min_digits, max_digits, operations, "
            "allow_negative)");
  EXPECT_EQ(error_of([] { prompt_dataset_options_from_json({{"countdown", 3}}, "[data]"); }),
            "[data] countdown: expected a table");
  PromptDatasetOptions o = prompt_dataset_options_from_json(
      {{"preset", "arithmetic"}, {"seed", 12}, {"arithmetic", {{"n_problems", 10}, {"operations", "+"}}}}, "[data]");
  EXPECT_EQ(o.seed, 12u);
  EXPECT_EQ(o.arithmetic.n_problems, 10);
  EXPECT_EQ(o.arithmetic.operations, "+");
  EXPECT_EQ(error_of([] { PromptDataset::load(prompt_dataset_options_from_json({{"preset", "gsm8"}}, "[data]")); }),
            "dataset: unknown preset 'gsm8' (expected generic, gsm8k, math500, arithmetic, countdown or guess)");
  EXPECT_EQ(error_of([] { PromptDataset::load(prompt_dataset_options_from_json({{"preset", "gsm8k"}}, "[data]")); }),
            "dataset: path is required for preset 'gsm8k' (a JSONL or JSONL.gz file)");
  EXPECT_EQ(error_of([] { PromptDataset::load(prompt_dataset_options_from_json({{"path", "/nonexistent/x.jsonl"}}, "[data]")); }),
            "cannot open '/nonexistent/x.jsonl': No such file or directory");
}

TEST(PromptDataset, SyntheticPresetNeedsNoFile) {
  PromptDatasetOptions o;
  o.preset = "arithmetic";
  o.arithmetic.n_problems = 100;
  o.eval_size = 20;
  o.seed = 1;
  PromptDataset ds = PromptDataset::load(o);
  EXPECT_EQ(ds.train().size(), 80u);
  EXPECT_EQ(ds.eval().size(), 20u);
  const PromptExample& e = ds.train()[0];
  EXPECT_EQ(e.prompt, e.raw_prompt + " End your answer with #### followed by the number.");
  EXPECT_EQ(ds.summary(), "arithmetic: 100 records (80 train, 20 eval), 0 skipped");
  o.path = "x.jsonl";
  EXPECT_EQ(error_of([&] { PromptDataset::load(o); }),
            "dataset: preset 'arithmetic' generates its own problems; remove path (got 'x.jsonl')");
}

}  // namespace
}  // namespace rlf
