"""The model and sampling options of the commands that load models (run, measure, bench), and how they resolve:
--pair into --target and --draft, the method, --draft-vocab."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from specviz import methods
from specviz.core.quantize import BITS, GROUPS, HEAD_BITS, QuantOptions
from specviz.core.settings import AUTO_THREADS, DEFAULT_EXIT_LAYER, FORWARD_AUTO, NARROW_WIDTH, THREADS_ENV, RunSettings
from specviz.core.suffix_tree import SuffixOptions
from specviz.core.verify import TOKEN, VERIFIERS
from specviz.errors import SpecvizError

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair
NO_DRAFT = "none"  # --draft none: no draft model


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.engine.loading.catalogue import DEFAULT_PAIR, PAIR_NAMES
    from specviz.engine.loading.shipped import BUNDLED_DRAFT, BUNDLED_TARGET

    parser.add_argument(
        "--pair",
        default=None,
        metavar="NAME",
        help=f"a pair by name: {', '.join(PAIR_NAMES)} (default {DEFAULT_PAIR}; `python -m specviz pairs` lists them); "
        "smollm2 is converted to the cache on first use",
    )
    parser.add_argument(
        "--target", default=None, help=f"hub id or local directory (default: the pair's, {BUNDLED_TARGET!r})"
    )
    parser.add_argument(
        "--draft",
        default=None,
        help=f"hub id or local directory of the draft model, a pair's name for its draft model (--pair smollm2 --draft "
        f"pystdlib, with --method tli or slem), or 'none' for no draft model (n-gram lookup then, unless --method "
        f"names another method that needs none; 'ngram' is the older name) (default: the pair's, {BUNDLED_DRAFT!r})",
    )
    parser.add_argument(
        "--raw",
        action="store_true",
        help="send the prompt as it is, a text to continue (default for an instruct pair such as smollm2: the "
        "target's chat template wraps it as a user's message)",
    )
    parser.add_argument(
        "--head",
        default=None,
        metavar="DIR",
        help=f"a feature head directory for its own method ({methods.heads_words()}), told apart by its config "
        f"(default: the {', '.join(m.head.beside + '/' for m in methods.REGISTRY.values() if m.head)} directories "
        "beside the target, as the bundled pair ships them)",
    )
    parser.add_argument("--device", default="auto", help="auto (cuda > mps > cpu), cpu, cuda or mps")
    parser.add_argument(
        "--dtype", default="auto", help="auto (float32 on CPU, bfloat16 on CUDA), float32, bfloat16 or float16"
    )
    parser.add_argument("--allow-pickle", action="store_true", help="allow non-safetensors weights (runs their code!)")
    parser.add_argument(
        "--threads",
        default=os.environ.get(THREADS_ENV, AUTO_THREADS),
        help=f"torch threads on a CPU: auto (one for a model up to {NARROW_WIDTH} wide, which a shared CPU cannot "
        f"stall, torch's default for wider ones) or a number (default: ${THREADS_ENV}, else auto)",
    )


def resolve_pair(args: argparse.Namespace) -> None:
    """--pair NAME (or the default pair) into --target and --draft, for the commands that take model arguments. A
    pair converted from a package (smollm2) is converted here the first time; one without a draft model drafts by
    n-gram lookup unless --method says otherwise. args.chat: whether prompts go through the target's chat template."""
    if not (hasattr(args, "target") and hasattr(args, "pair")):  # bench-player and export-html take no --pair
        return
    from specviz.engine.loading.catalogue import DEFAULT_PAIR, find_pair, uses_chat
    from specviz.engine.loading.shipped import BUNDLED_DRAFT

    if args.pair is not None and args.target is not None:
        raise SpecvizError("--pair names the target already: give --pair NAME or --target, not both.")
    if args.target is not None:  # a target by hub id or path, with the bundled draft unless --draft names another
        args.draft = pair_draft(args.draft) if args.draft is not None else BUNDLED_DRAFT
        args.chat = uses_chat(args.target) and not args.raw
        return
    spec = find_pair(args.pair or DEFAULT_PAIR)
    if getattr(args, "exit_layer", DEFAULT_EXIT_LAYER) is None:
        args.exit_layer = spec.exit_layer  # early exit's E measured best on this target
    if spec.installed() is None:
        print(f"converting {spec.key} to {spec.target_source} once (about half a minute)", file=sys.stderr, flush=True)
    args.target, draft = spec.sources()
    args.draft = args.draft if args.draft is not None else (draft or NO_DRAFT)
    args.draft = pair_draft(args.draft)
    args.chat = spec.chat and not args.raw


def pair_draft(draft: str) -> str:
    """--draft PAIR: the draft model of a pair by name (--pair smollm2 --draft pystdlib), else --draft as given."""
    from specviz.engine.loading.catalogue import PAIR_NAMES, find_pair

    named = draft.strip() in PAIR_NAMES and not Path(draft).expanduser().exists()
    return (find_pair(draft.strip()).draft_source or draft) if named else draft


def add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.engine.loading.catalogue import SMOLLM2_EXIT_LAYER

    parser.add_argument("--k", default="4", help="draft tokens per round (1-16); measure takes a list like 2,4,8")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    parser.add_argument("--top-k", type=int, default=0, help="0 = off")
    parser.add_argument("--top-p", type=float, default=1.0, help="1 = off")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ngram-min", type=int, default=1, help="shortest suffix n-gram lookup matches")
    parser.add_argument("--ngram-max", type=int, default=3, help="longest suffix n-gram lookup matches")
    add_suffix_arguments(parser)
    add_quant_arguments(parser)
    parser.add_argument(
        "--verify",
        default=TOKEN,
        choices=VERIFIERS,
        help="how a chain's drafts are judged: token (token by token, the first rejection ends the round) or block "
        "(block verification, Sun et al.: the drafts judged as one block, exact, never fewer tokens kept in "
        "expectation; chains only)",
    )
    parser.add_argument(
        "--exit-layer",
        type=int,
        default=None,
        metavar="E",
        help=f"{methods.EARLY_EXIT}: draft with the target's own first E layers, its final norm and LM head "
        f"(from 1 to L - 1; default the pair's: pystdlib {DEFAULT_EXIT_LAYER} of 10 layers, smollm2 "
        f"{SMOLLM2_EXIT_LAYER} of 30)",
    )
    parser.add_argument(
        "--forward",
        default=FORWARD_AUTO,
        metavar="NAME",
        help="whose forward pass runs the models: auto (the lean one where the architecture is Llama, Qwen2 or "
        "Mistral, Hugging Face's elsewhere), lean, or hf (Hugging Face's, the reference); bench takes a list, e.g. "
        "lean,hf, to measure both on the same prompts",
    )
    parser.add_argument(
        "--tree",
        action="append",
        default=None,
        metavar="SHAPE",
        help="draft a tree: children per depth, e.g. 3,2,1,1 (1,1,1,1 = the chain with K=4), or a dynamic (EAGLE-2) "
        "tree grown per round, dynamic:BUDGET,DEPTH,TOPK, e.g. dynamic:16,5,4 (expand the top-k children of the "
        "top-k frontier nodes for DEPTH levels, keep the BUDGET best by cumulative draft log-prob; "
        f"{', '.join(methods.GROWS_DYNAMIC)}); bench takes several",
    )
    parser.add_argument(
        "--k-schedule",
        default=None,
        metavar="NAME",
        help="how K varies per round, for the draft model and the EAGLE-1 head: constant (K every round), heuristic "
        "(transformers': start at K, +2 after a round with every draft accepted, else -1, at least 1), confidence "
        "(K is the cap; stop after a draft whose own probability is below --confidence-threshold); bench takes a "
        "comma-separated list to compare them (default constant)",
    )
    parser.add_argument(
        "--confidence-threshold",
        default=None,
        metavar="X|fitted",
        help="the confidence schedule's stop, a probability (default 0.4, transformers' default), or fitted: start "
        "at 0.4 and refit after every round from the run's (confidence, accepted?) pairs, transformers' ROC rule; "
        "bench takes a list, e.g. 0.4,fitted",
    )
    parser.add_argument(
        "--draft-vocab",
        default="auto",
        metavar="N",
        help="the draft proposes only from its N most frequent tokens (a smaller LM head, the same exact output); "
        "auto = what the draft's token_counts.json recommends (the bundled draft: 1024), 0 = every token",
    )


def add_quant_arguments(parser: argparse.ArgumentParser) -> None:
    """The quantized self-draft's options (core/quantize.py QuantOptions), with what measured best as defaults."""
    d = QuantOptions()
    parser.add_argument(
        "--bits",
        type=int,
        default=d.bits,
        help=f"{methods.QUANTIZED}: the draft is the target's own weights at this many bits "
        f"({', '.join(map(str, BITS))}; default {d.bits})",
    )
    parser.add_argument(
        "--quant-group",
        type=int,
        default=d.group,
        metavar="N",
        help=f"{methods.QUANTIZED}: weights per group sharing one scale and minimum ({', '.join(map(str, GROUPS))}; "
        f"default {d.group}; 8 bits round per output row)",
    )
    parser.add_argument(
        "--quant-head",
        type=int,
        default=d.head_bits,
        metavar="BITS",
        help=f"{methods.QUANTIZED}: the LM head's bits ({', '.join(map(str, HEAD_BITS))}; 16 = unrounded, the "
        "default: bfloat16 where the CPU has AVX-512 BF16, else the target's float32; the tied head is where 4 bits "
        "lose agreement)",
    )


def add_suffix_arguments(parser: argparse.ArgumentParser) -> None:
    """The suffix method's options (core/suffix_tree.py SuffixOptions), with vLLM's defaults."""
    d = SuffixOptions()
    parser.add_argument(
        "--suffix-depth", type=int, default=d.max_tree_depth, help="suffix: longest match + draft the tries hold"
    )
    parser.add_argument(
        "--suffix-factor",
        type=float,
        default=d.max_spec_factor,
        help="suffix: a match of m tokens drafts at most m * factor + offset tokens",
    )
    parser.add_argument("--suffix-offset", type=float, default=d.max_spec_offset, help="suffix: see --suffix-factor")
    parser.add_argument(
        "--suffix-min-prob",
        type=float,
        default=d.min_token_prob,
        help="suffix: stop drafting once the path's estimated probability falls below this",
    )
    parser.add_argument(
        "--suffix-cached",
        type=int,
        default=d.max_cached_requests,
        help="suffix: earlier outputs the global trie keeps within this command (0 = none)",
    )


def with_draft_vocab(settings: RunSettings, args: argparse.Namespace, pair: ModelPair) -> RunSettings:
    """The settings with --draft-vocab resolved on the loaded pair ("auto": its counts' recommendation, or 0)."""
    from dataclasses import replace

    text = str(getattr(args, "draft_vocab", "auto")).strip().lower()
    if text == "auto":
        return replace(settings, draft_vocab=pair.recommended_draft_vocab)
    if not text.isdigit():
        raise SpecvizError(f"--draft-vocab takes auto or a whole number of tokens (0 = all); got {text!r}.")
    n = int(text)
    pair.draft_vocab_ids(n if pair.draft is not None else 0)  # a clear message now if this draft cannot be trimmed
    return replace(settings, draft_vocab=n)


def method_of(args: argparse.Namespace) -> str:
    if getattr(args, "plain", False):
        if getattr(args, "method", None):
            raise SpecvizError("--plain runs the target alone, with no drafts: drop --method, or drop --plain.")
        return methods.PLAIN
    if getattr(args, "method", None):
        return args.method
    return methods.NGRAM if no_draft_model(args.draft) else methods.DRAFT


def no_draft_model(draft: str) -> bool:
    """--draft none (or its older name, ngram): the target runs alone, drafting for itself."""
    return draft.strip().lower() in (NO_DRAFT, methods.NGRAM)
