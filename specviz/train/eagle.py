"""Stage `eagle`: train an EAGLE-1 head (specviz/engine/heads/eagle.py) on the exported target's features, then export
it.

The target is the shipped one (out_dir/target, read back in float32 as specviz runs it), frozen. Data: the code
documents of the recipe's training split, encoded with the target's tokenizer into <work>/eagle/{train,val}.bin.
Per window x_0..x_T the target gives its post-norm features f_0..f_T (and its logits lm_head(f)); the head reads the
pairs (f_t, x_{t+1}) and predicts g_{t+1}. EAGLE-1's loss (as the EAGLE repository's own training script sets it:
v_w = 1, p_w = 0.1):

    SmoothL1(g_{t+1}, f_{t+1}) + 0.1 * CE(softmax(lm_head(f_{t+1})), log_softmax(lm_head(g_{t+1})))

with EAGLE's uniform noise on the input features (so later draft steps, which read the head's own imperfect
predictions, are less of a surprise). Resumable like the other stages (<work>/eagle/ckpt.pt every --ckpt-minutes),
budgeted in minutes (--eagle-minutes); writes out_dir/eagle (vLLM's EAGLE-1 format) and out_dir/eagle/training.json
(the run and its held-out teacher-forced acceptance).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .heads import EVAL_WINDOWS, HeadJob, budget_options, code_tokens, train_head, write_training
from .loop import eval_windows

FEATURE_WEIGHT, CE_WEIGHT = 1.0, 0.1  # EAGLE-1's v_w and p_w
NOISE_STD = 0.2  # EAGLE-1's AddUniformNoise(std=0.2): U(-0.5, 0.5) * std * 512 / T
HEAD_DIR = "eagle"


def head_losses(head, target, x, noise: float = 0.0):
    """(loss, feature loss, CE, greedy agreement, overlap) of the head on windows x (B, T+1), target frozen."""
    import torch
    import torch.nn.functional as F

    with torch.no_grad():
        f = target(input_ids=x, output_hidden_states=True).hidden_states[-1]  # (B, T+1, H) after the final norm
        p_logits = target.lm_head(f[:, 1:]).float()  # (B, T, V) the target's distribution after each pair
        embeds = target.get_input_embeddings()(x[:, 1:])  # (B, T, H) x_{t+1}
    inputs = f[:, :-1]
    if noise:
        inputs = inputs + (torch.rand_like(inputs) - 0.5) * noise * 512 / inputs.shape[1]
    g = head(embeds, inputs)  # (B, T, H) predicted f_{t+1}
    q_logits = target.lm_head(g).float()  # (B, T, V)
    feature = F.smooth_l1_loss(g.float(), f[:, 1:].float())
    p = p_logits.softmax(-1)
    ce = -(p * q_logits.log_softmax(-1)).sum(-1).mean()
    with torch.no_grad():
        greedy = (p_logits.argmax(-1) == q_logits.argmax(-1)).float().mean()
        overlap = torch.minimum(p, q_logits.softmax(-1)).sum(-1).mean()
    return FEATURE_WEIGHT * feature + CE_WEIGHT * ce, feature, ce, greedy, overlap


def evaluate_head(head, target, windows: np.ndarray, device, chunk: int = 8) -> dict:
    """Teacher-forced on held-out windows: feature loss, CE vs the target, greedy agreement (the first draft's
    greedy acceptance) and overlap sum_x min(p, q) (its expected acceptance at T = 1)."""
    import torch

    head.eval()
    sums = np.zeros(4)
    with torch.no_grad():
        for i in range(0, len(windows), chunk):
            x = torch.from_numpy(windows[i : i + chunk]).to(device)
            _, *parts = head_losses(head, target, x)
            sums += np.array([float(v) for v in parts]) * len(x)
    head.train()
    mean = sums / len(windows)
    return dict(zip(("feature_loss", "ce", "greedy_agreement", "overlap"), (round(float(v), 4) for v in mean)))


def train_eagle(args, work: Path, device, log) -> None:
    """Train (or resume, or skip when finished) the head over the corpus in <work>/corpus, then export it."""
    import torch

    from specviz.engine.heads.eagle import new_eagle_head
    from specviz.engine.loading.models import load_model

    out = args.out_dir
    train_data, val_data = code_tokens(work, out, HEAD_DIR, log)
    target = load_model(str(out / "target"), torch.device(device), torch.float32)
    head = new_eagle_head(target, seed=args.seed)
    log(f"eagle: EAGLE-1 head, {sum(p.numel() for p in head.parameters()) / 1e6:.2f} M parameters, on {out / 'target'}")
    windows = eval_windows(val_data, EVAL_WINDOWS, args.context)
    job = HeadJob(
        name=HEAD_DIR,
        module=head,
        losses=lambda x: head_losses(head, target, x, noise=NOISE_STD)[:4],
        part_names=("smoothL1", "ce", "greedy"),
        evaluate=lambda: evaluate_head(head, target, windows, device),
        minutes=args.eagle_minutes,
        steps=args.eagle_steps,
        lr=args.eagle_lr,
        notes={
            "loss": f"{FEATURE_WEIGHT:g} * SmoothL1(features) + {CE_WEIGHT:g} * CE(target's softmax, head's)",
            "input_noise": f"uniform, std {NOISE_STD} (EAGLE-1)",
            "data": "code documents of the training split",
        },
    )
    result = train_head(job, args, work, train_data, device, log)
    export_head(head, target, out, result, windows, device, log)


def export_head(head, target, out: Path, result: dict, windows, device, log) -> None:
    """out/eagle in vLLM's format, read back through specviz's loader and measured again on the held-out windows."""
    import torch

    from specviz.engine.heads.eagle import load_eagle_head, save_eagle_head

    directory = save_eagle_head(head, out / HEAD_DIR)
    shipped = load_eagle_head(directory, target, "the shipped target").to(torch.float32)
    write_training(directory, result, evaluate_head(shipped, target, windows, device), "eagle", out, log)


def card_section(m: dict) -> str:
    """The EAGLE-1 head beside the pair (train-tiny eagle): its training and held-out teacher-forced acceptance, next
    to the shipped draft's on the same kind of windows."""
    from specviz import methods

    from .card import curve_words, head_section, shipped_draft, trained, wrap

    e, draft = m["eagle"], shipped_draft(m)
    held = e["held_out_val_code_shipped"]
    curve = curve_words(e["curve"])
    about = wrap(
        f"A {e['parameters'] / 1e6:.2f} M-parameter EAGLE-1 head for the target, in vLLM's EAGLE-1 format (`python -m "
        f"specviz run --method {methods.EAGLE}`): fc([emb(x); f]) → one decoder layer without input norm → the "
        f"predicted next post-norm feature, read by the target's own LM head. {trained(e)}; input noise "
        f"{e['input_noise']}."
    )
    rows = [
        ("EAGLE-1 head, as shipped", held["overlap"], held["greedy_agreement"]),
        ("draft model, as shipped", draft.get("overlap"), draft.get("greedy_agreement")),
    ]
    return head_section(
        "EAGLE-1 head (`eagle/`)",
        about,
        "teacher-forced, first draft only",
        rows,
        f"Greedy agreement while training: {curve}.",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """This stage's options on train-tiny's command line."""
    budget_options(
        p, HEAD_DIR, "an EAGLE-1 head on the exported target's features", "the EAGLE-1 head", "the EAGLE-1 head's", 25.0
    )
