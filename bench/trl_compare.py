#!/usr/bin/env python3
"""GRPO side by side: TRL's GRPOTrainer and `rlf train` on the same job.

One set of job parameters (JOB below, overridable on the command line)
generates both configurations:

  model    stories260K (llama2.c) converted by `rlf convert` into a Hugging Face
           directory; a tokenizer.json rebuilt from its llama2.c vocabulary
           (SentencePiece BPE: scores -> merges, byte fallback) is written next
           to it and used by both sides (checked to encode like rlf); or, with
           --model stories15M|stories42M|stories110M, random weights of that
           shape (bench/random_hf_model.py) with the Llama 2 tokenizer
  prompts  TinyStories openings, each with two keywords (OUT/prompts.jsonl)
  reward   keyword coverage: (keywords present) / (keywords), case-insensitive,
           whole words — rlf's `keywords` reward and an identical Python function
  GRPO     group size, prompts per step, completion length, temperature/top-k,
           KL beta (k3, in the loss), one update per rollout, seq-mean-token-mean
           loss, AdamW (constant lr, clip 1.0), the same number of steps, fp32,
           the same number of CPU threads

It runs TRL first (time per step from a TrainerCallback: on_step_begin to
on_step_end, generation included), then `rlf train OUT/rlf.toml` (skipped with a
message when the binary has no `train` command), then prints wall time per
step for both, their ratio and both reward curves, and writes
OUT/summary.json and OUT/summary.html (inline SVG). Each side's step is split
into generation, log-probs (the passes without gradients: the reference's,
and the old policy's where it recomputes them) and the update (forward,
backward, optimizer): rlf's time/rollout_s, time/logprobs_s, time/update_s;
for TRL, its model's generate, its log-prob function called without
gradients, and the step less its input preparation (_prepare_inputs:
generation, rewards, log-probs).

TRL: with --trl peer (the default) the TRL users install today, from the
peers' virtual environment that scripts/peer_venv.sh creates once per machine
(TRL 1.x on PyTorch 2.x from PyPI, MKL/oneDNN); TRL 1.x counts
per_device_train_batch_size in completions (prompts x group) and has no
max_prompt_length. With --trl legacy, the early-2025 peer of the first
comparisons: .venv-trl at the repository root, created on first use from
Debian's python3 with --system-site-packages, so it uses Debian's torch 1.13:
trl 0.14.0 (the first release with GRPOTrainer) + transformers 4.46.3 +
accelerate 0.34.2 + datasets 3.6 / pyarrow 18. --dtype bf16 runs TRL with
bf16=True (CPU autocast) and rlf with model.dtype = "bf16".

  /usr/bin/python3 bench/trl_compare.py                       # both sides, defaults
  /usr/bin/python3 bench/trl_compare.py --steps 5 --skip-rlf  # TRL only, short
  /usr/bin/python3 bench/trl_compare.py --rlf build/apps/cli/rlf --out out/trl_compare
  /usr/bin/python3 bench/trl_compare.py --model stories15M --steps 10 \
      --rlf-variant trainer.sampling_replay=off      # also rlf with TRL's whole-vocabulary log-probs

Under top-k (the job's top_k = 50) rlf's default trains on log-probs
renormalised over each token's kept set (trainer.sampling_replay = "auto"),
which needs the classifier at 51 rows per token; TRL's loss reads the whole
vocabulary's. --rlf-variant trainer.sampling_replay=off measures rlf on TRL's
objective in the same run.
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv-trl"
SHARED = Path(os.environ.get("RLF_SHARED_DIR", REPO.parent / "shared"))
TRL_REQUIREMENTS = ["trl==0.14.0", "transformers==4.46.3", "tokenizers==0.20.3", "accelerate==0.34.2",
                    "datasets==3.6.0"]
TRL_CONSTRAINTS = ["numpy<2", "torch<2", "pyarrow<19", "pandas<3"]  # keep Debian's torch 1.13 usable

# The job: every parameter both sides read.
JOB = {
    "model": "stories260K",      # shared/models/<model>/<model>.bin + tok512.bin, or a shape of
                                 # bench/random_hf_model.py (stories15M, stories42M, stories110M):
                                 # random weights with the Llama 2 tokenizer (shared/tokenizers/hf/llama2)
    "prompts_per_step": 4,       # groups per step (TRL: per_device_train_batch_size)
    "group_size": 8,             # completions per prompt (TRL: num_generations)
    "max_new_tokens": 64,        # completion length limit (TRL: max_completion_length)
    "temperature": 1.0,
    "top_k": 50,                 # TRL 0.14 builds a fresh GenerationConfig, whose default top_k is 50
    "top_p": 1.0,
    "kl_beta": 0.04,             # TRL 0.14's default beta; k3 estimator in the loss
    "lr": 1e-3,
    "max_grad_norm": 1.0,
    "steps": 60,
    "seed": 0,
    "threads": 2,                # CPU threads on both sides
    # TRL's thread plan: "blas" = torch 1 intra-op thread + OpenBLAS `threads`
    # (what rlf does in fp32, and PyTorch eager's fastest fp32 plan on the
    # 2-core machine: bench/README.md), "torch" = torch `threads` + OpenBLAS's
    # default (all cores; the plan before 2026-11-26).
    "trl_thread_plan": "auto",   # auto = torch with --trl peer (MKL ignores OpenBLAS's variable), blas with legacy
    "trl": "peer",               # peer = TRL 1.x on PyTorch 2.x (scripts/peer_venv.sh); legacy = TRL 0.14 on torch 1.13
    # TRL's allocator: "reuse" = glibc keeps freed blocks up to 1 GiB for reuse
    # (GLIBC_TUNABLES, set before Python starts: what rlf's main does with
    # mallopt, model/huge_pages.h; PyTorch eager gains as much from it),
    # "default" = glibc's own thresholds (the plan before 2026-11-26).
    "trl_malloc": "reuse",
    "dtype": "fp32",
    # OpenMP threads sleep instead of spinning at barriers: on a shared machine
    # spinning makes 2-thread runs several times slower (rlf and torch alike).
    # "" = leave the environment's setting.
    "omp_wait_policy": "PASSIVE",
}

# TinyStories openings and the words the reward asks for.
PROMPTS = [
    ("Once upon a time, there was a little girl named Lily.", ["ball", "happy"]),
    ("Once upon a time, there was a boy named Tom.", ["dog", "park"]),
    ("One day, a little cat went for a walk.", ["tree", "mom"]),
    ("Sara had a big red ball.", ["friend", "play"]),
    ("There was a small bird who lived in a tree.", ["sky", "happy"]),
    ("Ben and his mom went to the store.", ["toy", "smile"]),
    ("Once upon a time, there was a big bear.", ["honey", "friend"]),
    ("Mia liked to play in the garden.", ["flower", "sun"]),
    ("The sun was shining and the sky was blue.", ["park", "fun"]),
    ("Tim found a shiny rock on the ground.", ["pocket", "mom"]),
    ("Lucy wanted to bake a cake.", ["sugar", "happy"]),
    ("A little fish swam in the sea.", ["friend", "big"]),
    ("Max was a happy dog.", ["bone", "play"]),
    ("Anna had a new doll.", ["hug", "sister"]),
    ("It was a rainy day.", ["puddle", "jump"]),
    ("Once upon a time, there was a little car.", ["road", "fast"]),
]


# ---- setup ------------------------------------------------------------------

GLIBC_REUSE = "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824"


def arg_value(argv, name, default):
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default


def peer_python():
    """The peers' venv python (scripts/peer_venv.sh creates it once per machine and prints it)."""
    return subprocess.run(["bash", str(REPO / "scripts" / "peer_venv.sh")], check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]


def ensure_venv(argv):
    """Re-executes this script inside the TRL venv (the peers' one, or .venv-trl
    for --trl legacy, created on first use). The OpenMP wait policy must be in
    the environment before torch loads, so it is set here (from
    --omp-wait-policy) for TRL and inherited by rlf."""
    if os.environ.get("RLF_TRL_COMPARE_VENV") == "1":
        return
    os.environ["RLF_TRL_COMPARE_VENV"] = "1"
    legacy = arg_value(argv, "--trl", JOB["trl"]) == "legacy"
    policy = JOB["omp_wait_policy"]
    for i, a in enumerate(argv):
        if a == "--omp-wait-policy" and i + 1 < len(argv):
            policy = argv[i + 1]
        elif a.startswith("--omp-wait-policy="):
            policy = a.split("=", 1)[1]
    if policy:
        os.environ["OMP_WAIT_POLICY"] = policy
    plan = thread_plan(arg_value(argv, "--trl-thread-plan", JOB["trl_thread_plan"]), legacy)
    threads = int(arg_value(argv, "--threads", JOB["threads"]))
    if plan == "blas":  # OpenBLAS reads it when torch loads
        os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    malloc = JOB["trl_malloc"]
    for i, a in enumerate(argv[:-1]):
        if a == "--trl-malloc":
            malloc = argv[i + 1]
    if malloc == "reuse":  # glibc reads it when the process starts
        os.environ["GLIBC_TUNABLES"] = GLIBC_REUSE
    if not legacy:
        py = peer_python()
        os.execv(py, [py, str(Path(__file__).resolve()), *argv])
    stamp = VENV / ".rlf-trl-installed"
    if not stamp.exists():
        print(f"[setup] creating {VENV} (Debian python3 + system torch, {' '.join(TRL_REQUIREMENTS)})", flush=True)
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(VENV)], check=True)
        constraints = VENV / "constraints.txt"
        constraints.write_text("\n".join(TRL_CONSTRAINTS) + "\n")
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "-c", str(constraints), *TRL_REQUIREMENTS],
                       check=True)
        subprocess.run([str(VENV / "bin" / "python"), "-c", "from trl import GRPOTrainer"], check=True)
        stamp.write_text(" ".join(TRL_REQUIREMENTS) + "\n")
    os.execv(str(VENV / "bin" / "python"), [str(VENV / "bin" / "python"), str(Path(__file__).resolve()), *argv])


def thread_plan(plan, legacy):
    return plan if plan != "auto" else ("blas" if legacy else "torch")


def find_rlf(explicit):
    if explicit:
        return Path(explicit)
    candidates = [c for c in [REPO / "build" / "apps" / "cli" / "rlf"] + sorted(REPO.glob("build*/apps/cli/rlf"))
                  if c.exists()]
    for c in candidates:  # prefer a binary that already has `rlf train`
        if rlf_has_train(c):
            return c
    if candidates:
        return candidates[0]
    sys.exit("no rlf binary found: build it (cmake --build build --target rlf) or pass --rlf PATH")


def read_llama2c_vocab(path, vocab_size):
    """llama2.c tokenizer.bin: int32 max_len, then per token float32 score, int32 len, bytes."""
    pieces, scores = [], []
    with open(path, "rb") as f:
        f.read(4)
        for _ in range(vocab_size):
            score, n = struct.unpack("<fi", f.read(8))
            pieces.append(f.read(n).decode("utf-8"))
            scores.append(score)
        if f.read(1):
            sys.exit(f"{path}: more than {vocab_size} tokens (wrong vocab size)")
    return pieces, scores


def llama2c_tokenizer_json(pieces, scores):
    """A Hugging Face tokenizer.json equivalent to a llama2.c SentencePiece BPE vocabulary.

    llama2.c stores '▁' as ' ' and BOS/EOS as '\\n<s>\\n'/'\\n</s>\\n'; ids 3..258 are
    byte-fallback tokens <0xNN>. Merges: every split (l, r) of a piece with both
    halves in the vocabulary, ranked by the merged piece's score (SentencePiece BPE
    merges the highest-scoring pair first)."""
    vocab = {}
    for i, p in enumerate(pieces):
        vocab[{1: "<s>", 2: "</s>"}.get(i, p.replace(" ", "\u2581"))] = i
    merges = []
    for p, i in vocab.items():
        if i < 3 or (len(p) == 6 and p.startswith("<0x") and p.endswith(">")):
            continue
        for k in range(1, len(p)):
            left, right = p[:k], p[k:]
            if left in vocab and right in vocab:
                merges.append((-scores[i], vocab[left], vocab[right], left, right))
    merges.sort()

    def special(i, content):
        return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True}

    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{l} {r}" for *_, l, r in merges]},
    }


RANDOM_SHAPES = ("stories15M", "stories42M", "stories110M")  # bench/random_hf_model.py's SHAPES


def trl_prompt_prefix(job):
    """What TRL's prompt text starts with so that it encodes, without special
    tokens added, to rlf's ids (BOS + the text): the Llama 2 tokenizer (legacy
    mode) adds no word-start mark right after a special token, so it needs the
    space that its normaliser would otherwise add."""
    return "<s> " if job["model"] in RANDOM_SHAPES else "<s>"


def prepare(out, rlf, job):
    """OUT/model (HF directory + tokenizer.json) and OUT/prompts.jsonl."""
    model_dir = out / "model"
    src = SHARED / "models" / job["model"]
    random_shape = job["model"] in RANDOM_SHAPES
    if random_shape:
        # The same random weights for both sides, written once (bench/random_hf_model.py).
        hf_tok = SHARED / "tokenizers" / "hf" / "llama2"
        if not (hf_tok / "tokenizer.json").exists():
            sys.exit(f"missing {hf_tok / 'tokenizer.json'} (set RLF_SHARED_DIR to the shared folder)")
        if not (model_dir / "model.safetensors").exists():
            subprocess.run([sys.executable, str(REPO / "bench" / "random_hf_model.py"), "--shape", job["model"],
                            "--tokenizer", str(hf_tok), "--out", str(model_dir), "--seed", str(job["seed"]),
                            "--hf-only"], check=True)
    elif not (model_dir / "model.safetensors").exists():
        if not (src / f"{job['model']}.bin").exists():
            sys.exit(f"--model {job['model']}: no {src / (job['model'] + '.bin')}; use a llama2.c model in "
                     f"shared/models or a shape: {', '.join(RANDOM_SHAPES)}")
        subprocess.run([str(rlf), "convert", str(src / f"{job['model']}.bin"), str(model_dir)], check=True)
    config = json.loads((model_dir / "config.json").read_text())
    # rlf convert lists BOS as a second stop id (llama2.c stops at BOS), but TRL
    # 0.14 masks completions only after the tokenizer's EOS, so a BOS stop would
    # leave padding in TRL's loss. Both sides stop at EOS only; stories260K rarely
    # writes it, so completions run to max_new_tokens: the same work per step.
    gen_cfg = model_dir / "generation_config.json"
    gen = json.loads(gen_cfg.read_text()) if gen_cfg.exists() else {}
    gen["eos_token_id"] = config["eos_token_id"]
    gen_cfg.write_text(json.dumps(gen, indent=1) + "\n")
    tok_json = model_dir / "tokenizer.json"
    if not random_shape:
        pieces, scores = read_llama2c_vocab(src / "tok512.bin", config["vocab_size"])
        tok_json.write_text(json.dumps(llama2c_tokenizer_json(pieces, scores), ensure_ascii=False))
    (model_dir / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "pad_token": "<unk>", "add_bos_token": True, "add_eos_token": False,
        "model_max_length": config["max_position_embeddings"], "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"]}, indent=1))
    (model_dir / "special_tokens_map.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<unk>"}, indent=1))

    # Both sides must see the same prompt ids: rlf encodes with BOS; TRL 0.14
    # encodes with add_special_tokens=False, so its prompt text starts with "<s>".
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(tok_json))
    for text, _ in PROMPTS[:3]:
        ours = tok.encode(trl_prompt_prefix(job) + text, add_special_tokens=False).ids
        res = subprocess.run([str(rlf), "tokenize", "--tokenizer", str(tok_json), "--text", text, "--add-special",
                              "--json"], capture_output=True, text=True)
        theirs = json.loads(res.stdout)["ids"] if res.returncode == 0 else None
        if ours != theirs:
            sys.exit(f"tokenizer mismatch on {text!r}: HF {ours} vs rlf {theirs} ({res.stderr.strip()})")
    with open(out / "prompts.jsonl", "w") as f:
        for text, keywords in PROMPTS:
            f.write(json.dumps({"prompt": text, "keywords": keywords}) + "\n")
    return model_dir


# ---- the reward, as rlf's `keywords` (case_sensitive = false, whole_word = true) ----

def keyword_score(text, keywords):
    import re
    if isinstance(keywords, str):  # rlf also accepts one comma-separated string
        keywords = keywords.split(",")
    wanted = list(dict.fromkeys(k.strip() for k in keywords if k.strip()))
    present = sum(1 for k in wanted
                  if re.search(r"(?<!\w)" + re.escape(k) + r"(?!\w)", text, flags=re.IGNORECASE | re.UNICODE))
    return present / len(wanted)


def keywords(prompts, completions, keywords, **_):
    return [keyword_score(c, k) for c, k in zip(completions, keywords)]


# ---- TRL ------------------------------------------------------------------------

def shim_torch_fsdp():
    """Debian's torch 1.13 cannot import torch.distributed.fsdp under Python 3.11
    (a dataclass in torch.distributed._shard has a mutable default, which 3.11
    rejects). transformers' generate() imports it only for an isinstance check
    (is_fsdp_managed_module); on one CPU process nothing is FSDP-wrapped, so an
    empty stand-in module answers that check correctly."""
    import types
    import torch
    try:
        import torch.distributed.fsdp  # noqa: F401
    except ValueError:
        stub = types.ModuleType("torch.distributed.fsdp")
        stub.FullyShardedDataParallel = type("FullyShardedDataParallel", (torch.nn.Module,), {})
        sys.modules["torch.distributed.fsdp"] = stub
        torch.distributed.fsdp = stub
        print("[trl] torch.distributed.fsdp does not import on this torch/Python; using a stand-in", flush=True)


def run_trl(out, model_dir, job):
    shim_torch_fsdp()
    import torch
    import transformers
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    plan = thread_plan(job["trl_thread_plan"], job["trl"] == "legacy")
    torch.set_num_threads(1 if plan == "blas" else job["threads"])
    run_dir = out / "trl_run"
    shutil.rmtree(run_dir, ignore_errors=True)
    dataset = Dataset.from_list([{"prompt": trl_prompt_prefix(job) + text, "keywords": kws} for text, kws in PROMPTS])
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), padding_side="left")
    dtype_key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), **{dtype_key: torch.float32})

    # Generation time per step: wrap the instance's generate (TRL calls it through
    # unwrap_model_for_generation, which on one CPU process yields this object).
    gen_times = []
    original_generate = model.generate

    def timed_generate(*args, **kwargs):
        t0 = time.perf_counter()
        result = original_generate(*args, **kwargs)
        gen_times.append(time.perf_counter() - t0)
        return result

    model.generate = timed_generate

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.step_s, self.t0, self.logs = [], None, []
            self.logprobs_s, self.prepare_s = [], []  # per step: no-grad log-prob passes, input preparation

        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.perf_counter()
            self.logprobs_s.append(0.0)
            self.prepare_s.append(0.0)

        def on_step_end(self, args, state, control, **kw):
            self.step_s.append(time.perf_counter() - self.t0)

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                self.logs.append({"step": state.global_step, **logs})

    timer = StepTimer()
    import inspect
    accepted = inspect.signature(GRPOConfig).parameters
    trl_major = int(trl.__version__.split(".")[0])
    extra = {}
    if "max_prompt_length" in accepted:
        extra["max_prompt_length"] = 128
    if "loss_type" in accepted:  # rlf's policy term: per-sequence token means, then the mean over sequences
        extra["loss_type"] = "grpo"
    for k in ("top_k", "top_p"):
        if k in accepted:
            extra[k] = job[k]
    args = GRPOConfig(
        output_dir=str(run_dir), max_steps=job["steps"],
        # TRL 1.x counts the batch in completions; 0.x in prompts.
        per_device_train_batch_size=job["prompts_per_step"] * (job["group_size"] if trl_major >= 1 else 1),
        gradient_accumulation_steps=1, num_generations=job["group_size"],
        max_completion_length=job["max_new_tokens"], temperature=job["temperature"],
        beta=job["kl_beta"], learning_rate=job["lr"], lr_scheduler_type="constant", warmup_steps=0,
        weight_decay=0.0, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, max_grad_norm=job["max_grad_norm"],
        logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, bf16=job["dtype"] == "bf16",
        seed=job["seed"], dataloader_num_workers=0, disable_tqdm=True, **extra)
    trainer = GRPOTrainer(model=model, reward_funcs=[keywords], args=args, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=[timer])
    # The split of a step: log-probs = the no-grad passes of the log-prob
    # function (the reference's, and the old policy's when TRL computes them);
    # input preparation = generation + rewards + those passes; the update is
    # the step less the preparation (forward, backward, optimizer, bookkeeping).
    def timed_into(name, bucket, only_without_grad):
        original = getattr(trainer, name)

        def timed(*a, **kw):
            t0 = time.perf_counter()
            result = original(*a, **kw)
            if bucket and not (only_without_grad and torch.is_grad_enabled()):
                bucket[-1] += time.perf_counter() - t0
            return result

        setattr(trainer, name, timed)

    for name in ("_get_per_token_logps_and_entropies", "_get_per_token_logps"):  # TRL 1.x, 0.x
        if hasattr(trainer, name):
            timed_into(name, timer.logprobs_s, True)
            break
    timed_into("_prepare_inputs", timer.prepare_s, False)
    if hasattr(trainer, "generation_config"):  # TRL 0.x; 1.x takes top_k / top_p in GRPOConfig
        trainer.generation_config.top_k = job["top_k"]
        trainer.generation_config.top_p = job["top_p"]
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    steps = []
    for i, (s, log) in enumerate(zip(timer.step_s, timer.logs)):
        prepare = timer.prepare_s[i] if i < len(timer.prepare_s) else None
        steps.append({"step": i + 1, "time/step_s": s, "time/generate_s": gen_times[i] if i < len(gen_times) else None,
                      "time/logprobs_s": timer.logprobs_s[i] if i < len(timer.logprobs_s) else None,
                      "time/update_s": s - prepare if prepare else None,
                      "reward/mean": log["reward"], "reward/std": log.get("reward_std"), "kl": log.get("kl"),
                      "completion_length": log.get("completion_length"), "loss": log.get("loss")})
    with open(out / "trl_metrics.jsonl", "w") as f:
        for s in steps:
            f.write(json.dumps(s) + "\n")
    return {"impl": f"trl {trl.__version__} (transformers {transformers.__version__}, torch {torch.__version__})",
            "threads": torch.get_num_threads(), "thread_plan": plan,
            "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
            "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""), "wall_s": wall, "steps": steps}


# ---- rlf ------------------------------------------------------------------------

def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(str(v))


def rlf_config(out, model_dir, job):
    """The rlf train config for the job, as TOML text."""
    tables = [
        ("model", {"path": str(model_dir), "tokenizer": str(model_dir / "tokenizer.json"), "dtype": job["dtype"],
                   "device": "cpu"}),
        ("data", {"path": str(out / "prompts.jsonl"), "preset": "generic", "prompt_field": "prompt",
                  "reference_field": ""}),
        ("[reward]", {"type": "keywords", "field": "keywords", "case_sensitive": False, "whole_word": True}),
        ("rollout", {"group_size": job["group_size"], "prompts_per_step": job["prompts_per_step"],
                     "max_new_tokens": job["max_new_tokens"], "temperature": job["temperature"],
                     "top_k": job["top_k"], "top_p": job["top_p"]}),
        # TRL 0.14: one update per rollout (ratio 1), k3 KL in the loss, per-sequence
        # token mean then mean over sequences, std eps 1e-4, whole batch in one pass.
        ("algorithm", {"advantage": "grpo", "eps_low": 0.2, "eps_high": 0.2, "kl_beta": job["kl_beta"], "epochs": 1,
                       "micro_batch_size": job["prompts_per_step"] * job["group_size"],
                       "loss_aggregation": "seq_mean_token_mean"}),
        ("optim", {"lr": job["lr"], "schedule": "constant", "warmup_steps": 0, "max_grad_norm": job["max_grad_norm"],
                   "weight_decay": 0.0}),
        ("run", {"steps": job["steps"], "seed": job["seed"], "out_dir": str(out / "rlf_run")}),
    ]
    lines = [f"# generated by bench/trl_compare.py from JOB = {json.dumps(job)}"]
    for name, values in tables:
        lines.append("")
        lines.append(f"[{name}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def rlf_has_train(rlf):
    res = subprocess.run([str(rlf), "train", "--help"], capture_output=True, text=True)
    return res.returncode == 0


def run_rlf(out, model_dir, rlf, job, setting=None, index=0):
    """rlf train on the job; `setting` (KEY=VALUE) a variant run into OUT/rlf_run_<index>."""
    cfg = out / "rlf.toml"
    cfg.write_text(rlf_config(out, model_dir, job))
    if not rlf_has_train(rlf):
        print(f"[rlf] skipped: '{rlf} train' is not available yet (config written to {cfg})", flush=True)
        return None
    run_dir = out / ("rlf_run" if setting is None else f"rlf_run_{index}")
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [str(rlf), "train", str(cfg), "--threads", str(job["threads"])]
    if setting is not None:
        cmd += ["--set", setting, "--set", f"run.out_dir={run_dir}"]
    print("[rlf] " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t0
    steps = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    impl = f"rlf ({rlf})" + (f" with {setting}" if setting else "")
    return {"impl": impl, "threads": job["threads"], "wall_s": wall, "steps": steps}


# ---- report ---------------------------------------------------------------------

def step_stats(run):
    times = [s["time/step_s"] for s in run["steps"] if s.get("time/step_s") is not None]
    after_first = times[1:] or times
    phases = {}
    for key in ("time/generate_s", "time/rollout_s", "time/logprobs_s", "time/update_s"):
        vals = [s[key] for s in run["steps"][1:] if s.get(key) is not None]
        if vals:
            phases[key.replace("time/", "") + "_median"] = statistics.median(vals)
    return {"n_steps": len(times), "step_s_median": statistics.median(after_first), **phases,
            "step_s_mean": statistics.fmean(after_first), "step_s_first": times[0] if times else None,
            "wall_s": run["wall_s"], "reward_curve": [s.get("reward/mean") for s in run["steps"]]}


def svg_curves(curves, width=640, height=260, pad=40):
    values = [v for c in curves.values() for v in c if v is not None]
    lo, hi = min(values + [0.0]), max(values + [1.0])
    n = max(len(c) for c in curves.values())
    colors = ["#1f77b4", "#d62728"]

    def xy(i, v):
        x = pad + (width - 2 * pad) * (i / max(1, n - 1))
        y = height - pad - (height - 2 * pad) * ((v - lo) / (hi - lo or 1))
        return f"{x:.1f},{y:.1f}"

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
             f'<rect width="{width}" height="{height}" fill="white" stroke="#ccc"/>',
             f'<text x="{pad}" y="20" font-size="13">reward/mean per step ({lo:g} .. {hi:g})</text>']
    for k, (name, curve) in enumerate(curves.items()):
        pts = " ".join(xy(i, v) for i, v in enumerate(curve) if v is not None)
        parts.append(f'<polyline fill="none" stroke="{colors[k % 2]}" stroke-width="2" points="{pts}"/>')
        parts.append(f'<text x="{width - 150}" y="{20 + 16 * k}" font-size="12" fill="{colors[k % 2]}">{name}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def text_curve(curve, width=60):
    """A one-line bar chart of the curve, scaled to [0, max], plus its first and last tenths' means."""
    blocks = "▁▂▃▄▅▆▇█"
    vals = [v for v in curve if v is not None]
    if not vals:
        return ""
    hi = max(vals) or 1.0
    bars = "".join(blocks[min(7, int(7 * v / hi + 0.5))] for v in vals[:width])
    k = max(1, len(vals) // 10)
    return f"{bars}  (mean of first {k}: {statistics.fmean(vals[:k]):.3f}, last {k}: {statistics.fmean(vals[-k:]):.3f})"


def report(out, job, runs):
    summary = {"job": job, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""), "load_at_end": os.getloadavg()}
    for name, run in runs.items():
        if run is not None:
            summary[name] = {"impl": run["impl"], "threads": run["threads"], "load_before": run.get("load_before"),
                             "thread_plan": run.get("thread_plan"), "openblas_threads": run.get("openblas_threads"),
                             "glibc_tunables": run.get("glibc_tunables"),
                             **step_stats(run)}
    if runs.get("trl") and runs.get("rlf"):
        summary["speedup_rlf_over_trl"] = summary["trl"]["step_s_median"] / summary["rlf"]["step_s_median"]
    variants = [n for n in summary if n.startswith("rlf ") and isinstance(summary[n], dict)]
    for n in variants:
        if "trl" in summary:
            summary[n]["speedup_over_trl"] = summary["trl"]["step_s_median"] / summary[n]["step_s_median"]
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    curves = {f"{n} ({summary[n]['step_s_median']:.2f} s/step)": summary[n]["reward_curve"]
              for n in ("trl", "rlf", *variants) if n in summary}
    (out / "summary.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>TRL vs rlf GRPO</title><h3>TRL vs rlf: GRPO on "
        f"{job['model']}</h3><pre>{json.dumps(job)}</pre>{svg_curves(curves)}<pre>"
        f"{json.dumps(summary, indent=1)}</pre>")
    print(json.dumps(summary))
    print()
    for n in ("trl", "rlf", *variants):
        if n in summary:
            s = summary[n]
            gen = s.get("generate_s_median", s.get("rollout_s_median"))
            gen_text = f", generation {gen:.3f} s" if gen is not None else ""
            for phase in ("logprobs", "update"):
                if s.get(phase + "_s_median") is not None:
                    gen_text += f", {'log-probs' if phase == 'logprobs' else phase} {s[phase + '_s_median']:.3f} s"
            print(f"{n:4s} {s['step_s_median']:7.3f} s/step (median, steps 2..{s['n_steps']}{gen_text}; first "
                  f"{s['step_s_first']:.2f} s)  reward {text_curve(s['reward_curve'])}")
    if "speedup_rlf_over_trl" in summary:
        print(f"rlf is {summary['speedup_rlf_over_trl']:.2f}x TRL's speed per step")
    for n in variants:
        if "speedup_over_trl" in summary[n]:
            print(f"{n} is {summary[n]['speedup_over_trl']:.2f}x TRL's speed per step")
    print(f"written: {out / 'summary.json'}, {out / 'summary.html'}")


def check_variant(parser, setting):
    if "=" not in setting or setting.startswith("="):
        parser.error(f"--rlf-variant {setting!r}: use KEY=VALUE, e.g. trainer.sampling_replay=off")


def main():
    ensure_venv(sys.argv[1:])
    p = argparse.ArgumentParser(description="GRPO: TRL GRPOTrainer vs rlf train on one job")
    p.add_argument("--out", default=str(REPO / "out" / "trl_compare"), help="output directory")
    p.add_argument("--rlf", default="", help="rlf binary (default: build*/apps/cli/rlf)")
    p.add_argument("--skip-trl", action="store_true")
    p.add_argument("--skip-rlf", action="store_true")
    p.add_argument("--rlf-variant", action="append", default=[], metavar="KEY=VALUE",
                   help="after the default run, rlf train again with --set KEY=VALUE (repeatable), e.g. "
                        "trainer.sampling_replay=off: log-probs over the whole vocabulary, as TRL computes them")
    for k, v in JOB.items():
        p.add_argument("--" + k.replace("_", "-"), type=type(v), default=v, help=f"job parameter (default {v})")
    a = p.parse_args()
    job = {k: getattr(a, k) for k in JOB}
    for setting in a.rlf_variant:
        check_variant(p, setting)
    if job["trl_thread_plan"] not in ("auto", "blas", "torch"):
        p.error(f"--trl-thread-plan {job['trl_thread_plan']}: use auto, blas or torch")
    if job["trl"] not in ("peer", "legacy"):
        p.error(f"--trl {job['trl']}: use peer or legacy")
    if job["trl_malloc"] not in ("reuse", "default"):
        p.error(f"--trl-malloc {job['trl_malloc']}: use reuse or default")
    if job["model"] not in RANDOM_SHAPES and not (SHARED / "models" / job["model"] / f"{job['model']}.bin").exists():
        p.error(f"--model {job['model']}: no {SHARED / 'models' / job['model'] / (job['model'] + '.bin')}; use a "
                f"llama2.c model in shared/models or a shape: {', '.join(RANDOM_SHAPES)}")
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rlf = find_rlf(a.rlf)
    model_dir = prepare(out, rlf, job)
    print(f"[job] {json.dumps(job)}  load {os.getloadavg()}", flush=True)
    runs = {}
    if not a.skip_trl:
        load = os.getloadavg()
        runs["trl"] = run_trl(out, model_dir, job)
        runs["trl"]["load_before"] = load
    if not a.skip_rlf:
        load = os.getloadavg()
        runs["rlf"] = run_rlf(out, model_dir, rlf, job)
        if runs["rlf"]:
            runs["rlf"]["load_before"] = load
        for i, setting in enumerate(a.rlf_variant):
            load = os.getloadavg()
            runs["rlf " + setting] = run_rlf(out, model_dir, rlf, job, setting, i + 1)
            if runs["rlf " + setting]:
                runs["rlf " + setting]["load_before"] = load
    report(out, job, runs)


if __name__ == "__main__":
    main()
