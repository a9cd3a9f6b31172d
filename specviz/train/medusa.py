"""Stage `medusa`: train K = 4 Medusa heads (specviz/engine/heads/medusa.py) on the exported target's features, export
them.

The target is the shipped one (out_dir/target, read back in float32 as specviz runs it), frozen. Data: the code
documents of the recipe's training split (<work>/medusa/{train,val}.bin). Per window x_0..x_T the target gives its
post-norm features h_0..h_T and its distributions p_t = softmax(lm_head(h_t)) over x_{t+1}. Head i reads h_t and
guesses x_{t+2+i}; its label is the target's own distribution there, p_{t+1+i} (read with the corpus' tokens as the
prefix), not the corpus token: what a verify pass accepts is what the target would say, so the heads are distilled
from it (Medusa-1 trains on tokens, Medusa-2's self-distillation on the target's distribution). Loss (Medusa's
per-head decay, λ = 0.8):

    sum_i 0.8^i * CE(p_{t+1+i}, softmax(lm_head(block_i(h_t))))

Only the residual blocks train: the one LM head every head shares is a frozen copy of the target's (vLLM's
`original_lm_head`), which keeps the shipped heads at ~4.5 MB instead of ~17 MB with four LM heads of their own.
Resumable like the other stages (train/heads.py), budgeted by --medusa-minutes; writes out_dir/medusa (vLLM's Medusa
format) and out_dir/medusa/training.json (the run and its held-out teacher-forced per-head agreement).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .heads import EVAL_WINDOWS, HeadJob, budget_options, code_tokens, train_head, write_training
from .loop import eval_windows

HEADS = 4
DECAY = 0.8  # Medusa's medusa_decay_coefficient: head i's loss weighs 0.8^i
HEAD_DIR = "medusa"


def medusa_losses(heads, target, x):
    """(loss, CE per head (K,), greedy agreement per head (K,), overlap per head (K,)) of the heads on windows x
    (B, T+1), the target frozen. Head i at row t is scored against the target's distribution at row t+1+i."""
    import torch

    with torch.no_grad():
        h = target(input_ids=x, output_hidden_states=True).hidden_states[-1]  # (B, T+1, H) after the final norm
        p_logits = target.lm_head(h).float()  # (B, T+1, V): row t is the target's distribution over x_{t+1}
    q_logits = heads(h[:, : x.shape[1] - heads.num_heads]).float()  # (K, B, R, V): the R = T+1-K rows t whose
    #                                                                  row t+1+i exists for every head i
    n = q_logits.shape[2]
    ces, greedy, overlap = [], [], []
    for i in range(heads.num_heads):
        p = p_logits[:, 1 + i : 1 + i + n].softmax(-1)  # (B, R, V) the target at row t+1+i: over x_{t+2+i}
        log_q = q_logits[i].log_softmax(-1)
        ces.append(-(p * log_q).sum(-1).mean())
        with torch.no_grad():
            greedy.append((p.argmax(-1) == log_q.argmax(-1)).float().mean())
            overlap.append(torch.minimum(p, log_q.exp()).sum(-1).mean())
    ce = torch.stack(ces)  # (K,)
    weights = torch.tensor([DECAY**i for i in range(heads.num_heads)], device=ce.device)
    return (weights * ce).sum(), ce, torch.stack(greedy), torch.stack(overlap)


def evaluate_medusa(heads, target, windows: np.ndarray, device, chunk: int = 8) -> dict:
    """Teacher-forced on held-out windows, per head: CE vs the target, greedy agreement (how often head i's argmax is
    the target's, with the true prefix) and overlap sum_x min(p, q). Head i's draft is accepted only when heads
    0..i-1 were, so the chain's acceptance is below these."""
    import torch

    heads.eval()
    sums = np.zeros((3, heads.num_heads))
    with torch.no_grad():
        for i in range(0, len(windows), chunk):
            x = torch.from_numpy(windows[i : i + chunk]).to(device)
            _, *parts = medusa_losses(heads, target, x)
            sums += np.stack([v.cpu().numpy() for v in parts]) * len(x)
    heads.train()
    mean = sums / len(windows)
    return {
        name: [round(float(v), 4) for v in row]
        for name, row in zip(("ce", "greedy_agreement", "overlap"), mean, strict=True)
    }


def train_medusa(args, work: Path, device, log) -> None:
    """Train (or resume, or skip when finished) the heads over the corpus in <work>/corpus, then export them."""
    import torch

    from specviz.engine.heads.medusa import new_medusa
    from specviz.engine.loading.models import load_model

    out = args.out_dir
    train_data, val_data = code_tokens(work, out, HEAD_DIR, log)
    target = load_model(str(out / "target"), torch.device(device), torch.float32)
    heads = new_medusa(target, HEADS)
    heads.lm_heads.requires_grad_(False)  # the target's own LM head, shared and frozen
    trained = sum(p.numel() for p in heads.parameters() if p.requires_grad)
    log(f"medusa: {HEADS} Medusa heads, {trained / 1e6:.2f} M trained parameters, on {out / 'target'}")
    windows = eval_windows(val_data, EVAL_WINDOWS, args.context)

    def losses(x):
        loss, ce, greedy, _ = medusa_losses(heads, target, x)
        return loss, ce[0], ce[-1], greedy[0], greedy[-1]

    job = HeadJob(
        name=HEAD_DIR,
        module=heads,
        losses=losses,
        part_names=("ce0", f"ce{HEADS - 1}", "greedy0", f"greedy{HEADS - 1}"),
        evaluate=lambda: evaluate_medusa(heads, target, windows, device),
        minutes=args.medusa_minutes,
        steps=args.medusa_steps,
        lr=args.medusa_lr,
        notes={
            "heads": HEADS,
            "loss": f"sum_i {DECAY:g}^i * CE(target's softmax at row t+1+i, head i's on h_t)",
            "lm_head": "one, shared by every head: a frozen copy of the target's (original_lm_head)",
            "data": "code documents of the training split",
        },
    )
    result = train_head(job, args, work, train_data, device, log)
    export_medusa(heads, target, out, result, windows, device, log)


def export_medusa(heads, target, out: Path, result: dict, windows, device, log) -> None:
    """out/medusa in vLLM's format, read back through specviz's loader and measured again on the held-out windows."""
    import torch

    from specviz.engine.heads.medusa import load_medusa, save_medusa

    directory = save_medusa(heads, out / HEAD_DIR)
    shipped = load_medusa(directory, target, "the shipped target").to(torch.float32)
    write_training(directory, result, evaluate_medusa(shipped, target, windows, device), "medusa", out, log)


def card_section(m: dict) -> str:
    """The Medusa heads beside the pair (train-tiny medusa): their training and held-out teacher-forced agreement per
    head, next to the shipped draft's first-draft agreement on the same kind of windows."""
    from specviz import methods

    from .card import curve_words, head_section, shipped_draft, trained, wrap

    e, draft = m["medusa"], shipped_draft(m)
    held = e["held_out_val_code_shipped"]
    curve = curve_words(e["curve"], lambda point: point["greedy_agreement"])
    about = wrap(
        f"{e['heads']} Medusa heads for the target ({e['parameters'] / 1e6:.2f} M trained parameters), in vLLM's "
        f"Medusa format (`python -m specviz run --method {methods.MEDUSA}`): head i reads the target's post-norm "
        "feature h_t through its own residual block (x + SiLU(Wx + b)) and guesses x_(t+2+i), without seeing the "
        f"other heads' guesses; the LM head: {e['lm_head']}. {trained(e)}."
    )
    rows = [
        (f"head {i} (guesses x_(t+{i + 2}))", overlap, greedy)
        for i, (overlap, greedy) in enumerate(zip(held["overlap"], held["greedy_agreement"], strict=True))
    ]
    rows += [("draft model, as shipped (its first draft)", draft.get("overlap"), draft.get("greedy_agreement"))]
    heads = " / ".join(str(i) for i in range(e["heads"]))
    return head_section(
        "Medusa heads (`medusa/`)",
        about,
        "teacher-forced, each head alone",
        rows,
        f"Greedy agreement of heads {heads} while training: {curve}. A head's draft counts only when every head "
        "before it was accepted, so a chain's acceptance is below these.",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """This stage's options on train-tiny's command line."""
    budget_options(
        p,
        HEAD_DIR,
        "K = 4 Medusa heads on the exported target's features",
        "the Medusa heads",
        "the Medusa heads'",
        25.0,
    )
