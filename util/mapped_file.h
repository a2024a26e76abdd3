// A read-only memory map of a whole file (RAII). Used to load weights without
// reading them into a heap buffer first: tensors view the mapping, then are
// copied once into the model's parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rlf {

class MappedFile {
 public:
  // Maps `path` read-only; throws rlf::Error naming the path on failure.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rlf
