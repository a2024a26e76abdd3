// An on-disk cache of chat replies, one small JSON file per request:
//
//   <dir>/<hh>/<hash>.json   hash = FNV-1a 64 of the request key (16 hex digits), hh = its first two
//   {"format": "rlf-chat-cache", "version": 1, "request": <the key>, "content": "<reply>"}
//
// The key is the canonical JSON (sorted keys, compact, invalid UTF-8 as
// U+FFFD) of what determines the reply: model, messages, temperature and
// max_tokens; not the base URL (the same model moved to another host keeps
// its cache) and never the API key. A file is used only when it parses, has
// this format and version, and holds exactly the same key (so a hash
// collision is a miss, not a wrong reply). Anything else — a truncated,
// corrupt or foreign file — is a miss, and the next put() replaces it.
// Files are written atomically (temporary file + rename), so concurrent
// writers and crashes leave either a whole file or none.
#pragma once

#include "util/hash.h"  // fnv1a64: the cache files' names

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace rlf {

inline constexpr int kChatCacheVersion = 1;


class ChatCache {
 public:
  // Creates `dir` when missing; throws rlf::Error naming it when it cannot.
  explicit ChatCache(std::filesystem::path dir);

  // The cached reply for the canonical request key, or nullopt (missing,
  // unreadable or corrupt file, or another key under the same hash).
  std::optional<std::string> get(const std::string& key) const;

  // Stores `content` for `key`; throws rlf::Error naming the file when it cannot.
  void put(const std::string& key, const std::string& content) const;

  // Where the reply for `key` lives.
  std::filesystem::path path_for(const std::string& key) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace rlf
