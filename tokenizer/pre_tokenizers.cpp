// tokenizer.json pre-tokenizers (see hf_pipeline.h).
#include "tokenizer/hf_pipeline.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/unicode_text.h"

namespace rlf {

namespace {

using tokjson::Node;

// The GPT-2 split pattern ByteLevel uses when use_regex is true.
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

const Regex& gpt2_regex() {
  static const Regex re(kGpt2Pattern, "ByteLevel pre-tokenizer (GPT-2 pattern)");
  return re;
}

// Replaces every piece by its sub-pieces at `split(text)`; the first
// sub-piece of a piece keeps its at_start flag.
template <typename SplitFn>
void split_each(std::vector<PreToken>& pieces, SplitFn&& split) {
  std::vector<PreToken> out;
  out.reserve(pieces.size());
  for (PreToken& p : pieces) {
    std::vector<Span> spans = split(p.text);
    for (size_t k = 0; k < spans.size(); ++k) {
      auto [b, e] = spans[k];
      out.push_back({p.text.substr(b, e - b), p.at_start && b == 0});
    }
  }
  pieces = std::move(out);
}

// Every character for which `pred` holds, as its own match.
template <typename Pred>
std::vector<Span> char_matches(const std::string& text, Pred&& pred) {
  std::vector<Span> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    char32_t cp = unicode::next_code_point(text, pos);
    if (pred(cp)) out.emplace_back(start, pos);
  }
  return out;
}

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  explicit SplitPreTokenizer(const Node& node)
      : behavior_(parse_split_behavior(node.str("behavior"), node.file + ": field '" + node.field("behavior") + "'")),
        invert_(node.boolean("invert", false)) {
    Node pattern = node.child("pattern");
    pattern.require_object();
    if (pattern.has("String")) {
      literal_ = pattern.str("String");
    } else if (pattern.has("Regex")) {
      regex_ = std::make_unique<Regex>(pattern.str("Regex"), node.file + ": field '" + pattern.field("Regex") + "'");
    } else {
      fail(node.file, ": field '", pattern.path, "' must be {\"String\": ...} or {\"Regex\": ...}");
    }
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](const std::string& text) {
      auto matches = regex_ ? regex_->find_all(text) : find_literal(text, literal_);
      return split_by_matches(text.size(), matches, behavior_, invert_);
    });
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  explicit ByteLevelPreTokenizer(const Node& node)
      : add_prefix_space_(node.boolean("add_prefix_space", true)), use_regex_(node.boolean("use_regex", true)) {
    if (use_regex_) gpt2_regex();
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    if (add_prefix_space_)
      for (PreToken& p : pieces)
        if (p.text.empty() || p.text[0] != ' ') p.text.insert(p.text.begin(), ' ');
    if (use_regex_) {
      split_each(pieces, [](const std::string& text) {
        return split_by_matches(text.size(), gpt2_regex().find_all(text), SplitBehavior::Isolated, false);
      });
    }
    for (PreToken& p : pieces) p.text = unicode::bytes_to_byte_level(p.text);
  }

 private:
  bool add_prefix_space_, use_regex_;
};

enum class PrependScheme { Always, First, Never };

PrependScheme parse_prepend_scheme(const Node& node) {
  if (node.has("prepend_scheme")) {
    std::string s = node.str("prepend_scheme");
    if (s == "always") return PrependScheme::Always;
    if (s == "first") return PrependScheme::First;
    if (s == "never") return PrependScheme::Never;
    node.error("prepend_scheme", "is '" + s + "' (expected always, first or never)");
  }
  return node.boolean("add_prefix_space", true) ? PrependScheme::Always : PrependScheme::Never;
}

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  explicit MetaspacePreTokenizer(const Node& node)
      : replacement_(node.one_char("replacement")), scheme_(parse_prepend_scheme(node)), split_(node.boolean("split", true)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (PreToken& p : pieces) {
      p.text = replace_spaces(p.text);
      bool starts = p.text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && p.at_start)))
        p.text.insert(0, replacement_);
    }
    if (split_) {
      split_each(pieces, [&](const std::string& text) {
        return split_by_matches(text.size(), find_literal(text, replacement_), SplitBehavior::MergedWithNext, false);
      });
    }
  }

 private:
  std::string replace_spaces(const std::string& text) const {
    std::string out;
    out.reserve(text.size() + 8);
    for (char c : text) {
      if (c == ' ') out += replacement_;
      else out += c;
    }
    return out;
  }
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class DigitsPreTokenizer : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual) : individual_(individual) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](const std::string& text) {
      auto matches = char_matches(text, unicode::is_numeric);
      return split_by_matches(text.size(), matches,
                              individual_ ? SplitBehavior::Isolated : SplitBehavior::Contiguous, false);
    });
  }

 private:
  bool individual_;
};

class WhitespacePreTokenizer : public PreTokenizer {
 public:
  WhitespacePreTokenizer() : re_("\\w+|[^\\w\\s]+", "Whitespace pre-tokenizer") {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](const std::string& text) {
      return split_by_matches(text.size(), re_.find_all(text), SplitBehavior::Removed, true);
    });
  }

 private:
  Regex re_;
};

class WhitespaceSplitPreTokenizer : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](const std::string& text) {
      return split_by_matches(text.size(), char_matches(text, unicode::is_whitespace), SplitBehavior::Removed, false);
    });
  }
};

}  // namespace

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const Node& node) {
  node.require_object();
  std::string type = node.str("type");
  if (type == "Sequence") {
    Node list = node.array("pretokenizers");
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.j.size(); ++i) parts.push_back(parse_pre_tokenizer(list.at(i)));
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(node);
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(node);
  if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(node);
  if (type == "Digits") return std::make_unique<DigitsPreTokenizer>(node.boolean("individual_digits", false));
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  node.error("type", "is '" + type +
                         "', which rlf does not support (supported pre-tokenizers: Sequence, Split, ByteLevel, "
                         "Metaspace, Digits, Whitespace, WhitespaceSplit)");
}

}  // namespace rlf
