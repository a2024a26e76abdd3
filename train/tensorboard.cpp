#include "train/tensorboard.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "util/error.h"
#include "util/write_target.h"

namespace rlf {

namespace fs = std::filesystem;

namespace {

// Protocol-buffer wire format, the few pieces an Event needs.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_tag(std::string& out, uint32_t field, uint32_t wire) { put_varint(out, (static_cast<uint64_t>(field) << 3) | wire); }
template <class T>
void put_fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts (x86-64, aarch64)
  out.append(b, sizeof(T));
}
void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_tag(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_tag(e, 1, 1);
  put_fixed<double>(e, wall_time);
  put_tag(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace

uint32_t crc32c(const void* data, size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

TensorBoardWriter::TensorBoardWriter(const fs::path& dir) {
  ensure_directory(dir);
  const auto now = std::chrono::system_clock::now();
  const double t = std::chrono::duration<double>(now.time_since_epoch()).count();
  // A unique name: seconds, then a counter if a file of this second exists (a resume within the second).
  for (int k = 0;; ++k) {
    path_ = dir / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(t)) + ".rlf" +
                   (k == 0 ? std::string() : "." + std::to_string(k)));
    if (!fs::exists(path_)) break;
  }
  check_file_target(path_);
  file_ = std::fopen(path_.c_str(), "wb");
  check(file_ != nullptr, "cannot create '", path_.string(), "': ", std::strerror(errno));
  std::string e = event_header(t, 0);
  put_bytes(e, 3, "brain.Event:2");
  write_record(e);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::add_scalars(int64_t step, double wall_time, const std::map<std::string, double>& scalars) {
  std::string summary;
  for (const auto& [tag, v] : scalars) {
    if (!std::isfinite(v)) continue;
    std::string value;
    put_bytes(value, 1, tag);
    put_tag(value, 2, 5);
    put_fixed<float>(value, static_cast<float>(v));
    put_bytes(summary, 1, value);
  }
  std::string e = event_header(wall_time, step);
  put_bytes(e, 5, summary);
  write_record(e);
}

void TensorBoardWriter::write_record(const std::string& data) {
  std::string rec;
  const uint64_t len = data.size();
  put_fixed<uint64_t>(rec, len);
  put_fixed<uint32_t>(rec, masked(crc32c(&len, sizeof(len))));
  rec += data;
  put_fixed<uint32_t>(rec, masked(crc32c(data.data(), data.size())));
  check(std::fwrite(rec.data(), 1, rec.size(), file_) == rec.size() && std::fflush(file_) == 0, "writing '",
        path_.string(), "': ", std::strerror(errno));
}

}  // namespace rlf
