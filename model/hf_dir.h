// A Hugging Face model directory (what save_pretrained writes), torch-free:
// config.json → ModelConfig, optional generation_config.json →
// GenerationDefaults, and weights from model.safetensors or a sharded
// model.safetensors.index.json as TensorViews over memory maps. Also writes
// the non-weight files of such a directory (the weights themselves go through
// write_safetensors in model/safetensors.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/tensor_view.h"
#include "util/json_util.h"

namespace rlf {

// Decoding defaults from generation_config.json; fields absent from the file
// stay empty (the caller's own defaults apply).
struct GenerationDefaults {
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;     // eos_token_id: one id or a list
  std::optional<int64_t> pad_token_id;
  std::optional<bool> do_sample;          // false: greedy
  std::optional<double> temperature;      // > 0
  std::optional<double> top_p;            // in (0, 1]
  std::optional<int64_t> top_k;           // >= 0 (0 = off)
  std::optional<int64_t> max_new_tokens;  // > 0

  // Parses a generation_config.json object; wrong types or out-of-range values
  // are errors naming `source` and the field. Unknown fields are ignored.
  static GenerationDefaults from_json(const Json& j, const std::string& source);
  // Writes only the fields that are set.
  Json to_json() const;
};

// The tokenizer files copied along with a model directory when present.
inline constexpr const char* kTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json",
                                                  "special_tokens_map.json", "tokenizer.model"};

class HfModelDir {
 public:
  // Reads config.json, generation_config.json (if present) and maps the
  // weights (model.safetensors, else model.safetensors.index.json and its
  // shards). Does not check the tensors against the config: call
  // check_tensors(). Throws rlf::Error naming the directory and what is missing.
  explicit HfModelDir(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  // Empty defaults when the directory has no generation_config.json.
  const GenerationDefaults& generation() const { return generation_; }
  bool has_generation_config() const { return has_generation_config_; }
  // The weights file read: model.safetensors or model.safetensors.index.json.
  const std::filesystem::path& weights_path() const { return weights_path_; }
  const TensorMap& tensors() const { return tensors_; }

  // Verifies that every tensor config() requires is present with the right
  // shape and a weight dtype, and that there are no unknown ones
  // (checkpoint_layout.h); throws naming the directory and the tensor.
  void check_tensors() const;

 private:
  std::filesystem::path dir_;
  ModelConfig config_;
  GenerationDefaults generation_;
  bool has_generation_config_ = false;
  std::filesystem::path weights_path_;
  TensorMap tensors_;
};

struct HfDirWriteOptions {
  // Written as generation_config.json when set.
  std::optional<GenerationDefaults> generation;
  // Directory to copy kTokenizerFiles from (those present); empty: none.
  std::filesystem::path tokenizer_source;
};

// Creates `dir` if needed and writes config.json (config.to_hf_json()),
// generation_config.json and the tokenizer files, each atomically. The
// weights are written separately (write_safetensors to dir/"model.safetensors").
void write_hf_dir_files(const std::filesystem::path& dir, const ModelConfig& config,
                        const HfDirWriteOptions& options = {});

}  // namespace rlf
