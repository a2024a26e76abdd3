// safetensors (https://github.com/huggingface/safetensors): read, validate and
// write the format torch-free.
//
// File layout: u64 little-endian N, then N bytes of JSON header
// {"__metadata__": {str: str}, "<name>": {"dtype": "F32", "shape": [..],
// "data_offsets": [begin, end]}, ...}, then the data section; offsets are
// relative to the data section. Reading is zero-copy: SafetensorsFile maps the
// file and hands out TensorViews into the mapping (each keeps it alive).
// Validation follows the reference implementation: tensors must tile the data
// section exactly (no overlaps, no gaps, no trailing bytes); see docs/formats.md.
// Every error is one rlf::Error naming the file and the tensor or field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/tensor_view.h"

namespace rlf {

class MappedFile;

// Largest header accepted (the reference implementation's limit).
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // data_offsets[0], relative to the data section
  uint64_t end = 0;    // data_offsets[1] (exclusive)
};

struct SafetensorsHeader {
  uint64_t header_bytes = 0;                   // N, the JSON length including padding
  uint64_t data_start = 0;                     // 8 + N: file offset of the data section
  uint64_t data_bytes = 0;                     // size of the data section
  std::vector<SafetensorsEntry> entries;       // sorted by begin (file order)
  std::map<std::string, std::string> metadata; // "__metadata__" (empty when absent)
};

// Parses and validates the header of a safetensors file whose first
// `file_size` bytes are at `data` (the whole file must be readable there: the
// offsets are checked against it). `source` names the file in errors. Safe on
// arbitrary input: throws rlf::Error and nothing else.
SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t file_size, const std::string& source);

// A memory-mapped safetensors file.
class SafetensorsFile {
 public:
  // Maps and validates `path`; throws rlf::Error naming it.
  explicit SafetensorsFile(const std::filesystem::path& path);

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  bool contains(const std::string& name) const { return index_.count(name) > 0; }

  // The tensor `name`; throws naming the file and the tensor when absent.
  TensorView view(const std::string& name) const;

  // Every tensor, by name.
  TensorMap tensors() const;

 private:
  TensorView make_view(const SafetensorsEntry& e) const;

  std::string path_;
  std::shared_ptr<const MappedFile> map_;
  SafetensorsHeader header_;
  std::map<std::string, size_t> index_;  // name -> position in header_.entries
};

// Reads a sharded checkpoint from its index ("model.safetensors.index.json":
// {"weight_map": {tensor: shard file}}). Each shard is mapped once. Errors: a
// missing or unreadable shard, a shard path leaving the directory, a tensor
// listed in the index but absent from its shard, a tensor present in a shard
// but not listed for it.
TensorMap read_safetensors_index(const std::filesystem::path& index_path);

// One tensor to write: raw little-endian bytes, row-major.
struct SafetensorsWriteEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // nbytes bytes, read during the call only
  size_t nbytes = 0;           // must equal numel * dtype_size(dtype)
};

// Serializes a whole file into memory, laid out exactly as the reference
// implementation does: tensors ordered by dtype (widest first, as its dtype
// enum descends) then name, packed back to back; the header JSON compact,
// "__metadata__" first (keys sorted), padded with spaces to a multiple of 8.
std::string serialize_safetensors(const std::vector<SafetensorsWriteEntry>& entries,
                                  const std::map<std::string, std::string>& metadata = {});

// Writes the same bytes as serialize_safetensors to `path` atomically
// (util/fs.h AtomicFileWriter: the target checked, a temporary file in the same
// directory, fsync, rename; on failure the reason and no temporary left),
// streaming tensor data straight from the entries without a second copy in memory.
void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsWriteEntry>& entries,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace rlf
