"""Stage `eagle3`: train an EAGLE-3 head (specviz/engine/heads/eagle3.py) with training-time test, then export it.

The target is the shipped one (out_dir/target, read in float32), frozen; the data are the EAGLE-1 stage's tokens
(<work>/eagle/{train,val}.bin: the code documents of the training split and of val_code). The draft vocabulary is the
N most frequent tokens of the training split (the draft's token_counts.json, engine/loading/vocab.py), N =
--eagle3-vocab.

Training-time test (EAGLE-3, `eagle/traineagle3/cnets.py`): per window x_0..x_T the head is unrolled K = 4 steps. Step
0 reads fc of the target's states at the layers read, h_t, with x_{t+1}; step k reads its own step k-1 output s at the
same column with x_{t+1+k}, sitting at position t + k, and attends to the step-0 pairs at columns <= t and to its own
steps 1..k at column t: exactly what a draft step k sees at inference (the committed pairs, then its own drafts). The
loss is

    sum_k 0.8^k * CE(softmax of the target's logits at row t+1+k restricted to the draft vocabulary, head's logits)

over the columns where row t+1+k exists; no feature loss (the head predicts tokens, not the target's features).
Resumable like the other head stages (train/heads.py's loop), budgeted by --eagle3-minutes; writes out_dir/eagle3
(vLLM's EAGLE-3 format) and out_dir/eagle3/training.json (the run, and its held-out teacher-forced acceptance per step).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .eagle import HEAD_DIR as EAGLE_DIR
from .heads import EVAL_WINDOWS, HeadJob, budget_options, code_tokens, continuation_tokens, train_head, write_training
from .loop import eval_windows

HEAD_DIR = "eagle3"
TTT_STEPS = 4  # K of training-time test
DECAY = 0.8  # the weight of step k is DECAY ** k


def ttt_mask(columns: int, step: int, dtype, device):
    """(1, 1, T, (step + 1) * T) additive mask of unrolled step `step` >= 1: column t sees the step-0 pairs at columns
    <= t and its own steps 1..step at column t."""
    import torch

    blocks = [torch.ones(columns, columns, dtype=torch.bool, device=device).tril()]
    blocks += [torch.eye(columns, dtype=torch.bool, device=device)] * step
    allowed = torch.cat(blocks, dim=1)  # (T, (step + 1) T)
    mask = torch.zeros(allowed.shape, dtype=dtype, device=device)
    return mask.masked_fill(~allowed, torch.finfo(dtype).min)[None, None]


def init_from_target(head, target) -> None:
    """Start the head from the target's own weights instead of noise (a short CPU budget cannot learn them): the
    decoder layer is the target's last one, its q/k/v reading the hidden half through that layer's weights and the
    token half through the first layer's (the layer that reads embeddings); fc passes the deepest state read through;
    norm and lm_head are the target's final norm and its LM head's rows for the draft vocabulary."""
    import torch

    layers = target.model.layers
    first, last, width = layers[0], layers[-1], target.config.hidden_size
    mid = head.midlayer
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj"):
            both = getattr(mid.self_attn, name).weight  # (out, 2H): [emb half | hidden half]
            both[:, :width].copy_(getattr(first.self_attn, name).weight)
            both[:, width:].copy_(getattr(last.self_attn, name).weight)
        mid.self_attn.o_proj.weight.copy_(last.self_attn.o_proj.weight)
        for name in ("gate_proj", "up_proj", "down_proj"):
            getattr(mid.mlp, name).weight.copy_(getattr(last.mlp, name).weight)
        mid.input_layernorm.weight.copy_(first.input_layernorm.weight)
        mid.hidden_norm.weight.copy_(last.input_layernorm.weight)
        mid.post_attention_layernorm.weight.copy_(last.post_attention_layernorm.weight)
        head.fc.weight.zero_()
        head.fc.weight[:, -width:].copy_(torch.eye(width))  # (H, n H): h = the deepest state read
        head.norm.weight.copy_(target.model.norm.weight)
        head.lm_head.weight.copy_(target.lm_head.weight[head.target_ids])


def unroll(head, target, x, steps: int = TTT_STEPS):
    """The head unrolled `steps` steps on windows x (B, T+1), target frozen: per step k the head's draft logits
    (B, T - k, N) and the target's logits at rows t+1+k, (B, T - k, V), for the columns where they exist."""
    import torch

    with torch.no_grad():
        states = target(input_ids=x, output_hidden_states=True).hidden_states
        fused = torch.cat([states[i][:, :-1] for i in head.layers_read], dim=-1)  # (B, T, n H) rows 0..T-1
        p_logits = target.lm_head(states[-1][:, 1:]).float()  # (B, T, V) rows 1..T
        embeds = target.get_input_embeddings()(x[:, 1:])  # (B, T, H) x_1..x_T
    batch, columns = embeds.shape[:2]
    cache = head.new_cache()
    hidden = head.fuse(fused)  # (B, T, H)
    out = []
    for k in range(steps):
        tokens = torch.cat([embeds[:, k:], embeds.new_zeros(batch, k, embeds.shape[-1])], dim=1)  # x_{t+1+k}, padded
        positions = torch.arange(k, columns + k, device=x.device)[None]  # (1, T)
        mask = ttt_mask(columns, k, hidden.dtype, x.device) if k else None
        normed, hidden = head(tokens, hidden, cache, positions=positions, mask=mask)
        out.append((head.lm_head(normed[:, : columns - k]).float(), p_logits[:, k:]))
    return out


def ttt_losses(head, target, x, steps: int = TTT_STEPS):
    """(loss, CE of step 0, greedy agreement of step 0 within the draft vocabulary) of training-time test."""
    import torch

    vocab_ids = head.target_ids
    loss, first = 0.0, None
    for k, (q_logits, p_logits) in enumerate(unroll(head, target, x, steps)):
        p = p_logits[..., vocab_ids].softmax(-1)  # (B, T-k, N) the target's softmax on the draft vocabulary
        ce = -(p * q_logits.log_softmax(-1)).sum(-1).mean()
        loss = loss + DECAY**k * ce
        if first is None:
            with torch.no_grad():
                first = (ce, (p.argmax(-1) == q_logits.argmax(-1)).float().mean())
    return (loss, *first)


def evaluate_head3(head, target, windows: np.ndarray, device, chunk: int = 8) -> dict:
    """Teacher-forced on held-out windows, per unrolled step k (the head's own features after step 0, the window's
    tokens): greedy agreement with the target's argmax over its whole vocabulary (a token outside the draft
    vocabulary counts as a miss) and overlap sum_x min(p, q) with q scattered to the target's ids (alpha at T = 1)."""
    import torch

    sums = np.zeros((2, TTT_STEPS))
    with torch.no_grad():
        for i in range(0, len(windows), chunk):
            x = torch.from_numpy(windows[i : i + chunk]).to(device)
            for k, (q_small, p_logits) in enumerate(unroll(head, target, x)):
                q = torch.zeros_like(p_logits)
                q[..., head.target_ids] = q_small.softmax(-1)  # (B, T-k, V) zero outside the draft vocabulary
                p = p_logits.softmax(-1)
                greedy = (head.target_ids[q_small.argmax(-1)] == p_logits.argmax(-1)).float().mean()
                sums[:, k] += np.array([float(greedy), float(torch.minimum(p, q).sum(-1).mean())]) * len(x)
    mean = sums / len(windows)
    return {
        "greedy_agreement": round(float(mean[0, 0]), 4),
        "overlap": round(float(mean[1, 0]), 4),
        "greedy_by_step": [round(float(v), 4) for v in mean[0]],
        "overlap_by_step": [round(float(v), 4) for v in mean[1]],
    }


def train_eagle3(args, work: Path, device, log) -> None:
    """Train (or resume, or skip when finished) the head, then export it."""
    import torch

    from specviz.engine.heads.eagle3 import new_head3
    from specviz.engine.loading.models import load_model
    from specviz.engine.loading.vocab import load_counts

    out = args.out_dir
    train_data, val_data = code_tokens(work, out, EAGLE_DIR, log)  # the EAGLE-1 stage's tokens
    target = load_model(str(out / "target"), torch.device(device), torch.float32)
    counts = load_counts(out / "draft")
    if counts is None:
        raise SystemExit(f"eagle3: no token counts in {out / 'draft'}: run `train-tiny vocab` first")
    vocab_ids = counts.top_ids(args.eagle3_vocab, target.config.vocab_size)
    head = new_head3(target, vocab_ids, seed=args.seed)
    if args.eagle3_init == "target":
        init_from_target(head, target)
    if args.eagle3_gen_tokens:
        generated = continuation_tokens(
            work, out, HEAD_DIR, target, train_data, args.eagle3_gen_tokens, args, device, log
        )
        train_data = np.concatenate([np.asarray(train_data), np.asarray(generated)])  # windows from both
    n_params = sum(p.numel() for p in head.parameters())
    log(
        f"eagle3: EAGLE-3 head, {n_params / 1e6:.2f} M parameters, layers {list(head.layers_read)}, draft vocabulary "
        f"{len(vocab_ids)}, on {out / 'target'}"
    )
    windows = eval_windows(val_data, EVAL_WINDOWS, args.context)
    job = HeadJob(
        name=HEAD_DIR,
        module=head,
        losses=lambda x: ttt_losses(head, target, x),
        part_names=("ce0", "greedy0"),
        evaluate=lambda: evaluate_head3(head, target, windows, device),
        minutes=args.eagle3_minutes,
        steps=args.eagle3_steps,
        lr=args.eagle3_lr,
        notes={
            "loss": f"training-time test: sum_k {DECAY:g}^k CE(target's softmax on the draft vocabulary, head's), "
            f"k < {TTT_STEPS}; no feature loss",
            "draft_vocab_size": len(vocab_ids),
            "layers_read": list(head.layers_read),
            "init": args.eagle3_init,
            "data": "code documents of the training split"
            + (
                f" and {args.eagle3_gen_tokens:,} tokens the target wrote after their prefixes"
                if args.eagle3_gen_tokens
                else ""
            ),
        },
    )
    result = train_head(job, args, work, train_data, device, log)
    export_head3(head, target, out, result, windows, device, log)


def export_head3(head, target, out: Path, result: dict, windows, device, log) -> None:
    """out/eagle3 in vLLM's format, read back through specviz's loader and measured again on the held-out windows."""
    import torch

    from specviz.engine.heads.eagle3 import load_head3, save_head3

    directory = save_head3(head, out / HEAD_DIR)
    shipped = load_head3(directory, target, "the shipped target").to(torch.float32)
    write_training(directory, result, evaluate_head3(shipped, target, windows, device), HEAD_DIR, out, log)


def card_section(m: dict) -> str:
    """The EAGLE-3 head beside the pair (train-tiny eagle3): its training-time test and held-out teacher-forced
    acceptance per draft step (steps after the first read the head's own output), next to EAGLE-1's first step."""
    from specviz import methods

    from .card import curve_words, head_section, trained, wrap

    e = m["eagle3"]
    held, first = e["held_out_val_code_shipped"], m.get("eagle", {}).get("held_out_val_code_shipped", {})
    curve = curve_words(e["curve"])
    about = wrap(
        f"A {e['parameters'] / 1e6:.2f} M-parameter EAGLE-3 head for the target, in vLLM's EAGLE-3 format "
        f"(`LlamaForCausalLMEagle3`; `python -m specviz run --method {methods.EAGLE3}`): fc over the target's hidden "
        f"states {', '.join(map(str, e['layers_read']))} (pre-norm) → one decoder layer over [norm(emb); norm(h)] → "
        f"its own LM head over a {e['draft_vocab_size']}-token draft vocabulary (d2t to the target's ids); later "
        f"draft steps read the head's own pre-norm output. {_started(e)}{trained(e)}."
    )
    rows = [
        (f"EAGLE-3 head, draft step {k + 1}", overlap, greedy)
        for k, (overlap, greedy) in enumerate(zip(held["overlap_by_step"], held["greedy_by_step"]))
    ]
    rows += [("EAGLE-1 head, draft step 1", first.get("overlap"), first.get("greedy_agreement"))]
    return head_section(
        "EAGLE-3 head (`eagle3/`)",
        about,
        "teacher-forced tokens",
        rows,
        f"Greedy agreement (draft step 1) while training: {curve}.",
    )


def _started(e: dict) -> str:
    """How the EAGLE-3 head was initialised (train/eagle3.py init_from_target), when not from noise."""
    if e.get("init") != "target":
        return ""
    return (
        "Started from the target's own weights: its last decoder layer (the first layer's q/k/v for the token half), "
        "fc passing the deepest state read through, its final norm and its LM head's rows for the draft vocabulary. "
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """This stage's options on train-tiny's command line."""
    about = "an EAGLE-3 head trained with training-time test, on the eagle stage's tokens"
    g = budget_options(p, HEAD_DIR, about, "the EAGLE-3 head", "the EAGLE-3 head's", 45.0)
    g.add_argument("--eagle3-vocab", type=int, default=2048, help="the EAGLE-3 head's draft vocabulary size")
    g.add_argument(
        "--eagle3-init",
        choices=("target", "random"),
        default="target",
        help="start the EAGLE-3 head from the target's weights",
    )
    g.add_argument(
        "--eagle3-gen-tokens",
        type=int,
        default=400_000,
        help="also train the EAGLE-3 head on this many tokens the target wrote",
    )
