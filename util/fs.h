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

// Writes `data` atomically: a temporary file in the same directory, fsync,
// rename over `path`, fsync of the directory. A crash at any moment leaves
// either the old file or the new one, never a partial one.
void write_file_atomic(const fs::path& path, std::string_view data);

// Splits text into lines (without the '\n'; a trailing '\r' is removed too).
std::vector<std::string> split_lines(std::string_view text);

}  // namespace rlf
