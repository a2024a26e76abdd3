#include "tokenizer/char_vocab.h"

#include <set>

#include "util/error.h"
#include "util/fs.h"

namespace rlf {

std::string printable_ascii() {
  std::string s;
  for (char c = ' '; c <= '~'; ++c) s += c;
  return s;
}

Json char_tokenizer_json(const std::string& alphabet) {
  check(!alphabet.empty(), "char tokenizer: the alphabet is empty");
  const char* specials[] = {"<unk>", "<s>", "</s>"};
  Json vocab = Json::object();
  Json added = Json::array();
  for (int i = 0; i < 3; ++i) {
    vocab[specials[i]] = i;
    added.push_back({{"id", i}, {"content", specials[i]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  std::set<char> seen;
  for (char c : alphabet) {
    check(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7F,
          "char tokenizer: character code ", static_cast<int>(static_cast<unsigned char>(c)),
          " is not printable ASCII (space to '~')");
    check(seen.insert(c).second, "char tokenizer: character '", std::string(1, c), "' appears twice in the alphabet");
    vocab[std::string(1, c)] = static_cast<int>(vocab.size());
  }
  Json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = nullptr;
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", Json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"pair", Json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                            {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  j["decoder"] = {{"type", "Fuse"}};  // without a decoder, tokenizers joins tokens with spaces
  j["model"] = {{"type", "BPE"},           {"dropout", nullptr},     {"unk_token", "<unk>"},
                {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},       {"byte_fallback", false}, {"ignore_merges", false},
                {"vocab", vocab},          {"merges", Json::array()}};
  return j;
}

void write_char_tokenizer(const std::filesystem::path& dir, const std::string& alphabet) {
  std::filesystem::create_directories(dir);
  write_file_atomic(dir / "tokenizer.json", char_tokenizer_json(alphabet).dump(1));
  Json config = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"},
                 {"tokenizer_class", "PreTrainedTokenizerFast"}, {"model_max_length", 1024}};
  write_file_atomic(dir / "tokenizer_config.json", config.dump(1));
}

}  // namespace rlf
