// tokenizer.json post-processors (see hf_pipeline.h). Only the single-sequence
// behaviour matters to rlf: which special ids go before and after the text.
#include <sstream>

#include "tokenizer/hf_pipeline.h"

namespace rlf {

namespace {

using tokjson::Node;

// [before...] ids [after...]
class WrapProcessor : public PostProcessor {
 public:
  WrapProcessor(std::vector<int32_t> before, std::vector<int32_t> after) : before_(std::move(before)), after_(std::move(after)) {}
  void add_special_tokens(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }

 private:
  std::vector<int32_t> before_, after_;
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void add_special_tokens(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts_) p->add_special_tokens(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

class NoopProcessor : public PostProcessor {
 public:
  void add_special_tokens(std::vector<int32_t>&) const override {}
};

// TemplateProcessing: the "single" template, with ids from "special_tokens".
std::unique_ptr<PostProcessor> parse_template(const Node& node) {
  Node special = node.child("special_tokens");
  special.require_object();
  auto ids_of = [&](const std::string& name, const Node& where) {
    if (!special.has(name))
      fail(where.file, ": field '", where.path, "' names special token '", name, "', which is not in ",
           special.path);
    Node entry = special.child(name);
    Node ids = entry.array("ids");
    std::vector<int32_t> out;
    for (size_t i = 0; i < ids.j.size(); ++i) {
      const Json& v = ids.j[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= (1 << 24))
        entry.error("ids", "must hold non-negative integer ids");
      out.push_back(static_cast<int32_t>(v.get<int64_t>()));
    }
    return out;
  };
  Node single = node.child("single");
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  auto add_piece = [&](const std::vector<int32_t>& ids) {
    auto& dst = seen_sequence ? after : before;
    dst.insert(dst.end(), ids.begin(), ids.end());
  };
  if (single.j.is_string()) {
    // "<s> $A </s>" / "[CLS]:0 $A:0 [SEP]:0"
    std::istringstream in(single.j.get<std::string>());
    std::string piece;
    while (in >> piece) {
      std::string name = piece.substr(0, piece.rfind(':') == std::string::npos ? piece.size() : piece.rfind(':'));
      if (!name.empty() && name[0] == '$') {
        seen_sequence = true;
      } else {
        add_piece(ids_of(name, single));
      }
    }
  } else if (single.j.is_array()) {
    for (size_t i = 0; i < single.j.size(); ++i) {
      Node item = single.at(i);
      item.require_object();
      if (item.has("Sequence")) {
        seen_sequence = true;
      } else if (item.has("SpecialToken")) {
        add_piece(ids_of(item.child("SpecialToken").str("id"), item));
      } else {
        fail(item.file, ": field '", item.path, "' must hold \"Sequence\" or \"SpecialToken\"");
      }
    }
  } else {
    node.error("single", std::string("must be an array or a string, got ") + single.j.type_name());
  }
  if (!seen_sequence) node.error("single", "has no $A sequence");
  return std::make_unique<WrapProcessor>(std::move(before), std::move(after));
}

// RobertaProcessing / BertProcessing: cls A sep, with "cls": ["<s>", 0].
std::unique_ptr<PostProcessor> parse_cls_sep(const Node& node) {
  auto id_of = [&](const char* key) {
    Node pair = node.array(key);
    if (pair.j.size() != 2 || !pair.j[1].is_number_integer()) node.error(key, "must be [token, id]");
    return static_cast<int32_t>(pair.j[1].get<int64_t>());
  };
  return std::make_unique<WrapProcessor>(std::vector<int32_t>{id_of("cls")}, std::vector<int32_t>{id_of("sep")});
}

}  // namespace

std::unique_ptr<PostProcessor> parse_post_processor(const Node& node, const TokenLookup& lookup) {
  node.require_object();
  std::string type = node.str("type");
  if (type == "Sequence") {
    Node list = node.array("processors");
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.j.size(); ++i) parts.push_back(parse_post_processor(list.at(i), lookup));
    return std::make_unique<SequenceProcessor>(std::move(parts));
  }
  if (type == "TemplateProcessing") return parse_template(node);
  if (type == "ByteLevel") return std::make_unique<NoopProcessor>();
  if (type == "RobertaProcessing" || type == "BertProcessing") return parse_cls_sep(node);
  node.error("type", "is '" + type +
                         "', which rlf does not support (supported post-processors: Sequence, TemplateProcessing, "
                         "ByteLevel, RobertaProcessing, BertProcessing)");
}

std::unique_ptr<PostProcessor> make_bos_eos_processor(std::optional<int32_t> bos, std::optional<int32_t> eos) {
  std::vector<int32_t> before, after;
  if (bos) before.push_back(*bos);
  if (eos) after.push_back(*eos);
  return std::make_unique<WrapProcessor>(std::move(before), std::move(after));
}

}  // namespace rlf
