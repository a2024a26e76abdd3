#include "model/config.h"

#include "util/error.h"

namespace rlf {

namespace {

const char* kFamilies[] = {"Llama", "Mistral", "Qwen2"};
constexpr const char* kCausal = "ForCausalLM";
constexpr const char* kClassifier = "ForSequenceClassification";

// "Qwen2" for "Qwen2ForCausalLM" or "Qwen2ForSequenceClassification"; "" when unsupported.
std::string family_of(const std::string& arch) {
  for (const char* f : kFamilies)
    for (const char* kind : {kCausal, kClassifier})
      if (arch == std::string(f) + kind) return f;
  return "";
}

bool is_classifier_arch(const std::string& arch) {
  const std::string k = kClassifier;
  return arch.size() > k.size() && arch.compare(arch.size() - k.size(), k.size(), k) == 0;
}

}  // namespace

void ModelConfig::validate(const std::string& source) const {
  auto positive = [&](int64_t v, const char* field) {
    check(v > 0, source, ": '", field, "' must be > 0 (got ", v, ")");
  };
  positive(vocab_size, "vocab_size");
  positive(hidden_size, "hidden_size");
  positive(intermediate_size, "intermediate_size");
  positive(num_hidden_layers, "num_hidden_layers");
  positive(num_attention_heads, "num_attention_heads");
  positive(num_key_value_heads, "num_key_value_heads");
  positive(max_position_embeddings, "max_position_embeddings");
  check(head_dim >= 0, source, ": 'head_dim' must be >= 0 (got ", head_dim, "; 0 = hidden_size / num_attention_heads)");
  check(num_attention_heads % num_key_value_heads == 0, source, ": 'num_attention_heads' (", num_attention_heads,
        ") must be a multiple of 'num_key_value_heads' (", num_key_value_heads, ")");
  if (head_dim <= 0)
    check(hidden_size % num_attention_heads == 0, source, ": 'hidden_size' (", hidden_size,
          ") must be divisible by 'num_attention_heads' (", num_attention_heads, ") unless 'head_dim' is given");
  check(resolved_head_dim() % 2 == 0, source, ": head dimension must be even for RoPE (got ", resolved_head_dim(), ")");
  check(rms_norm_eps > 0, source, ": 'rms_norm_eps' must be > 0");
  check(rope_theta > 0, source, ": 'rope_theta' must be > 0");
  check(num_labels >= 0, source, ": 'num_labels' must be >= 0 (got ", num_labels, ")");
  check((num_labels > 0) == is_classifier_arch(architecture), source, ": architecture '", architecture, "' with num_labels = ",
        num_labels, " (a *ForSequenceClassification model needs num_labels > 0, a causal LM 0)");
  check(hidden_act == "silu", source, ": 'hidden_act' = '", hidden_act, "' is not supported (only \"silu\")");
  check(rope_scaling.type.empty() || rope_scaling.type == "llama3", source, ": rope_scaling type '",
        rope_scaling.type, "' is not supported (supported: none, \"llama3\")");
  if (rope_scaling.type == "llama3") {
    check(rope_scaling.factor > 0 && rope_scaling.low_freq_factor > 0 &&
              rope_scaling.high_freq_factor > rope_scaling.low_freq_factor &&
              rope_scaling.original_max_position_embeddings > 0,
          source, ": rope_scaling (llama3) needs factor > 0, 0 < low_freq_factor < high_freq_factor, "
          "original_max_position_embeddings > 0");
  }
}

ModelConfig ModelConfig::from_hf_json(const Json& j, const std::string& source) {
  check(j.is_object(), source, ": expected a JSON object");
  ModelConfig c;
  auto archs = json_require<std::vector<std::string>>(j, "architectures", source);
  check(!archs.empty(), source, ": 'architectures' is empty");
  c.architecture = archs[0];
  check(!family_of(c.architecture).empty(), source, ": unsupported architecture '", c.architecture,
        "' in 'architectures' (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and their "
        "*ForSequenceClassification reward models)");
  if (is_classifier_arch(c.architecture)) {
    // transformers: num_labels, else the size of id2label, else 2.
    if (j.contains("num_labels")) c.num_labels = json_require<int64_t>(j, "num_labels", source);
    else if (j.contains("id2label") && j["id2label"].is_object()) c.num_labels = static_cast<int64_t>(j["id2label"].size());
    else c.num_labels = 2;
    check(c.num_labels > 0, source, ": 'num_labels' must be > 0 (got ", c.num_labels, ")");
    // Names other than transformers' default "LABEL_<i>" are kept (a multi-objective model's attributes).
    if (j.contains("id2label") && j["id2label"].is_object() &&
        static_cast<int64_t>(j["id2label"].size()) == c.num_labels) {
      std::vector<std::string> names;
      bool custom = false;
      for (int64_t i = 0; i < c.num_labels; ++i) {
        const std::string key = std::to_string(i);
        check(j["id2label"].contains(key) && j["id2label"][key].is_string(), source, ": 'id2label' has no name for ",
              key);
        names.push_back(j["id2label"][key].get<std::string>());
        custom = custom || names.back() != "LABEL_" + key;
      }
      if (custom) c.label_names = std::move(names);
    }
  }
  c.model_type = json_get_or<std::string>(j, "model_type", "llama", source);
  c.vocab_size = json_require<int64_t>(j, "vocab_size", source);
  c.hidden_size = json_require<int64_t>(j, "hidden_size", source);
  c.intermediate_size = json_require<int64_t>(j, "intermediate_size", source);
  c.num_hidden_layers = json_require<int64_t>(j, "num_hidden_layers", source);
  c.num_attention_heads = json_require<int64_t>(j, "num_attention_heads", source);
  c.num_key_value_heads = json_get_or<int64_t>(j, "num_key_value_heads", c.num_attention_heads, source);
  c.head_dim = json_get_or<int64_t>(j, "head_dim", 0, source);
  c.max_position_embeddings = json_get_or<int64_t>(j, "max_position_embeddings", 2048, source);
  c.rms_norm_eps = json_get_or<double>(j, "rms_norm_eps", 1e-6, source);
  c.rope_theta = json_get_or<double>(j, "rope_theta", 10000.0, source);
  c.tie_word_embeddings = json_get_or<bool>(j, "tie_word_embeddings", false, source);
  c.hidden_act = json_get_or<std::string>(j, "hidden_act", "silu", source);
  c.torch_dtype = json_get_or<std::string>(j, "torch_dtype", "float32", source);
  c.mlp_bias = json_get_or<bool>(j, "mlp_bias", false, source);
  if (family_of(c.architecture) == "Qwen2") {
    // Qwen2 always has q/k/v biases and never an o_proj bias.
    c.attention_bias = true;
    c.o_bias = false;
  } else {
    c.attention_bias = json_get_or<bool>(j, "attention_bias", false, source);
    c.o_bias = c.attention_bias;
  }
  if (j.contains("bos_token_id") && !j["bos_token_id"].is_null())
    c.bos_token_id = json_require<int64_t>(j, "bos_token_id", source);
  if (j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    // One id or a list of ids (Llama 3); anything else is a wrong type.
    if (j["eos_token_id"].is_array()) c.eos_token_ids = json_require<std::vector<int64_t>>(j, "eos_token_id", source);
    else c.eos_token_ids = {json_require<int64_t>(j, "eos_token_id", source)};
  }
  // transformers >= 5 writes rope_theta and the scaling together as
  // rope_parameters; older versions rope_theta and rope_scaling at the top.
  const char* rope_key = "rope_scaling";
  if (j.contains("rope_parameters") && !j["rope_parameters"].is_null()) {
    const Json& rp = j["rope_parameters"];
    check(rp.is_object(), source, " rope_parameters: expected an object");
    c.rope_theta = json_get_or<double>(rp, "rope_theta", c.rope_theta, source + " rope_parameters");
    rope_key = "rope_parameters";
  }
  if (j.contains(rope_key) && !j[rope_key].is_null()) {
    const Json& rs = j[rope_key];
    std::string rs_source = source + " " + rope_key;
    check(rs.is_object(), rs_source, ": expected an object");
    std::string type = json_get_or<std::string>(rs, "rope_type", "", rs_source);
    if (type.empty()) type = json_get_or<std::string>(rs, "type", "", rs_source);
    if (type != "default") c.rope_scaling.type = type;
    c.rope_scaling.factor = json_get_or<double>(rs, "factor", 8.0, rs_source);
    c.rope_scaling.low_freq_factor = json_get_or<double>(rs, "low_freq_factor", 1.0, rs_source);
    c.rope_scaling.high_freq_factor = json_get_or<double>(rs, "high_freq_factor", 4.0, rs_source);
    c.rope_scaling.original_max_position_embeddings =
        json_get_or<int64_t>(rs, "original_max_position_embeddings", 8192, rs_source);
  }
  c.validate(source);
  return c;
}

Json ModelConfig::to_hf_json() const {
  Json j;
  j["architectures"] = {architecture};
  j["model_type"] = model_type;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  if (head_dim > 0) j["head_dim"] = head_dim;
  j["max_position_embeddings"] = max_position_embeddings;
  j["rms_norm_eps"] = rms_norm_eps;
  j["rope_theta"] = rope_theta;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["hidden_act"] = hidden_act;
  j["torch_dtype"] = torch_dtype;
  if (family_of(architecture) != "Qwen2") {
    j["attention_bias"] = attention_bias;
    j["mlp_bias"] = mlp_bias;
  }
  if (bos_token_id) j["bos_token_id"] = *bos_token_id;
  if (eos_token_ids.size() == 1) j["eos_token_id"] = eos_token_ids[0];
  else if (!eos_token_ids.empty()) j["eos_token_id"] = eos_token_ids;
  if (rope_scaling.type == "llama3") {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", rope_scaling.factor},
                         {"low_freq_factor", rope_scaling.low_freq_factor},
                         {"high_freq_factor", rope_scaling.high_freq_factor},
                         {"original_max_position_embeddings", rope_scaling.original_max_position_embeddings}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["use_cache"] = true;
  if (num_labels > 0) {
    j["num_labels"] = num_labels;
    Json id2label = Json::object(), label2id = Json::object();
    for (int64_t i = 0; i < num_labels; ++i) {
      id2label[std::to_string(i)] = label_name(i);
      label2id[label_name(i)] = i;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
  }
  return j;
}

std::string ModelConfig::label_name(int64_t i) const {
  if (i >= 0 && i < static_cast<int64_t>(label_names.size())) return label_names[static_cast<size_t>(i)];
  return "LABEL_" + std::to_string(i);
}

ModelConfig ModelConfig::with_labels(int64_t labels) const {
  check(labels >= 0, "num_labels must be >= 0 (got ", labels, ")");
  const std::string family = family_of(architecture);
  check(!family.empty(), "unsupported architecture '", architecture, "'");
  ModelConfig c = *this;
  c.num_labels = labels;
  if (static_cast<int64_t>(c.label_names.size()) != labels) c.label_names.clear();
  c.architecture = family + (labels > 0 ? kClassifier : kCausal);
  return c;
}

ModelConfig ModelConfig::preset(const std::string& name) {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.tie_word_embeddings = true;
  c.rms_norm_eps = 1e-5;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  // llama2.c's hidden width: 2/3 * 4 * dim rounded up to a multiple of `multiple_of`.
  auto ffn = [](int64_t dim, int64_t multiple_of) {
    int64_t h = 2 * (4 * dim) / 3;
    return multiple_of * ((h + multiple_of - 1) / multiple_of);
  };
  if (name == "stories260K") {
    c.vocab_size = 512, c.hidden_size = 64, c.num_hidden_layers = 5, c.num_attention_heads = 8;
    c.num_key_value_heads = 4, c.intermediate_size = 172, c.max_position_embeddings = 512;
  } else if (name == "stories15M") {
    c.vocab_size = 32000, c.hidden_size = 288, c.num_hidden_layers = 6, c.num_attention_heads = 6;
    c.num_key_value_heads = 6, c.intermediate_size = ffn(288, 32), c.max_position_embeddings = 256;
  } else if (name == "stories42M") {
    c.vocab_size = 32000, c.hidden_size = 512, c.num_hidden_layers = 8, c.num_attention_heads = 8;
    c.num_key_value_heads = 8, c.intermediate_size = ffn(512, 32), c.max_position_embeddings = 1024;
  } else if (name == "stories110M") {
    c.vocab_size = 32000, c.hidden_size = 768, c.num_hidden_layers = 12, c.num_attention_heads = 12;
    c.num_key_value_heads = 12, c.intermediate_size = ffn(768, 32), c.max_position_embeddings = 1024;
  } else {
    fail("unknown model shape '", name, "' (known: stories260K, stories15M, stories42M, stories110M)");
  }
  c.validate("preset " + name);
  return c;
}

int64_t ModelConfig::n_params() const {
  const int64_t d = hidden_size, hd = resolved_head_dim();
  const int64_t q = num_attention_heads * hd, kv = num_key_value_heads * hd;
  int64_t attn = d * q + 2 * d * kv + q * d;
  if (attention_bias) attn += q + 2 * kv;
  if (o_bias) attn += d;
  int64_t mlp = 3 * d * intermediate_size;
  if (mlp_bias) mlp += 2 * intermediate_size + d;
  int64_t per_layer = attn + mlp + 2 * d;
  int64_t total = vocab_size * d + num_hidden_layers * per_layer + d;
  if (num_labels > 0) total += num_labels * d;  // the score head; a classifier has no LM head
  else if (!tie_word_embeddings) total += vocab_size * d;
  return total;
}

}  // namespace rlf
