// Loading and saving whole models on the LibTorch side.
//
// load_model() accepts a Hugging Face directory (config.json + safetensors) or
// a llama2.c checkpoint file (.bin). Weights are viewed in place through a
// memory map and copied exactly once, into the model's parameters, converting
// dtype on the way (and permuting llama2.c's interleaved q/k rows into
// Hugging Face's rotate-half order in the same copy).
//
// save_model() writes a Hugging Face directory (config.json,
// generation_config.json, model.safetensors — or shards with their
// model.safetensors.index.json — and tokenizer files) that transformers'
// from_pretrained loads unchanged.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <utility>
#include <vector>
#include <optional>
#include <string>

#include "model/config.h"
#include "model/hf_dir.h"
#include "model/tensor_view.h"
#include "model/transformer.h"

namespace rlf {

struct LoadOptions {
  std::string dtype = "";       // "fp32" | "bf16" | "fp16"; "" = fp32 on CPU
  std::string device = "cpu";   // "cpu" | "cuda" | "cuda:N"
};

struct LoadedModel {
  CausalLM model{nullptr};
  ModelConfig config;
  GenerationDefaults generation;      // from generation_config.json (empty for llama2.c)
  std::string format;                 // "hf" or "llama2c"
  std::filesystem::path source;       // what was loaded
  std::filesystem::path tokenizer;    // tokenizer found next to the model ("" if none)
};

// Loads `path` (HF directory or llama2.c .bin). Errors name the file and field.
LoadedModel load_model(const std::filesystem::path& path, const LoadOptions& options = {});

// What load_model checks before it reads any weight — `path` exists, its
// config parses, every tensor is present with its shape — without loading
// (a memory map and the headers). Returns the config; errors as load_model's.
ModelConfig check_model_files(const std::filesystem::path& path);

// Builds a model of `config` with random weights (normal(0, 0.02)), for benchmarks and tests.
CausalLM make_random_model(const ModelConfig& config, uint64_t seed, torch::ScalarType dtype, torch::Device device);

// Copies `tensors` into the model's parameters (one copy each). Every
// parameter except LoRA adapters must be present with its shape; errors name
// `source` and the tensor.
void load_weights(CausalLMImpl& model, const TensorMap& tensors, const std::string& source);

struct SaveOptions {
  std::string dtype = "";                    // dtype written; "" = the model's
  int64_t max_shard_bytes = 0;               // > 0: weights larger than this go to shards of at most this size
                                             // (model-0000i-of-0000N.safetensors + model.safetensors.index.json,
                                             // transformers' layout; a tensor larger than it is a shard alone)
  std::filesystem::path tokenizer_source;    // directory or tokenizer.json to copy alongside ("" = none)
  std::optional<GenerationDefaults> generation;
};

// Writes `tensors` (any device; fp32, bf16, fp16 or uint8) as one safetensors
// file, in the given order. Errors name the tensor.
void write_tensor_file(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
void write_tensor_file(const std::filesystem::path& path, const std::map<std::string, torch::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Writes a Hugging Face model directory (created if needed; files replaced
// atomically). LoRA adapter parameters are not part of it (save_lora_adapter).
void save_model(CausalLMImpl& model, const std::filesystem::path& dir, const SaveOptions& options = {});

// A torch tensor viewing (not copying) a TensorView's bytes.
torch::Tensor tensor_from_view(const TensorView& view);

}  // namespace rlf
