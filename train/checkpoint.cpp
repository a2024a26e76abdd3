#include "train/checkpoint.h"

#include "model/lora.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include <ATen/CPUGeneratorImpl.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "model/loader.h"
#include "model/safetensors.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/write_target.h"

namespace rlf {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTrainerJson = "trainer.json";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kRngFile = "rng.safetensors";
constexpr const char* kModelDir = "model";
constexpr const char* kAdapterDir = "adapter";

std::string step_dir_name(int64_t step) { return "step-" + std::to_string(step); }

// N for a directory named "step-N" (digits only), else -1.
int64_t parse_step_dir_name(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() == 5 || name.size() > 5 + 18) return -1;
  int64_t n = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

void fsync_path(const fs::path& path, bool directory) {
  int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  check(fd >= 0, "cannot open '", path.string(), "' to sync it: ", std::strerror(errno));
  int rc = ::fsync(fd);
  int e = errno;
  ::close(fd);
  check(rc == 0, "cannot fsync '", path.string(), "': ", std::strerror(e));
}

struct FileDigest {
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

FileDigest digest_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cannot open '", path.string(), "': ", std::strerror(errno));
  FileDigest d;
  uLong crc = ::crc32(0L, Z_NULL, 0);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    std::streamsize n = in.gcount();
    if (n <= 0) break;
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(n));
    d.bytes += static_cast<uint64_t>(n);
  }
  check(!in.bad(), "error reading '", path.string(), "'");
  d.crc32 = static_cast<uint32_t>(crc);
  return d;
}

// CPU tensors viewing `file`'s mapping (valid while `file` lives).
std::map<std::string, torch::Tensor> tensor_views(const SafetensorsFile& file) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, view] : file.tensors()) out[name] = tensor_from_view(view);
  return out;
}

// Every regular file under `root`, relative, sorted.
std::vector<std::string> files_under(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

constexpr const char* kReplacedPrefix = ".tmp-replaced-";

// Exchanges two directory entries atomically (renameat2 RENAME_EXCHANGE);
// false when the file system cannot.
bool exchange_paths(const fs::path& a, const fs::path& b) {
  return ::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0;
}

}  // namespace

void recover_checkpoints(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kReplacedPrefix, 0) != 0) continue;
    // A complete checkpoint moved aside by an interrupted replacement: put it
    // back unless a complete one of the same step is in place.
    const fs::path target = dir / name.substr(std::string(kReplacedPrefix).size());
    if (!fs::is_regular_file(e.path() / kTrainerJson)) continue;
    if (fs::is_regular_file(target / kTrainerJson)) continue;
    if (fs::exists(target)) fs::remove_all(target);
    fs::rename(e.path(), target);
    fsync_path(dir, true);
  }
  // An interrupted update of DIR/latest: drop its temporary file and point
  // `latest` at the newest complete checkpoint.
  bool stale_latest = false;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(".tmp-latest", 0) == 0) fs::remove(e.path()), stale_latest = true;
  std::vector<fs::path> all = list_checkpoints(dir);
  if (!all.empty()) {
    const std::string want = all.back().filename().string() + "\n";
    std::string have;
    if (fs::is_regular_file(dir / "latest")) have = read_file(dir / "latest");
    if (stale_latest || have != want) write_file_atomic(dir / "latest", want);
  }
}

namespace {

// Leftovers of an interrupted save: partial writes (.tmp-step-N) and copies
// moved aside whose step is complete again. Never a complete copy that is the
// only one of its step (recover_checkpoints puts those back first).
void remove_stale_tmp(const fs::path& dir) {
  recover_checkpoints(dir);
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(".tmp-", 0) == 0) fs::remove_all(e.path());
  }
}

Json generator_names(const CheckpointTargets& targets) {
  Json names = Json::array();
  for (const auto& [name, gen] : targets.generators) names.push_back(name);
  return names;
}

}  // namespace

torch::Generator make_cpu_generator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

fs::path save_checkpoint(const fs::path& dir, const TrainerState& state, const CheckpointTargets& targets,
                         const CheckpointOptions& options) {
  const fs::path final_dir = dir / step_dir_name(state.step);
  return with_context("saving checkpoint '" + final_dir.string() + "'", [&] {
    check(targets.model != nullptr, "no model given (CheckpointTargets::model is null)");
    check(state.step >= 0, "step ", state.step, " is negative");
    check(options.keep_last >= 0, "checkpoint.keep_last = ", options.keep_last, ": must be >= 0 (0 = keep all)");
    for (const auto& [name, gen] : targets.generators) check(gen != nullptr, "generator '", name, "' is null");
    for (const auto& [name, c] : targets.companions)
      check(c.model != nullptr && c.optimizer != nullptr && !name.empty() && name.find('/') == std::string::npos &&
                name != kModelDir && name.rfind('.', 0) != 0,
            "companion '", name, "' needs a model, an optimizer and a plain directory name");
    for (const auto& [name, m] : targets.models)
      check(m != nullptr && !name.empty() && name.find('/') == std::string::npos && name != kModelDir &&
                name != kAdapterDir && name.rfind('.', 0) != 0 && !targets.companions.count(name),
            "model '", name, "' needs a model and a plain directory name that no companion has");
    auto stage = [&](const std::string& s) {
      if (options.on_stage) options.on_stage(s);
    };
    torch::NoGradGuard no_grad;
    ensure_directory(dir);
    remove_stale_tmp(dir);  // leftovers of an interrupted save
    const fs::path tmp = dir / (".tmp-" + step_dir_name(state.step));
    ensure_directory(tmp);
    // A save that fails before the publish (a full disk, a bad target) leaves no temporary behind.
    struct RemoveUnlessPublished {
      fs::path path;
      bool published = false;
      ~RemoveUnlessPublished() {
        std::error_code ignored;
        if (!published) fs::remove_all(path, ignored);
      }
    } unpublished{tmp};
    stage("tmp_dir");

    SaveOptions model_options;
    model_options.tokenizer_source = options.tokenizer_source;
    model_options.generation = options.generation;
    save_model(*targets.model, tmp / kModelDir, model_options);
    if (options.model_extras) options.model_extras(tmp / kModelDir);
    // LoRA: the base above, the adapters beside it in the PEFT layout (model/lora.h).
    if (has_lora(*targets.model)) save_lora_adapter(*targets.model, tmp / kAdapterDir, "../" + std::string(kModelDir));
    stage("model");

    Json optimizer_json = nullptr;
    if (targets.optimizer) {
      const Optimizer& opt = *targets.optimizer;
      write_tensor_file(tmp / kOptimizerFile, opt.state_tensors(),
                        {{"format", "rlf-optimizer"}, {"step", std::to_string(opt.step_count())}});
      optimizer_json = {{"step", opt.step_count()}, {"n_skipped", opt.n_skipped()}};
    }
    stage("optimizer");

    Json companions_json = Json::object();
    for (const auto& [name, c] : targets.companions) {
      save_model(*c.model, tmp / name / kModelDir, SaveOptions{});
      write_tensor_file(tmp / name / kOptimizerFile, c.optimizer->state_tensors(),
                        {{"format", "rlf-optimizer"}, {"step", std::to_string(c.optimizer->step_count())}});
      companions_json[name] = {{"step", c.optimizer->step_count()}, {"n_skipped", c.optimizer->n_skipped()}};
    }
    Json models_json = Json::array();
    for (const auto& [name, m] : targets.models) {
      save_model(*m, tmp / name / kModelDir, SaveOptions{});
      models_json.push_back(name);
    }
    stage("companions");

    if (!targets.generators.empty()) {
      std::map<std::string, torch::Tensor> rng;
      for (const auto& [name, gen] : targets.generators) {
        std::lock_guard<std::mutex> lock(gen->mutex());
        rng["rng." + name] = gen->get_state();
      }
      write_tensor_file(tmp / kRngFile, rng, {{"format", "rlf-rng"}});
    }
    stage("rng");

    // Manifest: every file written so far, synced to disk, with size and CRC.
    Json files = Json::object();
    for (const std::string& rel : files_under(tmp)) {
      fsync_path(tmp / rel, false);
      FileDigest d = digest_file(tmp / rel);
      files[rel] = {{"bytes", d.bytes}, {"crc32", d.crc32}};
    }
    stage("manifest");

    Json trainer = {{"format", kCheckpointFormat},
                    {"version", kCheckpointVersion},
                    {"step", state.step},
                    {"scheduler_step", state.scheduler_step},
                    {"optimizer", optimizer_json},
                    {"generators", generator_names(targets)},
                    {"companions", companions_json},
                    {"models", models_json},
                    {"counters", state.counters},
                    {"data_cursor", state.data_cursor},
                    {"extra", state.extra},
                    {"files", files}};
    write_file_atomic(tmp / kTrainerJson, trainer.dump(2) + "\n");
    for (const auto& e : fs::recursive_directory_iterator(tmp)) {
      if (e.is_directory()) fsync_path(e.path(), true);
    }
    fsync_path(tmp, true);
    stage("trainer_json");

    // Publish: the rename is the commit point. Replacing an existing step-N
    // never passes through a state without a complete step-N: the two are
    // exchanged atomically (or, where the file system cannot, the old one is
    // moved aside first and recover_checkpoints puts it back after a crash).
    const fs::path replaced = dir / (kReplacedPrefix + step_dir_name(state.step));
    unpublished.published = true;
    if (fs::exists(final_dir)) {
      if (exchange_paths(tmp, final_dir)) {
        fs::rename(tmp, replaced);  // the old copy, now at tmp: a complete step-N is in place
      } else {
        fs::rename(final_dir, replaced);
        fs::rename(tmp, final_dir);
      }
    } else {
      fs::rename(tmp, final_dir);
    }
    fsync_path(dir, true);
    stage("renamed");
    write_file_atomic(dir / "latest", step_dir_name(state.step) + "\n");
    stage("latest");

    if (fs::exists(replaced)) fs::remove_all(replaced);
    if (options.keep_last > 0) {
      std::vector<fs::path> all = list_checkpoints(dir);
      for (size_t i = 0; i + static_cast<size_t>(options.keep_last) < all.size(); ++i) {
        if (all[i] != final_dir) fs::remove_all(all[i]);
      }
    }
    return final_dir;
  });
}

std::vector<fs::path> list_checkpoints(const fs::path& dir) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  for (const auto& e : fs::directory_iterator(dir)) {
    int64_t n = parse_step_dir_name(e.path().filename().string());
    if (n >= 0 && e.is_directory() && fs::is_regular_file(e.path() / kTrainerJson)) found.emplace_back(n, e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

std::optional<fs::path> find_latest_checkpoint(const fs::path& dir) {
  recover_checkpoints(dir);
  std::vector<fs::path> all = list_checkpoints(dir);
  if (all.empty()) return std::nullopt;
  return all.back();
}

TrainerState load_checkpoint(const fs::path& ckpt, const CheckpointTargets& targets,
                             const CheckpointOptions& options) {
  return with_context("loading checkpoint '" + ckpt.string() + "'", [&] {
    check(targets.model != nullptr, "no model given (CheckpointTargets::model is null)");
    torch::NoGradGuard no_grad;
    const fs::path trainer_path = ckpt / kTrainerJson;
    check(fs::is_regular_file(trainer_path), "'", trainer_path.string(),
          "' is missing (not a checkpoint directory, or an interrupted save)");
    const Json trainer = read_json_file(trainer_path.string());
    const std::string src = trainer_path.string();
    check(json_require<std::string>(trainer, "format", src) == kCheckpointFormat, src, ": format is not '",
          kCheckpointFormat, "'");
    const int version = json_require<int>(trainer, "version", src);
    check(version == kCheckpointVersion, src, ": version ", version, " is not supported (this build reads ",
          kCheckpointVersion, ")");

    // 1. Files: present, with the size and CRC recorded when it was written.
    const Json files = trainer.contains("files") ? trainer.at("files") : Json();
    check(files.is_object(), src, ": field 'files' is missing or not an object");
    for (const char* required : {"model/config.json", "model/model.safetensors"}) {
      check(files.contains(required), src, ": the manifest lists no '", required, "'");
    }
    for (const auto& [rel, info] : files.items()) {
      const fs::path path = ckpt / rel;
      check(fs::is_regular_file(path), "'", path.string(), "' is missing");
      const uint64_t expected = json_require<uint64_t>(info, "bytes", src + " files." + rel);
      const uint64_t actual = fs::file_size(path);
      check(actual == expected, "'", path.string(), "' has ", actual, " bytes but ", expected,
            " were written (truncated or modified)");
      if (options.verify_checksums) {
        const uint32_t crc = json_require<uint32_t>(info, "crc32", src + " files." + rel);
        check(digest_file(path).crc32 == crc, "'", path.string(), "' fails its CRC-32 check (corrupted)");
      }
    }

    // 2. Parse everything and check it against the targets before touching them.
    HfModelDir model_dir(ckpt / kModelDir);
    const std::string model_src = model_dir.weights_path().string();
    // LoRA adapters: saved in adapter/ exactly when the model has them.
    const bool saved_lora = files.contains(std::string(kAdapterDir) + "/adapter_model.safetensors");
    check(saved_lora == has_lora(*targets.model), src, saved_lora
              ? ": the checkpoint holds LoRA adapters (adapter/) but the model to restore has none (set [lora] as "
                "in the run that saved it)"
              : ": the model to restore has LoRA adapters but the checkpoint holds none (it was saved without "
                "[lora]; start a fresh run directory)");
    for (auto& p : targets.model->named_parameters()) {
      if (is_lora_parameter(p.key())) continue;
      auto it = model_dir.tensors().find(p.key());
      check(it != model_dir.tensors().end(), model_src, ": missing tensor '", p.key(), "'");
      check(it->second.shape == p.value().sizes().vec(), model_src, ": tensor '", p.key(), "' has shape ",
            shape_string(it->second.shape), " but the model expects ", shape_string(p.value().sizes().vec()));
    }
    if (saved_lora) check_lora_adapter(*targets.model, ckpt / kAdapterDir);

    const Json& opt_json = trainer.contains("optimizer") ? trainer.at("optimizer") : Json();
    std::optional<SafetensorsFile> opt_file;
    if (targets.optimizer) {
      check(opt_json.is_object(), src, ": the checkpoint has no optimizer state but an optimizer was given");
      opt_file.emplace(ckpt / kOptimizerFile);
    }

    std::optional<SafetensorsFile> rng_file;
    std::vector<std::string> saved_generators = json_require<std::vector<std::string>>(trainer, "generators", src);
    std::vector<std::string> wanted;
    for (const auto& [name, gen] : targets.generators) wanted.push_back(name);
    std::sort(saved_generators.begin(), saved_generators.end());
    check(saved_generators == wanted, src, ": saved generators ", Json(saved_generators).dump(),
          " differ from the ones to restore ", Json(wanted).dump());
    if (!wanted.empty()) {
      rng_file.emplace(ckpt / kRngFile);
      for (const auto& name : wanted) {
        check(rng_file->contains("rng." + name), rng_file->path(), ": missing tensor 'rng.", name, "'");
        check(rng_file->view("rng." + name).dtype == DType::U8, rng_file->path(), ": tensor 'rng.", name,
              "' is not U8");
      }
    }

    // Companions: the same set as saved, each model's tensors matching.
    const Json saved_companions = trainer.value("companions", Json::object());
    std::vector<std::string> saved_names, wanted_names;
    for (const auto& [name, info] : saved_companions.items()) saved_names.push_back(name);
    for (const auto& [name, c] : targets.companions) wanted_names.push_back(name);
    std::sort(saved_names.begin(), saved_names.end());
    check(saved_names == wanted_names, src, ": saved companion models ", Json(saved_names).dump(),
          " differ from the ones to restore ", Json(wanted_names).dump());
    std::map<std::string, HfModelDir> companion_dirs;
    std::map<std::string, SafetensorsFile> companion_opts;
    for (const auto& [name, c] : targets.companions) {
      const HfModelDir& dir = companion_dirs.try_emplace(name, ckpt / name / kModelDir).first->second;
      const std::string csrc = dir.weights_path().string();
      for (auto& p : c.model->named_parameters()) {
        auto it = dir.tensors().find(p.key());
        check(it != dir.tensors().end(), csrc, ": missing tensor '", p.key(), "'");
        check(it->second.shape == p.value().sizes().vec(), csrc, ": tensor '", p.key(), "' has shape ",
              shape_string(it->second.shape), " but the model expects ", shape_string(p.value().sizes().vec()));
      }
      companion_opts.try_emplace(name, ckpt / name / kOptimizerFile);
    }

    // Models without an optimizer: the same set as saved (none in checkpoints older than the field).
    std::vector<std::string> saved_models = json_get_or<std::vector<std::string>>(trainer, "models", {}, src);
    std::vector<std::string> wanted_models;
    for (const auto& [name, m] : targets.models) wanted_models.push_back(name);
    std::sort(saved_models.begin(), saved_models.end());
    check(saved_models == wanted_models, src, ": saved models ", Json(saved_models).dump(),
          " differ from the ones to restore ", Json(wanted_models).dump(),
          " (a run resumes with the models it saved: e.g. distill.teacher = \"ema\" keeps one)");
    std::map<std::string, HfModelDir> model_dirs;
    for (const auto& [name, m] : targets.models) {
      const HfModelDir& dir = model_dirs.try_emplace(name, ckpt / name / kModelDir).first->second;
      const std::string msrc = dir.weights_path().string();
      check(files.contains(name + "/" + kModelDir + "/model.safetensors"), src, ": the manifest lists no '", name,
            "/", kModelDir, "/model.safetensors'");
      for (auto& p : m->named_parameters()) {
        auto it = dir.tensors().find(p.key());
        check(it != dir.tensors().end(), msrc, ": missing tensor '", p.key(), "'");
        check(it->second.shape == p.value().sizes().vec(), msrc, ": tensor '", p.key(), "' has shape ",
              shape_string(it->second.shape), " but the model expects ", shape_string(p.value().sizes().vec()));
      }
    }

    TrainerState state;
    state.step = json_require<int64_t>(trainer, "step", src);
    state.scheduler_step = json_require<int64_t>(trainer, "scheduler_step", src);
    state.counters = json_get_or<std::map<std::string, uint64_t>>(trainer, "counters", {}, src);
    state.data_cursor = trainer.value("data_cursor", Json());
    state.extra = trainer.value("extra", Json());

    // 3. Restore. The optimizer validates all its tensors before copying any,
    //    so it goes first; the model copy cannot fail after the checks above.
    if (targets.optimizer) {
      targets.optimizer->load_state(tensor_views(*opt_file), json_require<int64_t>(opt_json, "step", src),
                                    json_get_or<int64_t>(opt_json, "n_skipped", 0, src), opt_file->path());
    }
    for (const auto& [name, c] : targets.companions) {
      const Json& info = saved_companions.at(name);
      const SafetensorsFile& f = companion_opts.at(name);
      c.optimizer->load_state(tensor_views(f), json_require<int64_t>(info, "step", src),
                              json_get_or<int64_t>(info, "n_skipped", 0, src), f.path());
    }
    load_weights(*targets.model, model_dir.tensors(), model_src);
    if (saved_lora) load_lora_adapter(*targets.model, ckpt / kAdapterDir);
    for (const auto& [name, c] : targets.companions) {
      const HfModelDir& dir = companion_dirs.at(name);
      load_weights(*c.model, dir.tensors(), dir.weights_path().string());
    }
    for (const auto& [name, m] : targets.models) {
      const HfModelDir& dir = model_dirs.at(name);
      load_weights(*m, dir.tensors(), dir.weights_path().string());
    }
    for (const auto& [name, gen] : targets.generators) {
      torch::Tensor st = tensor_from_view(rng_file->view("rng." + name)).clone();
      std::lock_guard<std::mutex> lock(gen->mutex());
      gen->set_state(st);
    }
    return state;
  });
}

std::optional<TrainerState> load_latest(const fs::path& dir, const CheckpointTargets& targets,
                                        const CheckpointOptions& options) {
  recover_checkpoints(dir);
  std::vector<fs::path> all = list_checkpoints(dir);
  if (all.empty()) return std::nullopt;
  try {
    return load_checkpoint(all.back(), targets, options);
  } catch (const Error& e) {
    if (all.size() < 2) throw;
    fail(e.what(), " (the previous checkpoint is '", all[all.size() - 2].string(), "': delete '",
         all.back().string(), "' to resume from it)");
  }
}

}  // namespace rlf
