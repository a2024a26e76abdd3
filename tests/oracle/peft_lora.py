"""Oracle for rlf's LoRA adapters (model/lora.h): peft builds, saves and
loads adapters in its own layout on a transformers model.

usage:
  peft_lora.py make BASE_DIR ADAPTER_DIR       # a random LoRA adapter (r 4, alpha 8, every projection,
                                               # non-zero B) saved by peft; ADAPTER_DIR/peft_logits.json
  peft_lora.py scores BASE_DIR ADAPTER_DIR IDS_JSON OUT_JSON
                                               # a reward model (SEQ_CLS): {"scores": [[...] per row]},
                                               # each row alone (no padding), the last token's score
  peft_lora.py logits BASE_DIR ADAPTER_DIR IDS_JSON OUT_JSON
                                               # the base with the adapter (PeftModel.from_pretrained):
                                               # {"logits": ..., "merged_logits": ...} (merge_and_unload)

BASE_DIR is a Hugging Face directory (tests/oracle/hf_tiny_models.py make).
"""
import json
import sys

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM

IDS = [[1, 5, 9, 23, 7, 64, 3, 99, 12, 42, 8, 17], [2, 44, 81, 6, 11, 90, 33, 4, 5, 6, 7, 1]]
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def logits_of(model, ids):
    with torch.no_grad():
        return model(torch.tensor(ids)).logits.float()


def make(base_dir, adapter_dir):
    torch.manual_seed(4321)
    base = AutoModelForCausalLM.from_pretrained(base_dir, torch_dtype=torch.float32)
    cfg = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=TARGETS, task_type="CAUSAL_LM",
                     init_lora_weights=False)  # random A and B: the adapter changes the function
    model = get_peft_model(base, cfg)
    model.eval()
    model.save_pretrained(adapter_dir, safe_serialization=True)
    with open(adapter_dir + "/peft_logits.json", "w") as f:
        json.dump({"ids": IDS, "logits": logits_of(model, IDS).tolist()}, f)


def logits(base_dir, adapter_dir, ids_json, out_json):
    ids = json.load(open(ids_json))
    base = AutoModelForCausalLM.from_pretrained(base_dir, torch_dtype=torch.float32)
    model = PeftModel.from_pretrained(base, adapter_dir)
    model.eval()
    unmerged = logits_of(model, ids)
    merged = logits_of(model.merge_and_unload(), ids)
    with open(out_json, "w") as f:
        json.dump({"logits": unmerged.tolist(), "merged_logits": merged.tolist()}, f)


def scores(base_dir, adapter_dir, ids_json, out_json):
    from transformers import AutoModelForSequenceClassification
    ids = json.load(open(ids_json))
    base = AutoModelForSequenceClassification.from_pretrained(base_dir, torch_dtype=torch.float32)
    model = PeftModel.from_pretrained(base, adapter_dir)
    model.eval()
    out = []
    with torch.no_grad():
        for row in ids:
            out.append(model(torch.tensor([row])).logits.float()[0].tolist())
    with open(out_json, "w") as f:
        json.dump({"scores": out}, f)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 6 and sys.argv[1] == "scores":
        scores(*sys.argv[2:6])
    elif len(sys.argv) == 6 and sys.argv[1] == "logits":
        logits(*sys.argv[2:6])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
