// A tiny random Llama with a character tokenizer (printable ASCII), saved
// under `dir` and loaded as a Policy: the model of tests that sample.
#pragma once

#include "model/loader.h"
#include "rollout/policy.h"
#include "tests/support/test_env.h"
#include "tokenizer/char_vocab.h"

namespace rlf::test {

inline Policy tiny_policy(const TempDir& dir, int64_t max_positions = 256, uint64_t seed = 3) {
  write_char_tokenizer(dir / "tok", printable_ascii());
  ModelConfig c;
  c.vocab_size = 3 + static_cast<int64_t>(printable_ascii().size());
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = max_positions;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  c.tie_word_embeddings = true;
  auto model = make_random_model(c, seed, torch::kFloat32, torch::kCPU);
  SaveOptions so;
  so.tokenizer_source = dir / "tok";
  save_model(*model, dir / "model", so);
  return load_policy(dir / "model", "", {});
}

}  // namespace rlf::test
