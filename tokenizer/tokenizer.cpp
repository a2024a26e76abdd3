// load_tokenizer() and StreamDecoder (see tokenizer.h).
#include "tokenizer/tokenizer.h"

#include <filesystem>

#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "util/error.h"

namespace rlf {

namespace fs = std::filesystem;

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  fs::path p(path);
  check(fs::exists(p), "tokenizer path '", path, "' does not exist (expected tokenizer.json, a directory holding it, or a llama2.c tok*.bin)");
  if (fs::is_directory(p)) {
    fs::path json = p / "tokenizer.json";
    check(fs::exists(json), "tokenizer directory '", path, "' has no tokenizer.json",
          fs::exists(p / "tokenizer.model") ? " (only a SentencePiece tokenizer.model, which rlf does not read; export tokenizer.json with transformers)" : "");
    return std::make_unique<HfTokenizer>(json);
  }
  std::string ext = p.extension().string();
  if (ext == ".json") return std::make_unique<HfTokenizer>(p);
  if (ext == ".bin") return std::make_unique<Llama2cTokenizer>(p);
  fail("tokenizer path '", path, "': unknown format (expected tokenizer.json, a directory holding it, or a llama2.c tok*.bin)");
}

std::string clean_up_tokenization_spaces(std::string_view text) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},     {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"},   {" 's", "'s"},   {" 've", "'ve"}, {" 're", "'re"}};
  std::string s(text);
  for (auto [from, to] : kRules) {
    std::string f(from), out;
    size_t pos = 0, hit;
    while ((hit = s.find(f, pos)) != std::string::npos) {
      out.append(s, pos, hit - pos);
      out += to;
      pos = hit + f.size();
    }
    out.append(s, pos, std::string::npos);
    s = std::move(out);
  }
  return s;
}

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special) : tok_(tok), skip_special_(skip_special) {}

namespace {

bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  std::string prefix = tok_.decode(std::span<const int32_t>(ids_.data(), read_), skip_special_);
  std::string full = tok_.decode(ids_, skip_special_);
  if (full.size() <= prefix.size() || ends_with_replacement(full) || full.compare(0, prefix.size(), prefix) != 0)
    return {};
  std::string out = full.substr(prefix.size());
  // Keep the newest token as the next window's prefix.
  ids_.erase(ids_.begin(), ids_.end() - 1);
  read_ = 1;
  return out;
}

std::string StreamDecoder::finish() {
  std::string prefix = tok_.decode(std::span<const int32_t>(ids_.data(), read_), skip_special_);
  std::string full = tok_.decode(ids_, skip_special_);
  ids_.clear();
  read_ = 0;
  if (full.size() <= prefix.size() || full.compare(0, prefix.size(), prefix) != 0) return full.size() > prefix.size() ? full : std::string();
  return full.substr(prefix.size());
}

}  // namespace rlf
