"""TRL's GKD generalised JSD (GKDTrainer.generalized_jsd_loss, TRL 1.16) per
position, for tests/algorithms/test_distill_divergence.cpp.

    python trl_gkd_jsd.py IN.json OUT.json

IN: {"student": [[...V...], ...], "teacher": [[...V...], ...], "betas": [...]}
(logits, one row per position). OUT: [[value per position] per beta, in order] with
reduction "sum" over one position at a time (beta 0: forward KL, 1: reverse)."""
import json
import sys

import os

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
import torch  # noqa: E402
from trl.experimental.gkd import GKDTrainer  # noqa: E402

with open(sys.argv[1]) as f:
    inp = json.load(f)
s = torch.tensor(inp["student"], dtype=torch.float64)
t = torch.tensor(inp["teacher"], dtype=torch.float64)
out = []
for beta in inp["betas"]:
    vals = []
    for i in range(s.shape[0]):
        v = GKDTrainer.generalized_jsd_loss(s[i].view(1, 1, -1), t[i].view(1, 1, -1), beta=beta, reduction="sum")
        vals.append(float(v))
    out.append(vals)
with open(sys.argv[2], "w") as f:
    json.dump(out, f)
