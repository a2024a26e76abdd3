#include "net/request_cache.h"

#include <cstdio>
#include <system_error>

#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {

namespace {
constexpr const char* kFormat = "rlf-chat-cache";
// A cache file larger than this is not one of ours (replies are capped well below).
constexpr std::uintmax_t kMaxCacheFileBytes = 64u << 20;
}  // namespace

ChatCache::ChatCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  check(!ec && std::filesystem::is_directory(dir_), "chat cache: cannot create the directory '", dir_.string(), "'",
        ec ? ": " + ec.message() : std::string(), " — check cache_dir");
}

std::filesystem::path ChatCache::path_for(const std::string& key) const {
  const std::string hex = fnv1a64_hex(key);
  return dir_ / hex.substr(0, 2) / (hex + ".json");
}

std::optional<std::string> ChatCache::get(const std::string& key) const {
  std::filesystem::path path = path_for(key);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxCacheFileBytes) return std::nullopt;
  try {
    Json j = Json::parse(read_file(path));
    if (!j.is_object() || j.value("format", "") != kFormat || !j.contains("version") ||
        j["version"] != kChatCacheVersion || !j.contains("request") || !j.contains("content") ||
        !j["content"].is_string())
      return std::nullopt;
    if (json_line(j["request"]) != key) return std::nullopt;
    return j["content"].get<std::string>();
  } catch (const std::exception&) {  // unreadable or not JSON: a miss
    return std::nullopt;
  }
}

void ChatCache::put(const std::string& key, const std::string& content) const {
  std::filesystem::path path = path_for(key);
  with_context("chat cache: writing '" + path.string() + "'", [&] {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    check(!ec, "cannot create the directory: ", ec.message());
    Json j = {{"format", kFormat}, {"version", kChatCacheVersion}, {"request", Json::parse(key)}, {"content", content}};
    write_file_atomic(path, json_line(j) + "\n");
  });
}

}  // namespace rlf
