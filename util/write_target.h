// Where rlf may write. Every file rlf writes goes through write_file_atomic or
// AtomicFileWriter (util/fs.h), which check their target here; commands check
// theirs (and their inputs) here before any work, so a bad target costs nothing.
//
//   * A file target is a regular file (replaced atomically) or a new name in an
//     existing, writable directory. A directory, a device (/dev/null, /dev/full),
//     a FIFO, a socket or a symbolic link is refused — never replaced — and a
//     missing parent directory is an error, not created.
//   * A directory target is a directory or a path that can be created: its
//     nearest existing ancestor is a writable directory.
//   * A target is never one of the command's inputs: not an input file itself,
//     not a file inside an input directory, not an input directory, and an
//     output directory does not hold an input file.
//
// Errors name the path and what it is ("'out/x' is a character device: rlf
// writes regular files only"); callers prefix the option or key that named it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rlf {

// Throws unless a regular file may be written at `path` (see above).
void check_file_target(const std::filesystem::path& path);

// Throws unless `dir` is a writable directory or can be created; creates nothing.
void check_dir_target(const std::filesystem::path& dir);

// Creates `dir` and its missing parents (nothing when it is a directory
// already); errors name `dir` and the reason (the checks of check_dir_target first).
void ensure_directory(const std::filesystem::path& dir);

// Throws when writing the file `target` would replace one of `inputs` (files or
// directories; those that do not exist are ignored): the input itself, or an
// existing file directly inside an input directory.
void check_not_an_input_file(const std::filesystem::path& target, const std::vector<std::filesystem::path>& inputs);

// Throws when the output directory `dir` is one of the input directories, or
// directly holds an input file (what a command writes there could replace it).
void check_not_an_input_dir(const std::filesystem::path& dir, const std::vector<std::filesystem::path>& inputs);

}  // namespace rlf
