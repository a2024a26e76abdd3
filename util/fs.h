// Small file-system helpers with errors that name the path.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rlf {

namespace fs = std::filesystem;

// Reads a whole file; throws rlf::Error naming the path when it cannot.
std::string read_file(const fs::path& path);

// Reads a whole file, transparently gunzipping when the name ends in ".gz".
std::string read_file_maybe_gz(const fs::path& path);

// Writes a file atomically, streamed in pieces: bytes go to a temporary file
// beside `path` (".tmp-NAME-RANDOM"); commit() fsyncs it and renames it over
// `path`, then fsyncs the directory. A crash at any moment leaves either the
// old file or the new one, never a partial one. The target is checked first
// (util/write_target.h: a regular file or a new name in an existing
// directory). A failed write (ENOSPC, EFBIG, EIO, ...) throws naming `path`
// and the reason, and the temporary is removed — as it is whenever the writer
// is destroyed without commit().
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const fs::path& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view data) { write(data.data(), data.size()); }
  void commit();

 private:
  [[noreturn]] void fail_with(const char* doing, int err);

  fs::path path_, dir_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `data` through an AtomicFileWriter.
void write_file_atomic(const fs::path& path, std::string_view data);

// Splits text into lines (without the '\n'; a trailing '\r' is removed too).
std::vector<std::string> split_lines(std::string_view text);

}  // namespace rlf
