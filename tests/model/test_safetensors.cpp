// safetensors: round trips, byte-exact interop with Hugging Face's `safetensors`
// package (oracle), every validation error with its exact text, sharded indexes.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "model/safetensors.h"
#include "tests/model/format_fixtures.h"
#include "tests/support/test_env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

using test::error_of;
using test::safetensors_bytes;

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += d[p[i] >> 4], s += d[p[i] & 15];
  return s;
}

std::string hex(const std::string& s) { return hex(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

// A fixed set of tensors of several dtypes, with deterministic contents.
struct Sample {
  std::vector<float> f32 = {1.5f, -2.25f, 3.0f, 0.0f, -0.0f, 1e-30f};
  std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x7bff, 0x0001};  // 1, -2, 65504, smallest subnormal
  std::vector<uint16_t> bf16 = {0x3f80, 0xbf80, 0x4049};         // 1, -1, 3.140625
  std::vector<int64_t> i64 = {-1, 0, 1LL << 40};
  std::vector<int32_t> i32 = {7, -7};
  std::vector<uint8_t> u8 = {0, 1, 255};
  std::vector<uint8_t> flags = {1, 0, 1, 1};
  std::vector<double> f64 = {3.141592653589793};

  std::vector<SafetensorsWriteEntry> entries() const {
    return {
        {"model.norm.weight", DType::F32, {2, 3}, f32.data(), f32.size() * 4},
        {"half", DType::F16, {4}, f16.data(), f16.size() * 2},
        {"brain", DType::BF16, {3}, bf16.data(), bf16.size() * 2},
        {"ids", DType::I64, {3}, i64.data(), i64.size() * 8},
        {"pair", DType::I32, {1, 2}, i32.data(), i32.size() * 4},
        {"bytes", DType::U8, {3}, u8.data(), u8.size()},
        {"mask", DType::BOOL, {2, 2}, flags.data(), flags.size()},
        {"pi", DType::F64, {}, f64.data(), 8},
        {"empty", DType::F32, {0, 4}, nullptr, 0},
    };
  }
};

TEST(Safetensors, WriteThenReadRoundTrips) {
  test::TempDir dir;
  Sample s;
  auto entries = s.entries();
  write_safetensors(dir / "m.safetensors", entries, {{"format", "pt"}, {"note", "x"}});
  SafetensorsFile f(dir / "m.safetensors");
  EXPECT_EQ(f.header().metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"note", "x"}}));
  EXPECT_EQ(f.header().data_start % 8, 0u);
  ASSERT_EQ(f.header().entries.size(), entries.size());
  for (const auto& e : entries) {
    SCOPED_TRACE(e.name);
    TensorView v = f.view(e.name);
    EXPECT_EQ(v.dtype, e.dtype);
    EXPECT_EQ(v.shape, e.shape);
    ASSERT_EQ(v.nbytes, e.nbytes);
    if (e.nbytes) {
      EXPECT_EQ(std::memcmp(v.data, e.data, e.nbytes), 0);
    }
  }
  EXPECT_EQ(f.tensors().size(), entries.size());
  // The in-memory serializer produces the same bytes as the streaming writer.
  EXPECT_EQ(read_file(dir / "m.safetensors"), serialize_safetensors(entries, {{"format", "pt"}, {"note", "x"}}));
}

TEST(Safetensors, WideDtypesComeFirstSoEveryTensorIsAligned) {
  Sample s;
  std::string bytes = serialize_safetensors(s.entries());
  auto h = parse_safetensors_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem");
  std::vector<std::string> order;
  for (const auto& e : h.entries) {
    order.push_back(e.name);
    EXPECT_EQ((h.data_start + e.begin) % dtype_size(e.dtype), 0u) << e.name;
  }
  // Reference order: dtype descending (I64, F64, F32, I32, BF16, F16, U8, BOOL), then name; the empty
  // tensor sorts among F32 by name and takes no bytes.
  EXPECT_EQ(order, (std::vector<std::string>{"ids", "pi", "empty", "model.norm.weight", "pair", "brain", "half",
                                             "bytes", "mask"}));
}

TEST(Safetensors, ViewsKeepTheMappingAlive) {
  test::TempDir dir;
  Sample s;
  write_safetensors(dir / "m.safetensors", s.entries());
  TensorView v;
  {
    SafetensorsFile f(dir / "m.safetensors");
    v = f.view("model.norm.weight");
  }
  fs::remove(dir / "m.safetensors");
  float x[6];
  std::memcpy(x, v.data, sizeof x);
  EXPECT_EQ(x[1], -2.25f);
}

TEST(Safetensors, MissingTensorNamesFileAndTensor) {
  test::TempDir dir;
  Sample s;
  write_safetensors(dir / "m.safetensors", s.entries());
  SafetensorsFile f(dir / "m.safetensors");
  EXPECT_EQ(error_of([&] { f.view("nope"); }),
            str("'", (dir / "m.safetensors").string(), "': no tensor named 'nope' (the file has 9 tensors)"));
}

// ------------------------------------------------------------- oracle interop

const char* kPythonWrites = R"PY(
import sys, json, torch
from safetensors.torch import save_file
t = {
    "w.f32": torch.tensor([[1.5, -2.25, 3.0], [0.0, -0.0, 1e-30]], dtype=torch.float32),
    "w.f16": torch.tensor([1.0, -2.0, 65504.0, 5.960464477539063e-08], dtype=torch.float16),
    "w.bf16": torch.tensor([1.0, -1.0, 3.140625], dtype=torch.bfloat16),
    "ids": torch.tensor([-1, 0, 1 << 40], dtype=torch.int64),
    "pair": torch.tensor([[7, -7]], dtype=torch.int32),
    "bytes": torch.tensor([0, 1, 255], dtype=torch.uint8),
    "mask": torch.tensor([[True, False], [True, True]]),
    "pi": torch.tensor(3.141592653589793, dtype=torch.float64),
    "empty": torch.zeros(0, 4),
}
save_file(t, sys.argv[1], metadata={"format": "pt"})
out = {}
for k, v in t.items():
    raw = v.contiguous().view(torch.uint8) if v.dim() > 0 and v.numel() > 0 else None
    out[k] = {"shape": list(v.shape), "hex": bytes(v.contiguous().numpy().tobytes()).hex() if v.dtype != torch.bfloat16
              else bytes(v.view(torch.int16).numpy().tobytes()).hex()}
print(json.dumps(out))
)PY";

TEST(SafetensorsOracle, ReadsWhatPythonWrites) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  auto path = dir / "py.safetensors";
  auto r = test::run_oracle_python(kPythonWrites, test::shell_quote(path.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json expected = parse_json(r.output, "oracle output");
  SafetensorsFile f(path);
  EXPECT_EQ(f.header().metadata.at("format"), "pt");
  ASSERT_EQ(f.header().entries.size(), expected.size());
  const std::map<std::string, DType> dtypes = {{"w.f32", DType::F32}, {"w.f16", DType::F16}, {"w.bf16", DType::BF16},
                                               {"ids", DType::I64},   {"pair", DType::I32},  {"bytes", DType::U8},
                                               {"mask", DType::BOOL}, {"pi", DType::F64},    {"empty", DType::F32}};
  for (const auto& [name, want] : expected.items()) {
    SCOPED_TRACE(name);
    TensorView v = f.view(name);
    EXPECT_EQ(v.dtype, dtypes.at(name));
    EXPECT_EQ(v.shape, want["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(hex(v.data, v.nbytes), want["hex"].get<std::string>());
  }
  // Spot-check decoded values, independent of the hex dump.
  float x[6];
  std::memcpy(x, f.view("w.f32").data, sizeof x);
  EXPECT_EQ(x[0], 1.5f);
  EXPECT_EQ(x[5], 1e-30f);
  double pi;
  std::memcpy(&pi, f.view("pi").data, 8);
  EXPECT_EQ(pi, 3.141592653589793);

  // Our writer lays the same tensors out byte-for-byte as the reference.
  std::vector<SafetensorsWriteEntry> entries;
  for (const auto& e : f.header().entries) {
    TensorView v = f.view(e.name);
    entries.push_back({e.name, v.dtype, v.shape, v.data, v.nbytes});
  }
  EXPECT_EQ(hex(serialize_safetensors(entries, {{"format", "pt"}})), hex(read_file(path)));
}

const char* kPythonReads = R"PY(
import sys, json, numpy as np
from safetensors import safe_open
out = {}
with safe_open(sys.argv[1], framework="np") as f:
    out["__metadata__"] = f.metadata()
    for k in f.keys():
        a = f.get_tensor(k)
        out[k] = {"dtype": str(a.dtype), "shape": list(a.shape), "hex": a.tobytes().hex()}
print(json.dumps(out))
)PY";

TEST(SafetensorsOracle, PythonReadsWhatWeWrite) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  auto path = dir / "cpp.safetensors";
  Sample s;
  auto entries = s.entries();
  entries.erase(entries.begin() + 2);  // numpy has no bfloat16; BF16 is covered by the byte-identity test
  write_safetensors(path, entries, {{"format", "pt"}, {"step", "12"}});
  auto r = test::run_oracle_python(kPythonReads, test::shell_quote(path.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json got = parse_json(r.output, "oracle output");
  EXPECT_EQ(got["__metadata__"], Json({{"format", "pt"}, {"step", "12"}}));
  const std::map<DType, std::string> np_names = {{DType::F32, "float32"}, {DType::F16, "float16"},
                                                 {DType::I64, "int64"},   {DType::I32, "int32"},
                                                 {DType::U8, "uint8"},    {DType::BOOL, "bool"},
                                                 {DType::F64, "float64"}};
  ASSERT_EQ(got.size(), entries.size() + 1);
  for (const auto& e : entries) {
    SCOPED_TRACE(e.name);
    const Json& g = got.at(e.name);
    EXPECT_EQ(g["dtype"], np_names.at(e.dtype));
    EXPECT_EQ(g["shape"].get<std::vector<int64_t>>(), e.shape);
    EXPECT_EQ(g["hex"], hex(static_cast<const uint8_t*>(e.data), e.nbytes));
  }
}

// ------------------------------------------------------------- validation

std::string parse_error(const std::string& bytes) {
  return error_of([&] {
    parse_safetensors_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "/x/model.safetensors");
  });
}

const std::string kNorm = R"("model.norm.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,16]})";

TEST(SafetensorsErrors, ValidMinimalFileParses) {
  auto h = parse_safetensors_header(
      reinterpret_cast<const uint8_t*>(safetensors_bytes("{" + kNorm + "}", std::string(16, 'x')).data()),
      8 + 2 + kNorm.size() + 16, "m");
  ASSERT_EQ(h.entries.size(), 1u);
  EXPECT_EQ(h.entries[0].shape, std::vector<int64_t>{4});
}

TEST(SafetensorsErrors, FileTooShortForLength) {
  EXPECT_EQ(parse_error("abc"),
            "'/x/model.safetensors': 3 bytes is too small for a safetensors file (needs an 8-byte header length)");
}

TEST(SafetensorsErrors, HeaderLengthBeyondFile) {
  std::string b = safetensors_bytes("{}", "");
  b[0] = 100;
  EXPECT_EQ(parse_error(b),
            "'/x/model.safetensors': header length 100 runs beyond the end of the file (10 bytes; truncated?)");
}

TEST(SafetensorsErrors, HugeHeaderLength) {
  std::string b = safetensors_bytes("{}", "");
  b[7] = '\x7f';
  EXPECT_EQ(parse_error(b),
            "'/x/model.safetensors': header length 9151314442816847874 exceeds the limit of 100000000 bytes "
            "(not a safetensors file?)");
}

TEST(SafetensorsErrors, HeaderNotJson) {
  EXPECT_EQ(parse_error(safetensors_bytes("{\"a\": [1,", "")).substr(0, 63),
            "'/x/model.safetensors': header is not valid JSON: [json.excepti");
  EXPECT_EQ(parse_error(safetensors_bytes("[1, 2]", "")),
            "'/x/model.safetensors': header does not start with '{' (not a safetensors file?)");
  EXPECT_EQ(parse_error(safetensors_bytes("", "")),
            "'/x/model.safetensors': header does not start with '{' (not a safetensors file?)");
}

TEST(SafetensorsErrors, HugeNumberInJsonIsAnRlfError) {
  // nlohmann throws out_of_range (not parse_error) for 1e400.
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1e400],"data_offsets":[0,0]}})", ""))
                .substr(0, 50),
            "'/x/model.safetensors': header is not valid JSON: ");
}

TEST(SafetensorsErrors, TensorEntryNotAnObject) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":[1]})", "")),
            "'/x/model.safetensors': tensor 't': expected an object with dtype, shape and data_offsets, got array");
}

TEST(SafetensorsErrors, MissingFields) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': missing 'dtype'");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"F32","data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': missing 'shape'");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"F32","shape":[1]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': missing 'data_offsets'");
}

TEST(SafetensorsErrors, WrongFieldTypes) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': 'dtype' must be a string, got number");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': 'shape' must be an array, got string");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': 'data_offsets' must be an array [begin, end], got [0]");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': shape[0] is not an integer or is too large (1.5)");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"F32","shape":[true],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': shape[0] must be a non-negative integer, got boolean");
}

TEST(SafetensorsErrors, UnknownDtype) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"F12","shape":[1],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': unknown dtype \"F12\" (supported: BOOL, U8, I8, I16, U16, F16, "
            "BF16, I32, U32, F32, F64, I64, U64)");
}

TEST(SafetensorsErrors, NegativeAndOverflowingShapes) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': shape[0] is negative (-1)");
  EXPECT_EQ(parse_error(safetensors_bytes(
                R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': data_offsets [0, 4] span 4 bytes but shape "
            "[4294967296, 4294967296] of F32 needs more than 2^64");
  EXPECT_EQ(parse_error(safetensors_bytes(
                R"({"t":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': shape[0] = 18446744073709551615 is too large");
  EXPECT_EQ(parse_error(safetensors_bytes(
                R"({"t":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': shape[0] is not an integer or is too large (1.8446744073709552e+19)");
}

TEST(SafetensorsErrors, ByteCountMismatch) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"F16","shape":[3],"data_offsets":[0,4]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': data_offsets [0, 4] span 4 bytes but shape [3] of F16 needs 6");
}

TEST(SafetensorsErrors, OffsetsOutOfRange) {
  EXPECT_EQ(parse_error(safetensors_bytes(
                R"({"model.norm.weight":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})", std::string(256, 0))),
            "'/x/model.safetensors': tensor 'model.norm.weight': data_offsets [0, 400] end beyond the data section "
            "(256 bytes)");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': data_offsets [4, 0] begin after end");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"t":{"dtype":"U8","shape":[4],"data_offsets":[-4,0]}})", "abcd")),
            "'/x/model.safetensors': tensor 't': data_offsets[0] is negative (-4)");
}

TEST(SafetensorsErrors, OverlappingTensors) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                          R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                                          "abcdef")),
            "'/x/model.safetensors': tensor 'b': data_offsets [2, 6] overlap tensor 'a' [0, 4]");
}

TEST(SafetensorsErrors, GapsAndTrailingBytes) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                          R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
                                          "abcdef")),
            "'/x/model.safetensors': bytes [2, 4) of the data section before tensor 'b' belong to no tensor (the "
            "format requires every byte to be indexed)");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "abcdef")),
            "'/x/model.safetensors': the data section has 6 bytes but the tensors cover only 2 (trailing bytes "
            "belong to no tensor; truncated header or corrupt file?)");
}

TEST(SafetensorsErrors, DuplicateNames) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                          R"("a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                                          "abcd")),
            "'/x/model.safetensors': tensor 'a' appears more than once in the header");
}

TEST(SafetensorsErrors, BadMetadata) {
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"__metadata__":{"step":12}})", "")),
            "'/x/model.safetensors': '__metadata__' entry 'step' must be a string, got number");
  EXPECT_EQ(parse_error(safetensors_bytes(R"({"__metadata__":[1]})", "")),
            "'/x/model.safetensors': '__metadata__' must be an object of strings, got array");
}

TEST(SafetensorsErrors, TruncatedFileNamesPath) {
  test::TempDir dir;
  Sample s;
  std::string bytes = serialize_safetensors(s.entries());
  write_file_atomic(dir / "t.safetensors", bytes.substr(0, bytes.size() - 3));
  std::string m = error_of([&] { SafetensorsFile f(dir / "t.safetensors"); });
  EXPECT_EQ(m.substr(0, m.find(':')), str("'", (dir / "t.safetensors").string(), "'"));
  EXPECT_NE(m.find("end beyond the data section"), std::string::npos) << m;
}

TEST(SafetensorsWriter, RejectsBadEntries) {
  float x[2] = {1, 2};
  EXPECT_EQ(error_of([&] { serialize_safetensors({{"a", DType::F32, {3}, x, 8}}); }),
            "safetensors writer: tensor 'a': 8 bytes given but shape [3] of F32 needs 12");
  EXPECT_EQ(error_of([&] { serialize_safetensors({{"a", DType::F32, {2}, x, 8}, {"a", DType::F32, {2}, x, 8}}); }),
            "safetensors writer: tensor 'a' given twice");
  EXPECT_EQ(error_of([&] { serialize_safetensors({{"a", DType::F32, {-2}, x, 8}}); }),
            "safetensors writer: tensor 'a': negative dimension in shape [-2]");
  EXPECT_EQ(error_of([&] { serialize_safetensors({{"__metadata__", DType::F32, {2}, x, 8}}); }),
            "safetensors writer: invalid tensor name '__metadata__'");
}

// ------------------------------------------------------------- sharded

struct Shards {
  test::TempDir dir;
  float a[2] = {1, 2}, b[3] = {3, 4, 5};
  Shards() {
    write_safetensors(dir / "s-1.safetensors", {{"a", DType::F32, {2}, a, 8}});
    write_safetensors(dir / "s-2.safetensors", {{"b", DType::F32, {3}, b, 12}});
  }
  void index(const Json& weight_map) {
    write_file_atomic(dir / "model.safetensors.index.json",
                      Json({{"metadata", {{"total_size", 20}}}, {"weight_map", weight_map}}).dump());
  }
  std::string idx() const { return str("'", (dir / "model.safetensors.index.json").string(), "'"); }
};

TEST(SafetensorsIndex, ReadsEveryShard) {
  Shards s;
  s.index({{"a", "s-1.safetensors"}, {"b", "s-2.safetensors"}});
  TensorMap t = read_safetensors_index(s.dir / "model.safetensors.index.json");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.at("b").shape, std::vector<int64_t>{3});
  float b[3];
  std::memcpy(b, t.at("b").data, 12);
  EXPECT_EQ(b[2], 5.0f);
}

TEST(SafetensorsIndex, MissingShard) {
  Shards s;
  s.index({{"a", "s-1.safetensors"}, {"b", "s-3.safetensors"}});
  EXPECT_EQ(error_of([&] { read_safetensors_index(s.dir / "model.safetensors.index.json"); }),
            s.idx() + ": shard '" + (s.dir / "s-3.safetensors").string() +
                "' (listed for tensor 'b') does not exist");
}

TEST(SafetensorsIndex, TensorAbsentFromItsShard) {
  Shards s;
  s.index({{"a", "s-1.safetensors"}, {"b", "s-2.safetensors"}, {"c", "s-2.safetensors"}});
  EXPECT_EQ(error_of([&] { read_safetensors_index(s.dir / "model.safetensors.index.json"); }),
            s.idx() + ": tensor 'c' is listed for shard 's-2.safetensors' but that file does not contain it");
}

TEST(SafetensorsIndex, UnlistedTensorInShard) {
  Shards s;
  write_safetensors(s.dir / "s-1.safetensors", {{"a", DType::F32, {2}, s.a, 8}, {"z", DType::F32, {2}, s.a, 8}});
  s.index({{"a", "s-1.safetensors"}});
  EXPECT_EQ(error_of([&] { read_safetensors_index(s.dir / "model.safetensors.index.json"); }),
            s.idx() + ": shard 's-1.safetensors' contains tensor 'z' which the weight_map does not list for it");
}

TEST(SafetensorsIndex, ShardPathMustStayInTheDirectory) {
  Shards s;
  s.index({{"a", "../s-1.safetensors"}});
  EXPECT_EQ(error_of([&] { read_safetensors_index(s.dir / "model.safetensors.index.json"); }),
            s.idx() + ": weight_map['a'] = '../s-1.safetensors' must be a file name relative to the index's "
                      "directory");
  s.index({{"a", 3}});
  EXPECT_EQ(error_of([&] { read_safetensors_index(s.dir / "model.safetensors.index.json"); }),
            s.idx() + ": weight_map['a'] must be a file name, got number");
}

}  // namespace
}  // namespace rlf
