#include "train/c10d_reducer.h"

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <vector>

#include "util/error.h"

#if RLF_WITH_GLOO || RLF_WITH_NCCL
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if RLF_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if RLF_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace rlf {

namespace {

std::optional<std::string> env_var(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

int64_t env_int(const char* name, int64_t lo, int64_t hi, std::optional<int64_t> fallback = std::nullopt) {
  const auto v = env_var(name);
  if (!v) {
    check(fallback.has_value(), "data-parallel run: ", name, " is not set (launch with torchrun, or set RANK, "
          "WORLD_SIZE, MASTER_ADDR and MASTER_PORT for every process)");
    return *fallback;
  }
  char* end = nullptr;
  const long long x = std::strtoll(v->c_str(), &end, 10);
  check(!v->empty() && end != nullptr && *end == '\0' && x >= lo && x <= hi, "data-parallel run: ", name, "='", *v,
        "' is not an integer in [", lo, ", ", hi, "]");
  return x;
}

}  // namespace

std::optional<DistEnv> DistEnv::from_environment() {
  if (!env_var("RANK") && !env_var("WORLD_SIZE")) return std::nullopt;
  DistEnv e;
  e.world_size = env_int("WORLD_SIZE", 1, 1 << 20);
  e.rank = env_int("RANK", 0, e.world_size - 1);
  e.local_world_size = env_int("LOCAL_WORLD_SIZE", 1, e.world_size, 1);
  e.local_rank = env_int("LOCAL_RANK", 0, e.local_world_size - 1, 0);
  if (e.world_size > 1) {
    const auto addr = env_var("MASTER_ADDR");
    check(addr && !addr->empty(), "data-parallel run (WORLD_SIZE=", e.world_size,
          "): MASTER_ADDR is not set (the address of rank 0's rendezvous store)");
    e.master_addr = *addr;
    e.master_port = env_int("MASTER_PORT", 1, 65535);
  }
  const auto agent = env_var("TORCHELASTIC_USE_AGENT_STORE");
  e.agent_store = agent && (*agent == "True" || *agent == "true" || *agent == "1");
  e.restart_count = env_int("TORCHELASTIC_RESTART_COUNT", 0, 1 << 20, 0);
  return e;
}

std::string rlf_build_id() {
#ifdef RLF_GIT_COMMIT
  return std::string("rlf ") + RLF_GIT_COMMIT;
#else
  return "rlf (unknown commit)";
#endif
}

void DistOptions::validate() const {
  check(timeout_s > 0, "dist.timeout_s must be > 0 seconds (got ", timeout_s, ")");
  check(backend == "auto" || backend == "gloo" || backend == "nccl", "dist.backend = \"", backend,
        "\" is not known (use auto, gloo or nccl)");
  check(check_every >= 0, "dist.check_every must be >= 0 steps (0 = never; got ", check_every, ")");
}

#if RLF_WITH_GLOO || RLF_WITH_NCCL

namespace {

// Gloo (CPU tensors) or NCCL (tensors on this rank's GPU): the collectives are the same calls.
template <class Group>
class C10dReducer final : public Reducer {
 public:
  C10dReducer(const DistEnv& env, const DistOptions& options, torch::Device device)
      : rank_(env.rank), world_(env.world_size), device_(device),
        timeout_(static_cast<int64_t>(options.timeout_s * 1000)) {
    const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
    c10::intrusive_ptr<c10d::Store> store;
    try {
      c10d::TCPStoreOptions so;
      so.port = static_cast<uint16_t>(env.master_port);
      so.isServer = !env.agent_store && env.rank == 0;
      so.numWorkers = env.agent_store ? c10::optional<std::size_t>() : c10::optional<std::size_t>(env.world_size);
      so.waitWorkers = !env.agent_store;
      so.timeout = timeout_;
      so.multiTenant = true;
      auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
      store = tcp;
      if (env.agent_store)
        store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restart_count), tcp);
    } catch (const std::exception& e) {
      fail("rank ", env.rank, ": the rendezvous at MASTER_ADDR:MASTER_PORT = ", where, " failed within dist.timeout_s = ",
           options.timeout_s, " s (", first_line(e.what()), "); check that every rank was started with the same "
           "address and that the port is free on rank 0's machine");
    }
    try {
      group_ = make_group(store, env);
    } catch (const std::exception& e) {
      fail("rank ", env.rank, ": the ", group_name(), " process group (", env.world_size, " ranks, store ", where,
           ") could not connect within dist.timeout_s = ", options.timeout_s, " s: ", first_line(e.what()));
    }
  }

  int64_t rank() const override { return rank_; }
  int64_t world_size() const override { return world_; }

  void sum(std::span<double> values) override { reduce(values, c10d::ReduceOp::SUM, "sum"); }
  void max(std::span<double> values) override { reduce(values, c10d::ReduceOp::MAX, "max"); }

  void sum_gradients(const std::vector<torch::Tensor>& params) override {
    // A parameter takes part when any rank has its gradient (a rank whose
    // share touched nothing contributes zeros); one nowhere stays undefined.
    std::vector<double> defined(params.size());
    for (size_t i = 0; i < params.size(); ++i) defined[i] = params[i].grad().defined() ? 1.0 : 0.0;
    max(defined);
    // Buckets of at most kBucketBytes, one flat all-reduce each, per dtype.
    constexpr int64_t kBucketBytes = 32 << 20;
    std::vector<size_t> bucket;
    int64_t bytes = 0;
    auto flush = [&] {
      if (bucket.empty()) return;
      std::vector<torch::Tensor> parts;
      for (size_t i : bucket) {
        const torch::Tensor& p = params[i];
        parts.push_back(p.grad().defined() ? p.grad().reshape(-1) : torch::zeros({p.numel()}, p.options()));
      }
      std::vector<torch::Tensor> flat = {torch::cat(parts)};
      payload_ += static_cast<double>(flat[0].numel() * flat[0].element_size());
      run("gradient all-reduce", [&] { return group_->allreduce(flat); });
      int64_t at = 0;
      for (size_t i : bucket) {
        torch::Tensor p = params[i];
        auto g = flat[0].narrow(0, at, p.numel()).view(p.sizes());
        at += p.numel();
        if (p.grad().defined()) p.mutable_grad().copy_(g);
        else p.mutable_grad() = g.clone();
      }
      bucket.clear();
      bytes = 0;
    };
    for (size_t i = 0; i < params.size(); ++i) {
      if (defined[i] == 0.0) continue;
      const auto& p = params[i];
      if (!bucket.empty() && (params[bucket[0]].scalar_type() != p.scalar_type() ||
                              bytes + p.numel() * static_cast<int64_t>(p.element_size()) > kBucketBytes))
        flush();
      bucket.push_back(i);
      bytes += p.numel() * static_cast<int64_t>(p.element_size());
    }
    flush();
  }

  std::vector<std::string> all_gather(const std::string& value) override {
    double len = static_cast<double>(value.size());
    max(std::span<double>(&len, 1));
    auto mine = torch::zeros({static_cast<int64_t>(len) + 8}, torch::kUInt8);  // filled on the CPU, sent from device_
    const int64_t n = static_cast<int64_t>(value.size());
    for (int k = 0; k < 8; ++k) mine[k] = static_cast<uint8_t>((n >> (8 * k)) & 0xFF);
    if (n > 0) std::memcpy(mine.data_ptr<uint8_t>() + 8, value.data(), value.size());
    std::vector<std::vector<torch::Tensor>> out(1);
    std::vector<torch::Tensor> in = {mine.to(device_)};
    for (int64_t r = 0; r < world_; ++r) out[0].push_back(torch::empty_like(in[0]));
    payload_ += static_cast<double>(mine.numel());
    run("all-gather", [&] { return group_->allgather(out, in); });
    std::vector<std::string> result;
    for (const auto& gathered : out[0]) {
      const torch::Tensor t = gathered.cpu();
      const uint8_t* d = t.data_ptr<uint8_t>();
      int64_t m = 0;
      for (int k = 0; k < 8; ++k) m |= static_cast<int64_t>(d[k]) << (8 * k);
      result.emplace_back(reinterpret_cast<const char*>(d) + 8, static_cast<size_t>(m));
    }
    return result;
  }

  double payload_bytes() const override { return payload_; }

 private:
  template <class F>
  void run(const char* what, F&& start) {
    try {
      auto work = start();
      work->wait(timeout_);
    } catch (const std::exception& e) {
      fail("rank ", rank_, " of ", world_, ": the ", what, " failed or timed out after ", timeout_.count() / 1000.0,
           " s (dist.timeout_s): another rank died, hung or left the run (", first_line(e.what()), ")");
    }
  }

  void reduce(std::span<double> values, c10d::ReduceOp op, const char* name) {
    if (values.empty()) return;
    std::vector<torch::Tensor> t = {
        torch::from_blob(values.data(), {static_cast<int64_t>(values.size())}, torch::kFloat64).to(device_, false, true)};
    payload_ += static_cast<double>(values.size() * sizeof(double));
    c10d::AllreduceOptions o;
    o.reduceOp = op;
    run(name[0] == 's' ? "all-reduce (sum)" : "all-reduce (max)", [&] { return group_->allreduce(t, o); });
    const torch::Tensor back = t[0].cpu();
    std::memcpy(values.data(), back.data_ptr<double>(), values.size() * sizeof(double));
  }

  static std::string first_line(const std::string& s) {
    const auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
  }

  c10::intrusive_ptr<Group> make_group(const c10::intrusive_ptr<c10d::Store>& store, const DistEnv& env);
  static const char* group_name();

  int64_t rank_, world_;
  torch::Device device_;
  double payload_ = 0;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<Group> group_;
};

#if RLF_WITH_GLOO
template <>
c10::intrusive_ptr<c10d::ProcessGroupGloo> C10dReducer<c10d::ProcessGroupGloo>::make_group(
    const c10::intrusive_ptr<c10d::Store>& store, const DistEnv& env) {
  using Group = c10d::ProcessGroupGloo;
  auto opts = Group::Options::create(timeout_);
  const auto ifname = env_var("GLOO_SOCKET_IFNAME");
  opts->devices.push_back(ifname ? Group::createDeviceForInterface(*ifname) : Group::createDefaultDevice());
  return c10::make_intrusive<Group>(store, static_cast<int>(env.rank), static_cast<int>(env.world_size), opts);
}
template <>
const char* C10dReducer<c10d::ProcessGroupGloo>::group_name() { return "Gloo"; }
#endif

#if RLF_WITH_NCCL
template <>
c10::intrusive_ptr<c10d::ProcessGroupNCCL> C10dReducer<c10d::ProcessGroupNCCL>::make_group(
    const c10::intrusive_ptr<c10d::Store>& store, const DistEnv& env) {
  using Group = c10d::ProcessGroupNCCL;
  auto opts = Group::Options::create();
  opts->timeout = timeout_;
  return c10::make_intrusive<Group>(store, static_cast<int>(env.rank), static_cast<int>(env.world_size), opts);
}
template <>
const char* C10dReducer<c10d::ProcessGroupNCCL>::group_name() { return "NCCL"; }
#endif

}  // namespace

bool c10d_available() { return true; }

std::unique_ptr<Reducer> make_c10d_reducer(const DistEnv& env, const DistOptions& options, torch::Device device) {
  options.validate();
  check(env.world_size > 1, "make_c10d_reducer: one rank needs no process group");
  const std::string want = options.backend == "auto" ? (device.is_cuda() ? "nccl" : "gloo") : options.backend;
  if (want == "nccl") {
    check(device.is_cuda(), "dist.backend = \"nccl\" runs collectives on GPUs, and model.device = \"", device.str(),
          "\" (use gloo for CPU ranks)");
#if RLF_WITH_NCCL
    return std::make_unique<C10dReducer<c10d::ProcessGroupNCCL>>(env, options, device);
#else
    fail("dist.backend: CUDA ranks need NCCL, and this rlf was built without it (a CUDA build with "
         "scripts/build-cuda.sh has it; or run the ranks on the CPU with Gloo)");
#endif
  }
  check(device.is_cpu(), "dist.backend = \"gloo\" runs on CPU tensors, and model.device = \"", device.str(),
        "\" (use nccl, or auto, for CUDA ranks)");
#if RLF_WITH_GLOO
  return std::make_unique<C10dReducer<c10d::ProcessGroupGloo>>(env, options, device);
#else
  fail("rank ", env.rank, " of ", env.world_size, ": this rlf was built without Gloo (the CPU ranks' backend: "
       "Debian's libgloo-dev with LibTorch 1.x); CUDA ranks use NCCL");
#endif
}

#else

bool c10d_available() { return false; }

std::unique_ptr<Reducer> make_c10d_reducer(const DistEnv& env, const DistOptions& options, torch::Device) {
  options.validate();
  fail("rank ", env.rank, " of ", env.world_size, ": this rlf was built without a c10d backend (the Gloo headers, "
       "Debian's libgloo-dev, were not found when it was configured); a data-parallel run needs one");
}

#endif

}  // namespace rlf
