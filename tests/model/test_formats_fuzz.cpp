// Fuzz test (fixed seed): thousands of mutated safetensors headers and llama2.c
// headers go through the parsers. Every input must either parse into a result
// whose invariants hold (every tensor inside the data section) or throw
// rlf::Error — never crash, hang or throw anything else. Each input lives in a
// heap buffer of exactly its size, so an over-read is caught by ASan
// (build with -DRLF_SANITIZE=ON).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "model/llama2c.h"
#include "model/safetensors.h"
#include "tests/model/format_fixtures.h"
#include "util/error.h"
#include "util/json_util.h"

namespace rlf {
namespace {

using Bytes = std::vector<uint8_t>;
using Rng = std::mt19937_64;

size_t pick(Rng& rng, size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

const char* kOddValues[] = {"null", "true", "\"x\"", "\"F32\"", "[]", "{}", "-1", "0", "1.5", "1e400", "-1e400",
                            "18446744073709551615", "18446744073709551616", "9223372036854775807",
                            "[0,18446744073709551615]", "[18446744073709551615,0]", "[4294967296,4294967296]",
                            "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", "\"__metadata__\""};

// Replaces one random node of the header JSON with an odd value (a type swap
// or a huge number), re-serializes it and fixes the length prefix.
Bytes swap_json_value(const std::string& header, const std::string& data, Rng& rng) {
  Json j = Json::parse(header);
  std::vector<Json*> nodes;
  std::vector<Json*> stack = {&j};
  while (!stack.empty()) {
    Json* n = stack.back();
    stack.pop_back();
    nodes.push_back(n);
    if (n->is_structured())
      for (auto& child : *n) stack.push_back(&child);
  }
  Json* target = nodes[pick(rng, nodes.size())];
  if (pick(rng, 2)) {
    // Nudge an integer (a dimension or an offset) so the JSON stays well-formed
    // and the size/overlap/gap checks are what rejects it.
    std::vector<Json*> ints;
    for (Json* n : nodes)
      if (n->is_number_unsigned()) ints.push_back(n);
    if (!ints.empty()) {
      Json* n = ints[pick(rng, ints.size())];
      const int64_t deltas[] = {-8, -4, -2, -1, 1, 2, 4, 8};
      int64_t v = static_cast<int64_t>(n->get<uint64_t>()) + deltas[pick(rng, std::size(deltas))];
      *n = v;
      return to_bytes(test::safetensors_bytes(j.dump(), data));
    }
  }
  const char* odd = kOddValues[pick(rng, std::size(kOddValues))];
  std::string text;
  if (std::string(odd) == "1e400" || std::string(odd) == "-1e400") {
    // nlohmann cannot hold 1e400: splice the literal into the text instead.
    *target = "@@";
    text = j.dump();
    text.replace(text.find("\"@@\""), 4, odd);
  } else {
    *target = Json::parse(odd);
    text = j.dump();
  }
  return to_bytes(test::safetensors_bytes(text, data));
}

void mutate_safetensors(Bytes& b, const std::string& header, const std::string& data, Rng& rng) {
  const size_t header_end = std::min(b.size(), 8 + header.size());
  switch (pick(rng, 6)) {
    case 0: {  // flip a few bytes in the length or the header
      size_t n = 1 + pick(rng, 4);
      for (size_t i = 0; i < n; ++i) b[pick(rng, header_end)] ^= static_cast<uint8_t>(1 + pick(rng, 255));
      break;
    }
    case 1: {  // change the header length: small deltas or anything
      uint64_t len = header.size();
      if (pick(rng, 2)) len += static_cast<uint64_t>(static_cast<int64_t>(pick(rng, 33)) - 16);
      else len = rng();
      for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(len >> (8 * i));
      break;
    }
    case 2:  // truncate
      b.resize(pick(rng, b.size()));
      break;
    case 3:  // append junk
      for (size_t i = 0, n = 1 + pick(rng, 16); i < n; ++i) b.push_back(static_cast<uint8_t>(rng()));
      break;
    case 4:  // replace a header byte with JSON punctuation
      if (header_end > 8) b[8 + pick(rng, header_end - 8)] = static_cast<uint8_t>("{}[],:\"0-e \\"[pick(rng, 12)]);
      break;
    default:
      b = swap_json_value(header, data, rng);
  }
}

// Parses `b`; returns true when it parsed. Any exception other than rlf::Error fails the test.
bool parse_safetensors_ok(const Bytes& b) {
  // Exactly-sized heap copy so ASan sees any read past the end.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[b.size() + (b.empty() ? 1 : 0)]);
  if (!b.empty()) std::memcpy(buf.get(), b.data(), b.size());
  try {
    SafetensorsHeader h = parse_safetensors_header(buf.get(), b.size(), "fuzz");
    uint64_t sum = 0, covered = 0;
    for (const auto& e : h.entries) {
      EXPECT_LE(e.end, h.data_bytes);
      EXPECT_EQ(e.begin, covered);
      covered = e.end;
      for (uint64_t i = e.begin; i < e.end; ++i) sum += buf[h.data_start + i];  // touch every byte
    }
    EXPECT_EQ(covered, h.data_bytes);
    EXPECT_EQ(h.data_start + h.data_bytes, b.size());
    (void)sum;
    return true;
  } catch (const Error&) {
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "non-rlf exception: " << e.what();
    return false;
  }
}

TEST(FormatsFuzz, SafetensorsHeaderParser) {
  std::vector<float> f32 = {1, 2, 3, 4, 5, 6};
  std::vector<uint16_t> f16 = {1, 2, 3};
  std::vector<int64_t> i64 = {7};
  std::vector<uint8_t> u8 = {1, 0, 1};
  std::string file = serialize_safetensors(
      {{"model.norm.weight", DType::F32, {2, 3}, f32.data(), 24},
       {"h", DType::F16, {3}, f16.data(), 6},
       {"i", DType::I64, {1, 1}, i64.data(), 8},
       {"mask", DType::BOOL, {3}, u8.data(), 3},
       {"empty", DType::BF16, {0}, nullptr, 0}},
      {{"format", "pt"}});
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(file[i])) << (8 * i);
  const std::string header = file.substr(8, n), data = file.substr(8 + n);
  ASSERT_TRUE(parse_safetensors_ok(to_bytes(file)));

  Rng rng(20240611);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes b = to_bytes(file);
    for (size_t k = 0, rounds = 1 + pick(rng, 3); k < rounds; ++k) mutate_safetensors(b, header, data, rng);
    (parse_safetensors_ok(b) ? parsed : rejected)++;
  }
  // Both outcomes occur (padding flips and metadata swaps stay valid).
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(parsed, 10);
  std::cout << "safetensors fuzz: " << parsed << " parsed, " << rejected << " rejected\n";
}

TEST(FormatsFuzz, DeeplyNestedHeaderDoesNotOverflowTheStack) {
  const size_t depth = 200'000;
  std::string header = R"({"t":{"dtype":"F32","shape":[1],"data_offsets":)" + std::string(depth, '[') +
                       std::string(depth, ']') + "}}";
  Bytes b = to_bytes(test::safetensors_bytes(header, "abcd"));
  EXPECT_EQ(test::error_of([&] { parse_safetensors_header(b.data(), b.size(), "deep"); }),
            "'deep': tensor 't': 'data_offsets' must be an array [begin, end], got array");
  header = R"({"t":{"dtype":")" + std::string(1000, 'X') + R"(","shape":[1],"data_offsets":[0,4]}})";
  b = to_bytes(test::safetensors_bytes(header, "abcd"));
  EXPECT_EQ(test::error_of([&] { parse_safetensors_header(b.data(), b.size(), "long"); }),
            "'long': tensor 't': unknown dtype \"" + std::string(60, 'X') +
                "... (supported: BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64)");
}

bool parse_llama2c_ok(const Bytes& b) {
  std::unique_ptr<uint8_t[]> buf(new uint8_t[b.size() + (b.empty() ? 1 : 0)]);
  if (!b.empty()) std::memcpy(buf.get(), b.data(), b.size());
  try {
    Llama2cHeader h = parse_llama2c_header(buf.get(), b.size(), "fuzz");
    EXPECT_EQ(h.file_size, b.size());
    EXPECT_NO_THROW(llama2c_config(h));
    return true;
  } catch (const Error&) {
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "non-rlf exception: " << e.what();
    return false;
  }
}

TEST(FormatsFuzz, Llama2cHeaderReader) {
  // dim 4, hidden 6, 1 layer, 2 heads, 1 kv head, vocab 3 shared / unshared, seq_len 2.
  const size_t n_shared = 148, n_unshared = 160;
  std::string v1;
  test::put_i32(v1, static_cast<int32_t>(kLlama2cMagic));
  test::put_i32(v1, 1);
  for (int32_t v : {4, 6, 1, 2, 1, 3, 2}) test::put_i32(v1, v);
  v1.push_back(1);
  v1.resize(256 + 4 * (n_shared - 4), '\0');  // no freq_cis in version 1
  const std::vector<Bytes> seeds = {to_bytes(test::llama2c_v0_bytes({4, 6, 1, 2, 1, 3, 2}, n_shared)),
                                    to_bytes(test::llama2c_v0_bytes({4, 6, 1, 2, 1, -3, 2}, n_unshared)),
                                    to_bytes(v1)};
  for (const auto& s : seeds) ASSERT_TRUE(parse_llama2c_ok(s));

  const int32_t odd[] = {0, -1, 1, 2, 3, 7, 64, -64, INT32_MAX, INT32_MIN, 1 << 20, static_cast<int32_t>(kLlama2cMagic)};
  Rng rng(7);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const Bytes& seed = seeds[pick(rng, seeds.size())];
    Bytes b = seed;
    const size_t header_bytes = seed.size() == seeds[2].size() ? 256 : 28;
    switch (pick(rng, 5)) {
      case 0:  // flip header bytes
        for (size_t i = 0, k = 1 + pick(rng, 3); i < k; ++i) b[pick(rng, header_bytes)] ^= uint8_t(1 + pick(rng, 255));
        break;
      case 1: {  // set an int32 header field to an odd value
        size_t field = pick(rng, header_bytes == 256 ? 9 : 7);
        int32_t v = odd[pick(rng, std::size(odd))];
        std::memcpy(&b[4 * field], &v, 4);
        break;
      }
      case 2:  // truncate
        b.resize(pick(rng, b.size() + 1));
        break;
      case 3:  // grow
        b.resize(b.size() + 1 + pick(rng, 64), 0);
        break;
      default: {  // set a field so the file size stays consistent but the shape changes
        int32_t v = static_cast<int32_t>(1 + pick(rng, 8));
        std::memcpy(&b[(header_bytes == 256 ? 8 : 0) + 4 * pick(rng, 7)], &v, 4);
      }
    }
    (parse_llama2c_ok(b) ? parsed : rejected)++;
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(parsed, 10);
  std::cout << "llama2c fuzz: " << parsed << " parsed, " << rejected << " rejected\n";
}

}  // namespace
}  // namespace rlf
