// TensorBoard event files, written without TensorFlow or protobuf: a TFRecord
// file of Event messages (the format tensorboard's event readers load).
//
// File: DIR/events.out.tfevents.<unix seconds>.rlf. Each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of the length |
//   data | uint32 masked CRC-32C of the data,
// masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8. The data is an Event:
//   wall_time (1, double), step (2, int64), and either file_version (3,
//   "brain.Event:2", the first record) or summary (5): one Summary.Value per
//   scalar, tag (1) and simple_value (2, float).
// Records are flushed as they are written; non-finite values are skipped
// (metrics.jsonl writes them as null).
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

namespace rlf {

class TensorBoardWriter {
 public:
  // Creates DIR (if needed) and a new events file in it.
  explicit TensorBoardWriter(const std::filesystem::path& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One Event at `step` holding every finite value of `scalars` as a scalar named by its key.
  void add_scalars(int64_t step, double wall_time, const std::map<std::string, double>& scalars);
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& data);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

// CRC-32C (Castagnoli), as TFRecord uses it; crc32c("123456789") = 0xE3069283.
uint32_t crc32c(const void* data, size_t n);

}  // namespace rlf
