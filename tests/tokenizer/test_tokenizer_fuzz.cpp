// Robustness of the tokenizer.json loader: exact error texts for missing,
// malformed and unsupported files, and 1,200 random mutations (byte flips,
// truncations, JSON type swaps; fixed seed) of a shrunk GPT-2 tokenizer.json
// that must each load-and-encode fine or throw rlf::Error, nothing else.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "tests/support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace rlf {
namespace {

// GPT-2's tokenizer.json cut to the 256 byte tokens plus the merges among
// them, with a Sequence normalizer and Split pre-tokenizer added so that
// mutations reach more parsers.
Json small_tokenizer() {
  Json j = read_json_file(test::shared_path("tokenizers/hf/gpt2/tokenizer.json").string());
  Json vocab = Json::object();
  for (auto& [tok, id] : j["model"]["vocab"].items())
    if (id.get<int>() < 400) vocab[tok] = id;
  Json merges = Json::array();
  for (auto& m : j["model"]["merges"]) {
    std::string line = m.get<std::string>();
    size_t sp = line.find(' ');
    std::string a = line.substr(0, sp), b = line.substr(sp + 1);
    if (vocab.contains(a) && vocab.contains(b) && vocab.contains(a + b)) merges.push_back(line);
  }
  j["model"]["vocab"] = vocab;
  j["model"]["merges"] = merges;
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", {{{"type", "NFC"}}, {{"type", "Replace"}, {"pattern", {{"String", "\t"}}}, {"content", " "}}}}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}{1,3}"}}}, {"behavior", "Isolated"}, {"invert", false}},
                          j["pre_tokenizer"]}}};
  return j;
}

std::string write(const test::TempDir& dir, const std::string& text) {
  std::string path = (dir / "tokenizer.json").string();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

std::string load_error(const std::string& path) {
  try {
    load_tokenizer(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TokenizerErrors, NameTheFileAndField) {
  test::TempDir dir;
  std::string p = (dir / "tokenizer.json").string();
  EXPECT_EQ(load_error((dir / "nope").string()),
            "tokenizer path '" + (dir / "nope").string() +
                "' does not exist (expected tokenizer.json, a directory holding it, or a llama2.c tok*.bin)");
  EXPECT_EQ(load_error(dir.path().string()), "tokenizer directory '" + dir.path().string() + "' has no tokenizer.json");

  Json good = small_tokenizer();
  std::string file = "tokenizer.json '" + p + "'";
  write(dir, good.dump());
  EXPECT_EQ(load_error(p), "no error");

  write(dir, "{\"model\": ");
  EXPECT_NE(load_error(p).find(file), std::string::npos) << load_error(p);

  Json j = good;
  j["model"]["type"] = "WordPiece";
  write(dir, j.dump());
  EXPECT_EQ(load_error(p), file + ": field 'model.type' is 'WordPiece'; rlf supports only BPE tokenizers (WordPiece, "
                                  "Unigram and WordLevel are not implemented)");

  j = good;
  j["pre_tokenizer"]["pretokenizers"][1]["type"] = "BertPreTokenizer";
  write(dir, j.dump());
  EXPECT_EQ(load_error(p), file + ": field 'pre_tokenizer.pretokenizers[1].type' is 'BertPreTokenizer', which rlf does "
                                  "not support (supported pre-tokenizers: Sequence, Split, ByteLevel, Metaspace, Digits, "
                                  "Whitespace, WhitespaceSplit)");

  j = good;
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = 3;
  write(dir, j.dump());
  EXPECT_EQ(load_error(p), file + ": field 'pre_tokenizer.pretokenizers[0].behavior' must be a string, got number");

  j = good;
  j["model"]["merges"][0] = "Ġ";
  write(dir, j.dump());
  EXPECT_EQ(load_error(p), file + ": field 'model.merges' entry 0 ('Ġ') must be two tokens separated by one space");

  j = good;
  j["added_tokens"][0]["content"] = 7;
  write(dir, j.dump());
  EXPECT_EQ(load_error(p), file + ": field 'added_tokens[0].content' must be a string, got number");

  j = good;
  j.erase("model");
  write(dir, j.dump());
  EXPECT_EQ(load_error(p), file + ": field 'model' is missing");
}

// Replaces a random node of `j` by a value of another type.
void swap_random_node(Json& j, std::mt19937& rng) {
  Json* node = &j;
  std::uniform_int_distribution<int> coin(0, 3);
  while ((node->is_object() || node->is_array()) && !node->empty() && coin(rng) != 0) {
    std::uniform_int_distribution<size_t> pick(0, node->size() - 1);
    size_t k = pick(rng);
    if (node->is_array()) {
      node = &(*node)[k];
    } else {
      auto it = node->begin();
      std::advance(it, k);
      node = &it.value();
    }
  }
  static const Json kValues[] = {nullptr, 0, -1, 1e12, 4294967296LL, "", "x", "Isolated", true, Json::array(),
                                 Json::object(), Json::array({1, 2}), Json{{"type", "Sequence"}}};
  std::uniform_int_distribution<size_t> pick(0, std::size(kValues) - 1);
  *node = kValues[pick(rng)];
}

TEST(TokenizerFuzz, MutatedFilesOnlyThrowRlfError) {
  test::TempDir dir;
  Json base = small_tokenizer();
  std::string text = base.dump();
  std::mt19937 rng(20240601);
  int n_loaded = 0, n_errors = 0;
  const int kMutations = 1200;
  for (int i = 0; i < kMutations; ++i) {
    std::string mutated;
    int kind = i % 3;
    if (kind == 0) {  // byte flips
      mutated = text;
      std::uniform_int_distribution<size_t> pos(0, mutated.size() - 1);
      std::uniform_int_distribution<int> byte(0, 255), count(1, 8);
      for (int k = count(rng); k > 0; --k) mutated[pos(rng)] = static_cast<char>(byte(rng));
    } else if (kind == 1) {  // truncation
      std::uniform_int_distribution<size_t> len(0, text.size());
      mutated = text.substr(0, len(rng));
    } else {  // type swaps
      Json j = base;
      std::uniform_int_distribution<int> count(1, 3);
      for (int k = count(rng); k > 0; --k) swap_random_node(j, rng);
      mutated = j.dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    std::string path = write(dir, mutated);
    try {
      auto tok = load_tokenizer(path);
      auto ids = tok->encode("Hello world <|endoftext|> 12345\tcafé 🦙", true);
      tok->decode(ids);
      for (int32_t id : ids) tok->token_string(id);
      ++n_loaded;
    } catch (const Error&) {
      ++n_errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutation " << i << " threw a non-rlf exception: " << e.what();
    }
  }
  EXPECT_EQ(n_loaded + n_errors, kMutations);
  EXPECT_GT(n_errors, kMutations / 4);  // most mutations are caught
  EXPECT_GT(n_loaded, 10);              // and some harmless ones still load
}

}  // namespace
}  // namespace rlf
