// Hugging Face tokenizer.json tokenizer (see hf_tokenizer.h).
#include "tokenizer/hf_tokenizer.h"

#include "tokenizer/unicode_text.h"
#include "util/fs.h"

namespace rlf {

namespace fs = std::filesystem;

namespace {

// A special-token field of tokenizer_config.json: "<s>", {"content": "<s>", ...} or null.
std::optional<std::string> config_token(const Json& config, const char* key, const std::string& file) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  fail(file, ": field '", key, "' must be a string or an object with \"content\", got ", it->dump());
}

std::optional<int32_t> config_id(const Json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_number_integer()) return static_cast<int32_t>(it->get<int64_t>());
  if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) return static_cast<int32_t>((*it)[0].get<int64_t>());
  return std::nullopt;
}

bool is_llama_tokenizer_class(const std::string& cls) {
  return cls == "LlamaTokenizer" || cls == "LlamaTokenizerFast" || cls == "CodeLlamaTokenizer" ||
         cls == "CodeLlamaTokenizerFast";
}

}  // namespace

HfTokenizer::HfTokenizer(const fs::path& tokenizer_json) {
  file_ = "tokenizer.json '" + tokenizer_json.string() + "'";
  name_ = tokenizer_json.parent_path().filename().string();
  Json root = parse_json(read_file(tokenizer_json), file_);
  tokjson::Node doc{root, file_, ""};
  try {
    doc.require_object();
    tokjson::Node model = doc.child("model");
    model.require_object();
    std::string type = model.has("type") ? model.str("type") : std::string();
    if (type != "BPE")
      model.error("type", "is '" + type + "'; rlf supports only BPE tokenizers (WordPiece, Unigram and WordLevel are not implemented)");
    model_ = std::make_unique<BpeModel>(model.j, file_);
    vocab_size_ = model_->vocab_size();

    if (doc.has("added_tokens")) {
      tokjson::Node list = doc.array("added_tokens");
      for (size_t i = 0; i < list.j.size(); ++i) {
        tokjson::Node t = list.at(i);
        AddedToken tok;
        tok.id = static_cast<int32_t>(t.integer("id", -1, 0, (1 << 24) - 1));
        if (tok.id < 0) t.error("id", "is missing");
        tok.content = t.str("content");
        if (tok.content.empty()) t.error("content", "must not be empty");
        if (!unicode::is_valid_utf8(tok.content)) t.error("content", "is not valid UTF-8");
        tok.special = t.boolean("special", false);
        tok.lstrip = t.boolean("lstrip", false);
        tok.rstrip = t.boolean("rstrip", false);
        tok.normalized = t.boolean("normalized", !tok.special);
        tok.single_word = t.boolean("single_word", false);
        added_index_by_id_[tok.id] = added_.size();
        added_id_by_content_[tok.content] = tok.id;
        vocab_size_ = std::max(vocab_size_, tok.id + 1);
        added_.push_back(std::move(tok));
      }
    }
    if (doc.has("normalizer")) normalizer_ = parse_normalizer(doc.child("normalizer"));
    if (doc.has("pre_tokenizer")) pre_tokenizer_ = parse_pre_tokenizer(doc.child("pre_tokenizer"));
    if (doc.has("decoder")) decoder_ = parse_decoder(doc.child("decoder"));
    if (doc.has("post_processor"))
      post_processor_ = parse_post_processor(doc.child("post_processor"),
                                             [this](const std::string& t) { return token_to_id(t); });
  } catch (const nlohmann::json::exception& e) {
    fail(file_, ": malformed content: ", e.what());
  }

  std::vector<std::string> raw_patterns, norm_patterns;
  std::vector<const AddedToken*> raw_tokens, norm_tokens;
  for (const AddedToken& t : added_) {
    if (t.normalized) {
      std::string p = t.content;
      if (normalizer_) normalizer_->normalize(p);
      norm_patterns.push_back(std::move(p));
      norm_tokens.push_back(&t);
    } else {
      raw_patterns.push_back(t.content);
      raw_tokens.push_back(&t);
    }
  }
  raw_matcher_.build(std::move(raw_patterns), std::move(raw_tokens));
  normalized_matcher_.build(std::move(norm_patterns), std::move(norm_tokens));
  load_configs(tokenizer_json.parent_path());
}

void HfTokenizer::load_configs(const fs::path& dir) {
  fs::path config_path = dir / "tokenizer_config.json";
  if (fs::exists(config_path)) {
    std::string file = "tokenizer_config.json '" + config_path.string() + "'";
    Json config = parse_json(read_file(config_path), file);
    check(config.is_object(), file, ": expected a JSON object");
    auto resolve = [&](const char* key) -> std::optional<int32_t> {
      auto token = config_token(config, key, file);
      if (!token) return std::nullopt;
      auto id = token_to_id(*token);
      check(id.has_value(), file, ": field '", key, "' is '", *token, "', which is not a token of ", file_);
      return id;
    };
    bos_id_ = resolve("bos_token");
    eos_id_ = resolve("eos_token");
    std::string cls = json_get_or<std::string>(config, "tokenizer_class", "", file);
    if (is_llama_tokenizer_class(cls)) {
      // transformers' LlamaTokenizerFast.update_post_processor()
      bool add_bos = json_get_or<bool>(config, "add_bos_token", true, file);
      bool add_eos = json_get_or<bool>(config, "add_eos_token", false, file);
      check(!add_bos || bos_id_, file, ": add_bos_token is true but bos_token is not set");
      check(!add_eos || eos_id_, file, ": add_eos_token is true but eos_token is not set");
      post_processor_ = make_bos_eos_processor(add_bos ? bos_id_ : std::nullopt, add_eos ? eos_id_ : std::nullopt);
    }
    auto ct = config.find("chat_template");
    if (ct != config.end() && ct->is_string()) {
      chat_template_ = ct->get<std::string>();
    } else if (ct != config.end() && ct->is_array()) {
      for (const Json& entry : *ct)
        if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
            entry["template"].is_string())
          chat_template_ = entry["template"].get<std::string>();
    }
  }
  // Models without tokenizer_config.json keep their ids in config.json.
  for (const char* name : {"config.json", "generation_config.json"}) {
    fs::path p = dir / name;
    if ((bos_id_ && eos_id_) || !fs::exists(p)) continue;
    Json config = parse_json(read_file(p), std::string(name) + " '" + p.string() + "'");
    if (!config.is_object()) continue;
    if (!bos_id_) bos_id_ = config_id(config, "bos_token_id");
    if (!eos_id_) eos_id_ = config_id(config, "eos_token_id");
  }
}

const AddedToken* HfTokenizer::added_by_id(int32_t id) const {
  auto it = added_index_by_id_.find(id);
  return it == added_index_by_id_.end() ? nullptr : &added_[it->second];
}

void HfTokenizer::encode_piece(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  std::vector<PreToken> pieces;
  pieces.push_back({std::string(text), at_start});
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  for (const PreToken& p : pieces) model_->tokenize(p.text, out);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view input, bool add_special) const {
  std::string text = unicode::from_utf8_lossy(input);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const AddedSplit& raw : raw_matcher_.split(text)) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    std::string piece = text.substr(raw.span.first, raw.span.second - raw.span.first);
    if (normalizer_) normalizer_->normalize(piece);
    for (const AddedSplit& norm : normalized_matcher_.split(piece)) {
      if (norm.id >= 0) {
        ids.push_back(norm.id);
        continue;
      }
      bool at_start = raw.span.first == 0 && norm.span.first == 0;
      encode_piece(std::string_view(piece).substr(norm.span.first, norm.span.second - norm.span.first), at_start, ids);
    }
  }
  if (add_special && post_processor_) post_processor_->add_special_tokens(ids);
  return ids;
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const AddedToken* t = added_by_id(id)) {
      if (!(skip_special && t->special)) tokens.push_back(t->content);
      continue;
    }
    const std::string* s = model_->id_to_token(id);
    check(s != nullptr, file_, ": cannot decode id ", id, ": not in the vocabulary (size ", vocab_size_, ")");
    tokens.push_back(*s);
  }
  if (!decoder_) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  decoder_->decode_chain(tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

std::string HfTokenizer::token_string(int32_t id) const {
  if (const AddedToken* t = added_by_id(id)) return t->content;
  const std::string* s = model_->id_to_token(id);
  check(s != nullptr, file_, ": id ", id, " is not in the vocabulary (size ", vocab_size_, ")");
  return *s;
}

std::string HfTokenizer::token_bytes(int32_t id) const {
  if (const AddedToken* t = added_by_id(id)) return t->content;
  std::string s = token_string(id);
  if (decoder_) decoder_->token_bytes(s);
  return s;
}

std::optional<int32_t> HfTokenizer::token_to_id(std::string_view token) const {
  if (auto it = added_id_by_content_.find(std::string(token)); it != added_id_by_content_.end()) return it->second;
  return model_->token_to_id(token);
}

bool HfTokenizer::is_special(int32_t id) const {
  const AddedToken* t = added_by_id(id);
  return t && t->special;
}

}  // namespace rlf
