"""Stage `mtp`: train one MTP module (specviz/engine/heads/mtp.py) post hoc on the exported target, then export it.

The target is the shipped one (out_dir/target, read back in float32 as specviz runs it), frozen. Data: the code
documents of the recipe's training split (<work>/mtp/{train,val}.bin). Per window x_0..x_T the target gives its
post-norm features f_0..f_T and its distributions p_t over x_{t+1}. The module reads (f_t, x_{t+1}) and its output
h'_{t+1} drafts x_{t+2} through the target's LM head; chained, it reads its own h' with the next token. Loss: the
cross-entropy against the target's distribution only (DeepSeek-V3's MTP loss, distilled from the target as EAGLE-1's
CE term is; no feature regression), at two depths (depth 2 reads the module's own depth-1 outputs, as a chain does;
its pairs attend causally among themselves, a simplification of the chain's attention to the real pairs):

    CE(p_{t+1}, q(h'_{t+1})) + 0.5 * CE(p_{t+2}, q(M(emb(x_{t+2}), h'_{t+1})))

with EAGLE-1's uniform noise on the input features. Resumable like the other stages (train/heads.py), budgeted by
--mtp-minutes (15 by default: a short run on a 2-core CPU with 1 torch thread); writes out_dir/mtp and
out_dir/mtp/training.json (the run and its held-out teacher-forced agreement at depths 1 and 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .eagle import NOISE_STD
from .heads import EVAL_WINDOWS, HeadJob, budget_options, code_tokens, train_head, write_training
from .loop import eval_windows

DEPTH2_WEIGHT = 0.5
HEAD_DIR = "mtp"


def mtp_losses(module, target, x, noise: float = 0.0):
    """(loss, CE depth 1, CE depth 2, greedy agreement depth 1, depth 2, overlap depth 1) on windows x (B, T+1)."""
    import torch

    with torch.no_grad():
        f = target(input_ids=x, output_hidden_states=True).hidden_states[-1]  # (B, T+1, H) after the final norm
        p = target.lm_head(f).float().softmax(-1)  # (B, T+1, V): row t is the target's distribution over x_{t+1}
        embeds = target.get_input_embeddings()(x)  # (B, T+1, H)
    inputs = f[:, :-1]
    if noise:
        inputs = inputs + (torch.rand_like(inputs) - 0.5) * noise * 512 / inputs.shape[1]
    h1 = module(embeds[:, 1:], inputs)  # (B, T, H) h'_{t+1}: drafts x_{t+2}, judged by p at row t+1
    log_q1 = target.lm_head(module.normed(h1)).float().log_softmax(-1)
    h2 = module(embeds[:, 2:], h1[:, :-1])  # (B, T-1, H) depth 2: reads its own h'_{t+1} with x_{t+2}
    log_q2 = target.lm_head(module.normed(h2)).float().log_softmax(-1)
    p1, p2 = p[:, 1:], p[:, 2:]
    ce1 = -(p1 * log_q1).sum(-1).mean()
    ce2 = -(p2 * log_q2).sum(-1).mean()
    with torch.no_grad():
        greedy1 = (p1.argmax(-1) == log_q1.argmax(-1)).float().mean()
        greedy2 = (p2.argmax(-1) == log_q2.argmax(-1)).float().mean()
        overlap1 = torch.minimum(p1, log_q1.exp()).sum(-1).mean()
    return ce1 + DEPTH2_WEIGHT * ce2, ce1, ce2, greedy1, greedy2, overlap1


def evaluate_mtp(module, target, windows: np.ndarray, device, chunk: int = 8) -> dict:
    """Teacher-forced on held-out windows: CE vs the target and greedy agreement at depths 1 and 2, and the first
    draft's overlap sum_x min(p, q) (its expected acceptance at T = 1)."""
    import torch

    module.eval()
    sums = np.zeros(5)
    with torch.no_grad():
        for i in range(0, len(windows), chunk):
            x = torch.from_numpy(windows[i : i + chunk]).to(device)
            _, *parts = mtp_losses(module, target, x)
            sums += np.array([float(v) for v in parts]) * len(x)
    module.train()
    names = ("ce", "ce_depth2", "greedy_agreement", "greedy_agreement_depth2", "overlap")
    return dict(zip(names, (round(float(v), 4) for v in sums / len(windows))))


def train_mtp(args, work: Path, device, log) -> None:
    """Train (or resume, or skip when finished) the module over the corpus in <work>/corpus, then export it."""
    import torch

    from specviz.engine.heads.mtp import new_mtp
    from specviz.engine.loading.models import load_model

    out = args.out_dir
    train_data, val_data = code_tokens(work, out, HEAD_DIR, log)
    target = load_model(str(out / "target"), torch.device(device), torch.float32)
    module = new_mtp(target, seed=args.seed)
    log(f"mtp: one MTP module, {sum(p.numel() for p in module.parameters()) / 1e6:.2f} M parameters")
    windows = eval_windows(val_data, EVAL_WINDOWS, args.context)
    job = HeadJob(
        name=HEAD_DIR,
        module=module,
        losses=lambda x: mtp_losses(module, target, x, noise=NOISE_STD)[:4],
        part_names=("ce1", "ce2", "greedy1"),
        evaluate=lambda: evaluate_mtp(module, target, windows, device),
        minutes=args.mtp_minutes,
        steps=args.mtp_steps,
        lr=args.mtp_lr,
        notes={
            "loss": f"CE(target's softmax, module's) at depth 1 + {DEPTH2_WEIGHT:g} x at depth 2 (no feature loss)",
            "input_noise": f"uniform, std {NOISE_STD} (EAGLE-1's)",
            "data": "code documents of the training split",
        },
    )
    result = train_head(job, args, work, train_data, device, log)
    export_mtp(module, target, out, result, windows, device, log)


def export_mtp(module, target, out: Path, result: dict, windows, device, log) -> None:
    """out/mtp, read back through specviz's loader and measured again on the held-out windows."""
    import torch

    from specviz.engine.heads.mtp import load_mtp, save_mtp

    directory = save_mtp(module, out / HEAD_DIR)
    shipped = load_mtp(directory, target, "the shipped target").to(torch.float32)
    write_training(directory, result, evaluate_mtp(shipped, target, windows, device), "mtp", out, log)


def card_section(m: dict) -> str:
    """The MTP module beside the pair (train-tiny mtp): its training and held-out teacher-forced agreement at depths 1
    and 2 (depth 2 reads the module's own output), next to EAGLE-1's first draft on the same kind of windows."""
    from specviz import methods

    from .card import curve_words, head_section, trained, wrap

    e = m["mtp"]
    held, first = e["held_out_val_code_shipped"], m.get("eagle", {}).get("held_out_val_code_shipped", {})
    curve = curve_words(e["curve"], lambda p: [p["greedy_agreement"], p["greedy_agreement_depth2"]])
    about = wrap(
        f"A {e['parameters'] / 1e6:.2f} M-parameter MTP module in DeepSeek-V3's style (`python -m specviz run "
        f"--method {methods.MTP}`; docs/engine.md): eh_proj([enorm(emb(x)); hnorm(h)]) → one full decoder block → "
        "its own output norm → the target's LM head, chained across depths on its own output; vLLM serves it through "
        f"a re-export of the target as MiMoForCausalLM. {trained(e)}; input noise {e['input_noise']}."
    )
    rows = [
        ("MTP module, depth 1", held["overlap"], held["greedy_agreement"]),
        ("MTP module, depth 2 (on its own depth-1 output)", None, held["greedy_agreement_depth2"]),  # overlap: n/a
        ("EAGLE-1 head, draft step 1", first.get("overlap"), first.get("greedy_agreement")),
    ]
    return head_section(
        "MTP module (`mtp/`)",
        about,
        "teacher-forced",
        rows,
        f"Greedy agreement at depths 1 / 2 while training: {curve}.",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """This stage's options on train-tiny's command line."""
    what = "one MTP module (DeepSeek-V3 style) post hoc on the exported target's features"
    budget_options(p, HEAD_DIR, what, "the MTP module", "the MTP module's", 15.0, note=" (a short run)")
