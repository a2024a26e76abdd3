"""Oracle for rlf's TensorBoard event files (train/tensorboard.h): the
`tensorboard` package's own reader loads a directory's event files.

usage: read_tensorboard.py DIR OUT_JSON
writes {"tags": {tag: [[step, value], ...]}, "files": N}
"""
import json
import os
import sys

from tensorboard.backend.event_processing import event_accumulator


def main():
    run_dir, out = sys.argv[1], sys.argv[2]
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = {t: [[e.step, e.value] for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}
    files = [f for f in os.listdir(run_dir) if f.startswith("events.out.tfevents.")]
    with open(out, "w") as f:
        json.dump({"tags": tags, "files": len(files)}, f)


if __name__ == "__main__":
    main()
