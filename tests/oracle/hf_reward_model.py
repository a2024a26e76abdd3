"""Oracle for rlf's reward models: loads a directory rlf saved with
transformers' AutoModelForSequenceClassification (LlamaForSequenceClassification
for a Llama config) and writes the scores of token sequences, one sequence per
forward (unpadded: the score is read at the last token).

usage:
  hf_reward_model.py score MODEL_DIR IDS_JSON OUT_JSON

IDS_JSON: {"ids": [[...], ...]}; OUT_JSON: {"architecture": ..., "scores": [[...], ...],
"id2label": [name of output 0, ...]}.
"""
import json
import sys

import torch
from transformers import AutoModelForSequenceClassification


def main():
    if len(sys.argv) != 5 or sys.argv[1] != "score":
        raise SystemExit(__doc__)
    model_dir, ids_path, out_path = sys.argv[2:]
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    with open(ids_path) as f:
        seqs = json.load(f)["ids"]
    scores = []
    with torch.no_grad():
        for ids in seqs:
            out = model(torch.tensor([ids]))
            scores.append(out.logits[0].float().tolist())
    with open(out_path, "w") as f:
        json.dump({"architecture": type(model).__name__, "scores": scores,
                   "id2label": [model.config.id2label[i] for i in range(model.config.num_labels)]}, f)


if __name__ == "__main__":
    main()
