// An Episode as JSON, every field the trainer and the replay buffer read:
// the tokens, prompt length, segments, every per-token stream it has
// (env/token_streams.h, walked from its one declaration; NaN as null), the
// turns' rewards and feedback, and the episode's scalars (group, reward,
// verdict, group accuracy, ratings, on/off policy, source). Reading checks
// the types and the episode (Episode::validate), naming `where`; fields
// written by later versions than a file's are read when present (replay
// buffers saved before the scalars load as they did).
//
// Used by the replay buffer's saved state (train/replay_buffer.h) and by
// the ranks' exchange of a step's episodes (train/rank_balance.h, in CBOR:
// floats travel exactly).
#pragma once

#include <string>

#include "env/episode.h"
#include "util/json_util.h"

namespace rlf {

Json episode_to_json(const Episode& e);
Episode episode_from_json(const Json& j, const std::string& where);

}  // namespace rlf
