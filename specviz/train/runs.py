"""The run dirs in the work dir and the models they hold: what the draft stage and the export both load."""

from __future__ import annotations

from pathlib import Path

from .models import Arch, build, init_draft_from_target
from .tok import EOS, PAD, load_tokenizer


def tokenizer_ids(work: Path):
    """(tokenizer, vocabulary size, EOS id, PAD id) of the recipe's tokenizer."""
    tok = load_tokenizer(work / "tokenizer")
    return tok, len(tok), tok.convert_tokens_to_ids(EOS), tok.convert_tokens_to_ids(PAD)


def archs(args) -> tuple[Arch, Arch]:
    """(target, draft) architectures from the recipe's arguments."""
    target = Arch(layers=args.target_layers, width=args.width, context=args.context)
    draft = Arch(layers=args.draft_layers, width=args.width, context=args.context)
    return target, draft


def target_runs(work: Path) -> list[Path]:
    """The target's run dirs in training order: `target`, then its extension `target_ext1` if there is one."""
    return [r for r in (work / "target", work / "target_ext1") if r.exists()]


def draft_runs(work: Path) -> list[Path]:
    """The shipped draft's run dirs in training order: `draft_kd`, then `draft_gen` if it was tuned."""
    return [r for r in (work / "draft_kd", work / "draft_gen") if r.exists()]


def latest_target_weights(work: Path) -> Path:
    """final.pt of the last finished target run (the extension, when it has finished)."""
    return _last_finished(target_runs(work), "target", work)


def latest_draft_weights(work: Path) -> Path:
    """final.pt of the last finished distillation run of the draft (the second one, when it has finished)."""
    return _last_finished(draft_runs(work), "draft", work)


def _last_finished(runs: list[Path], stage: str, work: Path) -> Path:
    finished = [r / "final.pt" for r in runs if (r / "result.json").exists()]
    if not finished:
        raise FileNotFoundError(f"no finished {stage} run in {work}: run the {stage} stage first")
    return finished[-1]


def load_target(args, work: Path, device):
    """The target with the weights of its last finished run, in eval mode."""
    import torch

    _, vocab, eos, pad = tokenizer_ids(work)
    target_arch, _ = archs(args)
    model = build(target_arch, vocab, eos, pad, seed=args.seed)
    model.load_state_dict(torch.load(latest_target_weights(work), map_location=device))
    return model.to(device).eval()


def fresh_draft(args, work: Path, device, target):
    """An untrained draft initialised from the target's embeddings, first layer and final norm."""
    _, vocab, eos, pad = tokenizer_ids(work)
    _, arch = archs(args)
    draft = build(arch, vocab, eos, pad, seed=args.seed + 1)
    init_draft_from_target(draft, target)
    return draft.to(device)


def load_draft(args, work: Path, device, target, weights: Path):
    """A draft with the weights of one of its runs (final.pt)."""
    import torch

    draft = fresh_draft(args, work, device, target)
    draft.load_state_dict(torch.load(weights, map_location=device))
    return draft
