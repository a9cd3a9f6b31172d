"""The five stages, and the card. Each reads what the previous one wrote in the work dir and skips work already
done; the card (which export ends with) reads the exported pair and measures it again each time."""

from __future__ import annotations

import json
from pathlib import Path

from .card import make_card
from .corpus import build_corpus, check_workloads, read_jsonl
from .export import export, write_token_counts
from .generate import target_continuations
from .heads import head_stage
from .loop import RunConfig, eval_windows, evaluate, train
from .measurements import CardSettings
from .models import build, n_params
from .paths import WORKLOADS
from .runs import archs, fresh_draft, load_target, tokenizer_ids
from .tok import build_tokenizer_stage, encode_split, load_tokens

CE_BASELINE_SHARE = 0.3  # of --draft-minutes for the CE-only control (a CE step costs ~0.4 of a distillation step)
GEN_BATCH = 64  # rows of target continuations generated at once; each row starts with context / 8 tokens of data
GEN_VAL_TOKENS = 16_384  # held-out continuations (after val_code prefixes) for measuring the draft on target text


def _done(path: Path) -> bool:
    return path.exists()


def stage_corpus(args, work: Path, device, log) -> None:
    corpus_dir = work / "corpus"
    if _done(corpus_dir / "manifest.json"):
        log("corpus: already gathered")
    else:
        m = build_corpus(corpus_dir, seed=args.seed, use_docs=args.docs, log=log)
        log(
            f"corpus: code {m['all_code']['bytes'] / 1e6:.2f} MB in {m['all_code']['documents']} files, "
            f"prose {m['all_prose']['bytes'] / 1e6:.2f} MB in {m['all_prose']['documents']} documents"
        )
    check_workloads(corpus_dir, WORKLOADS, log)


def stage_tokenizer(args, work: Path, device, log) -> None:
    if _done(work / "data" / "info.json"):
        log("tokenizer: already built")
        return
    build_tokenizer_stage(work / "corpus", work, vocab_size=args.vocab_size, log=log)


def _val(work: Path):
    return {"val_code": load_tokens(work, "val_code"), "val_prose": load_tokens(work, "val_prose")}


def _run_config(args, name, *, budget_min, max_steps, lr, ce_weight=1.0):
    return RunConfig(
        name=name,
        batch_size=args.batch_size,
        context=args.context,
        lr=lr,
        min_lr=lr / 10,
        warmup_steps=100,
        budget_s=budget_min * 60,
        max_steps=max_steps,
        ckpt_every_s=args.ckpt_minutes * 60,
        eval_every_s=args.eval_minutes * 60,
        seed=args.seed,
        ce_weight=ce_weight,
    )


def stage_target(args, work: Path, device, log) -> None:
    _, vocab, eos, pad = tokenizer_ids(work)
    arch, _ = archs(args)
    model = build(arch, vocab, eos, pad, seed=args.seed)
    log(f"target: {arch.as_dict()}, {n_params(model) / 1e6:.2f} M parameters")
    cfg = _run_config(args, "target", budget_min=args.target_minutes, max_steps=args.target_steps, lr=args.target_lr)
    train(model, load_tokens(work, "train"), _val(work), cfg, work / "target", log, device=device)
    if args.extend_target_minutes or args.extend_target_steps:
        extend_target(args, work, device, log)


def extend_target(args, work: Path, device, log) -> None:
    """Train the finished target further in target_ext1 (a fresh warm-up and cosine tail at --extend-lr).

    Like every stage it resumes an unfinished run and skips a finished one, so rerunning the recipe is idempotent.
    """
    run_dir = work / "target_ext1"
    model = load_target(args, work, device)  # train() resumes or skips from run_dir's own checkpoints
    log(f"target: extending the finished target in {run_dir}")
    cfg = _run_config(
        args,
        run_dir.name,
        budget_min=args.extend_target_minutes or 1e6,
        max_steps=args.extend_target_steps,
        lr=args.extend_lr,
    )
    cfg.warmup_steps, cfg.seed = 30, args.seed + 1  # a new data order for the extra epochs
    train(model, load_tokens(work, "train"), _val(work), cfg, run_dir, log, device=device)


def _held_out(model, val: dict, args, device, target) -> dict:
    """Teacher-forced CE, overlap sum min(p, q) and greedy agreement of a draft on 48 fixed windows of each
    validation split."""
    return {k: evaluate(model, eval_windows(v, 48, args.context), device, target) for k, v in val.items()}


def stage_draft(args, work: Path, device, log) -> None:
    target = load_target(args, work, device)
    for p in target.parameters():
        p.requires_grad_(False)
    data, val = draft_tokens(args, work, log), _val(work)
    summary_path = work / "draft_eval.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}

    draft = fresh_draft(args, work, device, target)
    log(
        f"draft: {args.draft_layers} layer(s), {n_params(draft) / 1e6:.2f} M parameters, "
        f"initialised from the target's embeddings, layer 0 and final norm"
    )
    if "init" not in summary:
        summary["init"] = _held_out(draft, val, args, device, target)
        log(f"draft init (no training): {json.dumps(summary['init'])}")
        summary_path.write_text(json.dumps(summary, indent=2))

    kd_budget = args.draft_minutes * (1 if args.no_baseline else 1 - CE_BASELINE_SHARE)
    cfg = _run_config(
        args, "draft_kd", budget_min=kd_budget, max_steps=args.draft_steps, lr=args.draft_lr, ce_weight=args.ce_weight
    )
    kd = train(draft, data, val, cfg, work / "draft_kd", log, teacher=target, device=device)
    summary["distilled"] = {
        "ce_weight": args.ce_weight,
        "steps": kd["steps"],
        "train_minutes": kd["train_minutes"],
        **_held_out(draft, val, args, device, target),
    }
    summary_path.write_text(json.dumps(summary, indent=2))
    log(f"draft distilled: {json.dumps(summary['distilled'])}")

    if not args.no_baseline:
        # Control: same init, same data order, same number of steps, plain CE (a = 1).
        base = fresh_draft(args, work, device, target)
        cfg = _run_config(
            args,
            "draft_ce",
            budget_min=args.draft_minutes * CE_BASELINE_SHARE,
            max_steps=kd["steps"],
            lr=args.draft_lr,
            ce_weight=1.0,
        )
        ce = train(base, data, val, cfg, work / "draft_ce", log, teacher=None, device=device)
        summary["ce_only"] = {
            "ce_weight": 1.0,
            "steps": ce["steps"],
            "train_minutes": ce["train_minutes"],
            "stopped_by": ce["stopped_by"],
            **_held_out(base, val, args, device, target),
        }
        summary_path.write_text(json.dumps(summary, indent=2))
        log(f"draft CE-only control: {json.dumps(summary['ce_only'])}")

    if args.draft_tune_minutes or args.draft_tune_steps:
        summary["tuned"] = tune_draft(args, work, device, log, target, draft)
        summary_path.write_text(json.dumps(summary, indent=2))
        log(f"draft tuned on the target's continuations: {json.dumps(summary['tuned'])}")


def tune_draft(args, work: Path, device, log, target, draft) -> dict:
    """Distil the draft once more (run dir draft_gen), on continuations the target wrote after code prefixes.

    Resumable and idempotent like the other runs; the generated tokens are kept in data/{train,val}_gen.bin.
    Returns the run's record for draft_eval.json.
    """
    gen = generated_tokens(args, work, "train_gen", "train_code", args.gen_tokens, target, device, log)
    val = {
        **_val(work),
        "val_gen": generated_tokens(args, work, "val_gen", "val_code", GEN_VAL_TOKENS, target, device, log),
    }
    cfg = _run_config(
        args,
        "draft_gen",
        budget_min=args.draft_tune_minutes or 1e6,
        max_steps=args.draft_tune_steps,
        lr=args.draft_lr / 2,
        ce_weight=args.ce_weight,
    )
    cfg.warmup_steps = 30
    run = train(draft, gen, val, cfg, work / "draft_gen", log, teacher=target, device=device)
    return {
        "ce_weight": args.ce_weight,
        "steps": run["steps"],
        "train_minutes": run["train_minutes"],
        "gen_tokens": args.gen_tokens,
        "generated_tokens": len(gen),
        **_held_out(draft, val, args, device, target),
    }


def generated_tokens(args, work: Path, split: str, source: str, tokens: int, target, device, log):
    """data/<split>.bin: the target's continuations of prefixes from data/<source>.bin (generated once, then read)."""
    path = work / "data" / f"{split}.bin"
    if not path.exists():
        _, _, eos, pad = tokenizer_ids(work)
        prefix = args.context // 8
        flat = target_continuations(
            target,
            load_tokens(work, source),
            tokens=tokens,
            prefix_len=prefix,
            new_tokens=args.context - prefix,
            batch=GEN_BATCH,
            seed=args.seed + 2,
            eos=eos,
            pad=pad,
            device=device,
            log=log,
        )
        tmp = path.with_suffix(".tmp")
        flat.tofile(tmp)
        tmp.replace(path)
        log(f"tokens {split}: {len(flat)} written by the target after {source} prefixes")
    return load_tokens(work, split)


def draft_tokens(args, work: Path, log):
    """The draft's training tokens: the whole training split, or (--draft-data code) only its code documents.

    A code-only draft is a specialist, as production drafts trained on their target's traffic are: it agrees with the
    target more on code and less on prose, which is the contrast the sample workloads teach.
    """
    if args.draft_data == "all":
        return load_tokens(work, "train")
    path = work / "data" / "train_code.bin"
    if not path.exists():
        docs = [d for d in read_jsonl(work / "corpus" / "train.jsonl") if d["kind"] == "code"]
        counts = encode_split(work / "tokenizer", docs, path)
        log(f"tokens train_code (draft data): {counts}")
    return load_tokens(work, "train_code")


def stage_export(args, work: Path, device, log) -> None:
    export(args, work, device, log)


def stage_vocab(args, work: Path, device, log) -> None:
    """Only the draft's token counts (export writes them too): for a pair exported before they existed."""
    stage_corpus(args, work, device, log)
    write_token_counts(work / "corpus", args.out_dir / "draft", log)


def stage_head(stage: str, args, work: Path, device, log) -> None:
    """A feature head's stage (train/<stage>.py): the corpus it trains on, gathered if needed, then its training."""
    stage_corpus(args, work, device, log)
    getattr(head_stage(stage), f"train_{stage}")(args, work, device, log)


def stage_card(args, work: Path, device, log) -> None:
    make_card(args.out_dir, CardSettings.from_args(args), log, rerender=args.rerender)
