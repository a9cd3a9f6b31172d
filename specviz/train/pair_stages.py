"""The stages of `train --pair NAME` (train/pair.py): data, draft, eagle3, card. Each reads what the previous one
wrote in the work dir (outside the repository, under the user's cache) and resumes or skips work already done."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from .answer_loop import AnswerConfig, answer_stream, register_decode_attention
from .answer_store import Sample, append_shard, next_run_seed, store_info
from .chat_data import end_of_turn, eta_text
from .draft_pair import (
    LoopConfig,
    alpha_tau,
    batch_of,
    choose_vocab,
    distill_loss,
    draft_matches,
    new_draft,
    read_shards,
    token_counts,
    train_loop,
    trimmed_ids,
    trimmed_logits,
)
from .pair_target import heldout_prompts, heldout_refs, load_target
from .resume import runs_table


@dataclass(frozen=True)
class DataBudget:
    """When a run of the data stage stops, and how often it writes a shard."""

    tokens: int  # answer tokens the store should hold (the run stops once it does)
    minutes: float  # this run's wall clock
    shard_samples: int  # samples per shard


def write_answers(target, tokenizer, store: Path, cfg, budget: DataBudget, heldout: set[str], notes: dict, log) -> dict:
    """Decode samples (train/answer_loop.py, settings cfg) and append them to the store until the budget is spent;
    a held-out or empty prompt is dropped. Returns this run's summary."""
    vocab = int(target.config.vocab_size)
    name, notes = str(notes.get("target", "")), {k: v for k, v in notes.items() if k != "target"}
    have = store_info(store).answer_tokens if (store / "manifest.json").exists() else 0
    log(f"data: {store} holds {have:,} answer tokens; goal {budget.tokens:,}; run seed {cfg.seed}")
    if have >= budget.tokens:
        return {"answer_tokens": 0, "seconds": 0.0, "rate": 0.0, "prompts_dropped": 0}
    t0, part, made, dropped = time.time(), 0, 0, 0
    kept: list[Sample] = []
    stream = answer_stream(target, tokenizer, cfg)

    def flush() -> None:
        nonlocal part, kept
        if kept:
            seconds = round(time.time() - t0, 1)
            entry = append_shard(store, kept, name, vocab, cfg.seed, part, run_seconds=seconds, **notes)
            log(
                f"data: {entry['file']}: {entry['samples']} samples, {entry['answer_tokens']:,} answer tokens, "
                f"{entry['bytes']:,} bytes; this run {made:,} answer tokens, "
                f"{eta_text(made, budget.tokens - have + made, seconds)}"
            )
            part, kept = part + 1, []

    try:
        for sample in stream:
            if not sample.prompt or sample.prompt in heldout:
                dropped += 1
                continue
            kept.append(sample)
            made += len(sample.answer_ids)
            if len(kept) >= budget.shard_samples:
                flush()
            if have + made >= budget.tokens or time.time() - t0 >= budget.minutes * 60:
                break
    finally:
        stream.close()
        flush()
    seconds = time.time() - t0
    return {"answer_tokens": made, "seconds": round(seconds, 1), "rate": round(made / max(seconds, 1e-9), 1),
            "prompts_dropped": dropped}  # fmt: skip


def stage_data(args, work: Path, log) -> None:
    """Append the target's Magpie prompts and greedy answers to the answer store (args.data_dir) for --minutes."""
    import torch

    target, tokenizer = load_target(args, args.data_dtype, register_decode_attention())
    heldout = {r["prompt"].strip() for r in heldout_prompts(args.heldout)}
    cfg = AnswerConfig(args.data_batch, args.prompt_tokens, args.answer_tokens, next_run_seed(args.data_dir, args.seed))
    budget = DataBudget(args.tokens, args.minutes, args.shard_samples)
    notes = {
        "target": Path(args.target).name, "dtype": args.data_dtype, "batch": args.data_batch,
        "prompt_tokens_max": args.prompt_tokens, "answer_tokens_max": args.answer_tokens,
        "threads": torch.get_num_threads(), "decoding": "greedy answers, Magpie prompts at T = 1",
    }  # fmt: skip
    run = write_answers(target, tokenizer, args.data_dir, cfg, budget, heldout, notes, log)
    info = store_info(args.data_dir) if run["answer_tokens"] else None
    held = f"; the store holds {info.answer_tokens:,} answer tokens in {info.samples:,} samples" if info else ""
    log(f"data: this run {json.dumps(run)}: {run['rate']} answer tokens/s at {torch.get_num_threads()} threads{held}")


def draft_vocab(args, work: Path, shards, vocab: int, eot: int, log, refs=()) -> tuple[np.ndarray, np.ndarray, dict]:
    """(counts, kept ids, the measurement) of the trimmed vocabulary, fixed at the draft's first run. The size is
    chosen on the training data's top-1; the same shares on the held-out answers (`refs`) are logged beside them,
    since on little data the in-sample shares flatter the small sizes."""
    path = work / "draft_vocab.json"
    counts = token_counts(shards, vocab)
    if path.exists():
        saved = json.loads(path.read_text())
        return counts, np.asarray(saved["kept"], dtype=np.int64), saved["measured"]
    top1 = shards.topk_ids[:, 0]
    n, shares = choose_vocab(counts, top1, args.vocab_coverage)
    n = args.draft_vocab or n
    vocab_ids = trimmed_ids(counts, min(n, vocab), always=(eot,))
    held = np.asarray([t for _, answer in refs for t in answer], dtype=np.int64)
    held_shares = choose_vocab(counts, held, args.vocab_coverage)[1] if len(held) else {}
    measured = {
        "coverage_of_top1_by_size": shares,
        "coverage_of_heldout_by_size": held_shares,
        "chosen": int(len(vocab_ids)),
        "goal": args.vocab_coverage,
    }
    path.write_text(json.dumps({"kept": vocab_ids.tolist(), "measured": measured}))
    log(
        f"draft: trimmed vocabulary {len(vocab_ids)} ids; share of the target's top-1 inside each size: {shares} "
        f"(training data), {held_shares} (held-out answers)"
    )
    return counts, vocab_ids, measured


def stage_draft(args, work: Path, log) -> None:
    import torch

    target, tokenizer = load_target(args)
    refs = heldout_refs(args, work, target, tokenizer, log)
    shards = read_shards(args.data_dir)
    vocab = int(target.config.vocab_size)
    counts, vocab_ids_np, measured = draft_vocab(args, work, shards, vocab, end_of_turn(tokenizer), log, refs)
    vocab_ids = torch.from_numpy(vocab_ids_np)
    index_of = np.full(vocab, -1, dtype=np.int64)
    index_of[vocab_ids_np] = np.arange(len(vocab_ids_np))
    draft = new_draft(target, args.draft_layers, args.draft_init).to(args.device)
    vocab_ids = vocab_ids.to(args.device)
    del target
    n_train = sum(p.numel() for p in draft.parameters() if p.requires_grad)
    log(
        f"draft: {args.draft_layers} layers, {n_train / 1e6:.2f} M trained parameters, on {len(shards.tokens):,} "
        f"samples ({len(shards.topk_ids):,} answer tokens)"
    )

    def step(rng):
        picks = rng.integers(0, len(shards.tokens), size=args.batch)
        x, mask, rows, cols, ids, probs = (t.to(args.device) for t in batch_of(shards, picks, args.context, index_of))
        return distill_loss(trimmed_logits(draft, x, mask, vocab_ids), rows, cols, ids, probs)

    cfg = LoopConfig(
        "draft", args.minutes, args.steps, args.lr, args.batch, args.context, args.seed, args.ckpt_minutes,
        args.eval_minutes,
    )  # fmt: skip
    result = train_loop(
        draft, step, lambda: alpha_tau(draft_matches(draft, vocab_ids, refs), args.k), cfg, work / "draft", log
    )
    result.update(
        layers=args.draft_layers, trained_parameters=n_train, vocab=measured, answer_tokens=len(shards.topk_ids)
    )
    export_draft(args, draft, tokenizer, counts, len(vocab_ids_np), result, log)


def export_draft(args, draft, tokenizer, counts: np.ndarray, n_kept: int, result: dict, log) -> None:
    """out/draft as the pair ships it (engine/loading/shipped.py): the trained tensors without the target's embeddings
    (layers.safetensors, bfloat16), config.json, token_counts.json (recommended = the trimmed size) and
    training.json; the whole model with its tokenizer stays in <work>/draft-whole."""
    import torch

    from specviz.engine.loading.shipped import split_draft
    from specviz.engine.loading.vocab import TokenCounts

    whole = args.work_dir / "draft-whole"
    whole.mkdir(parents=True, exist_ok=True)
    draft.to(torch.bfloat16).save_pretrained(whole)
    tokenizer.save_pretrained(whole)
    (whole / "token_counts.json").write_text(TokenCounts(counts, "train --pair data stage answers", n_kept).to_json())
    (whole / "training.json").write_text(json.dumps(result, indent=2) + "\n")
    out = split_draft(whole, args.out_dir / "draft")
    size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
    log(f"draft: exported {out} ({size:.1f} MB); held out last: {json.dumps(result['history'][-1])}")
    draft.to(torch.float32)


def stage_eagle3(args, work: Path, log) -> None:
    """An EAGLE-3 head (train/eagle3.py's recipe: training-time test, started from the target's weights) on the
    data stage's samples, over the draft's trimmed vocabulary (or --eagle3-vocab most frequent ids)."""
    import torch

    from specviz.engine.heads.eagle3 import load_head3, new_head3, save_head3

    from .eagle3 import evaluate_head3, init_from_target, ttt_losses
    from .heads import HeadJob, train_head

    target, tokenizer = load_target(args)
    refs = heldout_refs(args, work, target, tokenizer, log)
    shards = read_shards(args.data_dir)
    vocab = int(target.config.vocab_size)
    counts, vocab_ids_np, _ = draft_vocab(args, work, shards, vocab, end_of_turn(tokenizer), log)
    if args.eagle3_vocab:
        vocab_ids_np = trimmed_ids(counts, args.eagle3_vocab, always=(end_of_turn(tokenizer),))
    head = new_head3(target, torch.from_numpy(vocab_ids_np).to(args.device), seed=args.seed)
    init_from_target(head, target)
    flat = np.concatenate(shards.tokens)  # the samples back to back: windows cross sample boundaries, as in train-tiny
    held = np.concatenate([np.asarray(p + a) for p, a in refs])
    windows = np.stack([held[s : s + args.context + 1] for s in range(0, len(held) - args.context - 1, args.context)])
    hargs = SimpleNamespace(
        batch_size=args.batch, context=args.context, seed=args.seed, eval_minutes=args.eval_minutes,
        ckpt_minutes=args.ckpt_minutes,
    )  # fmt: skip
    job = HeadJob(
        name="eagle3",
        module=head,
        losses=lambda x: ttt_losses(head, target, x),
        part_names=("ce0", "greedy0"),
        evaluate=lambda: evaluate_head3(head, target, windows, args.device),
        minutes=args.minutes,
        steps=args.steps,
        lr=args.lr,
        notes={"draft_vocab_size": len(vocab_ids_np), "layers_read": list(head.layers_read), "init": "target"},
    )
    result = train_head(job, hargs, work, flat, args.device, log)
    directory = save_head3(head, args.out_dir / "eagle3")
    shipped = load_head3(directory, target, "the pair's target").to(torch.float32)
    result["held_out_shipped"] = evaluate_head3(shipped, target, windows, args.device)
    (directory / "training.json").write_text(json.dumps(result, indent=2) + "\n")
    size = sum(p.stat().st_size for p in directory.iterdir()) / 1e6
    log(f"eagle3: exported {directory} ({size:.1f} MB); held out: {json.dumps(result['held_out_shipped'])}")


def curve_table(history: list[dict]) -> str:
    """The training curve as a markdown table (every held-out evaluation)."""
    if not history:
        return "(no evaluations)\n"
    keys = [k for k in history[0] if isinstance(history[0][k], (int, float))]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(h.get(k, "")) for k in keys) + " |" for h in history]
    return "\n".join(lines) + "\n"


def stage_card(args, work: Path, log) -> None:
    """out/training.md: what was trained, on what, for how long, its curve and its held-out agreement."""
    parts = [
        f"# Drafters trained by specviz for `{args.pair}`\n",
        f"Written by `python -m specviz train --pair {args.pair} card` on {time.strftime('%Y-%m-%d')}.\n",
    ]
    if (args.data_dir / "manifest.json").exists():
        info = store_info(args.data_dir)
        size = sum(s["bytes"] for s in info.shards)
        parts.append(
            f"## Data\n\n{info.answer_tokens:,} answer tokens in {info.samples:,} samples ({len(info.shards)} shards, "
            f"{size:,} bytes), written by the target itself (Magpie prompts, its greedy answers), kept as token ids "
            f"in {args.data_dir.name}/.\n"
        )
    for name in ("draft", "eagle3"):
        path = args.out_dir / name / "training.json"
        if not path.exists():
            parts.append(f"## {name}\n\nNot trained yet.\n")
            continue
        r = json.loads(path.read_text())
        size = sum(p.stat().st_size for p in path.parent.iterdir()) / 1e6
        parts.append(
            f"## {name}\n\n{r.get('steps')} steps in {r.get('train_minutes')} min ({r.get('threads')} threads), "
            f"batch {r.get('batch')} x {r.get('context')}; folder {size:.1f} MB. Held-out agreement on "
            f"{args.heldout.name} (the target's greedy answers, teacher-forced):\n\n"
            + curve_table(r.get("history", []))
        )
        if r.get("runs"):
            parts.append(f"Resumed from what shipped (`{name} --resume`), one row a run:\n\n" + runs_table(r["runs"]))
    path = args.out_dir / "training.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))
    log(f"card: wrote {path}")
