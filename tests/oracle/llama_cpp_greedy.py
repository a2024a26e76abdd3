"""llama.cpp (llama-cpp-python) on a GGUF file rlf exported: the greedy
continuation of a prompt given as token ids, and llama.cpp's own tokenization
of the prompt's text.

usage: llama_cpp_greedy.py MODEL.gguf PROMPT_IDS_JSON N
prints one JSON line: {"ids": [...N greedy ids...], "prompt_ids": [...]}
"""
import json
import sys

from llama_cpp import Llama


def main():
    path, prompt_json, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    prompt = json.load(open(prompt_json))
    llm = Llama(model_path=path, n_ctx=512, n_threads=2, n_batch=64, verbose=False, seed=0)
    text = "Once upon a time, there was a"
    prompt_ids = llm.tokenize(text.encode("utf-8"), add_bos=True)
    out = []
    for tok in llm.generate(prompt, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0):
        out.append(int(tok))
        if len(out) == n:
            break
    print(json.dumps({"ids": out, "prompt_ids": list(map(int, prompt_ids))}))


if __name__ == "__main__":
    main()
