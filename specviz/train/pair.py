"""`train --pair NAME`: drafters trained for a real target from the pairs catalogue (smollm2).

Stages (each resumable from its checkpoints; `all` runs data, draft, eagle3, card in order):
  data    the target writes its own prompts (Magpie: only its chat template's user prefix) and answers them
          greedily, one batch kept full (train/answer_loop.py); the samples go to the answer store as token ids
          -> --data-dir, assets/models/NAME/data for a catalogue pair (train/answer_store.py)
  draft   a small LlamaForCausalLM on the target's tokenizer with a trimmed vocabulary (size measured on the data),
          started from the target's embeddings, first and last layers, distilled on the data -> <work>/draft,
          exported to <out>/draft (train/draft_pair.py); --resume: from the shipped draft, replaced only when the
          held-out agreement rises (train/resume.py)
  eagle3  an EAGLE-3 head (train/eagle3.py's recipe) on the same samples -> <work>/eagle3, exported to <out>/eagle3
  card    <out>/training.md: the data, each drafter's curve and held-out agreement

The work dir (checkpoints, held-out references, logs) is under the user's cache (`$SPECVIZ_CACHE/train/NAME`, else
`~/.cache/specviz/train/NAME`), never in the repository; --out-dir defaults to <work>/out too: pass
`--out-dir assets/models/NAME` to ship. --minutes bounds this run's wall clock; run the same command again to resume.
Held-out prompts (assets/workloads/chat-heldout.jsonl) are never trained on. docs/training.md has the measured rates.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from .paths import REPO_ROOT

STAGES = ("data", "draft", "eagle3", "card")
HELDOUT = REPO_ROOT / "assets" / "workloads" / "chat-heldout.jsonl"
STAGE_DEFAULTS = {  # (lr, batch) per training stage
    "draft": (1e-3, 8),
    "draft --resume": (3e-4, 8),  # from trained weights: a lower peak
    "eagle3": (5e-4, 4),
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m specviz train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("stage", nargs="?", default="all", choices=STAGES + ("all",))
    p.add_argument("--pair", required=True, help="the catalogue's pair whose target is trained for (smollm2)")
    p.add_argument("--target", default=None, help="a target directory instead of the pair's (the tests' tiny one)")
    p.add_argument("--work-dir", type=Path, default=None, help="default: the user's cache, train/NAME")
    p.add_argument("--out-dir", type=Path, default=None, help="export destination (default: <work>/out)")
    p.add_argument("--heldout", type=Path, default=HELDOUT, help="held-out prompts (JSON lines), never trained on")
    p.add_argument("--minutes", type=float, default=30.0, help="wall-clock budget of this run of the stage")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--seed", type=int, default=1234)
    data = p.add_argument_group("data")
    data.add_argument(
        "--data-dir", type=Path, default=None,
        help="the answer store every stage reads (default: assets/models/NAME/data for a pair, else <work>/data)",
    )  # fmt: skip
    data.add_argument("--tokens", type=int, default=5_000_000, help="answer tokens the store should hold")
    data.add_argument("--data-batch", type=int, default=32, help="samples decoded together")
    data.add_argument("--shard-samples", type=int, default=256, help="samples per shard of the store")
    data.add_argument("--data-dtype", choices=("bfloat16", "float32"), default="bfloat16")
    data.add_argument("--prompt-tokens", type=int, default=64, help="longest prompt the target writes")
    data.add_argument("--answer-tokens", type=int, default=192, help="longest answer")
    train = p.add_argument_group("draft and eagle3")
    train.add_argument(
        "--resume", action="store_true",
        help="draft: start from the shipped draft (<out-dir>/draft; default out-dir for a pair: assets/models/NAME), "
        "replace it only when the held-out agreement rises (train/resume.py)",
    )  # fmt: skip
    train.add_argument("--steps", type=int, default=None, help="total steps (default: fitted to the first --minutes)")
    train.add_argument("--lr", type=float, default=None, help="peak learning rate (draft 1e-3, eagle3 5e-4)")
    train.add_argument("--batch", type=int, default=None, help="samples per step (draft 8, eagle3 4 windows)")
    train.add_argument("--context", type=int, default=256)
    train.add_argument("--draft-layers", type=int, default=2)
    train.add_argument(
        "--draft-init",
        choices=("first-last", "first"),
        default="first-last",
        help="target layers the draft starts from",
    )
    train.add_argument("--draft-vocab", type=int, default=0, help="trimmed vocabulary size (0: chosen by coverage)")
    train.add_argument("--vocab-coverage", type=float, default=0.98, help="share of the target's top-1 to cover")
    train.add_argument("--eagle3-vocab", type=int, default=0, help="the head's vocabulary (0: the draft's)")
    train.add_argument("--k", type=int, default=4, help="drafts per round for the held-out alpha")
    train.add_argument("--ckpt-minutes", type=float, default=5.0)
    train.add_argument("--eval-minutes", type=float, default=10.0)
    return p.parse_args(argv)


def resolve(args: argparse.Namespace) -> argparse.Namespace:
    """The target directory, work dir and out dir of the named pair (a clear message for an unknown pair)."""
    from specviz.engine.loading.catalogue import find_pair
    from specviz.engine.loading.install import cache_root
    from specviz.engine.loading.shipped import SHIPPED_ROOT
    from specviz.errors import SpecvizError

    catalogue = args.target is None
    if catalogue:
        try:
            args.target = find_pair(args.pair).sources()[0]
        except SpecvizError as exc:
            raise SystemExit(f"error: {exc}") from exc
    if not Path(args.target).is_dir():
        raise SystemExit(f"error: the target {args.target} is not a local model directory; install the pair first.")
    args.work_dir = (args.work_dir or cache_root() / "train" / args.pair).expanduser()
    shipped = SHIPPED_ROOT / args.pair if catalogue and args.resume else None
    args.out_dir = (args.out_dir or shipped or args.work_dir / "out").expanduser()
    args.data_dir = args.data_dir or (SHIPPED_ROOT / args.pair / "data" if catalogue else args.work_dir / "data")
    args.data_dir = args.data_dir.expanduser()
    if args.resume and args.stage != "draft":
        raise SystemExit("error: --resume continues the shipped draft model: use it with the draft stage.")
    if not args.heldout.is_file():
        raise SystemExit(f"error: no held-out prompts at {args.heldout}.")
    return args


def main(argv: list[str]) -> int:
    from specviz.train import make_logger

    args = resolve(parse_args(argv))
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.device = "cuda" if torch.cuda.is_available() else "cpu"
    log = make_logger(args.work_dir)
    cpu = torch.backends.cpu.get_cpu_capability()
    log(
        f"train --pair {args.pair} {args.stage}: target {args.target}, work {args.work_dir}, out {args.out_dir}, "
        f"device {args.device}, threads {torch.get_num_threads()}, cpu {cpu}"
    )
    from specviz.errors import SpecvizError

    from . import pair_stages, resume

    for stage in STAGES if args.stage == "all" else (args.stage,):
        lr, batch = STAGE_DEFAULTS.get(f"{stage} --resume" if args.resume and stage == "draft" else stage, (None, None))
        stage_args = argparse.Namespace(**{**vars(args), "lr": args.lr or lr, "batch": args.batch or batch})
        t = time.time()
        run_stage = resume.resume_draft if args.resume else getattr(pair_stages, f"stage_{stage}")
        try:
            run_stage(stage_args, args.work_dir, log)
        except SpecvizError as exc:
            raise SystemExit(f"error: {exc}") from exc
        log(f"stage {stage} finished in {(time.time() - t) / 60:.1f} min")
    log(json.dumps({"done": args.stage}))
    return 0
