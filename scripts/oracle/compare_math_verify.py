#!/usr/bin/env python3
"""Compare rlf's math verifier with Hugging Face's math-verify on the same pairs.

Builds (prediction text, reference answer) pairs from MATH-500 and GSM8K:
reference solutions, answers rewritten the way models write them, perturbed
numbers (n+1, n*10, swapped digits) and other records' answers. Runs
math-verify (`verify(parse(gold), parse(prediction))`) and rlf (the helper
binary `rlf_math_verify_pairs PAIRS.jsonl`, or `rlf verify math --pairs FILE
--json`) on them, and reports the agreement and the disagreements grouped by
kind, with examples.

Usage (the oracle venv has math-verify):
  .venv-oracle/bin/python scripts/oracle/compare_math_verify.py \
      --rlf build/tests/rewards/rlf_math_verify_pairs [--shared ../shared] \
      [--per-kind N] [--json OUT.json] [--min-agreement 0.97]
Exit status 1 when agreement is below --min-agreement.
"""
import argparse
import collections
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time


def perturb(answer):
    """n+1, n*10 and swapped digits on the last plain integer of `answer`."""
    for m in reversed(list(re.finditer(r"\d+", answer))):
        s, e = m.span()
        before = answer[s - 1] if s > 0 else " "
        after = answer[e] if e < len(answer) else " "
        if before in "._," or after in "._," or "box{" in answer[:s] or "text{" in answer[:s] or e - s > 15:
            continue
        d = m.group(0)
        n = int(d)
        out = [("n+1", answer[:s] + str(n + 1) + answer[e:])]
        if n != 0:
            out.append(("n*10", answer[:s] + str(n * 10) + answer[e:]))
        if len(d) >= 2 and d[-1] != d[-2] and not (len(d) == 2 and d[1] == "0"):
            out.append(("swapped digits", answer[:s] + d[:-2] + d[-1] + d[-2] + answer[e:]))
        return out
    return []


def value_side(answer):
    """"x=5" -> "5" (a single-variable assignment is its value), spaces removed."""
    c = re.sub(r"\s", "", answer)
    return c[2:] if len(c) > 2 and c[0].isalpha() and c[1] == "=" else c


def rewrite_equivalent(answer):
    """The same answer written another way: integer fractions as a/b or a
    terminating decimal, \\dfrac as \\frac, no \\left/\\right, degrees dropped."""
    def frac(m):
        a, b = int(m.group(1)), int(m.group(2))
        d = b
        for p in (2, 5):
            while d % p == 0:
                d //= p
        return repr(a / b) if d == 1 and len(repr(a / b)) < 12 else f"{a}/{b}"
    if re.search(r"\d\s*\\[dt]?frac", answer):  # a mixed number "1\\frac{4}{5}": leave it
        return answer
    s = re.sub(r"\\[dt]?frac\{(\d+)\}\{(\d+)\}", lambda m: "(" + frac(m) + ")", answer)
    s = s.replace("\\left", "").replace("\\right", "").replace("^\\circ", "")
    s = re.sub(r"\\sqrt\{(\d)\}", r"\\sqrt\1", s)
    return s


def commas(n):
    neg = n.startswith("-")
    d = n.lstrip("-")
    if not d.isdigit():
        return n
    return ("-" if neg else "") + f"{int(d):,}"


def build_pairs(shared, per_kind, seed):
    """Returns a list of dicts: kind, expected (True/False/None), prediction, reference."""
    rng = random.Random(seed)
    pairs = []
    math500 = [json.loads(l) for l in open(os.path.join(shared, "data/math500/test.jsonl"))]
    gsm8k = [json.loads(l) for l in open(os.path.join(shared, "data/gsm8k/test.jsonl"))]

    def add(kind, expected, prediction, reference):
        pairs.append({"kind": kind, "expected": expected, "prediction": prediction, "reference": reference})

    def sample(records):
        return records if per_kind <= 0 or per_kind >= len(records) else rng.sample(records, per_kind)

    for r in sample(math500):
        add("math500 solution", True, r["solution"], r["answer"])
    for r in sample(math500):
        add("math500 'answer is $x$'", True, "The answer is $" + r["answer"] + "$.", r["answer"])
    for r in sample(math500):
        for name, wrong in perturb(r["answer"]):
            add("math500 " + name, False, "The answer is $\\boxed{" + wrong + "}$.", r["answer"])
    for r in sample(math500):
        alt = rewrite_equivalent(r["answer"])
        if alt != r["answer"]:
            add("math500 rewritten equivalent", True, "The answer is $\\boxed{" + alt + "}$.", r["answer"])
    for i, r in enumerate(sample(math500)):
        other = math500[(math500.index(r) + 1) % len(math500)]
        if value_side(other["answer"]) != value_side(r["answer"]):
            add("math500 other record", False, other["solution"], r["answer"])

    for r in sample(gsm8k):
        a = r["answer"]
        worked, n = a[: a.rfind("####")], a[a.rfind("####") + 4 :].strip()
        add("gsm8k reference", True, a, n)
        add("gsm8k 'The answer is n.'", True, worked + f"The answer is {n}.", n)
        add("gsm8k boxed", True, worked + f"$\\boxed{{{n}}}$", n)
        add("gsm8k separators", True, worked + f"The answer is {commas(n)}.", n)
        add("gsm8k dollar .00", True, worked + f"The answer is ${n}.00.", n)
    for r in sample(gsm8k):
        a = r["answer"]
        worked, n = a[: a.rfind("####")], a[a.rfind("####") + 4 :].strip()
        for name, wrong in perturb(n):
            add("gsm8k " + name, False, worked + f"The answer is {wrong}.", n)
        other = gsm8k[(gsm8k.index(r) + 1) % len(gsm8k)]["answer"].split("####")[-1].strip()
        if other.replace(",", "") != n.replace(",", ""):
            add("gsm8k other record", False, worked + f"The answer is {other}.", n)
    return pairs


def run_math_verify(pairs):
    from math_verify import parse, verify

    out = []
    for p in pairs:
        try:
            gold = parse("$" + p["reference"] + "$")
            pred = parse(p["prediction"])
            out.append(bool(verify(gold, pred)))
        except Exception:  # math-verify's own failure is a "no"
            out.append(False)
    return out


def run_rlf(rlf, pairs):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for p in pairs:
            f.write(json.dumps({"prediction": p["prediction"], "reference": p["reference"]}) + "\n")
        path = f.name
    try:
        cmd = [rlf, "verify", "math", "--pairs", path, "--json"] if os.path.basename(rlf) == "rlf" else [rlf, path]
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    finally:
        os.unlink(path)
    verdicts = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    if len(verdicts) != len(pairs):
        sys.exit(f"rlf returned {len(verdicts)} verdicts for {len(pairs)} pairs")
    return verdicts


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlf", required=True, help="rlf_math_verify_pairs helper or the rlf binary")
    ap.add_argument("--shared", default=os.path.join(here, "../../../shared"), help="the shared/ data folder")
    ap.add_argument("--per-kind", type=int, default=0, help="records sampled per pair kind (0 = all)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--examples", type=int, default=3, help="examples printed per disagreement group")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--min-agreement", type=float, default=0.0)
    args = ap.parse_args()

    pairs = build_pairs(args.shared, args.per_kind, args.seed)
    t0 = time.time()
    mv = run_math_verify(pairs)
    t1 = time.time()
    rl = run_rlf(args.rlf, pairs)
    t2 = time.time()

    agree = sum(1 for a, b in zip(mv, rl) if a == b["correct"])
    groups = collections.defaultdict(list)
    by_kind = collections.Counter()
    wrong_vs_expected = collections.Counter()
    rlf_unexpected = []
    for p, a, b in zip(pairs, mv, rl):
        by_kind[p["kind"]] += 1
        if p["expected"] is not None:
            if a != p["expected"]:
                wrong_vs_expected["math-verify"] += 1
            if b["correct"] != p["expected"]:
                wrong_vs_expected["rlf"] += 1
                rlf_unexpected.append((p, a, b))
        if a != b["correct"]:
            who = "rlf yes, math-verify no" if b["correct"] else "math-verify yes, rlf no"
            groups[(p["kind"], who)].append(
                {"prediction": p["prediction"][-160:], "reference": p["reference"], "rlf_extracted": b["extracted"],
                 "rlf_reason": b["reason"]})
    total = len(pairs)
    print(f"pairs: {total} ({len(by_kind)} kinds); math-verify {t1 - t0:.1f}s, rlf {t2 - t1:.2f}s")
    print(f"agreement: {agree}/{total} = {agree / total:.4f}")
    print(f"verdicts against the construction's expectation (True for rewrites, False for perturbations): "
          f"math-verify wrong {wrong_vs_expected['math-verify']}, rlf wrong {wrong_vs_expected['rlf']}")
    for p, a, b in rlf_unexpected[: args.examples]:
        print(f"   rlf against expectation: {p['kind']}: ref={p['reference']!r} rlf={b['correct']} "
              f"math-verify={a} extracted={b['extracted']!r} ({b['reason']})")
    for (kind, who), items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n[{len(items)}] {kind}: {who}")
        for ex in items[: args.examples]:
            print(f"   ref={ex['reference']!r} rlf_extracted={ex['rlf_extracted']!r} ({ex['rlf_reason']})")
            print(f"      prediction tail: {ex['prediction'][-100:]!r}")
    summary = {"total": total, "agree": agree, "rate": agree / total,
               "wrong_vs_expected": dict(wrong_vs_expected),
               "disagreements": {f"{k} | {w}": len(v) for (k, w), v in groups.items()},
               "examples": {f"{k} | {w}": v[: args.examples] for (k, w), v in groups.items()}}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    if agree / total < args.min_agreement:
        print(f"agreement {agree / total:.4f} below --min-agreement {args.min_agreement}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
