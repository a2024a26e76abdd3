"""bench/compare.py on small synthetic results: the printed ratios and
markers, which way is good per figure, the exit statuses (an unreadable file,
--fail-on-regression) and --record / --rerun with a stand-in benchmark. No
timings are measured; runs in about a second with /usr/bin/python3.

    python3 tests/bench/test_compare.py     (CTest: test_bench_compare_script)
"""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "bench" / "compare.py"

# A baseline file as --record writes it, and a bare current result.
BASELINE = {
    "name": "synthetic", "command": ["true"], "date": "2026-01-01T00:00:00+00:00", "cpu": "Test CPU",
    "git_commit": "0123456789abcdef", "threads": 2, "load": 0.5,
    "result": {
        "shape": "stories15M", "dtype": "fp32",
        "tokens_per_s": 1000.0,        # higher is better: -20% -> WORSE
        "ms_per_step": 1024.0,         # lower is better: -2% -> within the threshold
        "forward_ms": 400.0,           # lower is better: -25% -> better
        "peak_rss_mb": 500.0,          # lower is better: +10% -> WORSE
        "mfu_step": 0.2,               # higher is better: +50% -> better
        "memory_mb": {"weights": 60.0},            # nested, direction from the parent: unchanged
        "latency_s": {"p50": 0.5},                 # nested, lower is better: -20% -> better
        "cpu": {"torch_threads": 1, "avx512": True},  # unknown direction: x2 -> changed; booleans skipped
        "loss_first": 10.0,            # unknown direction, +3% -> no marker
        "only_here": 1,
    },
}
CURRENT = {
    "shape": "stories15M", "dtype": "bf16",
    "tokens_per_s": 800.0, "ms_per_step": 1003.52, "forward_ms": 300.0, "peak_rss_mb": 550.0, "mfu_step": 0.3,
    "memory_mb": {"weights": 60.0}, "latency_s": {"p50": 0.4}, "cpu": {"torch_threads": 2, "avx512": False},
    "loss_first": 10.3, "only_current": 2,
}
# Only improvements: --fail-on-regression passes.
IMPROVED = {"tokens_per_s": 1200.0, "ms_per_step": 900.0, "peak_rss_mb": 500.0}


def run(*args, cwd=None):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def row(stdout, key):
    """The printed row of one figure, split into its columns."""
    for line in stdout.splitlines():
        if line.split()[:1] == [key]:
            return line.split()
    raise AssertionError(f"no row for {key} in:\n{stdout}")


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.base = self.dir / "base.json"
        self.cur = self.dir / "cur.json"
        self.base.write_text(json.dumps(BASELINE))
        self.cur.write_text(json.dumps(CURRENT))

    def tearDown(self):
        self.tmp.cleanup()

    def test_ratios_markers_and_directions(self):
        p = run(self.base, self.cur)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout
        # figure, baseline, current, ratio, good, marker
        self.assertEqual(row(out, "tokens_per_s"), ["tokens_per_s", "1000", "800", "0.800", "higher", "WORSE"])
        self.assertEqual(row(out, "ms_per_step"), ["ms_per_step", "1024", "1004", "0.980", "lower"])
        self.assertEqual(row(out, "forward_ms"), ["forward_ms", "400", "300", "0.750", "lower", "better"])
        self.assertEqual(row(out, "peak_rss_mb"), ["peak_rss_mb", "500", "550", "1.100", "lower", "WORSE"])
        self.assertEqual(row(out, "mfu_step"), ["mfu_step", "0.2", "0.3", "1.500", "higher", "better"])
        self.assertEqual(row(out, "memory_mb.weights"), ["memory_mb.weights", "60", "60", "1.000", "lower"])
        self.assertEqual(row(out, "latency_s.p50"), ["latency_s.p50", "0.5", "0.4", "0.800", "lower", "better"])
        self.assertEqual(row(out, "cpu.torch_threads"), ["cpu.torch_threads", "1", "2", "2.000", "changed"])
        self.assertEqual(row(out, "loss_first"), ["loss_first", "10", "10.3", "1.030"])
        self.assertNotIn("cpu.avx512", out)
        self.assertIn("note: dtype differs: 'fp32' -> 'bf16'", out)
        self.assertIn("baseline: date 2026-01-01T00:00:00+00:00, cpu Test CPU, git_commit 0123456789, threads 2, "
                      "load 0.5", out)
        self.assertIn("current : (no metadata: a bare result)", out)
        self.assertIn("9 figures compared, threshold 0.05: 3 better, 2 worse, 1 changed (direction unknown)", out)
        self.assertIn("only in the baseline: only_here", out)
        self.assertIn("only in the current result: only_current", out)

    def test_direction_by_name(self):
        sys.dont_write_bytecode = True  # no __pycache__ in bench/
        sys.path.insert(0, str(SCRIPT.parent))
        import compare
        cases = {"tokens_per_s": "higher", "tokens_per_s_median": "higher", "levels.0.requests_per_s": "higher",
                 "membw.read_gb_s": "higher", "weight_gb_per_s": "higher", "mfu_fwd_bwd": "higher",
                 "peak_gflops": "higher", "speedup_rlf_over_trl": "higher", "fraction_of_linear_bound": "higher",
                 "rlf.step_s_median": "lower", "prefill_s": "lower", "ms_per_step_all.3": "lower",
                 "latency_s.p99": "lower", "ttft_streamed_s.p50": "lower", "kv_cache_mb": "lower",
                 "memory_mb.optimizer_state": "lower", "weight_bytes_per_step": "lower",
                 "cpu.torch_threads": "unknown", "loss_first": "unknown", "job.steps": "unknown"}
        self.assertEqual({k: compare.direction(k) for k in cases}, cases)

    def test_threshold(self):
        p = run(self.base, self.cur, "--threshold", "0.25")
        self.assertEqual(row(p.stdout, "tokens_per_s")[-1], "higher")  # -20%: inside 25%, no marker
        self.assertEqual(row(p.stdout, "mfu_step")[-1], "better")

    def test_fail_on_regression(self):
        self.assertEqual(run(self.base, self.cur, "--fail-on-regression").returncode, 1)
        improved = self.dir / "improved.json"
        improved.write_text(json.dumps(IMPROVED))
        p = run(self.base, improved, "--fail-on-regression")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("2 better, 0 worse", p.stdout)

    def test_unreadable_files(self):
        missing = self.dir / "missing.json"
        p = run(self.base, missing)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr.strip(), f"compare.py: error: cannot read {missing}: No such file or directory")
        bad = self.dir / "bad.json"
        bad.write_text("not json\n")
        p = run(bad, self.cur, "--fail-on-regression")
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"compare.py: error: {bad}: no JSON found", p.stderr)

    def test_json_lines_output(self):
        # A benchmark's stdout with a log line before its JSON line (rlf bench ... --json).
        log = self.dir / "log.txt"
        log.write_text("loading model\n" + json.dumps({"tokens_per_s": 1100.0}) + "\n")
        p = run(self.base, log)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(row(p.stdout, "tokens_per_s"), ["tokens_per_s", "1000", "1100", "1.100", "higher", "better"])

    def test_record_and_rerun(self):
        bench = [sys.executable, "-c", "import json; print('warming up'); "
                 "print(json.dumps({'tokens_per_s': 500.0, 'threads': 3, 'ms_per_step': 2.0}))"]
        p = run("--record", "stand_in", "--dir", self.dir, "--note", "synthetic", "--", *bench)
        self.assertEqual(p.returncode, 0, p.stderr)
        rec = json.loads((self.dir / "stand_in.json").read_text())
        self.assertEqual(rec["name"], "stand_in")
        self.assertEqual(rec["command"], bench)
        self.assertEqual(rec["result"], {"tokens_per_s": 500.0, "threads": 3, "ms_per_step": 2.0})
        self.assertEqual(rec["threads"], 3)  # the result's: the command asks for none
        self.assertEqual(rec["note"], "synthetic")
        for key in ("date", "cpu", "git_commit", "load", "command_line", "cores", "wall_s"):
            self.assertIn(key, rec)
        self.assertIsInstance(rec["load"], float)
        fresh = self.dir / "fresh.json"
        p = run(self.dir / "stand_in.json", "--rerun", "--save", fresh, "--fail-on-regression")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(row(p.stdout, "tokens_per_s"), ["tokens_per_s", "500", "500", "1.000", "higher"])
        self.assertEqual(json.loads(fresh.read_text())["result"]["tokens_per_s"], 500.0)

    def test_record_threads_from_the_command(self):
        bench = [sys.executable, "-c", "print('{\"threads\": 1}')", "--threads", "2"]
        p = run("--record", "threads", "--dir", self.dir, "--", *bench)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads((self.dir / "threads.json").read_text())["threads"], 2)

    def test_record_errors(self):
        p = run("--record", "failing", "--dir", self.dir, "--", sys.executable, "-c", "import sys; sys.exit(3)")
        self.assertEqual(p.returncode, 2)
        self.assertIn("compare.py: error: the command exited with status 3", p.stderr)
        self.assertFalse((self.dir / "failing.json").exists())
        p = run("--record", "no_json", "--dir", self.dir, "--", sys.executable, "-c", "print('hello')")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no JSON found", p.stderr)
        p = run("--record", "bad/name", "--", "true")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--record NAME must be letters", p.stderr)
        p = run(self.base, "--rerun", "--threshold", "-1")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--threshold must be >= 0", p.stderr)


if __name__ == "__main__":
    unittest.main()
