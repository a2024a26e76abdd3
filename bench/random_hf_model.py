"""A randomly initialised Llama of one of rlf's preset shapes, saved as a
Hugging Face directory with a tokenizer, so that rlf and a peer engine (via
`rlf export --gguf`) run the very same weights.

    .venv-oracle/bin/python bench/random_hf_model.py --shape stories110M \
        --tokenizer ../shared/tokenizers/hf/llama2 --out DIR [--seed 0] [--hf-only]

Shapes as ModelConfig::preset (model/config.cpp); tied embeddings as in
llama2.c's models; weights N(0, 0.02), norms 1 (rlf's init_random). Also
writes DIR/tokenizer.bin, the SentencePiece vocabulary in llama2.c's format
(its tokenizer.py's export), which `rlf export --gguf --tokenizer` reads
(not with --hf-only; bench/trl_compare.py needs only the HF directory).
"""
import argparse
import shutil
import struct
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

SHAPES = {  # dim, layers, heads, kv heads, vocab, context
    "stories15M": (288, 6, 6, 6, 32000, 256),
    "stories42M": (512, 8, 8, 8, 32000, 1024),
    "stories110M": (768, 12, 12, 12, 32000, 1024),
}


def ffn(dim, multiple_of=32):  # llama2.c's hidden_dim rule (model/config.cpp ffn)
    hidden = 2 * (4 * dim) // 3
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def write_llama2c_tokenizer(spm_path, out):
    from transformers.utils import sentencepiece_model_pb2_new as pb
    m = pb.ModelProto()
    m.ParseFromString(Path(spm_path).read_bytes())
    bos, eos = m.trainer_spec.bos_id, m.trainer_spec.eos_id
    tokens, scores = [], []
    for i, p in enumerate(m.pieces):
        t = "\n<s>\n" if i == bos else "\n</s>\n" if i == eos else p.piece
        tokens.append(t.replace("\u2581", " ").encode("utf-8"))
        scores.append(p.score)
    with open(out, "wb") as f:
        f.write(struct.pack("I", max(len(t) for t in tokens)))
        for t, s in zip(tokens, scores):
            f.write(struct.pack("fI", s, len(t)))
            f.write(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="stories110M", choices=sorted(SHAPES))
    ap.add_argument("--tokenizer", required=True, help="a directory with tokenizer.model (+ tokenizer_config.json)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hf-only", action="store_true", help="skip DIR/tokenizer.bin (needs no protobuf)")
    a = ap.parse_args()
    dim, layers, heads, kv, vocab, ctx = SHAPES[a.shape]
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=dim, intermediate_size=ffn(dim), num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv, max_position_embeddings=ctx,
                      rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(a.seed)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
    out = Path(a.out)
    model.save_pretrained(out, safe_serialization=True)
    for f in Path(a.tokenizer).iterdir():
        if f.name.startswith("tokenizer") or f.name == "special_tokens_map.json":
            shutil.copy(f, out / f.name)
    if not a.hf_only:
        write_llama2c_tokenizer(Path(a.tokenizer) / "tokenizer.model", out / "tokenizer.bin")
    print(out)


if __name__ == "__main__":
    main()
