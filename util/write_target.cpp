#include "util/write_target.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace rlf {

namespace fs = std::filesystem;

namespace {

// What a non-regular file is, in words ("a character device").
std::string kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

fs::path parent_of(const fs::path& p) { return p.parent_path().empty() ? fs::path(".") : p.parent_path(); }

// Throws unless `dir` (which exists) is a directory rlf can create files in.
void check_writable_dir(const fs::path& dir) {
  struct stat st {};
  check(::stat(dir.c_str(), &st) == 0, "cannot read directory '", dir.string(), "': ", std::strerror(errno));
  check(S_ISDIR(st.st_mode), "'", dir.string(), "' is ", kind_of(st.st_mode), ", not a directory");
  check(::access(dir.c_str(), W_OK | X_OK) == 0, "cannot write in directory '", dir.string(), "': ", std::strerror(errno));
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

bool exists_quietly(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec) && !ec;
}

}  // namespace

void check_file_target(const fs::path& path) {
  check(!path.empty(), "an empty path is not a file name");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    check(S_ISREG(st.st_mode), "'", path.string(), "' is ", kind_of(st.st_mode),
          ": rlf writes regular files only (give a new file name, or remove it first)");
    check_writable_dir(parent_of(path));
    return;
  }
  const int e = errno;
  const fs::path parent = parent_of(path);
  if (e == ENOENT && !exists_quietly(parent))
    fail("cannot write '", path.string(), "': directory '", parent.string(), "' does not exist");
  check(e == ENOENT, "cannot write '", path.string(), "': ", std::strerror(e));
  with_context("cannot write '" + path.string() + "'", [&] { check_writable_dir(parent); });
}

void check_dir_target(const fs::path& dir) {
  check(!dir.empty(), "an empty path is not a directory name");
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    check(S_ISDIR(st.st_mode), "'", dir.string(), "' is ", kind_of(st.st_mode), ", not a directory");
    check_writable_dir(dir);
    return;
  }
  // The nearest existing ancestor must be a directory to create the rest in.
  fs::path up = fs::absolute(dir).lexically_normal();
  while (up.has_relative_path() && ::stat(up.c_str(), &st) != 0) up = up.parent_path();
  with_context("cannot create directory '" + dir.string() + "'", [&] { check_writable_dir(up); });
}

void ensure_directory(const fs::path& dir) {
  check_dir_target(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec, "cannot create directory '", dir.string(), "': ", ec.message());
}

void check_not_an_input_file(const fs::path& target, const std::vector<fs::path>& inputs) {
  if (!exists_quietly(target)) return;  // a new file replaces nothing
  for (const fs::path& in : inputs) {
    if (in.empty() || !exists_quietly(in)) continue;
    check(!same_file(target, in), "'", target.string(), "' is an input of this command ('", in.string(),
          "'): rlf does not overwrite its own inputs; write to a new file");
    check(!(fs::is_directory(in) && same_file(parent_of(target), in)), "'", target.string(),
          "' is in the input directory '", in.string(),
          "': rlf does not overwrite its own inputs; write to a new file or another directory");
  }
}

void check_not_an_input_dir(const fs::path& dir, const std::vector<fs::path>& inputs) {
  if (!exists_quietly(dir)) return;  // a new directory holds nothing
  for (const fs::path& in : inputs) {
    if (in.empty() || !exists_quietly(in)) continue;
    check(!same_file(dir, in), "'", dir.string(), "' is an input of this command: rlf does not overwrite its own "
          "inputs; write to a new directory");
    check(fs::is_directory(in) || !same_file(parent_of(in), dir), "'", dir.string(), "' holds the input '", in.string(),
          "': rlf does not write where it could overwrite its own inputs; write to a new directory");
  }
}

}  // namespace rlf
