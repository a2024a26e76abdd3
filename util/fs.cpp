#include "util/fs.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "util/error.h"

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

void write_file_atomic(const fs::path& path, std::string_view data) {
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::random_device rd;
  fs::path tmp = dir / (".tmp-" + path.filename().string() + "-" + std::to_string(rd()));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd >= 0, "cannot create '", tmp.string(), "': ", std::strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("cannot write '", tmp.string(), "': ", std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail("cannot flush '", tmp.string(), "': ", std::strerror(e));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    ::unlink(tmp.c_str());
    fail("cannot rename '", tmp.string(), "' to '", path.string(), "': ", ec.message());
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
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
