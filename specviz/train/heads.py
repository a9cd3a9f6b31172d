"""What every feature-head stage shares (train/<head>.py): the frozen target, the
code tokens, and one resumable, budgeted training loop with periodic held-out evaluation.

A stage gives the loop a `HeadJob`: the module to train, its loss on a batch of windows (B, T+1) and its held-out
evaluation. The loop checkpoints to <work>/<name>/ckpt.pt every --ckpt-minutes (resuming from it), fixes its step
count from the first timed steps so the cosine schedule ends inside the budget, and writes final.pt and result.json
when done (a finished run is skipped: the stage then only exports).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from types import ModuleType

import numpy as np

from specviz import methods

from .corpus import read_jsonl
from .loop import get_batch, lr_at
from .tok import encode_split

HEAD_STAGES = tuple(m.head.stage for m in methods.REGISTRY.values() if m.head)  # one train-tiny stage per kind


def head_stage(stage: str) -> ModuleType:
    """A feature head's training stage (train/<stage>.py): its train_<stage>, add_arguments and card_section."""
    return import_module(f"specviz.train.{stage}")


def budget_options(
    p: argparse.ArgumentParser, stage: str, about: str, what: str, whose: str, minutes: float, note: str = ""
) -> argparse._ArgumentGroup:
    """A head stage's option group on train-tiny's command line, with its training budget (--STAGE-minutes,
    --STAGE-steps, --STAGE-lr); the stage adds any options of its own to the group returned."""
    g = p.add_argument_group(f"stage {stage}", f"{about} (not part of `all`)")
    g.add_argument(f"--{stage}-minutes", type=float, default=minutes, help=f"training budget of {what}{note}")
    g.add_argument(f"--{stage}-steps", type=int, default=None, help=f"fix {whose} step count instead")
    g.add_argument(f"--{stage}-lr", type=float, default=1e-3, help=f"peak learning rate of {what}")
    return g


EVAL_WINDOWS = 32


def code_tokens(work: Path, out: Path, name: str, log) -> tuple[np.ndarray, np.ndarray]:
    """The code documents of the training split and of val_code, encoded with the shipped target's tokenizer into
    <work>/<name>/{train,val}.bin (once)."""
    data = work / name
    data.mkdir(parents=True, exist_ok=True)
    for split, source in (("train", "train"), ("val", "val_code")):
        path = data / f"{split}.bin"
        if not path.exists():
            docs = [d for d in read_jsonl(work / "corpus" / f"{source}.jsonl") if d["kind"] == "code"]
            log(f"{name}: tokens {split}: {encode_split(out / 'target', docs, path)}")
    load = lambda s: np.memmap(data / f"{s}.bin", dtype=np.uint16, mode="r")  # noqa: E731
    return load("train"), load("val")


def continuation_tokens(work: Path, out: Path, name: str, target, prefixes: np.ndarray, tokens: int, args, device, log):
    """About `tokens` tokens the target wrote itself after prefixes taken from `prefixes` (half greedy, half sampled;
    train/generate.py), generated once into <work>/<name>/gen.bin: the text a head drafts for while decoding."""
    from .generate import target_continuations
    from .tok import EOS, PAD, load_tokenizer

    path = work / name / "gen.bin"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tok = load_tokenizer(out / "target")
        prefix = args.context // 8
        flat = target_continuations(
            target,
            prefixes,
            tokens=tokens,
            prefix_len=prefix,
            new_tokens=args.context - prefix,
            batch=64,
            seed=args.seed + 3,
            eos=tok.convert_tokens_to_ids(EOS),
            pad=tok.convert_tokens_to_ids(PAD),
            device=device,
            log=lambda line: log(f"{name}: {line}"),
        )
        tmp = path.with_suffix(".tmp")
        flat.tofile(tmp)
        tmp.replace(path)
        log(f"{name}: {len(flat)} tokens written by the target after code prefixes")
    return np.memmap(path, dtype=np.uint16, mode="r")


class Schedule:
    """The fields lr_at reads (loop.RunConfig's): peak, floor, warm-up."""

    def __init__(self, lr: float, min_lr: float, warmup_steps: int):
        self.lr, self.min_lr, self.warmup_steps = lr, min_lr, warmup_steps


@dataclass
class HeadJob:
    """One head's training: `losses(x)` -> (loss, *parts) on windows x (B, T+1), parts named by `part_names` (for
    the log); `evaluate()` -> the held-out numbers recorded in the curve."""

    name: str  # the stage, its work subdirectory and its log prefix
    module: object  # torch.nn.Module
    losses: Callable
    part_names: tuple[str, ...]
    evaluate: Callable[[], dict]
    minutes: float
    steps: int | None
    lr: float
    notes: dict  # what result.json says about the loss and the data
    clip: float = 0.5


def train_head(job: HeadJob, args, work: Path, train_data: np.ndarray, device, log) -> dict:
    """Train (or resume, or skip when finished) the job's module; the result.json record (without the stage's own
    notes), with the held-out curve under "history". The module holds the trained weights afterwards."""
    import torch

    run, module, name = work / job.name, job.module, job.name
    run.mkdir(parents=True, exist_ok=True)
    module.train()
    params = [p for p in module.parameters() if p.requires_grad]
    n_params = sum(p.numel() for p in params)
    opt = torch.optim.AdamW(params, lr=job.lr, betas=(0.9, 0.95), weight_decay=0.0)
    batch, context = args.batch_size, args.context
    budget_s = job.minutes * 60
    cfg = Schedule(job.lr, job.lr / 10, warmup_steps=50)
    rng = np.random.default_rng(args.seed + 7)
    torch.manual_seed(args.seed + 7)
    state = {"step": 0, "elapsed": 0.0, "max_steps": job.steps, "history": []}
    ckpt, result_path = run / "ckpt.pt", run / "result.json"
    if result_path.exists():
        log(f"{name}: already trained ({result_path})")
        module.load_state_dict(torch.load(run / "final.pt", map_location=device))
        return json.loads(result_path.read_text())
    if ckpt.exists():
        saved = torch.load(ckpt, map_location=device, weights_only=False)
        module.load_state_dict(saved["head"])
        opt.load_state_dict(saved["optimizer"])
        rng.bit_generator.state = saved["np_rng"]
        torch.set_rng_state(saved["torch_rng"])
        state = saved["state"]
        log(f"{name}: resumed at step {state['step']} ({state['elapsed'] / 60:.1f} min done)")

    def save() -> None:
        tmp = ckpt.with_suffix(".tmp")
        torch.save(
            {
                "head": module.state_dict(),
                "optimizer": opt.state_dict(),
                "np_rng": rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(),
                "state": state,
            },
            tmp,
        )
        os.replace(tmp, ckpt)

    def record() -> None:
        module.eval()
        state["history"].append({"step": state["step"], "minutes": round(state["elapsed"] / 60, 2), **job.evaluate()})
        module.train()

    if not state["history"]:
        record()
        log(f"{name}: before training {json.dumps(state['history'][-1])}")
    timed, last_ckpt, last_log, last_eval = [], time.time(), time.time(), time.time()
    acc, n_acc = np.zeros(len(job.part_names) + 1), 0
    while (state["max_steps"] is None or state["step"] < state["max_steps"]) and state["elapsed"] < budget_s:
        t0 = time.time()
        lr = lr_at(state["step"], cfg, state["max_steps"] or 10**9)
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = get_batch(train_data, rng, batch, context, device)
        x = torch.cat([x, y[:, -1:]], dim=1)  # (B, T+1): the window with its last token
        loss, *parts = job.losses(x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, job.clip)
        opt.step()
        acc += [float(v.detach()) for v in (loss, *parts)]  # waits for the device: the step's time is all in dt
        state["step"] += 1
        dt = time.time() - t0
        state["elapsed"] += dt
        timed.append(dt)
        n_acc += 1
        if state["max_steps"] is None and len(timed) == 10:
            per_step = float(np.mean(timed[2:]))
            state["max_steps"] = state["step"] + int((budget_s * 0.95 - state["elapsed"]) / per_step)
            log(f"{name}: {per_step:.2f} s/step -> {state['max_steps']} steps in {job.minutes:g} min")
        now = time.time()
        if now - last_log >= 60:
            mean = acc / max(1, n_acc)
            named = " ".join(f"{part} {v:.4f}" for part, v in zip(("loss", *job.part_names), mean))
            minutes = state["elapsed"] / 60
            log(f"{name}: step {state['step']}/{state['max_steps']} {named} lr {lr:.1e} {minutes:.1f} min")
            acc[:], n_acc, last_log = 0, 0, now
        if now - last_eval >= args.eval_minutes * 60:
            record()
            log(f"{name}: eval {json.dumps(state['history'][-1])}")
            last_eval = time.time()
        if now - last_ckpt >= args.ckpt_minutes * 60:
            save()
            last_ckpt = time.time()
    record()
    save()
    torch.save(module.state_dict(), run / "final.pt")
    result = {
        "parameters": n_params,
        "steps": state["step"],
        "train_minutes": round(state["elapsed"] / 60, 2),
        "budget_minutes": job.minutes,
        "tokens_seen": state["step"] * batch * context,
        "batch": batch,
        "context": context,
        "lr": job.lr,
        "threads": torch.get_num_threads(),
        "device": str(device),
        **job.notes,
        "history": state["history"],
    }
    result_path.write_text(json.dumps(result, indent=2))
    log(f"{name}: trained {state['step']} steps in {state['elapsed'] / 60:.1f} min: {json.dumps(state['history'][-1])}")
    return result


def write_training(directory: Path, result: dict, held_out: dict, manifest_key: str, out: Path, log) -> None:
    """<directory>/training.json (the run and its held-out numbers as shipped), and the pair manifest's section for
    the model card (card.py), with the curve under "curve"."""
    training = {**result, "held_out_val_code_shipped": held_out}
    (directory / "training.json").write_text(json.dumps(training, indent=2) + "\n")
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        manifest[manifest_key] = {k: v for k, v in training.items() if k != "history"}
        manifest[manifest_key]["curve"] = training["history"]
        manifest_path.write_text(json.dumps(manifest, indent=2))
    size = sum(p.stat().st_size for p in directory.iterdir()) / 1e6
    log(f"{manifest_key}: exported {directory} ({size:.2f} MB); held out, as shipped: {json.dumps(held_out)}")
