#include "model/config.h"

#include <cmath>

#include "model/checkpoint_layout.h"
#include "util/error.h"

namespace rlf {

namespace {

constexpr const char* kFull = "full_attention";
constexpr const char* kSliding = "sliding_attention";
const char* kRopeTypes[] = {"linear", "dynamic", "yarn", "longrope", "llama3"};

bool known_rope_type(const std::string& t) {
  if (t.empty()) return true;
  for (const char* k : kRopeTypes)
    if (t == k) return true;
  return false;
}

// A key that config.json may hold as null (transformers' None): nullopt then, and when absent.
template <typename T>
std::optional<T> nullable(const Json& j, const std::string& key, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return json_require<T>(j, key, source);
}

// One RoPE parameter object (a 4.x rope_scaling or a 5.x rope_parameters,
// flat or one layer type's), as transformers' standardize_rope_params reads it.
// `top` is the whole config (top-level rope_theta, partial_rotary_factor,
// original_max_position_embeddings).
RopeSpec parse_rope(const Json& rp, const Json& top, double default_theta, const Family& family,
                    const std::string& source) {
  check(rp.is_object(), source, ": expected an object");
  RopeSpec spec;
  spec.theta = json_get_or<double>(rp, "rope_theta", json_get_or<double>(top, "rope_theta", default_theta, source),
                                   source);
  RopeScaling& s = spec.scaling;
  std::string type = json_get_or<std::string>(rp, "rope_type", json_get_or<std::string>(rp, "type", "", source), source);
  // Phi-3's config class reads "su" (its first name for longrope) and "yarn" as longrope.
  if (family.name == "Phi3" && (type == "su" || type == "yarn")) type = "longrope";
  s.type = type == "default" ? "" : type;
  check(known_rope_type(s.type), source, ": rope type '", type,
        "' is not supported (supported: default, linear, dynamic, yarn, longrope, llama3)");
  if (!family.rope_types.empty() && !s.type.empty())
    check(std::find(family.rope_types.begin(), family.rope_types.end(), s.type) != family.rope_types.end(), source,
          ": rope type '", type, "' is not one transformers accepts for ", family.causal_arch, " (default or longrope)");
  s.factor = nullable<double>(rp, "factor", source).value_or(0);
  s.low_freq_factor = json_get_or<double>(rp, "low_freq_factor", 1.0, source);
  s.high_freq_factor = json_get_or<double>(rp, "high_freq_factor", 4.0, source);
  s.attention_factor = nullable<double>(rp, "attention_factor", source);
  // transformers: `beta_fast or 32`, `beta_slow or 1` (0 counts as unset).
  s.beta_fast = nullable<double>(rp, "beta_fast", source).value_or(0);
  if (s.beta_fast == 0) s.beta_fast = 32;
  s.beta_slow = nullable<double>(rp, "beta_slow", source).value_or(0);
  if (s.beta_slow == 0) s.beta_slow = 1;
  s.mscale = nullable<double>(rp, "mscale", source);
  s.mscale_all_dim = nullable<double>(rp, "mscale_all_dim", source);
  s.truncate = json_get_or<bool>(rp, "truncate", true, source);
  s.short_factor = json_get_or<std::vector<double>>(rp, "short_factor", {}, source);
  s.long_factor = json_get_or<std::vector<double>>(rp, "long_factor", {}, source);
  if (s.type == "llama3" || s.type == "yarn" || s.type == "longrope") {
    // A top-level original_max_position_embeddings (Phi-3's own field) wins, as in standardize_rope_params.
    const int64_t mpe = json_require<int64_t>(top, "max_position_embeddings", source);
    if (top.contains("original_max_position_embeddings") && !top["original_max_position_embeddings"].is_null())
      s.original_max_position_embeddings = json_require<int64_t>(top, "original_max_position_embeddings", source);
    else
      s.original_max_position_embeddings = json_get_or<int64_t>(rp, "original_max_position_embeddings", mpe, source);
  }
  return spec;
}

// transformers 5's configs check types strictly: an int field (query_pre_attn_scalar) must not hold 20.0.
Json integral_or_double(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return Json(static_cast<int64_t>(v));
  return Json(v);
}

Json rope_json(const RopeSpec& spec, double partial_rotary_factor) {
  const RopeScaling& s = spec.scaling;
  Json j = {{"rope_type", s.type.empty() ? "default" : s.type}, {"rope_theta", spec.theta}};
  if (partial_rotary_factor != 1.0) j["partial_rotary_factor"] = partial_rotary_factor;
  if (s.type.empty()) return j;
  if (s.factor > 0) j["factor"] = s.factor;
  if (s.type == "llama3") {
    j["low_freq_factor"] = s.low_freq_factor;
    j["high_freq_factor"] = s.high_freq_factor;
  }
  if (s.type == "llama3" || s.type == "yarn" || s.type == "longrope")
    j["original_max_position_embeddings"] = s.original_max_position_embeddings;
  if ((s.type == "yarn" || s.type == "longrope") && s.attention_factor) j["attention_factor"] = *s.attention_factor;
  if (s.type == "yarn") {
    j["beta_fast"] = s.beta_fast;
    j["beta_slow"] = s.beta_slow;
    if (s.mscale) j["mscale"] = *s.mscale;
    if (s.mscale_all_dim) j["mscale_all_dim"] = *s.mscale_all_dim;
    if (!s.truncate) j["truncate"] = false;
  }
  if (s.type == "longrope") {
    j["short_factor"] = s.short_factor;
    j["long_factor"] = s.long_factor;
  }
  return j;
}

void validate_rope(const RopeSpec& spec, int64_t rotary_dim, const std::string& where) {
  const RopeScaling& s = spec.scaling;
  check(spec.theta > 0, where, ": 'rope_theta' must be > 0 (got ", spec.theta, ")");
  check(known_rope_type(s.type), where, ": rope type '", s.type,
        "' is not supported (supported: default, linear, dynamic, yarn, longrope, llama3)");
  if (s.type == "linear" || s.type == "dynamic" || s.type == "llama3")
    check(s.factor > 0, where, ": rope type '", s.type, "' needs 'factor' > 0 (got ", s.factor, ")");
  if (s.type == "llama3")
    check(s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor && s.original_max_position_embeddings > 0,
          where, ": rope type 'llama3' needs 0 < low_freq_factor < high_freq_factor and "
          "original_max_position_embeddings > 0");
  if (s.type == "yarn" || s.type == "longrope")
    check(s.original_max_position_embeddings > 0 && s.factor >= 0, where, ": rope type '", s.type,
          "' needs original_max_position_embeddings > 0 and factor >= 0");
  if (s.type == "yarn") check(s.beta_fast > 0 && s.beta_slow > 0, where, ": yarn needs beta_fast, beta_slow > 0");
  if (s.type == "longrope") {
    const size_t n = static_cast<size_t>(rotary_dim / 2);
    check(s.short_factor.size() == n && s.long_factor.size() == n, where,
          ": rope type 'longrope' needs short_factor and long_factor of rotary_dim / 2 = ", n, " values (got ",
          s.short_factor.size(), " and ", s.long_factor.size(), ")");
  }
}

// transformers' layer_types when config.json has none (`window_on`: a window applies).
std::vector<std::string> default_layer_types(const Family& f, const Json& j, int64_t L, bool window_on,
                                             const std::vector<int64_t>& no_rope, const std::string& source) {
  std::vector<std::string> out(static_cast<size_t>(L), kFull);
  for (int64_t i = 0; i < L; ++i) {
    bool sliding = false;
    switch (f.default_layer_types) {
      case DefaultLayerTypes::AllFull: break;
      case DefaultLayerTypes::EveryOther: sliding = (i + 1) % 2 != 0; break;
      case DefaultLayerTypes::Pattern: {
        const int64_t pattern = json_get_or<int64_t>(
            j, "sliding_window_pattern", json_get_or<int64_t>(j, "_sliding_window_pattern", 6, source), source);
        check(pattern > 0, source, ": 'sliding_window_pattern' must be > 0 (got ", pattern, ")");
        sliding = (i + 1) % pattern != 0;
        break;
      }
      case DefaultLayerTypes::FromMaxWindow:
        sliding = window_on && i >= json_get_or<int64_t>(j, "max_window_layers", 28, source);
        break;
      case DefaultLayerTypes::NoRopeLayers: sliding = window_on && !no_rope.empty() && no_rope[i] == 0; break;
    }
    if (f.sliding == SlidingRule::AllLayers) sliding = window_on;
    if (sliding) out[i] = kSliding;
  }
  return out;
}

// Sliding window, layer types and RoPE-less layers, by the family's rules.
void parse_layers(ModelConfig& c, const Family& f, const Json& j, const std::string& source) {
  const int64_t L = c.num_hidden_layers;
  if (f.nope_layers) {
    if (j.contains("no_rope_layers") && !j["no_rope_layers"].is_null()) {
      c.no_rope_layers = json_require<std::vector<int64_t>>(j, "no_rope_layers", source);
    } else {
      const int64_t every = json_get_or<int64_t>(j, "no_rope_layer_interval", 4, source);
      check(every > 0, source, ": 'no_rope_layer_interval' must be > 0 (got ", every, ")");
      for (int64_t i = 0; i < L; ++i) c.no_rope_layers.push_back((i + 1) % every != 0 ? 1 : 0);
    }
  }
  const int64_t window = nullable<int64_t>(j, "sliding_window", source).value_or(0);
  bool on = window > 0;
  if (f.sliding == SlidingRule::None) on = false;
  if (f.sliding == SlidingRule::LayerTypesIfEnabled) on = on && json_get_or<bool>(j, "use_sliding_window", false, source);
  c.sliding_window = on ? window : 0;
  if (j.contains("layer_types") && !j["layer_types"].is_null() && f.sliding != SlidingRule::None &&
      f.sliding != SlidingRule::AllLayers) {
    c.layer_types = json_require<std::vector<std::string>>(j, "layer_types", source);
  } else {
    c.layer_types = default_layer_types(f, j, L, on, c.no_rope_layers, source);
  }
}

}  // namespace

bool RopeScaling::operator==(const RopeScaling& o) const {
  return type == o.type && factor == o.factor && low_freq_factor == o.low_freq_factor &&
         high_freq_factor == o.high_freq_factor &&
         original_max_position_embeddings == o.original_max_position_embeddings &&
         attention_factor == o.attention_factor && beta_fast == o.beta_fast && beta_slow == o.beta_slow &&
         mscale == o.mscale && mscale_all_dim == o.mscale_all_dim && truncate == o.truncate &&
         short_factor == o.short_factor && long_factor == o.long_factor;
}

const Family& ModelConfig::family() const { return family_of(architecture, "model config"); }

int64_t ModelConfig::rotary_dim() const {
  return static_cast<int64_t>(static_cast<double>(resolved_head_dim()) * partial_rotary_factor);
}

double ModelConfig::attention_scale() const {
  const double d = query_pre_attn_scalar > 0 ? query_pre_attn_scalar : static_cast<double>(resolved_head_dim());
  return 1.0 / std::sqrt(d);
}

LayerAttention ModelConfig::layer_attention(int64_t layer) const {
  LayerAttention a;
  const bool sliding = !layer_types.empty() && layer_types[static_cast<size_t>(layer)] == kSliding;
  if (sliding) a.window = sliding_window;
  if (!no_rope_layers.empty() && no_rope_layers[static_cast<size_t>(layer)] == 0) a.rope = -1;
  else if (sliding && rope_local_theta > 0) a.rope = 1;
  return a;
}

RopeSpec ModelConfig::rope(int which) const {
  if (which == 1) {
    check(rope_local_theta > 0, "rope table 1 asked of a model without local RoPE");
    return {rope_local_theta, rope_local_scaling};
  }
  return {rope_theta, rope_scaling};
}

void ModelConfig::validate(const std::string& source) const {
  const Family* fam = find_family(architecture);
  check(fam != nullptr, source, ": unsupported architecture '", architecture, "' (supported: ",
        supported_architectures(), " and their *ForSequenceClassification reward models)");
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
  check(partial_rotary_factor > 0 && partial_rotary_factor <= 1, source, ": 'partial_rotary_factor' must be in (0, 1] (got ",
        partial_rotary_factor, ")");
  check(partial_rotary_factor == 1.0 || fam->partial_rotary, source, ": 'partial_rotary_factor' = ",
        partial_rotary_factor, ", but ", fam->name, " rotates whole heads");
  check(rotary_dim() % 2 == 0 && rotary_dim() > 0, source, ": RoPE's dimension head_dim x partial_rotary_factor = ",
        rotary_dim(), " must be even and > 0");
  check(rms_norm_eps > 0, source, ": 'rms_norm_eps' must be > 0");
  check(num_labels >= 0, source, ": 'num_labels' must be >= 0 (got ", num_labels, ")");
  check((num_labels > 0) == is_classifier_architecture(architecture), source, ": architecture '", architecture,
        "' with num_labels = ", num_labels,
        " (a *ForSequenceClassification model needs num_labels > 0, a causal LM 0)");
  check(hidden_act == "silu" || hidden_act == "gelu_pytorch_tanh", source, ": '", fam->act_key, "' = '", hidden_act,
        "' is not supported (\"silu\" or \"gelu_pytorch_tanh\")");
  check(query_pre_attn_scalar >= 0 && attn_logit_softcapping >= 0 && final_logit_softcapping >= 0, source,
        ": query_pre_attn_scalar, attn_logit_softcapping and final_logit_softcapping must be >= 0 (0 = off)");
  check(sliding_window >= 0, source, ": 'sliding_window' must be >= 0 (got ", sliding_window, ")");
  const size_t L = static_cast<size_t>(num_hidden_layers);
  check(layer_types.empty() || layer_types.size() == L, source, ": 'layer_types' has ", layer_types.size(),
        " entries for ", num_hidden_layers, " layers");
  for (size_t i = 0; i < layer_types.size(); ++i)
    check(layer_types[i] == kFull || layer_types[i] == kSliding, source, ": layer_types[", i, "] = '", layer_types[i],
          "' (expected \"full_attention\" or \"sliding_attention\")");
  check(no_rope_layers.empty() || no_rope_layers.size() == L, source, ": 'no_rope_layers' has ",
        no_rope_layers.size(), " entries for ", num_hidden_layers, " layers");
  for (size_t i = 0; i < no_rope_layers.size(); ++i)
    check(no_rope_layers[i] == 0 || no_rope_layers[i] == 1, source, ": no_rope_layers[", i, "] = ", no_rope_layers[i],
          " (1 = RoPE, 0 = none)");
  check(rope_local_theta >= 0, source, ": 'rope_local_base_freq' must be > 0");
  for (int r = 0; r < n_rope_tables(); ++r)
    validate_rope(rope(r), rotary_dim(), source + (r == 1 ? " (sliding layers' rope)" : " rope"));
}

ModelConfig ModelConfig::from_hf_json(const Json& file, const std::string& source) {
  check(file.is_object(), source, ": expected a JSON object");
  ModelConfig c;
  auto archs = json_require<std::vector<std::string>>(file, "architectures", source);
  check(!archs.empty(), source, ": 'architectures' is empty");
  c.architecture = archs[0];
  const Family& f = family_of(c.architecture, source);
  // Keys the file leaves out take transformers' class defaults for the family.
  Json j = f.defaults;
  for (auto it = file.begin(); it != file.end(); ++it) j[it.key()] = it.value();

  if (is_classifier_architecture(c.architecture)) {
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
  check(!json_get_or<bool>(j, "use_bidirectional_attention", false, source), source,
        ": use_bidirectional_attention = true (an encoder such as EmbeddingGemma) is not a causal LM");
  c.model_type = json_get_or<std::string>(j, "model_type", f.model_types[0], source);
  check(std::find(f.model_types.begin(), f.model_types.end(), c.model_type) != f.model_types.end(), source,
        ": model_type '", c.model_type, "' does not go with architecture '", c.architecture, "' (expected '",
        f.model_types[0], "')");
  c.vocab_size = json_require<int64_t>(j, "vocab_size", source);
  c.hidden_size = json_require<int64_t>(j, "hidden_size", source);
  c.intermediate_size = json_require<int64_t>(j, "intermediate_size", source);
  c.num_hidden_layers = json_require<int64_t>(j, "num_hidden_layers", source);
  c.num_attention_heads = json_require<int64_t>(j, "num_attention_heads", source);
  c.num_key_value_heads = json_get_or<int64_t>(j, "num_key_value_heads", c.num_attention_heads, source);
  c.head_dim = json_get_or<int64_t>(j, "head_dim", 0, source);
  c.max_position_embeddings = json_get_or<int64_t>(j, "max_position_embeddings", 2048, source);
  c.rms_norm_eps = json_get_or<double>(j, "rms_norm_eps", 1e-6, source);
  c.tie_word_embeddings = json_get_or<bool>(j, "tie_word_embeddings", false, source);
  c.hidden_act = json_get_or<std::string>(j, f.act_key, "silu", source);
  c.torch_dtype = json_get_or<std::string>(j, "torch_dtype", json_get_or<std::string>(j, "dtype", "float32", source),
                                           source);
  c.mlp_bias = f.mlp_bias_key && json_get_or<bool>(j, "mlp_bias", false, source);
  switch (f.attention_bias) {
    case AttentionBias::None: c.attention_bias = c.o_bias = false; break;
    case AttentionBias::QkvAlways: c.attention_bias = true, c.o_bias = false; break;
    case AttentionBias::Key: c.attention_bias = c.o_bias = json_get_or<bool>(j, "attention_bias", false, source); break;
  }
  if (f.query_pre_attn_scalar) c.query_pre_attn_scalar = nullable<double>(j, "query_pre_attn_scalar", source).value_or(0);
  if (f.attn_softcap) c.attn_logit_softcapping = nullable<double>(j, "attn_logit_softcapping", source).value_or(0);
  if (f.final_softcap) c.final_logit_softcapping = nullable<double>(j, "final_logit_softcapping", source).value_or(0);
  if (j.contains("bos_token_id") && !j["bos_token_id"].is_null())
    c.bos_token_id = json_require<int64_t>(j, "bos_token_id", source);
  c.pad_token_id = nullable<int64_t>(file, "pad_token_id", source);
  if (j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    // One id or a list of ids (Llama 3); anything else is a wrong type.
    if (j["eos_token_id"].is_array()) c.eos_token_ids = json_require<std::vector<int64_t>>(j, "eos_token_id", source);
    else c.eos_token_ids = {json_require<int64_t>(j, "eos_token_id", source)};
  }

  // RoPE. transformers >= 5 writes rope_parameters (flat, or per layer type
  // for Gemma 3); 4.x rope_theta and rope_scaling at the top, which, when
  // set, 5.x reads instead (for Gemma 3: into the full-attention layers').
  Json rp = Json::object();
  bool nested = false;
  if (j.contains("rope_parameters") && !j["rope_parameters"].is_null()) {
    rp = j["rope_parameters"];
    check(rp.is_object(), source, " rope_parameters: expected an object");
    nested = rp.contains(kFull) || rp.contains(kSliding);
  }
  Json global = nested ? (rp.contains(kFull) && !rp[kFull].is_null() ? rp[kFull] : Json::object()) : rp;
  const std::string global_src = source + (nested ? " rope_parameters.full_attention" : " rope_parameters");
  std::string g_src = global_src;
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    check(j["rope_scaling"].is_object(), source, " rope_scaling: expected an object");
    if (nested) {
      for (auto it = j["rope_scaling"].begin(); it != j["rope_scaling"].end(); ++it) global[it.key()] = it.value();
    } else {
      global = j["rope_scaling"];
    }
    g_src = source + " rope_scaling";
  }
  const double default_theta = json_get_or<double>(f.defaults, "rope_theta", 10000.0, source);
  RopeSpec g = parse_rope(global, j, default_theta, f, g_src);
  c.rope_theta = g.theta;
  c.rope_scaling = g.scaling;
  if (f.partial_rotary)
    c.partial_rotary_factor = json_get_or<double>(global, "partial_rotary_factor",
                                                  json_get_or<double>(j, "partial_rotary_factor", 1.0, source), source);
  if (f.local_rope) {
    Json local = nested && rp.contains(kSliding) && !rp[kSliding].is_null() ? rp[kSliding] : Json::object();
    if (!local.contains("rope_theta"))
      local["rope_theta"] = json_get_or<double>(j, "rope_local_base_freq", 10000.0, source);
    RopeSpec l = parse_rope(local, j, 10000.0, f, source + " rope_parameters.sliding_attention");
    c.rope_local_theta = l.theta;
    c.rope_local_scaling = l.scaling;
  }
  parse_layers(c, f, j, source);
  c.validate(source);
  return c;
}

Json ModelConfig::to_hf_json() const {
  const Family& f = family();
  Json j;
  j["architectures"] = {architecture};
  j["model_type"] = model_type;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  if (head_dim > 0 || f.defaults.contains("head_dim")) j["head_dim"] = resolved_head_dim();
  j["max_position_embeddings"] = max_position_embeddings;
  j["rms_norm_eps"] = rms_norm_eps;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j[f.act_key] = hidden_act;
  j["torch_dtype"] = torch_dtype;
  if (f.attention_bias == AttentionBias::Key) j["attention_bias"] = attention_bias;
  if (f.mlp_bias_key) j["mlp_bias"] = mlp_bias;
  if (bos_token_id) j["bos_token_id"] = *bos_token_id;
  j["pad_token_id"] = pad_token_id ? Json(*pad_token_id) : Json(nullptr);
  if (eos_token_ids.size() == 1) j["eos_token_id"] = eos_token_ids[0];
  else if (!eos_token_ids.empty()) j["eos_token_id"] = eos_token_ids;

  // RoPE in both layouts: 4.x (rope_theta, rope_scaling, rope_local_base_freq,
  // partial_rotary_factor) and 5.x (rope_parameters).
  const RopeSpec g = rope(0);
  j["rope_theta"] = rope_theta;
  if (rope_scaling.type.empty()) {
    j["rope_scaling"] = nullptr;
  } else {
    Json rs = rope_json(g, 1.0);
    rs.erase("rope_theta");
    j["rope_scaling"] = rs;
  }
  if (partial_rotary_factor != 1.0 || f.name == "Phi3") j["partial_rotary_factor"] = partial_rotary_factor;
  if (f.name == "Phi3")  // its own top-level field, which overrides rope_parameters' in transformers
    j["original_max_position_embeddings"] = rope_scaling.original_max_position_embeddings > 0
                                                ? rope_scaling.original_max_position_embeddings
                                                : max_position_embeddings;
  if (f.local_rope) {
    j["rope_local_base_freq"] = rope_local_theta;
    j["rope_parameters"] = {{kFull, rope_json(g, partial_rotary_factor)},
                            {kSliding, rope_json(rope(1), partial_rotary_factor)}};
  } else {
    j["rope_parameters"] = rope_json(g, partial_rotary_factor);
  }

  // Attention windows and per-layer choices.
  const std::vector<std::string> types =
      layer_types.empty() ? std::vector<std::string>(static_cast<size_t>(num_hidden_layers), kFull) : layer_types;
  if (f.sliding != SlidingRule::None) j["sliding_window"] = sliding_window > 0 ? Json(sliding_window) : Json(nullptr);
  if (f.sliding == SlidingRule::LayerTypes || f.sliding == SlidingRule::LayerTypesIfEnabled) j["layer_types"] = types;
  if (f.sliding == SlidingRule::LayerTypesIfEnabled) {
    j["use_sliding_window"] = sliding_window > 0;
    int64_t first = num_hidden_layers;  // 4.x Qwen 2 reads the first sliding layer from max_window_layers
    for (int64_t i = num_hidden_layers - 1; i >= 0; --i)
      if (types[static_cast<size_t>(i)] == kSliding) first = i;
    if (f.default_layer_types == DefaultLayerTypes::FromMaxWindow) j["max_window_layers"] = first;
  }
  if (f.nope_layers) {
    j["no_rope_layers"] = no_rope_layers.empty() ? std::vector<int64_t>(static_cast<size_t>(num_hidden_layers), 1)
                                                 : no_rope_layers;
  }
  if (f.query_pre_attn_scalar)
    j["query_pre_attn_scalar"] = query_pre_attn_scalar > 0 ? integral_or_double(query_pre_attn_scalar)
                                                           : Json(resolved_head_dim());
  if (f.final_softcap)
    j["final_logit_softcapping"] = final_logit_softcapping > 0 ? Json(final_logit_softcapping) : Json(nullptr);
  if (f.attn_softcap || f.final_softcap)
    j["attn_logit_softcapping"] = attn_logit_softcapping > 0 ? Json(attn_logit_softcapping) : Json(nullptr);
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
  const Family& f = family_of(architecture, "with_labels");
  check(labels == 0 || !f.classifier_arch.empty(), f.name, " has no sequence classifier in transformers");
  ModelConfig c = *this;
  c.num_labels = labels;
  if (static_cast<int64_t>(c.label_names.size()) != labels) c.label_names.clear();
  c.architecture = labels > 0 ? f.classifier_arch : f.causal_arch;
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
  int64_t total = 0;
  for (const ExpectedTensor& e : expected_tensors(*this)) {
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    total += n;
  }
  return total;
}

}  // namespace rlf
