#include "util/fs.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "util/error.h"
#include "util/write_target.h"

namespace rlf {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cannot open '", path.string(), "': ", std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check(!in.bad(), "error reading '", path.string(), "'");
  return data;
}

std::string read_file_maybe_gz(const fs::path& path) {
  if (path.extension() != ".gz") return read_file(path);
  gzFile gz = gzopen(path.c_str(), "rb");
  check(gz != nullptr, "cannot open '", path.string(), "': ", std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const char* msg = gzerror(gz, &err);
  std::string message = msg ? msg : "";
  gzclose(gz);
  check(n == 0 && (err == Z_OK || err == Z_STREAM_END), "error decompressing '", path.string(), "': ", message);
  return out;
}

AtomicFileWriter::AtomicFileWriter(const fs::path& path) : path_(path) {
  check_file_target(path);
  dir_ = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::random_device rd;
  tmp_ = dir_ / (".tmp-" + path.filename().string() + "-" + std::to_string(rd()));
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot write '", path_.string(), "': creating '", tmp_.string(), "' failed: ", std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFileWriter::fail_with(const char* doing, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  fail("cannot write '", path_.string(), "' (", doing, "): ", std::strerror(err));
}

void AtomicFileWriter::write(const void* data, size_t n) {
  check(fd_ >= 0 && !committed_, "cannot write '", path_.string(), "': the file is closed");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail_with("writing", w < 0 ? errno : EIO);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFileWriter::commit() {
  check(fd_ >= 0 && !committed_, "cannot write '", path_.string(), "': the file is closed");
  if (::fsync(fd_) != 0) fail_with("flushing to disk", errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail_with("closing", errno);
  check_file_target(path_);  // still a regular file or a new name (not replaced by a device meanwhile)
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail_with("renaming the temporary file over it", errno);
  committed_ = true;
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const fs::path& path, std::string_view data) {
  AtomicFileWriter out(path);
  out.write(data);
  out.commit();
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    start = end + 1;
  }
  return lines;
}

}  // namespace rlf
