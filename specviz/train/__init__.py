"""`train-tiny`: the recipe that builds specviz's bundled offline model pair (assets/models/pystdlib).

Stages (each resumable; `all` runs them in order, skipping finished ones):
  corpus     gather Python's stdlib source + its documentation text into <work>/corpus (+ manifest, split)
  tokenizer  byte-level BPE (8k) -> <work>/tokenizer; encode splits -> <work>/data/*.bin (uint16 memmaps)
  target     train the 10-layer target                     -> <work>/target/{ckpt.pt,final.pt,result.json}
             (--extend-target-minutes M: then train it M minutes more -> <work>/target_ext1/..., resumable)
  draft      1-layer draft (code documents only by default): distilled run + a CE-only control, same steps/data
             (--draft-tune-minutes M: then distil it M minutes more on continuations the target writes after code
             prefixes, generated once into <work>/data/{train,val}_gen.bin -> <work>/draft_gen/...)
  export     bf16 safetensors + tokenizer -> assets/models/pystdlib/{target,draft}, manifest.json; then the card
  <head>     (not part of `all`) a feature head for the exported target, one stage per kind (each named below,
             with its options): trained on the target's features, resumable, --<head>-minutes of training ->
             <work>/<head>/..., exported to assets/models/pystdlib/<head> (specviz/train/<head>.py)
  vocab      (not part of `all`: export writes it) count the training split's tokens -> draft/token_counts.json, the
             frequency order of the draft's trimmed vocabulary (specviz/engine/loading/vocab.py)
  card       (not part of `all`: export ends with it) measure the exported pair with `python -m specviz run |
             measure | bench` -> measurements.json, and render the model card README.md from manifest.json and
             measurements.json (18.5 min on a busy 2-core CPU; --rerender: render only, from the
             measurements.json there)

Usage (what built the shipped pair):
  python -m specviz train-tiny all --threads 1 --target-minutes 75 --extend-target-minutes 85 --draft-minutes 24 \
      --draft-tune-minutes 12 --gen-tokens 600000
Defaults: --target-minutes 78, no extension, --draft-minutes 24 (budgets include periodic evaluation). Measured on a
2-core CPU with 1 torch thread: corpus ~4 s, tokenizer ~10 s, target ~850 tokens/s (batch 4 x 256, ~1.2 s/step),
distilled draft ~1250 tokens/s, CE-only draft ~3100 tokens/s, export ~1 min; the whole recipe ~1 h 50 min.
With 2 threads on 2 idle cores the target runs ~1.7x faster, but on a shared CPU 2 threads collapse (10x slower):
prefer --threads 1 unless the machine is otherwise idle.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from .paths import DEFAULT_OUT, WORKLOADS

STAGES = ("corpus", "tokenizer", "target", "draft", "export")


def make_logger(work_dir: Path):
    work_dir.mkdir(parents=True, exist_ok=True)
    path = work_dir / "train.log"

    def log(msg: str) -> None:
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {msg}"
        print(line, flush=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    return log


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m specviz train-tiny", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    from .heads import HEAD_STAGES, head_stage  # numpy and the training loop: only for train-tiny itself

    extra = ("vocab", "card", *HEAD_STAGES, "all", "check-workloads")
    p.add_argument("stage", nargs="?", default="all", choices=STAGES + extra)
    p.add_argument("--work-dir", type=Path, default=Path(os.path.expanduser("~/.cache/specviz/train-tiny")))
    p.add_argument("--out-dir", type=Path, default=DEFAULT_OUT, help="export destination")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch.set_num_threads, here and in the card's measuring processes (default: torch's)",
    )
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument(
        "--docs",
        choices=("auto", "on", "off"),
        default="auto",
        help="use /usr/share/doc/python3.11/html (Debian python3.11-doc) where installed",
    )
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument("--target-layers", type=int, default=10)
    p.add_argument("--draft-layers", type=int, default=1)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=4, help="windows per step (4 x 256 ~ 1.2 s/step on 1 core)")
    p.add_argument("--target-minutes", type=float, default=78.0)
    p.add_argument("--draft-minutes", type=float, default=24.0)
    p.add_argument("--target-steps", type=int, default=None, help="fix the step count instead of calibrating")
    p.add_argument("--draft-steps", type=int, default=None)
    p.add_argument("--target-lr", type=float, default=1e-3)
    p.add_argument(
        "--extend-target-minutes",
        type=float,
        default=0.0,
        help="after the target stage, train the finished target this much longer (a new, resumable run)",
    )
    p.add_argument("--extend-target-steps", type=int, default=None, help="fix the extension's step count instead")
    p.add_argument("--extend-lr", type=float, default=5e-4, help="peak learning rate of a target extension")
    p.add_argument("--draft-lr", type=float, default=1e-3)
    p.add_argument(
        "--draft-data",
        choices=("code", "all"),
        default="code",
        help="train the draft on the code documents only (a code specialist) or on everything",
    )
    p.add_argument(
        "--ce-weight", type=float, default=0.25, help="draft loss = a*CE + (1-a)*KL(target || draft); a=1 is plain CE"
    )
    p.add_argument("--ckpt-minutes", type=float, default=5.0)
    p.add_argument("--eval-minutes", type=float, default=10.0)
    p.add_argument(
        "--draft-tune-minutes",
        type=float,
        default=0.0,
        help="then distil the draft M minutes more on the target's own continuations (0: skip)",
    )
    p.add_argument("--draft-tune-steps", type=int, default=None, help="fix that run's step count instead")
    p.add_argument(
        "--gen-tokens", type=int, default=600_000, help="tokens of target continuations to generate for --draft-tune-*"
    )
    p.add_argument("--no-baseline", action="store_true", help="skip the CE-only draft control run")
    for stage in HEAD_STAGES:  # each head's stage adds its own options
        head_stage(stage).add_arguments(p)
    card = p.add_argument_group("model card (export and card stages; the defaults are what the shipped card quotes)")
    card.add_argument(
        "--rerender",
        action="store_true",
        help="card: render README.md from the measurements.json in --out-dir, without measuring",
    )
    card.add_argument("--card-workloads", default="code,prose", help="assets/workloads/NAME.jsonl files for alpha")
    card.add_argument("--card-prompts", type=int, default=0, help="first N prompts of each workload (0: all)")
    card.add_argument("--card-temperatures", default="0,1", help="decodings for alpha (0 = greedy)")
    card.add_argument("--card-k", type=int, default=4, help="K for alpha on the workloads")
    card.add_argument("--card-tokens", type=int, default=64, help="new tokens per prompt for alpha")
    card.add_argument("--card-bench-ks", default="1,2,3,4,6", help="K values of the speed tables")
    card.add_argument("--card-bench-tokens", type=int, default=128, help="new tokens per prompt in the speed tables")
    card.add_argument("--card-bench-prompts", type=int, default=10, help="first N code prompts in the speed tables")
    card.add_argument("--card-dtypes", default="float32,bfloat16", help="one speed table per precision")
    card.add_argument("--card-samples", type=int, default=4, help="sample completions to show (0-4)")
    card.add_argument("--card-sample-tokens", type=int, default=40, help="new tokens per sample completion")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    work = args.work_dir.expanduser()
    log = make_logger(work)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    log(
        f"train-tiny {args.stage}: work dir {work}, device {device}, threads {torch.get_num_threads()}, "
        f"args {json.dumps({k: str(v) for k, v in vars(args).items()})}"
    )
    from . import stages
    from .heads import HEAD_STAGES

    todo = STAGES if args.stage == "all" else (args.stage,)
    for stage in todo:
        t = time.time()
        if stage == "check-workloads":
            from .corpus import check_workloads

            res = check_workloads(work / "corpus", WORKLOADS, log)
            return 1 if res["leaks"] else 0
        if stage in HEAD_STAGES:
            stages.stage_head(stage, args, work, device, log)
        else:
            getattr(stages, f"stage_{stage}")(args, work, device, log)
        log(f"stage {stage} finished in {(time.time() - t) / 60:.1f} min")
    return 0
