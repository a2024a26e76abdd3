// tokenizer.json normalizers (see hf_pipeline.h).
#include <unordered_map>

#include "tokenizer/hf_pipeline.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/unicode_text.h"

namespace rlf {

ReplacePattern::ReplacePattern(const tokjson::Node& node) {
  node.require_object();
  if (node.has("String")) {
    literal_ = node.str("String");
    if (literal_.empty()) node.error("String", "must not be empty");
  } else if (node.has("Regex")) {
    regex_ = std::make_unique<Regex>(node.str("Regex"), node.file + ": field '" + node.field("Regex") + "'");
  } else {
    fail(node.file, ": field '", node.path, "' must be {\"String\": ...} or {\"Regex\": ...}");
  }
}

ReplacePattern::~ReplacePattern() = default;

std::string ReplacePattern::replace_all(const std::string& text, const std::string& content) const {
  std::vector<Span> matches = regex_ ? regex_->find_all(text) : find_literal(text, literal_);
  if (matches.empty()) return text;
  std::string out;
  out.reserve(text.size() + matches.size() * content.size());
  size_t prev = 0;
  for (auto [b, e] : matches) {
    out.append(text, prev, b - prev);
    out += content;
    prev = e;
  }
  out.append(text, prev, std::string::npos);
  return out;
}

namespace {

using tokjson::Node;

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(std::string& text) const override {
    for (const auto& p : parts_) p->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(unicode::NormalForm form) : form_(form) {}
  void normalize(std::string& text) const override { text = unicode::normalize(text, form_); }

 private:
  unicode::NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  void normalize(std::string& text) const override { text = unicode::to_lower(text); }
};

class ReplaceNormalizer : public Normalizer {
 public:
  explicit ReplaceNormalizer(const Node& node) : pattern_(node.child("pattern")), content_(node.str("content")) {}
  void normalize(std::string& text) const override { text = pattern_.replace_all(text, content_); }

 private:
  ReplacePattern pattern_;
  std::string content_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      while (begin < end) {
        size_t p = begin;
        if (!unicode::is_whitespace(unicode::next_code_point(text, p))) break;
        begin = p;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t p = start;
        if (!unicode::is_whitespace(unicode::next_code_point(text, p))) break;
        end = start;
      }
    }
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

}  // namespace

std::unique_ptr<Normalizer> parse_normalizer(const Node& node) {
  node.require_object();
  std::string type = node.str("type");
  if (type == "Sequence") {
    Node list = node.array("normalizers");
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.j.size(); ++i) parts.push_back(parse_normalizer(list.at(i)));
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::NFKD);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Replace") return std::make_unique<ReplaceNormalizer>(node);
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(node.str("prepend"));
  if (type == "Strip") return std::make_unique<StripNormalizer>(node.boolean("strip_left", true), node.boolean("strip_right", true));
  node.error("type", "is '" + type +
                         "', which rlf does not support (supported normalizers: Sequence, NFC, NFD, NFKC, NFKD, "
                         "Lowercase, Replace, Prepend, Strip)");
}

}  // namespace rlf
