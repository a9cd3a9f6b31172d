"""Loading the pair the model options name, with only what the methods need, and its prompts wrapped for it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from specviz import methods
from specviz.cli.model_args import no_draft_model
from specviz.core.settings import RunSettings, parse_threads
from specviz.errors import SpecvizError

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair


def load_named(args: argparse.Namespace, draft: str | None, cross: bool = False) -> ModelPair:
    """The target the model arguments name, with this draft (None: none), on their device, precision and threads;
    cross: a draft with another tokenizer is mapped to the target's (for TLI and SLEM) instead of refused."""
    from specviz.engine.loading.models import load_pair

    return load_pair(
        args.target,
        draft,
        device=args.device,
        dtype=args.dtype,
        allow_pickle=args.allow_pickle,
        head=args.head,
        threads=parse_threads(args.threads),
        cross_vocab=cross,
    )


def load_for(args: argparse.Namespace, method_names) -> ModelPair:
    """The pair the model arguments name; the draft is loaded only when one of the methods needs it."""
    check_has_draft(args, method_names)
    cross = any(methods.get(name).crosses for name in method_names)
    pair = load_named(args, args.draft if methods.loads_draft(method_names) else None, cross)
    for name in method_names:
        if methods.get(name).loads_head:
            pair.load_head_for(name)  # loads it now: a head that is missing or does not fit is refused before any run
    return pair


def check_has_draft(args: argparse.Namespace, method_names) -> None:
    """A method that runs a draft model is refused, naming those that need none, when there is no draft model."""
    needing = [name for name in method_names if methods.get(name).loads_draft]
    if needing and no_draft_model(args.draft):
        from specviz.engine.loading.catalogue import NO_DRAFT_MODEL

        raise SpecvizError(
            f"{', '.join(needing)} needs a draft model, and this pair has none (yet): use --method "
            f"{', '.join(NO_DRAFT_MODEL)} or --plain, or give a draft model with --draft."
        )


def load_family(args: argparse.Namespace, base: RunSettings) -> tuple[ModelPair, list[str]]:
    """--method all: the pair with every method it can run (draft model, lookups, the heads found beside the target
    or given, early exit at --exit-layer); each one left out is named on stderr with the reason."""
    from specviz.engine.early_exit import check_exit_layer
    from specviz.engine.loading.models import find_heads

    pair = load_named(args, None if no_draft_model(args.draft) else args.draft)
    try:
        check_exit_layer(pair.target, base.exit_layer)
        exit_refusal = ""
    except SpecvizError as exc:
        exit_refusal = str(exc)
    heads = find_heads(args.target, args.head)
    names, left_out = methods.whole_family(pair.draft is not None, heads, exit_refusal)
    for line in left_out:
        print(f"left out {line}", file=sys.stderr)
    for name in names:
        if methods.get(name).loads_head:
            pair.load_head_for(name)  # a head that does not fit this target is refused before any run
    print(f"the whole family: {', '.join(names)}", file=sys.stderr)
    return pair, names


def chat_rows(args: argparse.Namespace, pair: ModelPair, rows):
    """A workload's rows with each prompt wrapped in the target's chat template: for an instruct pair (not --raw), or
    where a row's own "chat" field says so."""
    from specviz.measure.prompts import wrapped_rows

    return wrapped_rows(pair, rows, getattr(args, "chat", False))
