// tokenizer.json decoders (see hf_pipeline.h).
#include "tokenizer/hf_pipeline.h"
#include "tokenizer/unicode_text.h"

namespace rlf {

namespace {

using tokjson::Node;

// "<0xNN>" -> NN, or -1.
int byte_token_value(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  int hi = hex(token[3]), lo = hex(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Bytes of a byte-level token; the token's own UTF-8 when a character is not
// in the byte-level alphabet (as tokenizers does).
std::string byte_level_bytes(const std::string& token) {
  std::string bytes;
  bytes.reserve(token.size());
  size_t pos = 0;
  while (pos < token.size()) {
    int b = unicode::char_to_byte(unicode::next_code_point(token, pos));
    if (b < 0) return token;
    bytes += static_cast<char>(b);
  }
  return bytes;
}

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }
  void token_bytes(std::string& token) const override {
    for (const auto& p : parts_) p->token_bytes(token);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

class ByteLevelDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) bytes += byte_level_bytes(t);
    tokens.assign(1, unicode::from_utf8_lossy(bytes));
  }
  void token_bytes(std::string& token) const override { token = byte_level_bytes(token); }
};

class ReplaceDecoder : public Decoder {
 public:
  explicit ReplaceDecoder(const Node& node) : pattern_(node.child("pattern")), content_(node.str("content")) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) t = pattern_.replace_all(t, content_);
  }
  void token_bytes(std::string& token) const override { token = pattern_.replace_all(token, content_); }

 private:
  ReplacePattern pattern_;
  std::string content_;
};

class ByteFallbackDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string pending;  // consecutive byte tokens
    auto flush = [&] {
      if (pending.empty()) return;
      if (unicode::is_valid_utf8(pending)) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
    };
    for (auto& t : tokens) {
      int b = byte_token_value(t);
      if (b >= 0) {
        pending += static_cast<char>(b);
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
  void token_bytes(std::string& token) const override {
    int b = byte_token_value(token);
    if (b >= 0) token = std::string(1, static_cast<char>(b));
  }
};

class FuseDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
  void token_bytes(std::string&) const override {}
};

class StripDecoder : public Decoder {
 public:
  explicit StripDecoder(const Node& node)
      : content_(node.one_char("content")),
        start_(static_cast<size_t>(node.integer("start", 0, 0, 1 << 20))),
        stop_(static_cast<size_t>(node.integer("stop", 0, 0, 1 << 20))) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      std::vector<std::pair<size_t, size_t>> chars;  // byte ranges of the characters
      size_t pos = 0;
      while (pos < t.size()) {
        size_t start = pos;
        unicode::next_code_point(t, pos);
        chars.emplace_back(start, pos);
      }
      auto is_content = [&](size_t i) { return t.compare(chars[i].first, chars[i].second - chars[i].first, content_) == 0; };
      size_t start_cut = 0;
      for (size_t i = 0; i < start_ && i < chars.size() && is_content(i); ++i) start_cut = i + 1;
      size_t stop_cut = chars.size();
      for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
        size_t index = chars.size() - i - 1;
        if (!is_content(index)) break;
        stop_cut = index;
      }
      if (start_cut >= stop_cut) {
        t.clear();
      } else {
        size_t b = start_cut < chars.size() ? chars[start_cut].first : t.size();
        size_t e = stop_cut < chars.size() ? chars[stop_cut].first : t.size();
        t = t.substr(b, e - b);
      }
    }
  }
  void token_bytes(std::string&) const override {}

 private:
  std::string content_;
  size_t start_, stop_;
};

class MetaspaceDecoder : public Decoder {
 public:
  explicit MetaspaceDecoder(const Node& node) : replacement_(node.one_char("replacement")) {
    if (node.has("prepend_scheme")) {
      prepend_ = node.str("prepend_scheme") != "never";
    } else {
      prepend_ = node.boolean("add_prefix_space", true);
    }
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      bool drop = i == 0 && prepend_;
      std::string out;
      const std::string& t = tokens[i];
      size_t pos = 0;
      while (pos < t.size()) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!drop) out += ' ';
          pos += replacement_.size();
        } else {
          out += t[pos++];
        }
      }
      tokens[i] = std::move(out);
    }
  }
  void token_bytes(std::string& token) const override {
    std::string out;
    size_t pos = 0;
    while (pos < token.size()) {
      if (token.compare(pos, replacement_.size(), replacement_) == 0) {
        out += ' ';
        pos += replacement_.size();
      } else {
        out += token[pos++];
      }
    }
    token = std::move(out);
  }

 private:
  std::string replacement_;
  bool prepend_ = true;
};

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const Node& node) {
  node.require_object();
  std::string type = node.str("type");
  if (type == "Sequence") {
    Node list = node.array("decoders");
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.j.size(); ++i) parts.push_back(parse_decoder(list.at(i)));
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(node);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") return std::make_unique<StripDecoder>(node);
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(node);
  node.error("type", "is '" + type +
                         "', which rlf does not support (supported decoders: Sequence, ByteLevel, Replace, "
                         "ByteFallback, Fuse, Strip, Metaspace)");
}

}  // namespace rlf
