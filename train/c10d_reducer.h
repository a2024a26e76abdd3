// Data-parallel training across processes on PyTorch's c10d: torchrun's
// environment contract, the rendezvous through c10d's TCPStore and a Reducer
// (train/reducer.h) whose reductions are c10d collectives (Gloo on CPU, with
// Debian's LibTorch 1.x; NCCL on CUDA, in CUDA builds of LibTorch 2.x).
//
// torchrun starts one `rlf train` per rank with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (its c10d rendezvous
// also sets TORCHELASTIC_USE_AGENT_STORE: the agent then hosts the store and
// every rank joins it as a client under /worker/attempt_N, as PyTorch's
// init_process_group does). Without those variables a run is one process.
//
// Failure: every collective and the rendezvous wait at most
// DistOptions::timeout_s; a rank that dies closes its connections and the
// others fail at once, a rank that hangs makes them fail when the timeout
// passes; either way with an rlf::Error naming the operation and the ranks.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "train/reducer.h"

namespace rlf {

// torchrun's variables, read once at the program's edge.
struct DistEnv {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;
  int64_t local_world_size = 1;
  std::string master_addr;       // MASTER_ADDR
  int64_t master_port = 0;       // MASTER_PORT
  bool agent_store = false;      // TORCHELASTIC_USE_AGENT_STORE=True: the launcher hosts the store
  int64_t restart_count = 0;     // TORCHELASTIC_RESTART_COUNT (the store prefix of an agent store)

  // From the process environment: nullopt when neither RANK nor WORLD_SIZE is
  // set (one process); throws rlf::Error naming the variable that is missing
  // or malformed otherwise.
  static std::optional<DistEnv> from_environment();
};

// [dist]: used when the run is started as several ranks.
struct DistOptions {
  double timeout_s = 300;        // rendezvous and every collective wait at most this long (dist.timeout_s)
  std::string backend = "auto";  // auto | gloo | nccl (dist.backend; auto: gloo on CPU, nccl on CUDA)
  int64_t check_every = 10;      // compare a checksum of the parameters across ranks every N steps (0 = never)

  void validate() const;
};

// Whether this build has a c10d backend (Gloo headers found at configure time, or NCCL in a CUDA build).
bool c10d_available();

// What ranks must share besides their config: rlf's source commit at build time.
std::string rlf_build_id();

// Joins the process group described by `env` (world_size > 1). Throws
// rlf::Error naming MASTER_ADDR:MASTER_PORT when the rendezvous fails or times
// out, and the backend when this build or device has none.
std::unique_ptr<Reducer> make_c10d_reducer(const DistEnv& env, const DistOptions& options, torch::Device device);

}  // namespace rlf
