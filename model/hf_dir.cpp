#include "model/hf_dir.h"

#include "model/checkpoint_layout.h"
#include "model/safetensors.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/write_target.h"

namespace rlf {

namespace {

template <typename T>
std::optional<T> optional_field(const Json& j, const std::string& key, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return json_require<T>(j, key, source);
}

}  // namespace

GenerationDefaults GenerationDefaults::from_json(const Json& j, const std::string& source) {
  check(j.is_object(), source, ": expected a JSON object");
  GenerationDefaults g;
  g.bos_token_id = optional_field<int64_t>(j, "bos_token_id", source);
  g.pad_token_id = optional_field<int64_t>(j, "pad_token_id", source);
  auto eos = j.find("eos_token_id");
  if (eos != j.end() && !eos->is_null()) {
    if (eos->is_array()) g.eos_token_ids = json_require<std::vector<int64_t>>(j, "eos_token_id", source);
    else g.eos_token_ids = {json_require<int64_t>(j, "eos_token_id", source)};
  }
  g.do_sample = optional_field<bool>(j, "do_sample", source);
  g.temperature = optional_field<double>(j, "temperature", source);
  g.top_p = optional_field<double>(j, "top_p", source);
  g.top_k = optional_field<int64_t>(j, "top_k", source);
  g.max_new_tokens = optional_field<int64_t>(j, "max_new_tokens", source);
  check(!g.temperature || *g.temperature >= 0, source, ": 'temperature' must be >= 0 (got ", g.temperature.value_or(0), ")");
  check(!g.top_p || (*g.top_p >= 0 && *g.top_p <= 1), source, ": 'top_p' must be in [0, 1] (got ", g.top_p.value_or(0), ")");
  check(!g.top_k || *g.top_k >= 0, source, ": 'top_k' must be >= 0 (got ", g.top_k.value_or(0), ")");
  check(!g.max_new_tokens || *g.max_new_tokens > 0, source, ": 'max_new_tokens' must be > 0 (got ",
        g.max_new_tokens.value_or(0), ")");
  return g;
}

Json GenerationDefaults::to_json() const {
  Json j = Json::object();
  if (bos_token_id) j["bos_token_id"] = *bos_token_id;
  if (eos_token_ids.size() == 1) j["eos_token_id"] = eos_token_ids[0];
  else if (!eos_token_ids.empty()) j["eos_token_id"] = eos_token_ids;
  if (pad_token_id) j["pad_token_id"] = *pad_token_id;
  if (do_sample) j["do_sample"] = *do_sample;
  if (temperature) j["temperature"] = *temperature;
  if (top_p) j["top_p"] = *top_p;
  if (top_k) j["top_k"] = *top_k;
  if (max_new_tokens) j["max_new_tokens"] = *max_new_tokens;
  return j;
}

HfModelDir::HfModelDir(const std::filesystem::path& dir) : dir_(dir) {
  const std::string where = "model directory '" + dir.string() + "'";
  check(std::filesystem::is_directory(dir), where, ": not a directory");
  const auto config_path = dir / "config.json";
  check(std::filesystem::is_regular_file(config_path), where,
        ": no config.json (expected a Hugging Face model directory as written by save_pretrained)");
  config_ = ModelConfig::from_hf_json(read_json_file(config_path.string()), "'" + config_path.string() + "'");

  const auto gen_path = dir / "generation_config.json";
  if (std::filesystem::is_regular_file(gen_path)) {
    generation_ = GenerationDefaults::from_json(read_json_file(gen_path.string()), "'" + gen_path.string() + "'");
    has_generation_config_ = true;
  }

  const auto single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  if (std::filesystem::is_regular_file(single)) {
    weights_path_ = single;
    tensors_ = SafetensorsFile(single).tensors();
  } else if (std::filesystem::is_regular_file(index)) {
    weights_path_ = index;
    tensors_ = read_safetensors_index(index);
  } else {
    bool has_bin = std::filesystem::exists(dir / "pytorch_model.bin") ||
                   std::filesystem::exists(dir / "pytorch_model.bin.index.json");
    fail(where, ": no model.safetensors or model.safetensors.index.json",
         has_bin ? " (pytorch_model.bin is not supported: re-save with save_pretrained(dir, safe_serialization=True))"
                 : "");
  }
}

void HfModelDir::check_tensors() const {
  rlf::check_tensors(config_, tensors_, "model directory '" + dir_.string() + "' (" + weights_path_.filename().string() + ")");
}

void write_hf_dir_files(const std::filesystem::path& dir, const ModelConfig& config, const HfDirWriteOptions& options) {
  config.validate("model config for '" + dir.string() + "'");
  ensure_directory(dir);
  write_file_atomic(dir / "config.json", config.to_hf_json().dump(2) + "\n");
  if (options.generation) write_file_atomic(dir / "generation_config.json", options.generation->to_json().dump(2) + "\n");
  if (!options.tokenizer_source.empty()) {
    check(std::filesystem::is_directory(options.tokenizer_source), "tokenizer source '",
          options.tokenizer_source.string(), "' is not a directory");
    for (const char* name : kTokenizerFiles) {
      const auto src = options.tokenizer_source / name;
      if (std::filesystem::is_regular_file(src)) write_file_atomic(dir / name, read_file(src));
    }
  }
}

}  // namespace rlf
