#include "net/chat_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <iomanip>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "net/request_cache.h"
#include "util/error.h"
#include "util/json_util.h"

namespace rlf {

namespace {

// Seconds as written in a config: 0.5 -> "0.5", 2 -> "2", 1234.5 -> "1234.5".
std::string format_seconds(double s) {
  std::ostringstream out;
  out << std::setprecision(6) << s;
  return out.str();
}

// Compact JSON; invalid UTF-8 in strings (a model's raw bytes) becomes U+FFFD instead of throwing.
// A short, single-line, valid-UTF-8 excerpt of a reply body for error messages.
std::string excerpt(std::string_view body, size_t max_bytes = 300) {
  if (body.empty()) return "(empty body)";
  std::string out;
  for (char c : body.substr(0, max_bytes)) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (body.size() > max_bytes) out += "...";
  return Json::parse(json_line(Json(out))).get<std::string>();
}

// The message of an HTTP error reply: OpenAI's {"error": {"message": ...}}, vLLM's
// {"message": ...}, FastAPI's {"detail": ...}, else the body itself.
std::string http_error_text(const std::string& body) {
  try {
    Json j = Json::parse(body);
    if (j.is_object()) {
      for (const char* key : {"error", "message", "detail"}) {
        auto it = j.find(key);
        if (it == j.end()) continue;
        if (it->is_string()) return excerpt(it->get<std::string>());
        if (it->is_object() && it->contains("message") && (*it)["message"].is_string())
          return excerpt((*it)["message"].get<std::string>());
      }
    }
  } catch (const std::exception&) {
  }
  return excerpt(body);
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

void init_curl_once() {
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [] { rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  check(rc == CURLE_OK, "chat client: curl_global_init failed: ", curl_easy_strerror(rc));
}

struct CurlDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
using CurlPtr = std::unique_ptr<CURL, CurlDeleter>;

struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using SlistPtr = std::unique_ptr<curl_slist, SlistDeleter>;

// Curl handles, at most n_slots in use at once: acquiring one is what bounds
// the requests in flight. Handles are reused so connections are kept alive.
class HandlePool {
 public:
  explicit HandlePool(int64_t n_slots) : n_free_slots_(n_slots) {}

  // Blocks until a slot is free; returns a handle (a fresh one or a reused one).
  CurlPtr acquire() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return n_free_slots_ > 0; });
    --n_free_slots_;
    if (!idle_.empty()) {
      CurlPtr h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
    lock.unlock();
    CurlPtr h(curl_easy_init());
    if (!h) {
      release(nullptr);
      fail("chat client: curl_easy_init failed");
    }
    return h;
  }

  // Gives the slot back (and the handle, when there is one, for reuse).
  void release(CurlPtr h) {
    {
      std::lock_guard lock(mutex_);
      if (h) idle_.push_back(std::move(h));
      ++n_free_slots_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t n_free_slots_;
  std::vector<CurlPtr> idle_;
};

// What one HTTP attempt came back with.
struct HttpReply {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  bool too_long = false;     // the body passed max_reply_bytes (the transfer was cut)
  double retry_after_s = 0;  // the Retry-After header, seconds (0 = none)
  std::string detail;        // curl's error buffer
};

struct BodySink {
  std::string* body;
  size_t max_bytes;
  bool too_long = false;
};

size_t write_body(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  size_t len = size * n;
  if (sink->body->size() + len > sink->max_bytes) {
    sink->too_long = true;
    return 0;  // anything but len aborts the transfer (CURLE_WRITE_ERROR)
  }
  sink->body->append(data, len);
  return len;
}

enum class Verdict { ok, retry, fatal };
enum class Failure { none, timeout, connection, http, malformed };

// One attempt, judged: ok (text = the content) or failed (text = why).
struct AttemptOutcome {
  Verdict verdict = Verdict::fatal;
  Failure failure = Failure::none;
  long status = 0;
  std::string text;
  double retry_after_s = 0;
};

// Curl errors that another attempt cannot fix (a bad URL, a certificate problem).
bool is_permanent(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CIPHER:
    case CURLE_LOGIN_DENIED:
    case CURLE_OUT_OF_MEMORY:
      return true;
    default:
      return false;
  }
}

}  // namespace

void ChatClientOptions::validate(const std::string& k) const {
  check(!base_url.empty(), k, "base_url must be set (e.g. \"http://127.0.0.1:8000/v1\")");
  check(base_url.rfind("http://", 0) == 0 || base_url.rfind("https://", 0) == 0, k,
        "base_url must start with http:// or https:// (got \"", base_url, "\")");
  check(!model.empty(), k, "model must be set (a model name the endpoint serves)");
  check(tools.is_null() || tools.is_array(), k, "tools must be an array of OpenAI function schemas");
  check(api_key.find_first_of("\r\n") == std::string::npos, k,
        "api_key must not contain line breaks (check the environment variable it is read from)");
  check(std::isfinite(timeout_s) && timeout_s > 0, k, "timeout_s must be > 0 (got ", timeout_s, ")");
  check(timeout_s <= 86400, k, "timeout_s must be <= 86400 seconds (got ", timeout_s, ")");
  check(max_retries >= 0 && max_retries <= 100, k, "max_retries must be in [0, 100] (got ", max_retries,
        "; 0 = one attempt only)");
  check(std::isfinite(backoff_s) && backoff_s >= 0, k, "backoff_s must be >= 0 (got ", backoff_s, ")");
  check(max_concurrency >= 1 && max_concurrency <= 1024, k, "max_concurrency must be in [1, 1024] (got ",
        max_concurrency, ")");
  check(std::isfinite(temperature) && temperature >= 0, k, "temperature must be >= 0 (got ", temperature,
        "; 0 = greedy)");
  check(max_tokens > 0, k, "max_tokens must be > 0 (got ", max_tokens, ")");
  check(max_reply_bytes >= 1024, k, "max_reply_bytes must be >= 1024 (got ", max_reply_bytes, ")");
}

struct ChatClient::Impl {
  ChatClientOptions options;
  std::string url;  // {base_url}/chat/completions
  std::optional<ChatCache> cache;
  HandlePool pool;
  mutable std::mutex stats_mutex;
  ChatClientStats stats;

  explicit Impl(ChatClientOptions o) : options(std::move(o)), pool(options.max_concurrency) {
    std::string base = options.base_url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    url = base + "/chat/completions";
    if (!options.cache_dir.empty()) cache.emplace(options.cache_dir);
  }

  Json request_json(const std::vector<ChatMessage>& messages, int64_t max_tokens) const {
    Json msgs = Json::array();
    for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
    Json request = {{"model", options.model},
                    {"messages", std::move(msgs)},
                    {"temperature", options.temperature},
                    {"max_tokens", max_tokens}};
    if (!options.tools.is_null()) request["tools"] = options.tools;
    if (!options.tool_choice.empty()) request["tool_choice"] = options.tool_choice;
    return request;
  }

  // One HTTP POST of `body` (waits for a free slot first).
  HttpReply send(const std::string& body) {
    HttpReply reply;
    SlistPtr headers;
    auto add_header = [&](const std::string& line) {
      if (curl_slist* l = curl_slist_append(headers.get(), line.c_str())) {
        (void)headers.release();  // l is the list's head (the old one when there was one)
        headers.reset(l);
      }
    };
    add_header("Content-Type: application/json");
    add_header("Accept: application/json");
    add_header("Expect:");  // no "100-continue" round trip (a 1 s stall on servers that ignore it)
    if (!options.api_key.empty()) add_header("Authorization: Bearer " + options.api_key);

    CurlPtr handle = pool.acquire();  // from here on nothing throws until release()
    CURL* h = handle.get();
    char errbuf[CURL_ERROR_SIZE] = {0};
    BodySink sink{&reply.body, static_cast<size_t>(options.max_reply_bytes)};
    long timeout_ms = std::max(1L, static_cast<long>(std::llround(options.timeout_s * 1000)));
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_PROXY, options.proxy.c_str());  // "" = none, the environment ignored
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
    curl_easy_setopt(h, CURLOPT_USERAGENT, "rlf-chat-client/1");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    reply.code = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply.status);
    curl_off_t retry_after = 0;
    if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0)
      reply.retry_after_s = static_cast<double>(retry_after);
    curl_easy_reset(h);  // drop the pointers to errbuf, headers and sink; connections stay cached
    pool.release(std::move(handle));
    reply.too_long = sink.too_long;
    reply.detail = errbuf;
    return reply;
  }

  AttemptOutcome judge(const HttpReply& r, bool probe) const {
    AttemptOutcome out;
    out.status = r.status;
    out.retry_after_s = r.retry_after_s;
    auto failed = [&](Verdict v, Failure f, std::string text) {
      out.verdict = v;
      out.failure = f;
      out.text = std::move(text);
      return out;
    };
    if (r.too_long)
      return failed(Verdict::retry, Failure::malformed,
                    str("malformed reply: the body is longer than max_reply_bytes (", options.max_reply_bytes,
                        " bytes)"));
    if (r.code != CURLE_OK) {
      std::string detail = r.detail.empty() ? "" : " (" + excerpt(r.detail) + ")";
      if (r.code == CURLE_OPERATION_TIMEDOUT)
        return failed(Verdict::retry, Failure::timeout, "timeout after " + format_seconds(options.timeout_s) + " s" + detail);
      return failed(is_permanent(r.code) ? Verdict::fatal : Verdict::retry, Failure::connection,
                    str("connection error: ", curl_easy_strerror(r.code), detail));
    }
    if (r.status < 200 || r.status >= 300) {
      bool retryable = r.status == 408 || r.status == 429 || r.status >= 500;
      return failed(retryable ? Verdict::retry : Verdict::fatal, Failure::http,
                    str("HTTP ", r.status, ": ", http_error_text(r.body)));
    }
    auto malformed = [&](const std::string& why) {
      return failed(Verdict::retry, Failure::malformed, "malformed reply: " + why + ": " + excerpt(r.body));
    };
    Json j;
    try {
      j = Json::parse(r.body);
    } catch (const Json::exception&) {
      return malformed("not JSON");
    }
    if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array()) return malformed("no \"choices\" array");
    const Json& choices = j["choices"];
    if (choices.empty()) return malformed("\"choices\" is empty");
    if (probe) {
      out.verdict = Verdict::ok;
      return out;
    }
    const Json& choice = choices[0];
    if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
      return malformed("no choices[0].message object");
    const Json& message = choice["message"];
    if (!options.tools.is_null()) {  // content and tool calls, encoded together (also in the cache)
      const bool has_calls = message.contains("tool_calls") && message["tool_calls"].is_array();
      if (!has_calls && (!message.contains("content") || !message["content"].is_string()))
        return malformed("no choices[0].message.content and no tool_calls");
      Json both = {{"content", message.value("content", Json()).is_string() ? message["content"] : Json("")},
                   {"tool_calls", has_calls ? message["tool_calls"] : Json::array()}};
      out.verdict = Verdict::ok;
      out.text = json_line(both);
      return out;
    }
    if (!message.contains("content") || message["content"].is_null())
      return malformed("no choices[0].message.content");
    if (!message["content"].is_string())
      return malformed(str("choices[0].message.content is a ", message["content"].type_name(), ", not a string"));
    out.verdict = Verdict::ok;
    out.text = message["content"].get<std::string>();
    return out;
  }

  // The wait before retry k (k = 0 for the first retry), seconds.
  double backoff_wait(int64_t k, uint64_t seed, double retry_after_s) const {
    double base = std::min(options.backoff_s * std::pow(2.0, static_cast<double>(k)), kChatMaxBackoffS);
    uint64_t x = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(k) + 1));
    double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
    double wait = base * (1 + 0.25 * u);
    return std::min(std::max(wait, retry_after_s), kChatMaxBackoffS);
  }

  struct Outcome {
    bool ok = false;
    std::string content;  // when ok
    AttemptOutcome last;  // the last attempt (its text is the error when !ok)
    int64_t attempts = 0;
    double backoff_s = 0;  // waited before the retries
  };

  // Sends `body` until an attempt succeeds, fails for good, or the retries run out.
  Outcome run(const std::string& body, uint64_t seed, bool probe) {
    Outcome out;
    for (int64_t k = 0;; ++k) {
      HttpReply reply = send(body);
      ++out.attempts;
      out.last = judge(reply, probe);
      if (out.last.verdict == Verdict::ok) {
        out.ok = true;
        out.content = std::move(out.last.text);
        return out;
      }
      if (out.last.verdict == Verdict::fatal || k >= options.max_retries) return out;
      const double wait_s = backoff_wait(k, seed, out.last.retry_after_s);
      out.backoff_s += wait_s;
      std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
    }
  }
};

ChatClient::ChatClient(ChatClientOptions options) {
  options.validate();
  init_curl_once();
  impl_ = std::make_unique<Impl>(std::move(options));
}

ChatClient::~ChatClient() = default;

const ChatClientOptions& ChatClient::options() const { return impl_->options; }

ChatResult ChatClient::complete(const std::vector<ChatMessage>& messages) {
  auto t0 = std::chrono::steady_clock::now();
  Json request = impl_->request_json(messages, impl_->options.max_tokens);
  std::string key = json_line(request);
  ChatResult result;
  std::string cache_error;
  if (impl_->cache) {
    if (auto hit = impl_->cache->get(key)) {
      result.ok = true;
      result.content = std::move(*hit);
      result.from_cache = true;
    }
  }
  if (!result.from_cache) {
    request["stream"] = false;
    Impl::Outcome o = impl_->run(json_line(request), fnv1a64(key), /*probe=*/false);
    result.ok = o.ok;
    result.attempts = o.attempts;
    result.backoff_s = o.backoff_s;
    if (o.ok) result.content = std::move(o.content);
    else result.error = std::move(o.last.text);
    if (o.ok && impl_->cache) {
      try {
        impl_->cache->put(key, result.content);
      } catch (const std::exception& e) {
        cache_error = e.what();
      }
    }
  }
  if (result.ok && !impl_->options.tools.is_null()) {
    const Json both = Json::parse(result.content, nullptr, false);
    if (both.is_object() && both.contains("content")) {
      result.content = both["content"].get<std::string>();
      result.tool_calls = both.value("tool_calls", Json::array());
    }
  }
  result.latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::lock_guard lock(impl_->stats_mutex);
  ChatClientStats& s = impl_->stats;
  ++s.n_requests;
  s.n_cache_hits += result.from_cache ? 1 : 0;
  s.n_failures += result.ok ? 0 : 1;
  s.n_http_attempts += result.attempts;
  s.n_retries += std::max<int64_t>(0, result.attempts - 1);
  if (!cache_error.empty()) {
    ++s.n_cache_write_errors;
    s.last_cache_write_error = cache_error;
  }
  s.total_latency_s += result.latency_s;
  return result;
}

std::vector<ChatResult> ChatClient::complete_many(const std::vector<std::vector<ChatMessage>>& requests) {
  std::vector<ChatResult> results(requests.size());
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  auto work = [&] {
    for (size_t i = next++; i < requests.size(); i = next++) {
      try {
        results[i] = complete(requests[i]);
      } catch (...) {  // not a network error (those are results): out of memory and the like
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
      }
    }
  };
  size_t n_workers = std::min(requests.size(), static_cast<size_t>(impl_->options.max_concurrency));
  {
    std::vector<std::jthread> workers;  // joined on scope exit, also when starting one throws
    for (size_t w = 0; w < n_workers; ++w) workers.emplace_back(work);
  }
  if (first_error) std::rethrow_exception(first_error);
  return results;
}

void ChatClient::probe(const std::string& hint) {
  const ChatClientOptions& o = impl_->options;
  Json request = impl_->request_json({{"user", "Reply with the single word: ok"}}, std::min<int64_t>(o.max_tokens, 16));
  request["stream"] = false;
  std::string body = json_line(request);
  Impl::Outcome out = impl_->run(body, fnv1a64(body), /*probe=*/true);
  if (out.ok) return;
  const AttemptOutcome& last = out.last;
  std::string why;
  switch (last.failure) {
    case Failure::timeout:
      why = "no reply within timeout_s (is the endpoint overloaded or unreachable?)";
      break;
    case Failure::connection:
      why = "nothing usable answered at base_url (is the server up, and are the host and port right?)";
      break;
    case Failure::malformed:
      why = "the reply is not an OpenAI-compatible chat completion (does base_url end in /v1?)";
      break;
    case Failure::http:
      if (last.status == 401 || last.status == 403) why = "the endpoint rejected the API key";
      else if (last.status == 404) why = "no such route or model (base_url usually ends in /v1; model must be one the server serves)";
      else if (last.status == 429 || last.status >= 500) why = "the endpoint is failing or overloaded";
      else why = "the endpoint rejected the request";
      break;
    case Failure::none:
      break;
  }
  fail("chat endpoint ", impl_->url, " (model '", o.model, "') refused the probe request",
       out.attempts > 1 ? str(" (", out.attempts, " attempts)") : std::string(), ": ", last.text, " — ", why, "; ",
       hint.empty() ? std::string("check base_url, model and api_key") : hint);
}

ChatClientStats ChatClient::stats() const {
  std::lock_guard lock(impl_->stats_mutex);
  return impl_->stats;
}

}  // namespace rlf
