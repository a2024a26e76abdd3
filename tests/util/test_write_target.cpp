// Where rlf may write (util/write_target.h) and how its atomic writer fails
// (util/fs.h): special files and links are refused, never replaced; a missing
// directory is an error, not created; a failed write names the reason and
// leaves no temporary; a command's inputs are never its outputs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "tests/support/test_env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/write_target.h"

namespace rlf {
namespace {

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_named_pipe(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

TEST(WriteTarget, SpecialFilesAndLinksAreRefusedNeverReplaced) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0) << std::strerror(errno);
  fs::create_directory(dir / "sub");
  write_file_atomic(dir / "real.txt", "keep");
  fs::create_symlink(dir / "real.txt", dir / "link");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fifo", "is a named pipe (FIFO): rlf writes regular files only"},
      {"sub", "is a directory: rlf writes regular files only"},
      {"link", "is a symbolic link: rlf writes regular files only"}};
  for (const auto& [name, message] : cases) {
    const std::string e = test::error_of([&] { write_file_atomic(dir / name, "x"); });
    EXPECT_NE(e.find("'" + (dir / name).string() + "' " + message), std::string::npos) << e;
    const std::string s = test::error_of([&] { AtomicFileWriter w(dir / name); });
    EXPECT_NE(s.find(message), std::string::npos) << s;
  }
  EXPECT_TRUE(is_named_pipe(dir / "fifo"));
  EXPECT_TRUE(fs::is_directory(dir / "sub"));
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read_file(dir / "real.txt"), "keep");
  // A character device (made here as /dev/full's twin where mknod is allowed, i.e. as root).
  if (::mknod((dir / "full").c_str(), S_IFCHR | 0644, makedev(1, 7)) == 0) {
    const std::string e = test::error_of([&] { write_file_atomic(dir / "full", "x"); });
    EXPECT_NE(e.find("is a character device: rlf writes regular files only"), std::string::npos) << e;
    struct stat st {};
    ASSERT_EQ(::lstat((dir / "full").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced";
  }
  for (const std::string& n : names_in(dir.path())) EXPECT_EQ(n.rfind(".tmp-", 0), std::string::npos) << n;
}

TEST(WriteTarget, AMissingDirectoryIsAnErrorNotCreated) {
  test::TempDir dir;
  const std::string e = test::error_of([&] { write_file_atomic(dir / "no/such/x.gguf", "x"); });
  EXPECT_NE(e.find("cannot write '" + (dir / "no/such/x.gguf").string() + "': directory '" + (dir / "no/such").string() +
                   "' does not exist"),
            std::string::npos)
      << e;
  EXPECT_FALSE(fs::exists(dir / "no"));
  // A file where a directory should be: named as what it is.
  write_file_atomic(dir / "plain", "x");
  const std::string f = test::error_of([&] { check_dir_target(dir / "plain/run"); });
  EXPECT_NE(f.find("cannot create directory '" + (dir / "plain/run").string() + "': '" + (dir / "plain").string() +
                   "' is a regular file, not a directory"),
            std::string::npos)
      << f;
  const std::string g = test::error_of([&] { check_dir_target("/dev/null/x"); });
  EXPECT_NE(g.find("cannot create directory '/dev/null/x': '/dev/null' is a character device, not a directory"),
            std::string::npos)
      << g;
  const std::string h = test::error_of([&] { ensure_directory(dir / "plain"); });
  EXPECT_NE(h.find("'" + (dir / "plain").string() + "' is a regular file, not a directory"), std::string::npos) << h;
  ensure_directory(dir / "a/b/c");
  EXPECT_TRUE(fs::is_directory(dir / "a/b/c"));
  check_dir_target(dir / "a/b/c/d/e");  // creatable: nothing made
  EXPECT_FALSE(fs::exists(dir / "a/b/c/d"));
}

// A write that fails half-way (here: RLIMIT_FSIZE, which fails write() with
// EFBIG as a full disk fails it with ENOSPC) names the target and the reason,
// and removes its temporary; the old file is untouched. In a child process,
// so the limit binds nothing else.
TEST(WriteTarget, AFailedWriteNamesTheReasonAndLeavesNoTemporary) {
  test::TempDir dir;
  write_file_atomic(dir / "model.bin", "old");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {64 * 1024, 64 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::string message = "no error";
    try {
      AtomicFileWriter w(dir / "model.bin");
      const std::string chunk(256 * 1024, 'x');
      w.write(chunk);
      w.commit();
    } catch (const std::exception& e) {
      message = e.what();
    }
    ssize_t ignored = ::write(fds[1], message.data(), message.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) message.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_NE(message.find("cannot write '" + (dir / "model.bin").string() + "' (writing): " + std::strerror(EFBIG)),
            std::string::npos)
      << message;
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"model.bin"});
  EXPECT_EQ(read_file(dir / "model.bin"), "old");
}

TEST(WriteTarget, InputsAreNeverOutputs) {
  test::TempDir dir;
  fs::create_directory(dir / "hf");
  write_file_atomic(dir / "hf/model.safetensors", "w");
  write_file_atomic(dir / "stories.bin", "w");
  const std::vector<fs::path> inputs = {dir / "hf", dir / "stories.bin", dir / "gone"};
  // Files: the input itself, or a file in an input directory.
  std::string e = test::error_of([&] { check_not_an_input_file(dir / "hf/model.safetensors", inputs); });
  EXPECT_NE(e.find("is in the input directory '" + (dir / "hf").string() + "': rlf does not overwrite its own inputs"),
            std::string::npos)
      << e;
  e = test::error_of([&] { check_not_an_input_file(dir / "./stories.bin", inputs); });
  EXPECT_NE(e.find("is an input of this command"), std::string::npos) << e;
  check_not_an_input_file(dir / "hf/model.gguf", inputs);  // a new file beside the inputs replaces nothing
  check_not_an_input_file(dir / "other.gguf", inputs);
  // Directories: an input directory, or one holding an input file.
  e = test::error_of([&] { check_not_an_input_dir(dir / "hf/.", inputs); });
  EXPECT_NE(e.find("is an input of this command"), std::string::npos) << e;
  e = test::error_of([&] { check_not_an_input_dir(dir.path(), inputs); });
  EXPECT_NE(e.find("holds the input '" + (dir / "stories.bin").string() + "'"), std::string::npos) << e;
  check_not_an_input_dir(dir / "out", inputs);
  fs::create_directory(dir / "hf/sub");
  check_not_an_input_dir(dir / "hf/sub", inputs);
}

}  // namespace
}  // namespace rlf
