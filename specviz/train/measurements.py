"""The model card's measured figures: sample completions, α on the sample workloads, speeds and step costs.

Everything is measured through specviz's own command line (`python -m specviz run | measure | bench`, each a
subprocess writing JSON), so the card quotes commands a reader can rerun and depends only on their stable flags and
JSON keys, not on the measurement code behind them. The result is one document, measurements.json, holding exactly
the figures the card quotes and where they were measured.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path

from specviz import methods
from specviz.engine.loading.catalogue import BUNDLED_PRESETS

from .paths import DEFAULT_OUT, REPO_ROOT, WORKLOADS

FORMAT = "specviz.model_card_measurements"
VERSION = 1
# (label, prompt): greedy completions by the target alone, shown in the card
SAMPLE_PROMPTS = (
    ("function body", BUNDLED_PRESETS["code"]),
    ("class", 'class Stack:\n    """A last-in, first-out stack of items."""\n    def __init__(self):'),
    ("docstring", 'def parse_header(line):\n    """'),
    ("prose", "The module provides a simple way to"),
)


@dataclass(frozen=True)
class CardSettings:
    """How much to measure: the defaults are what the shipped card quotes; tests pass tiny values."""

    workloads: tuple[str, ...] = tuple(w.stem for w in WORKLOADS)  # names of assets/workloads/*.jsonl
    prompts: int = 0  # prompts per workload for α (0: all)
    temperatures: tuple[float, ...] = (0.0, 1.0)
    k: int = 4
    max_new_tokens: int = 64
    bench_ks: tuple[int, ...] = (1, 2, 3, 4, 6)
    bench_tokens: int = 128
    bench_prompts: int = 10
    dtypes: tuple[str, ...] = ("float32", "bfloat16")
    samples: int = len(SAMPLE_PROMPTS)
    sample_tokens: int = 40
    threads: int | None = None  # torch threads for the measuring processes (None: torch's default)

    @classmethod
    def from_args(cls, args) -> CardSettings:
        """From the train-tiny arguments `--card-*` (and `--threads`)."""
        return cls(
            workloads=tuple(args.card_workloads.split(",")),
            prompts=args.card_prompts,
            temperatures=tuple(float(t) for t in args.card_temperatures.split(",")),
            k=args.card_k,
            max_new_tokens=args.card_tokens,
            bench_ks=tuple(int(k) for k in args.card_bench_ks.split(",")),
            bench_tokens=args.card_bench_tokens,
            bench_prompts=args.card_bench_prompts,
            dtypes=tuple(args.card_dtypes.split(",")),
            samples=args.card_samples,
            sample_tokens=args.card_sample_tokens,
            threads=args.threads,
        )

    def __post_init__(self):
        if not self.dtypes or not self.workloads or not self.temperatures:
            raise ValueError("the card needs at least one dtype, one workload and one temperature")
        if not 0 <= self.samples <= len(SAMPLE_PROMPTS):
            raise ValueError(f"--card-samples takes 0 to {len(SAMPLE_PROMPTS)}")

    def as_dict(self) -> dict:
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}


def _rel(path: Path) -> str:
    """A path as the card quotes it: relative to the repository when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


class Runner:
    """Runs `python -m specviz ...` in the repository root; quotes each command with its JSON file's bare name."""

    def __init__(self, pair_dir: Path, tmp: Path, threads: int | None, log):
        bundled = Path(pair_dir).resolve() == DEFAULT_OUT.resolve()
        # the bundled pair is the CLI's default: its commands read as a reader would type them
        self.models = [] if bundled else ["--target", _rel(pair_dir / "target"), "--draft", _rel(pair_dir / "draft")]
        self.tmp, self.log = tmp, log
        self.env = dict(os.environ)
        if threads:
            self.env["OMP_NUM_THREADS"] = str(threads)

    def __call__(self, argv: list[str], json_name: str | None = None, shown: dict | None = None) -> tuple[str, str]:
        """(the command as the card quotes it, its stdout when it writes no JSON file); `shown` renames arguments
        in the quoted command (a temporary file by its bare name)."""
        argv = [*argv, *self.models]
        quoted = shlex.join(
            ["python", "-m", "specviz", *((shown or {}).get(a, a) for a in argv)]
            + (["--json", json_name] if json_name else [])
        )
        run = argv + (["--json", str(self.tmp / json_name)] if json_name else [])
        self.log(f"card: {quoted}")
        done = subprocess.run(
            [sys.executable, "-m", "specviz", *run],
            cwd=REPO_ROOT,
            env=self.env,
            text=True,
            stdout=None if json_name else subprocess.PIPE,
        )
        if done.returncode:
            raise SystemExit(f"card: `{quoted}` failed with exit status {done.returncode}")
        return quoted, done.stdout or ""

    def json(self, name: str) -> dict:
        return json.loads((self.tmp / name).read_text(encoding="utf-8"))


def measure_all(pair_dir: Path, s: CardSettings, log) -> dict:
    """Run every measurement the card quotes on the pair in pair_dir; returns the measurements.json document."""
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="specviz-card-") as tmp:
        run = Runner(pair_dir, Path(tmp), s.threads, log)
        samples = _samples(run, s)
        files = {name: _workload_file(name, s, Path(tmp)) for name in s.workloads}
        workloads = {name: _workload_facts(name) for name in s.workloads}
        acceptance = _acceptance(run, s, files)
        speed = [_speed(run, s, dtype) for dtype in s.dtypes]
    return {
        "format": FORMAT,
        "version": VERSION,
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "duration_min": round((time.time() - started) / 60, 1),
        "environment": _environment(speed[0].pop("environment")),
        "settings": s.as_dict(),
        "samples": samples,
        "workloads": workloads,
        "acceptance": acceptance,
        "speed": [{k: v for k, v in run.items() if k != "environment"} for run in speed],
    }


def _environment(bench_env: dict) -> dict:
    """Where it was measured: the CPU by name, the kernels torch picks for it, threads and the machine's load when the
    first bench started (as the bench reported them)."""
    return {
        "cpu": bench_env.get("cpu"),
        "cpu_capability": bench_env.get("cpu_capability"),
        "load_average": bench_env.get("load_average"),
        "cores": os.cpu_count(),
        "torch_threads": bench_env.get("torch_threads"),
        "device": bench_env.get("device"),
        "python": bench_env.get("python"),
        "torch": bench_env.get("torch"),
        "transformers": bench_env.get("transformers"),
        "specviz": bench_env.get("specviz"),
    }


def _samples(run: Runner, s: CardSettings) -> dict:
    """Greedy completions by the target alone (specviz's plain decoding), float32."""
    args = ["--max-new-tokens", str(s.sample_tokens), "--device", "cpu", "--dtype", "float32"]
    rows = []
    for label, prompt in SAMPLE_PROMPTS[: s.samples]:
        _, out = run(["run", "--plain", "--prompt", prompt, *args, "--json"])
        trace = json.loads(out)
        rows.append({"label": label, "prompt": prompt, "completion": trace["text"]})
    command = shlex.join(["python", "-m", "specviz", "run", "--plain", "--prompt", "...", *args])
    return {"command": command, "max_new_tokens": s.sample_tokens, "dtype": "float32", "rows": rows}


def _source(name: str) -> Path:
    return REPO_ROOT / "assets" / "workloads" / f"{name}.jsonl"


def _rows(name: str) -> list[str]:
    return [line for line in _source(name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _workload_facts(name: str) -> dict:
    """What the card says about a workload file: its prompts, and how many end after a newline."""
    prompts = [json.loads(line)["prompt"] for line in _rows(name)]
    return {
        "file": _rel(_source(name)),
        "prompts": len(prompts),
        "prompts_ending_in_newline": sum(p.endswith("\n") for p in prompts),
    }


def _workload_file(name: str, s: CardSettings, tmp: Path) -> Path:
    """The file to measure: the workload itself, or a copy of its first `s.prompts` rows."""
    rows = _rows(name)
    if not s.prompts or s.prompts >= len(rows):
        return _source(name)
    part = tmp / f"{name}-first{s.prompts}.jsonl"
    part.write_text("\n".join(rows[: s.prompts]) + "\n", encoding="utf-8")
    return part


def _acceptance(run: Runner, s: CardSettings, files: dict[str, Path]) -> dict:
    """α, its interval, acceptance rate, τ and speedup of the draft model at K = k on each workload and temperature."""
    rows = []
    for name, path in files.items():
        for t in s.temperatures:
            decoding = "greedy" if t == 0 else f"T{t:g}"
            json_name = f"measure-{name}-{decoding}.json"
            argv = [
                "measure",
                str(path),
                "--k",
                str(s.k),
                "--max-new-tokens",
                str(s.max_new_tokens),
                *(["--temperature", f"{t:g}"] if t else []),
                "--device",
                "cpu",
                "--dtype",
                "float32",
            ]
            command, _ = run(argv, json_name, {str(path): _rel(path) if path == _source(name) else path.name})
            doc = run.json(json_name)
            summary = next(
                r for r in doc["summary"] if r["tag"] == "all" and r["method"] == methods.DRAFT and r["k"] == s.k
            )
            rows.append(
                {
                    "workload": name,
                    "temperature": t,
                    "command": command,
                    **{
                        key: summary[key]
                        for key in ("prompts", "alpha", "alpha_ci", "acceptance_rate", "tau", "speedup")
                    },
                }
            )
    return {"k": s.k, "max_new_tokens": s.max_new_tokens, "dtype": "float32", "rows": rows}


SPEED_KEYS = (
    "method",
    "k",
    "tokens_per_s",
    "speedup_vs_plain",
    "alpha",
    "tau",
    "c",
    "verify_cost",
    "predicted_speedup",
    "efficiency",
    "identical_to_plain",
)
COST_KEYS = ("target_step_ms", "draft_step_ms", "c", "verify_relative", "context_tokens", "repeats", "draft_vocab")


def _speed(run: Runner, s: CardSettings, dtype: str) -> dict:
    """Every lane at every K against plain decoding, greedy, on the first prompts of code.jsonl, in one precision."""
    json_name = f"bench-{dtype}.json"
    argv = [
        "bench",
        "--prompts",
        _rel(WORKLOADS[0]),
        "--limit",
        str(s.bench_prompts),
        "--k",
        ",".join(map(str, s.bench_ks)),
        "--max-new-tokens",
        str(s.bench_tokens),
        "--device",
        "cpu",
        "--dtype",
        dtype,
    ]
    command, _ = run(argv, json_name)
    doc = run.json(json_name)
    return {
        "dtype": doc["environment"]["dtype"],
        "command": command,
        "prompts": doc["settings"]["prompts"],
        "max_new_tokens": doc["settings"]["max_new_tokens"],
        "environment": doc["environment"],
        "costs": {key: doc["costs"].get(key) for key in COST_KEYS},
        "results": [{key: r[key] for key in SPEED_KEYS} for r in doc["results"]],
    }
