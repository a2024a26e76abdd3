#include "model/safetensors.h"

#include <algorithm>
#include <optional>
#include <set>

#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"
#include "util/mapped_file.h"

namespace rlf {

namespace {

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A JSON value for an error message: scalars and small flat arrays as JSON
// text (cut to 64 characters), anything else by its type name. Never recurses
// into deeply nested input.
std::string brief(const Json& v) {
  bool flat = !v.is_structured();
  if (v.is_array() && v.size() <= 4) {
    flat = true;
    for (const auto& x : v) flat = flat && !x.is_structured();
  }
  if (!flat) return v.type_name();
  std::string s = json_line(v);
  return s.size() <= 64 ? s : s.substr(0, 61) + "...";
}

// A JSON value as a non-negative integer that fits in uint64; otherwise an error
// naming `what`.
uint64_t as_u64(const Json& v, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) fail(what, " is negative (", v.dump(), ")");
  if (v.is_number_float()) fail(what, " is not an integer or is too large (", v.dump(), ")");
  fail(what, " must be a non-negative integer, got ", v.type_name());
}

// Parses one tensor's header entry; `where` is "'file': tensor 'name'".
SafetensorsEntry parse_entry(const std::string& name, const Json& v, uint64_t data_bytes, const std::string& where) {
  check(v.is_object(), where, ": expected an object with dtype, shape and data_offsets, got ", v.type_name());
  SafetensorsEntry e;
  e.name = name;

  auto dt = v.find("dtype");
  check(dt != v.end(), where, ": missing 'dtype'");
  check(dt->is_string(), where, ": 'dtype' must be a string, got ", dt->type_name());
  auto dtype = dtype_from_name(dt->get_ref<const std::string&>());
  check(dtype.has_value(), where, ": unknown dtype ", brief(*dt),
        " (supported: BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64)");
  e.dtype = *dtype;

  auto sh = v.find("shape");
  check(sh != v.end(), where, ": missing 'shape'");
  check(sh->is_array(), where, ": 'shape' must be an array, got ", sh->type_name());
  // nbytes = numel * dtype size, or nullopt when that exceeds 2^64.
  std::optional<uint64_t> nbytes;
  unsigned __int128 n = dtype_size(e.dtype);
  bool has_zero = false, overflow = false;
  for (size_t i = 0; i < sh->size(); ++i) {
    uint64_t d = as_u64((*sh)[i], where + ": shape[" + std::to_string(i) + "]");
    check(d <= static_cast<uint64_t>(INT64_MAX), where, ": shape[", i, "] = ", d, " is too large");
    e.shape.push_back(static_cast<int64_t>(d));
    has_zero = has_zero || d == 0;
    if (!overflow) n *= d;
    overflow = overflow || n > static_cast<unsigned __int128>(UINT64_MAX);
  }
  if (has_zero) nbytes = 0;
  else if (!overflow) nbytes = static_cast<uint64_t>(n);

  auto off = v.find("data_offsets");
  check(off != v.end(), where, ": missing 'data_offsets'");
  check(off->is_array() && off->size() == 2, where, ": 'data_offsets' must be an array [begin, end], got ",
        brief(*off));
  e.begin = as_u64((*off)[0], where + ": data_offsets[0]");
  e.end = as_u64((*off)[1], where + ": data_offsets[1]");
  const std::string offsets = str("data_offsets [", e.begin, ", ", e.end, "]");
  check(e.begin <= e.end, where, ": ", offsets, " begin after end");
  check(e.end <= data_bytes, where, ": ", offsets, " end beyond the data section (", data_bytes, " bytes)");
  check(nbytes == e.end - e.begin, where, ": ", offsets, " span ", e.end - e.begin, " bytes but shape ",
        shape_string(e.shape), " of ", dtype_name(e.dtype), " needs ",
        nbytes ? std::to_string(*nbytes) : std::string("more than 2^64"));
  return e;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t file_size, const std::string& source) {
  const std::string file = "'" + source + "'";
  check(file_size >= 8, file, ": ", file_size, " bytes is too small for a safetensors file (needs an 8-byte header length)");
  SafetensorsHeader h;
  h.header_bytes = read_le64(data);
  check(h.header_bytes <= kSafetensorsMaxHeaderBytes, file, ": header length ", h.header_bytes, " exceeds the limit of ",
        kSafetensorsMaxHeaderBytes, " bytes (not a safetensors file?)");
  check(h.header_bytes <= file_size - 8, file, ": header length ", h.header_bytes, " runs beyond the end of the file (",
        file_size, " bytes; truncated?)");
  h.data_start = 8 + h.header_bytes;
  h.data_bytes = file_size - h.data_start;
  check(h.header_bytes > 0 && data[8] == '{', file, ": header does not start with '{' (not a safetensors file?)");

  // Parse, rejecting duplicate top-level keys (nlohmann keeps only the last).
  std::set<std::string> seen;
  std::string duplicate;
  auto on_event = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1 && !seen.insert(parsed.get<std::string>()).second &&
        duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  Json j;
  try {
    j = Json::parse(data + 8, data + h.data_start, on_event);
  } catch (const Json::exception& e) {
    fail(file, ": header is not valid JSON: ", e.what());
  }
  check(j.is_object(), file, ": header must be a JSON object, got ", j.type_name());
  check(duplicate.empty(), file, ": tensor '", duplicate, "' appears more than once in the header");

  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (value.is_null()) continue;
      check(value.is_object(), file, ": '__metadata__' must be an object of strings, got ", value.type_name());
      for (const auto& [mk, mv] : value.items()) {
        check(mv.is_string(), file, ": '__metadata__' entry '", mk, "' must be a string, got ", mv.type_name());
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    h.entries.push_back(parse_entry(key, value, h.data_bytes, file + ": tensor '" + key + "'"));
  }

  // The tensors must tile the data section: sorted by offsets, each begins
  // where the previous one ended, and the last ends at the end of the file.
  std::sort(h.entries.begin(), h.entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const auto& e : h.entries) {
    check(e.begin >= covered, file, ": tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end,
          "] overlap tensor '", prev ? prev->name : "", "' [", prev ? prev->begin : 0, ", ", prev ? prev->end : 0, "]");
    check(e.begin == covered, file, ": bytes [", covered, ", ", e.begin, ") of the data section before tensor '", e.name,
          "' belong to no tensor (the format requires every byte to be indexed)");
    covered = e.end;
    prev = &e;
  }
  check(covered == h.data_bytes, file, ": the data section has ", h.data_bytes, " bytes but the tensors cover only ",
        covered, " (trailing bytes belong to no tensor; truncated header or corrupt file?)");
  return h;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path.string()) {
  auto map = std::make_shared<const MappedFile>(path_);
  static const uint8_t kEmpty[1] = {0};
  header_ = parse_safetensors_header(map->size() ? map->data() : kEmpty, map->size(), path_);
  map_ = std::move(map);
  for (size_t i = 0; i < header_.entries.size(); ++i) index_[header_.entries[i].name] = i;
}

TensorView SafetensorsFile::make_view(const SafetensorsEntry& e) const {
  TensorView v;
  v.data = map_->data() + header_.data_start + e.begin;
  v.nbytes = e.end - e.begin;
  v.dtype = e.dtype;
  v.shape = e.shape;
  v.keep_alive = map_;
  return v;
}

TensorView SafetensorsFile::view(const std::string& name) const {
  auto it = index_.find(name);
  check(it != index_.end(), "'", path_, "': no tensor named '", name, "' (the file has ", header_.entries.size(),
        " tensors)");
  return make_view(header_.entries[it->second]);
}

TensorMap SafetensorsFile::tensors() const {
  TensorMap out;
  for (const auto& e : header_.entries) out.emplace(e.name, make_view(e));
  return out;
}

TensorMap read_safetensors_index(const std::filesystem::path& index_path) {
  const std::string index_file = "'" + index_path.string() + "'";
  Json j = read_json_file(index_path.string());
  check(j.is_object(), index_file, ": expected a JSON object with a 'weight_map'");
  auto wm = j.find("weight_map");
  check(wm != j.end() && wm->is_object(), index_file, ": missing 'weight_map' object (tensor name -> shard file)");

  // Shard file -> tensors the index assigns to it.
  std::map<std::string, std::vector<std::string>> by_shard;
  for (const auto& [tensor, shard] : wm->items()) {
    check(shard.is_string(), index_file, ": weight_map['", tensor, "'] must be a file name, got ", shard.type_name());
    const std::string& s = shard.get_ref<const std::string&>();
    std::filesystem::path rel(s);
    bool escapes = s.empty() || rel.is_absolute();
    for (const auto& part : rel) escapes = escapes || part == "..";
    check(!escapes, index_file, ": weight_map['", tensor, "'] = '", s,
          "' must be a file name relative to the index's directory");
    by_shard[s].push_back(tensor);
  }

  TensorMap out;
  const auto dir = index_path.parent_path();
  for (const auto& [shard, names] : by_shard) {
    const auto shard_path = dir / shard;
    check(std::filesystem::is_regular_file(shard_path), index_file, ": shard '", shard_path.string(),
          "' (listed for tensor '", names.front(), "') does not exist");
    SafetensorsFile file(shard_path);
    std::set<std::string> listed(names.begin(), names.end());
    for (const auto& name : names)
      check(file.contains(name), index_file, ": tensor '", name, "' is listed for shard '", shard,
            "' but that file does not contain it");
    for (auto& [name, view] : file.tensors()) {
      check(listed.count(name) > 0, index_file, ": shard '", shard, "' contains tensor '", name,
            "' which the weight_map does not list for it");
      out.emplace(name, std::move(view));
    }
  }
  return out;
}

// ---------------------------------------------------------------- writing

namespace {

// Entries in the reference layout order, validated, with their offsets.
struct WritePlan {
  std::string prefix;                                 // 8-byte length + padded header
  std::vector<const SafetensorsWriteEntry*> ordered;  // data order
  uint64_t data_bytes = 0;
};

// Position of a dtype in the reference implementation's dtype enum (the sort key).
int dtype_rank(DType d) {
  static const DType kOrder[] = {DType::BOOL, DType::U8,  DType::I8,  DType::I16, DType::U16,
                                 DType::F16,  DType::BF16, DType::I32, DType::U32, DType::F32,
                                 DType::F64,  DType::I64, DType::U64};
  for (int i = 0; i < static_cast<int>(std::size(kOrder)); ++i)
    if (kOrder[i] == d) return i;
  fail("invalid DType value ", static_cast<int>(d));
}

WritePlan plan_write(const std::vector<SafetensorsWriteEntry>& entries,
                     const std::map<std::string, std::string>& metadata) {
  WritePlan plan;
  std::set<std::string> names;
  for (const auto& e : entries) {
    check(!e.name.empty() && e.name != "__metadata__", "safetensors writer: invalid tensor name '", e.name, "'");
    check(names.insert(e.name).second, "safetensors writer: tensor '", e.name, "' given twice");
    unsigned __int128 n = dtype_size(e.dtype);
    for (int64_t d : e.shape) {
      check(d >= 0, "safetensors writer: tensor '", e.name, "': negative dimension in shape ", shape_string(e.shape));
      n *= static_cast<uint64_t>(d);
      check(n <= static_cast<unsigned __int128>(UINT64_MAX) || d == 0, "safetensors writer: tensor '", e.name,
            "': shape ", shape_string(e.shape), " is too large");
    }
    if (std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end()) n = 0;
    check(n == e.nbytes, "safetensors writer: tensor '", e.name, "': ", e.nbytes, " bytes given but shape ",
          shape_string(e.shape), " of ", dtype_name(e.dtype), " needs ", static_cast<uint64_t>(n));
    check(e.data != nullptr || e.nbytes == 0, "safetensors writer: tensor '", e.name, "': null data");
    plan.ordered.push_back(&e);
  }
  std::sort(plan.ordered.begin(), plan.ordered.end(), [](const auto* a, const auto* b) {
    int ra = dtype_rank(a->dtype), rb = dtype_rank(b->dtype);
    return ra != rb ? ra > rb : a->name < b->name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  for (const auto* e : plan.ordered) {
    nlohmann::ordered_json t = nlohmann::ordered_json::object();
    t["dtype"] = dtype_name(e->dtype);
    t["shape"] = e->shape;
    t["data_offsets"] = {plan.data_bytes, plan.data_bytes + e->nbytes};
    header[e->name] = std::move(t);
    plan.data_bytes += e->nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::ordered_json::exception& ex) {
    fail("safetensors writer: a tensor name or metadata string is not valid UTF-8: ", ex.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) plan.prefix.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  plan.prefix += text;
  return plan;
}

}  // namespace

std::string serialize_safetensors(const std::vector<SafetensorsWriteEntry>& entries,
                                  const std::map<std::string, std::string>& metadata) {
  WritePlan plan = plan_write(entries, metadata);
  std::string out = std::move(plan.prefix);
  out.reserve(out.size() + plan.data_bytes);
  for (const auto* e : plan.ordered) out.append(static_cast<const char*>(e->data), e->nbytes);
  return out;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsWriteEntry>& entries,
                       const std::map<std::string, std::string>& metadata) {
  WritePlan plan = plan_write(entries, metadata);
  AtomicFileWriter out(path);
  out.write(plan.prefix.data(), plan.prefix.size());
  for (const auto* e : plan.ordered) out.write(e->data, e->nbytes);
  out.commit();
}

}  // namespace rlf
