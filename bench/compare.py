#!/usr/bin/env python3
"""Stored benchmark baselines and the change of each figure against them.

Compare two results (a baseline file, or any benchmark's JSON output):

    python3 bench/compare.py BASELINE.json CURRENT.json [--threshold 0.05] [--fail-on-regression]

Run the command a baseline stores and compare its fresh output:

    python3 bench/compare.py BASELINE.json --rerun [--save FRESH.json]

Record a baseline (runs CMD from the repository root, keeps its JSON stdout
under "result" next to the command, date, CPU, commit, threads and load):

    python3 bench/compare.py --record NAME [--note TEXT] -- CMD...   # writes bench/baselines/NAME.json

Every numeric figure present in both results is printed (nested keys
flattened as a.b.c, list items by index: levels.0.tokens_per_s) with the
baseline, the current value, their ratio (current / baseline) and a marker
when the ratio is beyond 1 +- threshold: "better" or "WORSE" where the
figure's name says which way is good (rates, GFLOP/s, MFU, speedups up;
milliseconds, seconds, megabytes, bytes down), "changed" where it does not.

Exit status: 0 (whatever changed); 2 when a file cannot be read or holds no
JSON, or the recorded command fails; 1 with --fail-on-regression when a
figure of known direction got worse beyond the threshold. Standard library
only (/usr/bin/python3).
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIR = ROOT / "bench" / "baselines"
# Environment variables that change CPU timings, recorded when set.
TIMING_ENV = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GLIBC_TUNABLES")
# lscpu flags that decide which kernels run, recorded when present.
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")

HIGHER, LOWER, UNKNOWN = "higher", "lower", "unknown"


class CompareError(Exception):
    """A file or command this script cannot use; main() prints it and exits 2."""


# ---------------------------------------------------------------- reading

def parse_json_text(text, source):
    """The JSON in text: the whole text as one document, else its lines that
    are JSON objects (one: that object; several: a list), else an error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    objects = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                objects.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    if not objects:
        raise CompareError(f"{source}: no JSON found (expected one JSON document or JSON-object lines)")
    return objects[0] if len(objects) == 1 else objects


def load_record(path):
    """A baseline record from a file: a baseline ({"result": ..., metadata})
    as it is, any other JSON wrapped as {"result": it} without metadata."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise CompareError(f"cannot read {path}: {e.strerror or e}") from e
    data = parse_json_text(text, path)
    if isinstance(data, dict) and "result" in data:
        return data
    return {"result": data}


# ---------------------------------------------------------------- figures

def flatten(value, prefix=""):
    """{dotted key: number} for every int/float leaf (booleans excluded) and
    {dotted key: str} for string leaves, as two dicts."""
    numbers, strings = {}, {}

    def walk(v, key):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{key}.{k}" if key else str(k))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{key}.{i}" if key else str(i))
        elif isinstance(v, bool) or v is None:
            return
        elif isinstance(v, (int, float)):
            if math.isfinite(v):
                numbers[key] = v
        elif isinstance(v, str):
            strings[key] = v

    walk(value, prefix)
    return numbers, strings


def name_direction(name):
    """Which way is good for one key component, from its name alone."""
    n = name.lower()
    words = n.split("_")
    # Rates first: tokens_per_s, read_gb_s end in "_s" but are rates.
    for w, after in zip(words, words[1:]):
        if (w == "per" and after in ("s", "sec", "second")) or (w in ("gb", "mb", "kb") and after == "s"):
            return HIGHER
    if any(w in ("gflops", "tflops", "mfu", "speedup", "throughput") for w in words):
        return HIGHER
    if n.startswith("fraction_of"):  # of a bound: closer to it is better
        return HIGHER
    if any(w in ("ms", "s", "sec", "secs", "seconds", "latency", "ttft") for w in words):
        return LOWER
    if any(w in ("mb", "gb", "kb", "mib", "gib", "bytes", "rss", "memory") for w in words):
        return LOWER
    return UNKNOWN


def direction(key):
    """Which way is good for a flattened key: its last component's name, else
    the nearest enclosing one that says (latency_s.p50, memory_mb.weights)."""
    for part in reversed(key.split(".")):
        d = name_direction(part)
        if d != UNKNOWN:
            return d
    return UNKNOWN


def compare(base_result, cur_result, threshold):
    """Rows (key, base, cur, ratio, marker, direction) for the numeric
    figures in both, plus the keys only in one side and the differing strings."""
    base_n, base_s = flatten(base_result)
    cur_n, cur_s = flatten(cur_result)
    rows = []
    for key in base_n:
        if key not in cur_n:
            continue
        b, c = base_n[key], cur_n[key]
        d = direction(key)
        if b == 0:
            ratio = 1.0 if c == 0 else math.inf
        else:
            ratio = c / b
        marker = ""
        if not 0 < ratio < math.inf:  # from or to zero, or a sign change: no direction
            marker = "changed"
        elif abs(ratio - 1.0) > threshold:
            marker = "changed" if d == UNKNOWN else ("better" if (ratio > 1.0) == (d == HIGHER) else "WORSE")
        rows.append((key, b, c, ratio, marker, d))
    only_base = [k for k in base_n if k not in cur_n]
    only_cur = [k for k in cur_n if k not in base_n]
    strings = [(k, base_s[k], cur_s[k]) for k in base_s if k in cur_s and base_s[k] != cur_s[k]]
    return rows, only_base, only_cur, strings


def fmt(v):
    if isinstance(v, int) or (v.is_integer() and abs(v) < 1e15):
        return str(int(v))
    if v == 0 or 1e-3 <= abs(v) < 1e7:
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return f"{v:.3e}"


def describe(record, label):
    """One line of a record's metadata (what of it is there)."""
    parts = []
    for key in ("date", "cpu", "git_commit", "threads", "load"):
        if key in record:
            v = record[key]
            if key == "git_commit" and isinstance(v, str):
                v = v[:10] + ("+dirty" if record.get("git_dirty") else "")
            parts.append(f"{key} {v}")
    return f"{label}: " + (", ".join(parts) if parts else "(no metadata: a bare result)")


def print_report(base, cur, threshold, out=sys.stdout):
    """Prints the comparison; returns the number of regressions (WORSE rows)."""
    rows, only_base, only_cur, strings = compare(base["result"], cur["result"], threshold)
    print(describe(base, "baseline"), file=out)
    print(describe(cur, "current "), file=out)
    if base.get("cpu") and cur.get("cpu") and base["cpu"] != cur["cpu"]:
        print("note: different CPUs; the ratios compare machines, not builds", file=out)
    for key, b, c in strings:
        print(f"note: {key} differs: {b!r} -> {c!r}", file=out)
    width = max([len("figure")] + [len(r[0]) for r in rows])
    print(f"{'figure':<{width}}  {'baseline':>11}  {'current':>11}  {'ratio':>7}  {'good':>6}  marker", file=out)
    for key, b, c, ratio, marker, d in rows:
        r = "inf" if ratio == math.inf else f"{ratio:.3f}"
        good = {HIGHER: "higher", LOWER: "lower"}.get(d, "")
        print(f"{key:<{width}}  {fmt(b):>11}  {fmt(c):>11}  {r:>7}  {good:>6}  {marker}".rstrip(), file=out)
    n_worse = sum(1 for r in rows if r[4] == "WORSE")
    n_better = sum(1 for r in rows if r[4] == "better")
    n_changed = sum(1 for r in rows if r[4] == "changed")
    print(f"{len(rows)} figures compared, threshold {threshold:g}: {n_better} better, {n_worse} worse, "
          f"{n_changed} changed (direction unknown)", file=out)
    if only_base:
        print(f"only in the baseline: {', '.join(only_base)}", file=out)
    if only_cur:
        print(f"only in the current result: {', '.join(only_cur)}", file=out)
    return n_worse


# ---------------------------------------------------------------- recording

def cpu_info():
    """(model name, "family/model", vector flags present) from lscpu, with
    /proc/cpuinfo's model name as the fallback."""
    name, family_model, flags = None, None, []
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        name = fields.get("Model name")
        if "CPU family" in fields and "Model" in fields:
            family_model = f"{fields['CPU family']}/{fields['Model']}"
        flags = [f for f in CPU_FLAGS if f in fields.get("Flags", "").split()]
    except OSError:
        pass
    if not name:
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
    return name or platform.processor() or "unknown", family_model, flags


def git_state():
    """(commit, dirty) of the repository, or ("unknown", None) outside git."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip() != ""
        return commit, dirty
    except (OSError, subprocess.CalledProcessError):
        return "unknown", None


def command_threads(command):
    """The value of --threads N / --threads=N in the command (an int where it
    is one), else None."""
    value = None
    for i, arg in enumerate(command):
        if arg == "--threads" and i + 1 < len(command):
            value = command[i + 1]
        elif arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
    return int(value) if value is not None and value.isdigit() else value


def run_and_record(command, name=None, note=None):
    """Runs command (a list) from the repository root and returns the record:
    name, command (argv) and command_line, date (when it finished), cpu
    (lscpu's model name), cpu_family_model, cpu_flags (CPU_FLAGS present),
    cores, git_commit and git_dirty, threads (--threads in the command, else the result's
    "threads", else the cores), load and load_after (1-minute load average),
    env (TIMING_ENV's that are set), wall_s, note, and the command's JSON
    stdout under "result"."""
    if not command:
        raise CompareError("no command to run (give it after --)")
    load = round(os.getloadavg()[0], 2)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=False)
    except OSError as e:
        raise CompareError(f"cannot run {shlex.join(command)}: {e.strerror or e}") from e
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise CompareError(f"the command exited with status {proc.returncode}: {shlex.join(command)}")
    result = parse_json_text(proc.stdout, f"the output of {shlex.join(command)}")
    commit, dirty = git_state()
    cpu, family_model, flags = cpu_info()
    # The threads asked for, else the benchmark's own count, else the cores;
    # rlf's per-library plan (cpu.*_threads) stays in the result.
    threads = command_threads(command)
    if threads is None and isinstance(result, dict):
        threads = result.get("threads")
    if threads is None:
        threads = os.cpu_count()
    record = {"name": name, "command": list(command), "command_line": shlex.join(command),
              "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "cpu": cpu, "cpu_family_model": family_model, "cpu_flags": flags, "cores": os.cpu_count(), "git_commit": commit, "git_dirty": dirty,
              "threads": threads, "load": load, "load_after": round(os.getloadavg()[0], 2),
              "env": {k: os.environ[k] for k in TIMING_ENV if k in os.environ},
              "wall_s": round(wall, 3)}
    if name is None:
        del record["name"]
    if note:
        record["note"] = note
    record["result"] = result
    return record


def write_record(record, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


# ---------------------------------------------------------------- command line

def parse_args(argv):
    command = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(
        prog="compare.py",
        description="Compare a benchmark's JSON figures against a stored baseline, or record one.",
        epilog="record: compare.py --record NAME -- CMD...  (writes bench/baselines/NAME.json)")
    p.add_argument("baseline", nargs="?", help="baseline file (bench/baselines/NAME.json) or any benchmark JSON")
    p.add_argument("current", nargs="?", help="the result to compare (a baseline file or benchmark JSON)")
    p.add_argument("--threshold", type=float, default=0.05,
                   help="relative change that gets a marker (default 0.05 = 5%%)")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when a figure of known direction got worse beyond the threshold")
    p.add_argument("--rerun", action="store_true", help="run the baseline's stored command and compare its output")
    p.add_argument("--save", metavar="PATH", help="with --rerun: also write the fresh record to PATH")
    p.add_argument("--record", metavar="NAME", help="run the command after -- and write DIR/NAME.json")
    p.add_argument("--dir", default=str(DEFAULT_DIR), help="where --record writes (default bench/baselines)")
    p.add_argument("--note", help="with --record: a free-text note stored in the baseline")
    args = p.parse_args(argv)
    args.command = command
    if args.threshold < 0:
        p.error(f"--threshold must be >= 0 (a relative change), got {args.threshold}")
    if args.record:
        if args.baseline or args.current or args.rerun:
            p.error("--record takes no files and no --rerun: compare.py --record NAME -- CMD...")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", args.record):
            p.error(f"--record NAME must be letters, digits, '.', '_' or '-' (it names a file), got {args.record!r}")
        if not command:
            p.error("--record needs the command after --: compare.py --record NAME -- CMD...")
    else:
        if command:
            p.error("a command after -- is only for --record")
        if not args.baseline:
            p.error("give BASELINE.json and CURRENT.json, BASELINE.json --rerun, or --record NAME -- CMD...")
        if args.rerun == bool(args.current):
            p.error("give either CURRENT.json or --rerun, not both" if args.rerun
                    else "give CURRENT.json, or --rerun to run the baseline's command")
        if args.save and not args.rerun:
            p.error("--save is for --rerun")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.record:
            record = run_and_record(args.command, args.record, args.note)
            path = Path(args.dir) / f"{args.record}.json"
            write_record(record, path)
            print(f"recorded {path}: {record['command_line']} (load {record['load']}, cpu {record['cpu']})")
            return 0
        base = load_record(args.baseline)
        if args.rerun:
            command = base.get("command")
            if not isinstance(command, list) or not command:
                raise CompareError(f"{args.baseline}: no stored \"command\" to rerun (record it with --record)")
            cur = run_and_record(command, base.get("name"))
            if args.save:
                write_record(cur, args.save)
        else:
            cur = load_record(args.current)
    except CompareError as e:
        print(f"compare.py: error: {e}", file=sys.stderr)
        return 2
    n_worse = print_report(base, cur, args.threshold)
    return 1 if args.fail_on_regression and n_worse > 0 else 0


if __name__ == "__main__":
    sys.exit(main())
