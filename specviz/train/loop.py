"""The training loop (nanoGPT-like): random windows from a uint16 token memmap, AdamW, cosine LR with warmup,
gradient clipping, a wall-clock budget, periodic evaluation and resumable checkpoints.

Optional distillation: loss = a * CE(data) + (1 - a) * KL(p_teacher || q_student) at temperature 1, teacher in
no_grad. That is the quantity that raises the overlap sum_x min(p(x), q(x)), the expected acceptance alpha at T = 1.

The number of steps is fixed once: either given (`max_steps`) or computed from the budget after timing the first
steps; it is stored in the checkpoint so a resumed run follows the same schedule.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

CALIBRATION_STEPS = 8  # steps timed (after 2 warm-up steps) to turn a time budget into a step count


@dataclass
class RunConfig:
    name: str
    batch_size: int
    context: int
    lr: float
    min_lr: float
    warmup_steps: int
    budget_s: float
    max_steps: int | None = None
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    ckpt_every_s: float = 300.0
    eval_every_s: float = 600.0
    log_every_s: float = 30.0
    seed: int = 1234
    ce_weight: float = 1.0  # a; (1 - a) is the distillation weight (needs a teacher)
    eval_windows: int = 24


def lr_at(step: int, cfg: RunConfig, max_steps: int) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    frac = min(1.0, (step - cfg.warmup_steps) / max(1, max_steps - cfg.warmup_steps))
    return cfg.min_lr + 0.5 * (1 + math.cos(math.pi * frac)) * (cfg.lr - cfg.min_lr)


def get_batch(data: np.ndarray, rng: np.random.Generator, batch: int, context: int, device):
    starts = rng.integers(0, len(data) - context - 1, size=batch)
    xy = np.stack([data[s : s + context + 1].astype(np.int64) for s in starts])  # (B, T+1)
    xy = torch.from_numpy(xy).to(device)
    return xy[:, :-1], xy[:, 1:]  # (B, T), (B, T)


def eval_windows(data: np.ndarray, n: int, context: int) -> np.ndarray:
    """n fixed, evenly spaced validation windows: (n, T+1)."""
    n = max(1, min(n, (len(data) - 1) // (context + 1)))
    starts = np.linspace(0, len(data) - context - 1, n).astype(np.int64)
    return np.stack([data[s : s + context + 1].astype(np.int64) for s in starts])


@torch.no_grad()
def evaluate(model, windows: np.ndarray, device, teacher=None, chunk: int = 8) -> dict:
    """Mean CE of `model` on the windows; with a teacher also the teacher-forced acceptance statistics:
    overlap = mean over positions of sum_x min(p, q) (alpha's expectation at T = 1) and greedy agreement =
    mean [argmax p == argmax q]."""
    was_training = model.training
    model.eval()
    tot = {"ce": 0.0, "overlap": 0.0, "greedy": 0.0, "teacher_ce": 0.0, "n": 0}
    for i in range(0, len(windows), chunk):
        xy = torch.from_numpy(windows[i : i + chunk]).to(device)
        x, y = xy[:, :-1], xy[:, 1:]
        logits = model(input_ids=x).logits.float()  # (B, T, V)
        tot["ce"] += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum").item()
        if teacher is not None:
            tl = teacher(input_ids=x).logits.float()  # (B, T, V)
            p, q = tl.softmax(-1), logits.softmax(-1)
            tot["overlap"] += torch.minimum(p, q).sum(-1).sum().item()
            tot["greedy"] += (tl.argmax(-1) == logits.argmax(-1)).float().sum().item()
            tot["teacher_ce"] += F.cross_entropy(tl.flatten(0, 1), y.flatten(), reduction="sum").item()
        tot["n"] += y.numel()
    model.train(was_training)
    n = tot.pop("n")
    out = {"ce": tot["ce"] / n, "positions": n}
    if teacher is not None:
        out.update(overlap=tot["overlap"] / n, greedy_agreement=tot["greedy"] / n, teacher_ce=tot["teacher_ce"] / n)
    return out


def _atomic_save(obj, path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def train(
    model, data: np.ndarray, val: dict[str, np.ndarray], cfg: RunConfig, run_dir: Path, log, teacher=None, device="cpu"
) -> dict:
    """Train until max_steps or the budget; resumes from run_dir/ckpt.pt. Writes run_dir/final.pt + result.json."""
    run_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path, result_path = run_dir / "ckpt.pt", run_dir / "result.json"
    if result_path.exists():
        log(f"[{cfg.name}] already finished ({result_path}); loading final weights")
        model.load_state_dict(torch.load(run_dir / "final.pt", map_location=device))
        return json.loads(result_path.read_text())

    model.to(device).train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.95),
    )
    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    step, elapsed, max_steps, history = 0, 0.0, cfg.max_steps, []
    if ckpt_path.exists():
        ck = torch.load(ckpt_path, map_location=device, weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        step, elapsed, max_steps, history = ck["step"], ck["elapsed"], ck["max_steps"], ck["history"]
        rng.bit_generator.state = ck["np_rng"]
        torch.set_rng_state(ck["torch_rng"])
        log(f"[{cfg.name}] resumed from step {step} ({elapsed / 60:.1f} min done, max_steps {max_steps})")
    windows = {k: eval_windows(v, cfg.eval_windows, cfg.context) for k, v in val.items()}
    tokens_per_step = cfg.batch_size * cfg.context

    def save_ckpt():
        _atomic_save(
            {
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "step": step,
                "elapsed": elapsed,
                "max_steps": max_steps,
                "history": history,
                "np_rng": rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(),
                "config": asdict(cfg),
            },
            ckpt_path,
        )
        log(f"[{cfg.name}] checkpoint at step {step} -> {ckpt_path}")

    def run_eval():
        t = time.time()
        res = {k: evaluate(model, w, device, teacher) for k, w in windows.items()}
        rec = {"step": step, "elapsed_min": round(elapsed / 60, 2), **{k: v for k, v in res.items()}}
        history.append(rec)
        msg = "  ".join(
            f"{k}: ce {v['ce']:.3f}"
            + (f" overlap {v['overlap']:.3f} greedy {v['greedy_agreement']:.3f}" if "overlap" in v else "")
            for k, v in res.items()
        )
        log(f"[{cfg.name}] eval step {step}: {msg}  ({time.time() - t:.1f}s)")
        return time.time() - t

    last_ckpt = last_eval = last_log = time.time()
    timed = []
    loss_acc, n_acc = 0.0, 0
    while (max_steps is None or step < max_steps) and elapsed < cfg.budget_s:
        t0 = time.time()
        lr = lr_at(step, cfg, max_steps or 10**9)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(data, rng, cfg.batch_size, cfg.context, device)
        logits = model(input_ids=x).logits  # (B, T, V)
        ce = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        loss = ce
        if teacher is not None and cfg.ce_weight < 1.0:
            with torch.no_grad():
                t_logp = teacher(input_ids=x).logits.float().log_softmax(-1)  # (B, T, V)
            s_logp = logits.float().log_softmax(-1)
            kl = F.kl_div(s_logp.flatten(0, 1), t_logp.flatten(0, 1), log_target=True, reduction="batchmean")
            loss = cfg.ce_weight * ce + (1 - cfg.ce_weight) * kl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        dt = time.time() - t0
        elapsed += dt
        loss_acc, n_acc = loss_acc + ce.item(), n_acc + 1
        timed.append(dt)
        if max_steps is None:
            if len(timed) == CALIBRATION_STEPS + 2:
                per_step = float(np.mean(timed[2:]))
                reserve = 0.04 * cfg.budget_s  # evaluations and checkpoints
                max_steps = step + max(1, int((cfg.budget_s - elapsed - reserve) / per_step))
                log(
                    f"[{cfg.name}] calibrated: {per_step:.3f} s/step, {tokens_per_step / per_step:.0f} tok/s "
                    f"-> max_steps {max_steps} for a {cfg.budget_s / 60:.1f} min budget"
                )
        now = time.time()
        if now - last_log >= cfg.log_every_s or step == max_steps:
            rate = tokens_per_step * step / max(elapsed, 1e-9)
            eta = (max_steps - step) * elapsed / step if max_steps else float("nan")
            log(
                f"[{cfg.name}] step {step}/{max_steps} loss {loss_acc / n_acc:.4f} lr {lr:.2e} "
                f"{tokens_per_step / dt:.0f} tok/s (avg {rate:.0f}) elapsed {elapsed / 60:.1f} min "
                f"ETA {eta / 60:.1f} min"
            )
            loss_acc, n_acc, last_log = 0.0, 0, now
        if now - last_eval >= cfg.eval_every_s:
            elapsed += run_eval()
            last_eval = time.time()
        if now - last_ckpt >= cfg.ckpt_every_s:
            if cfg.max_steps is None and max_steps and step < 0.85 * max_steps and len(timed) > 20:
                # budget mode: re-fit the step count to the recent speed (the CPU may be shared)
                per_step = float(np.mean(timed[-50:]))
                new = step + max(1, int((cfg.budget_s * 0.96 - elapsed) / per_step))
                if abs(new - max_steps) > 0.02 * max_steps:
                    log(f"[{cfg.name}] re-fitted max_steps {max_steps} -> {new} ({per_step:.3f} s/step)")
                    max_steps = new
            save_ckpt()
            last_ckpt = time.time()

    if not history or history[-1]["step"] != step:
        run_eval()
    save_ckpt()
    _atomic_save(model.state_dict(), run_dir / "final.pt")
    result = {
        "name": cfg.name,
        "steps": step,
        "max_steps": max_steps,
        "tokens_seen": step * tokens_per_step,
        "train_minutes": round(elapsed / 60, 2),
        "stopped_by": "steps" if step >= (max_steps or 0) else "budget",
        "final_train_loss": history[-1].get("train_loss") if history else None,
        "last_eval": history[-1],
        "history": history,
        "config": asdict(cfg),
        "tokens_per_s": round(step * tokens_per_step / max(elapsed, 1e-9), 1),
        "threads": torch.get_num_threads(),
        "device": str(device),
    }
    result["final_train_loss"] = round(_recent_train_loss(model, data, cfg, device), 4)
    result_path.write_text(json.dumps(result, indent=2))
    log(f"[{cfg.name}] done: {step} steps, {elapsed / 60:.1f} min, train loss {result['final_train_loss']}")
    return result


def _recent_train_loss(model, data, cfg: RunConfig, device) -> float:
    """CE on fixed training windows (same measurement as the validation CE, on seen data)."""
    return evaluate(model, eval_windows(data, cfg.eval_windows, cfg.context), device)["ce"]
