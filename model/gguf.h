// GGUF export (v3) for llama.cpp and the tools built on it (Ollama, LM Studio):
// a Llama-family causal LM with its tokenizer, in f32, f16 or q8_0.
//
// Layout (little-endian): "GGUF", version 3, tensor count, metadata count;
// metadata key/value pairs; tensor infos (name, dims innermost first, type,
// offset); padding to `general.alignment` (32); tensor data, each aligned to 32.
// Metadata: general.architecture "llama", llama.{context_length,
// embedding_length, block_count, feed_forward_length, attention.head_count,
// attention.head_count_kv, rope.dimension_count, rope.freq_base,
// attention.layer_norm_rms_epsilon, vocab_size}, general.file_type, and the
// tokenizer: tokenizer.ggml.model "llama" (SentencePiece) with tokens (spaces
// as U+2581), scores, token_type (1 normal, 2 unknown, 3 control, 6 byte) and
// the bos/eos/unknown ids; tokenizer.chat_template when the tokenizer has one.
// Tensors take llama.cpp's names (token_embd, blk.N.attn_q, ..., output_norm,
// output); q and k rows are permuted from Hugging Face's rotate-half order to
// the interleaved order llama.cpp's llama architecture expects (what its
// convert_hf_to_gguf.py does). Norms stay f32; q8_0 quantizes matrices whose
// rows are a multiple of 32 (others f16), blocks of 32 as d = max|x| / 127
// (fp16) and round(x / d) (ggml's reference quantizer).
//
// Supported: Llama and Mistral models (llama.cpp's llama architecture)
// without biases, rope scaling or sliding window, with llama2.c tokenizers
// (tok*.bin, a SentencePiece vocabulary). Anything else is an error naming
// it — the other families (model/architecture.h) by their llama.cpp name.
#pragma once

#include <filesystem>
#include <string>

#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace rlf {

enum class GgufType { F32, F16, Q8_0 };
GgufType parse_gguf_type(const std::string& name);  // "f32" | "f16" | "q8_0"

// Writes `out` atomically (util/fs.h: a regular file or a new name in an
// existing directory; a failed write names the reason and leaves nothing).
// A model holding NaN or infinite weights is refused, naming the tensor
// (model/finite_weights.h), as is an f16 matrix whose values overflow float16.
void export_gguf(CausalLMImpl& model, const Tokenizer& tokenizer, const std::filesystem::path& out, GgufType type,
                 const std::string& name = "rlf");

}  // namespace rlf
