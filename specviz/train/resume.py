"""`train --pair NAME draft --resume`: train the draft that ships a little more, and ship it only if it got better.

Each run starts from the shipped draft (`<out>/draft`: its trained layers, its config and token counts, the target's
embeddings put back as the engine does), on the answer store (train/answer_store.py, hard labels), over the ids the
engine keeps for it (token_counts.json's `recommended` most frequent: the vocabulary never changes between runs). The
schedule (warm-up, cosine) is planned from the minutes given, as train_loop plans any run. The held-out agreement
(the target's greedy answers to the held-out prompts, teacher-forced) is measured before and after; the shipped layers
are replaced only when it rose: the held-out set decides, never the training loss. Every run, shipped or not, is
a row in training.json's `runs` and in the card's table (date, data size, minutes, agreement before and after).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

RUNS_START = "<!-- resumed runs: start (train --pair NAME draft --resume writes this table) -->"
RUNS_END = "<!-- resumed runs: end -->"
METRIC = "greedy_agreement"


def load_shipped_draft(folder: Path, target):
    """The shipped draft as a float32 LlamaForCausalLM: its layers and norm from layers.safetensors, the target's
    embeddings (frozen, tied LM head)."""
    import torch
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    from specviz.engine.loading.shipped import EMBEDDINGS, LAYERS_FILE
    from specviz.errors import SpecvizError

    if not (folder / LAYERS_FILE).is_file():
        raise SpecvizError(
            f"{folder} ships no draft ({LAYERS_FILE} missing): train one first (`draft` without --resume)."
        )
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(tie_word_embeddings=True)
    config = LlamaConfig(
        **{k: v for k, v in config.items() if k not in ("model_type", "transformers_version", "dtype")}
    )
    draft = LlamaForCausalLM(config).float()
    tensors = {k: v.to(torch.float32) for k, v in load_file(str(folder / LAYERS_FILE)).items()}
    tensors[EMBEDDINGS] = target.get_input_embeddings().weight.detach().to(torch.float32)
    missing, unexpected = draft.load_state_dict(tensors, strict=False)
    if unexpected or [k for k in missing if k != "lm_head.weight"]:
        raise SpecvizError(
            f"{folder / LAYERS_FILE} does not fit its config: missing {missing}, unexpected {unexpected}"
        )
    draft.tie_weights()
    draft.model.embed_tokens.weight.requires_grad_(False)
    return draft


def shipped_vocab(folder: Path, vocab: int) -> np.ndarray:
    """(N,) the ids the engine keeps for the shipped draft: token_counts.json's `recommended` most frequent."""
    from specviz.engine.loading.vocab import load_counts

    counts = load_counts(folder)
    if counts is None or not counts.recommended:
        return np.arange(vocab, dtype=np.int64)
    return counts.top_ids(counts.recommended, vocab).numpy()


def should_ship(before: dict, after: dict) -> bool:
    """Whether the trained draft replaces the shipped one: only when its held-out agreement rose."""
    return after[METRIC] > before[METRIC]


def as_shipped(draft, evaluate) -> dict:
    """The held-out measurement of the draft with its trained tensors rounded to bfloat16, as they would ship (the
    run's before is measured on the shipped bfloat16 layers: rounding alone moved smollm2's agreement by 0.003)."""
    import torch

    with torch.no_grad():
        for p in draft.parameters():
            if p.requires_grad:
                p.copy_(p.to(torch.bfloat16).to(p.dtype))
    draft.eval()
    return evaluate()


def save_layers(draft, folder: Path) -> None:
    """The draft's trained tensors (no embeddings), bfloat16, over the shipped layers file (atomically)."""
    import torch
    from safetensors.torch import load_file, save_file

    from specviz.engine.loading.shipped import LAYERS_FILE

    names = set(load_file(str(folder / LAYERS_FILE)))
    state = draft.state_dict()
    kept = {k: state[k].detach().to(torch.bfloat16).contiguous() for k in names}  # the same tensors as shipped
    tmp = folder / f".{LAYERS_FILE}.tmp"
    save_file(kept, str(tmp), metadata={"format": "pt"})
    os.replace(tmp, folder / LAYERS_FILE)


def record_run(folder: Path, card: Path, row: dict) -> None:
    """The run as a row of training.json's `runs` and of the card's table of resumed runs."""
    path = folder / "training.json"
    body = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    body["runs"] = body.get("runs", []) + [row]
    path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    table = runs_table(body["runs"])
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    if RUNS_START in text and RUNS_END in text:
        head, rest = text.split(RUNS_START, 1)
        text = head + RUNS_START + "\n" + table + RUNS_END + rest.split(RUNS_END, 1)[1]
    else:
        text += f"\n## The draft model's resumed runs (on the committed data)\n\n{RUNS_START}\n{table}{RUNS_END}\n"
    card.write_text(text, encoding="utf-8")


def runs_table(runs: list[dict]) -> str:
    """Markdown: one row per resumed run."""
    lines = [
        "| date | data (answer tokens) | minutes | steps | threads | agreement before → after | α (K = 4) | τ (K = 4) "
        "| shipped |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        b, a, k = r["before"], r["after"], r.get("k", 4)
        lines.append(
            f"| {r['date']} | {r['answer_tokens']:,} | {r['minutes']} | {r['steps']} | {r['threads']} "
            f"| {b[METRIC]:.3f} → {a[METRIC]:.3f} | {b[f'alpha_k{k}']:.3f} → {a[f'alpha_k{k}']:.3f} "
            f"| {b[f'tau_k{k}']:.2f} → {a[f'tau_k{k}']:.2f} | {'yes' if r['shipped'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def resume_draft(args, work: Path, log) -> dict:
    """One resumed run of the shipped draft (see the module's doc); returns its row."""
    import torch

    from .draft_pair import (
        LoopConfig,
        alpha_tau,
        batch_of,
        distill_loss,
        draft_matches,
        read_shards,
        train_loop,
        trimmed_logits,
    )
    from .pair_target import heldout_refs, load_target

    folder = args.out_dir / "draft"
    target, tokenizer = load_target(args)
    refs = heldout_refs(args, work, target, tokenizer, log)
    draft = load_shipped_draft(folder, target).to(args.device)
    vocab = int(target.config.vocab_size)
    del target
    shards = read_shards(args.data_dir)
    kept = shipped_vocab(folder, vocab)
    index_of = np.full(vocab, -1, dtype=np.int64)
    index_of[kept] = np.arange(len(kept))
    vocab_ids = torch.from_numpy(kept).to(args.device)
    log(
        f"draft --resume: from {folder} ({len(kept)} kept ids), on {len(shards.tokens):,} samples "
        f"({len(shards.topk_ids):,} answer tokens) of {args.data_dir}"
    )

    def step(rng):
        picks = rng.integers(0, len(shards.tokens), size=args.batch)
        x, mask, rows, cols, ids, probs = (t.to(args.device) for t in batch_of(shards, picks, args.context, index_of))
        return distill_loss(trimmed_logits(draft, x, mask, vocab_ids), rows, cols, ids, probs)

    stamp = time.strftime("%Y%m%d-%H%M%S")
    cfg = LoopConfig(
        "draft --resume", args.minutes, args.steps, args.lr, args.batch, args.context, args.seed, args.ckpt_minutes,
        args.eval_minutes,
    )  # fmt: skip
    evaluate = lambda: alpha_tau(draft_matches(draft, vocab_ids, refs), args.k)  # noqa: E731
    result = train_loop(draft, step, evaluate, cfg, work / "resume" / f"draft-{stamp}", log)
    before = result["history"][0]
    after = as_shipped(draft, evaluate)  # the bfloat16 layers that would ship, not the float32 ones that trained
    ship = should_ship(before, after)
    if ship:
        save_layers(draft, folder)
    row = {
        "date": time.strftime("%Y-%m-%d"),
        "answer_tokens": int(len(shards.topk_ids)),
        "samples": len(shards.tokens),
        "minutes": result["train_minutes"],
        "steps": result["steps"],
        "threads": result["threads"],
        "lr": args.lr,
        "batch": args.batch,
        "context": args.context,
        "k": args.k,
        "before": {k: v for k, v in before.items() if k not in ("step", "minutes")},
        "after": {k: v for k, v in after.items() if k not in ("step", "minutes")},
        "after_float32": {k: v for k, v in result["history"][-1].items() if k not in ("step", "minutes")},
        "shipped": ship,
    }
    record_run(folder, args.out_dir / "training.md", row)
    verdict = "replaced the shipped layers" if ship else "kept the shipped layers (held-out agreement did not rise)"
    log(f"draft --resume: {before[METRIC]} -> {after[METRIC]} held-out agreement: {verdict}")
    return row
