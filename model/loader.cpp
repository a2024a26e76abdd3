#include "model/loader.h"

#include "model/checkpoint_layout.h"
#include "model/huge_pages.h"
#include "model/llama2c.h"
#include "model/safetensors.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/write_target.h"
#include "util/json_util.h"

#include <cstdio>

namespace rlf {

namespace {

torch::ScalarType torch_dtype(DType d, const std::string& what) {
  switch (d) {
    case DType::F32: return torch::kFloat32;
    case DType::F16: return torch::kFloat16;
    case DType::BF16: return torch::kBFloat16;
    case DType::F64: return torch::kFloat64;
    case DType::I64: return torch::kInt64;
    case DType::I32: return torch::kInt32;
    case DType::U8: return torch::kUInt8;
    case DType::I8: return torch::kInt8;
    case DType::I16: return torch::kInt16;
    case DType::BOOL: return torch::kBool;
    default: fail(what, ": dtype ", dtype_name(d), " has no LibTorch equivalent");
  }
}

DType file_dtype(torch::ScalarType t, const std::string& name) {
  if (t == torch::kFloat32) return DType::F32;
  if (t == torch::kFloat16) return DType::F16;
  if (t == torch::kBFloat16) return DType::BF16;
  if (t == torch::kUInt8) return DType::U8;
  fail("tensor '", name, "' has dtype ", c10::toString(t), ", which rlf does not save (fp32, bf16, fp16, uint8)");
}

std::string hf_torch_dtype(torch::ScalarType t) {
  if (t == torch::kFloat32) return "float32";
  if (t == torch::kFloat16) return "float16";
  return "bfloat16";
}

}  // namespace

torch::Tensor tensor_from_view(const TensorView& view) {
  return torch::from_blob(const_cast<uint8_t*>(view.data), view.shape,
                          torch::TensorOptions().dtype(torch_dtype(view.dtype, "tensor")));
}

void load_weights(CausalLMImpl& model, const TensorMap& tensors, const std::string& source) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    const std::string& name = p.key();
    if (is_lora_parameter(name)) continue;  // adapters: load_lora_adapter (model/lora.h)
    auto it = tensors.find(name);
    check(it != tensors.end(), source, ": missing tensor '", name, "'");
    const TensorView& v = it->second;
    torch::Tensor& param = p.value();
    check(v.shape == param.sizes().vec(), source, ": tensor '", name, "' has shape ", shape_string(v.shape),
          " but the model expects ", shape_string(param.sizes().vec()));
    torch::Tensor src = tensor_from_view(v);
    if (v.interleaved_rope_heads > 0) {
      // llama2.c interleaved RoPE rows -> rotate-half: [h, hd/2, 2, D] -> [h, 2, hd/2, D].
      const int64_t h = v.interleaved_rope_heads, rows = v.shape[0], cols = v.shape[1];
      src = src.view({h, rows / h / 2, 2, cols}).transpose(1, 2).reshape({rows, cols});
    }
    param.copy_(src);  // the one copy (with dtype conversion and device transfer)
  }
}

CausalLM make_random_model(const ModelConfig& config, uint64_t seed, torch::ScalarType dtype, torch::Device device) {
  CausalLM model(config);
  model->init_random(seed);
  model->to(device, dtype);
  place_in_huge_pages(*model);
  model->refresh_rope();
  return model;
}

static std::filesystem::path find_tokenizer_near(const std::filesystem::path& path, const std::string& format) {
  namespace fs = std::filesystem;
  // HF directory: its tokenizer.json, else a llama2.c tokenizer saved by `rlf convert`.
  if (format == "hf" && fs::exists(path / "tokenizer.json")) return path / "tokenizer.json";
  // llama2.c: tokenizer.bin or tok*.bin beside the checkpoint (or inside the directory).
  fs::path dir = format == "hf" ? path : (path.parent_path().empty() ? fs::path(".") : path.parent_path());
  if (fs::exists(dir / "tokenizer.bin")) return dir / "tokenizer.bin";
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    std::string n = e.path().filename().string();
    if (n.rfind("tok", 0) == 0 && e.path().extension() == ".bin" && e.path() != path) return e.path();
  }
  return {};
}

LoadedModel load_model(const std::filesystem::path& path, const LoadOptions& options) {
  namespace fs = std::filesystem;
  return with_context("loading model '" + path.string() + "'", [&] {
    check(fs::exists(path), "no such file or directory");
    LoadedModel out;
    out.source = path;
    const torch::Device device = parse_device(options.device);
    const torch::ScalarType dtype = options.dtype.empty() ? torch::kFloat32 : parse_dtype(options.dtype);
    check(!(dtype == torch::kFloat16 && device.is_cpu()), "dtype fp16 runs on CUDA only (LibTorch has no fp16 matrix "
          "products on CPU); use fp32 on CPU (or bf16 where the CPU has AVX-512 bf16)");
    auto build = [&](const TensorMap& tensors, const std::string& source) {
      CausalLM model(out.config);
      load_weights(*model, tensors, source);
      model->to(device, dtype);
      place_in_huge_pages(*model);
      model->refresh_rope();
      return model;
    };
    if (fs::is_directory(path)) {
      HfModelDir dir(path);
      dir.check_tensors();
      out.format = "hf";
      out.config = dir.config();
      out.generation = dir.generation();
      out.model = build(dir.tensors(), dir.weights_path().string());
    } else {
      Llama2cCheckpoint ckpt(path);
      out.format = "llama2c";
      out.config = ckpt.config();
      out.model = build(ckpt.tensors(), path.string());
    }
    out.tokenizer = find_tokenizer_near(path, out.format);
    return out;
  });
}

ModelConfig check_model_files(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  return with_context("loading model '" + path.string() + "'", [&] {
    check(fs::exists(path), "no such file or directory");
    if (!fs::is_directory(path)) return Llama2cCheckpoint(path).config();
    HfModelDir dir(path);
    dir.check_tensors();
    return dir.config();
  });
}

void write_tensor_file(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<torch::Tensor> keep;  // CPU copies alive during the write
  std::vector<SafetensorsWriteEntry> entries;
  for (const auto& [name, t] : tensors) {
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    keep.push_back(c);
    SafetensorsWriteEntry e;
    e.name = name;
    e.dtype = file_dtype(c.scalar_type(), name);
    e.shape = c.sizes().vec();
    e.data = c.data_ptr();
    e.nbytes = static_cast<size_t>(c.numel()) * c.element_size();
    entries.push_back(std::move(e));
  }
  write_safetensors(path, entries, metadata);
}

void write_tensor_file(const std::filesystem::path& path, const std::map<std::string, torch::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_tensor_file(path, std::vector<std::pair<std::string, torch::Tensor>>(tensors.begin(), tensors.end()), metadata);
}

namespace {

bool is_shard_name(const std::string& n) {
  return n.rfind("model-", 0) == 0 && n.find("-of-") != std::string::npos && n.size() > 12 &&
         n.compare(n.size() - 12, 12, ".safetensors") == 0;
}

// The weights as model.safetensors, or (larger than max_shard_bytes > 0) as
// shards in order with their index; files of the other layout left by an
// earlier save are removed (the loader would read model.safetensors first).
void write_weights(const std::filesystem::path& dir, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                   int64_t max_shard_bytes) {
  namespace fs = std::filesystem;
  auto bytes = [](const torch::Tensor& t) { return static_cast<int64_t>(t.numel()) * t.element_size(); };
  int64_t total = 0;
  for (const auto& [name, t] : tensors) total += bytes(t);
  std::vector<std::vector<std::pair<std::string, torch::Tensor>>> shards(1);
  if (max_shard_bytes > 0 && total > max_shard_bytes) {
    int64_t in_shard = 0;
    for (const auto& e : tensors) {
      if (!shards.back().empty() && in_shard + bytes(e.second) > max_shard_bytes) shards.emplace_back(), in_shard = 0;
      shards.back().push_back(e);
      in_shard += bytes(e.second);
    }
  } else {
    shards[0] = tensors;
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_shard_name(e.path().filename().string())) fs::remove(e.path(), ec);
  if (shards.size() == 1) {
    fs::remove(dir / "model.safetensors.index.json", ec);
    write_tensor_file(dir / "model.safetensors", shards[0], {{"format", "pt"}});
    return;
  }
  fs::remove(dir / "model.safetensors", ec);
  Json weight_map = Json::object();
  const size_t n = shards.size();
  for (size_t i = 0; i < n; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, n);
    write_tensor_file(dir / name, shards[i], {{"format", "pt"}});
    for (const auto& e : shards[i]) weight_map[e.first] = name;
  }
  const Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_file_atomic(dir / "model.safetensors.index.json", index.dump(2) + "\n");
}

}  // namespace

void save_model(CausalLMImpl& model, const std::filesystem::path& dir, const SaveOptions& options) {
  namespace fs = std::filesystem;
  with_context("saving model to '" + dir.string() + "'", [&] {
    torch::NoGradGuard no_grad;
    const torch::ScalarType dtype = options.dtype.empty() ? model.dtype() : parse_dtype(options.dtype);
    ModelConfig config = model.config();
    config.torch_dtype = hf_torch_dtype(dtype);
    HfDirWriteOptions files;
    files.generation = options.generation;
    if (!options.tokenizer_source.empty()) {
      files.tokenizer_source =
          fs::is_directory(options.tokenizer_source) ? options.tokenizer_source : options.tokenizer_source.parent_path();
    }
    ensure_directory(dir);
    // The base weights in the file dtype; LoRA adapters go to their own directory (model/lora.h).
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (auto& p : model.named_parameters())
      if (!is_lora_parameter(p.key())) tensors.emplace_back(p.key(), p.value().detach().to(dtype));
    write_weights(dir, tensors, options.max_shard_bytes);
    write_hf_dir_files(dir, config, files);
    // A tokenizer.json given as a file (not a directory) or a llama2.c tokenizer is copied as is.
    if (!options.tokenizer_source.empty() && !fs::is_directory(options.tokenizer_source) &&
        options.tokenizer_source.extension() == ".bin") {
      write_file_atomic(dir / options.tokenizer_source.filename(), read_file(options.tokenizer_source));
    }
  });
}

}  // namespace rlf
