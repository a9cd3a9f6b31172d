"""Command line: python -m specviz run | measure | bench | theory | serve | pairs | export-html | bench-player |
train-tiny.

Errors a user can fix are printed as one message, never a traceback."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from specviz import methods
from specviz.cli.args import (
    check_writable,
    int_list,
    one_tree,
    ranking_table,
    schedule_variants,
    settings_from,
    summary_table,
    tree_shapes,
    write_all,
)
from specviz.cli.bench_player import add_bench_player_parser
from specviz.cli.export import add_export_parser
from specviz.cli.pairs import add_pairs_parser
from specviz.cli.remote import add_server_arguments, check_server_options, cmd_measure_server, collect
from specviz.cli.serve import add_serve_parser
from specviz.cli.theory import add_theory_parser
from specviz.cli.workloads import (
    add_workload_arguments,
    second_turns,
    selected_workload,
    spec_bench_report,
    with_section,
)
from specviz.core import schedule
from specviz.core.settings import (
    AUTO_THREADS,
    DEFAULT_EXIT_LAYER,
    FORWARD_AUTO,
    NARROW_WIDTH,
    THREADS_ENV,
    RunSettings,
    check_prompt,
    parse_threads,
    tree_fields,
)
from specviz.core.suffix_tree import SuffixMemory, SuffixOptions
from specviz.core.trace import Trace
from specviz.errors import SpecvizError

if TYPE_CHECKING:
    from specviz.engine.models import ModelPair

ANSI = {"accepted": "\033[32m", "correction": "\033[1;31m", "bonus": "\033[1;34m", "target": "", "prompt": "\033[2m"}
RESET = "\033[0m"
LEGEND = (("accepted", "accepted draft"), ("correction", "correction"), ("bonus", "bonus"))
MAX_PROMPT_FILE_BYTES = 2_000_000  # far past any model's context; the run then says how many tokens fit
MARKERS = {"accepted": ("", ""), "correction": ("[!", "]"), "bonus": ("[+", "]"), "target": ("", "")}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train-tiny"]:
        from specviz.train import main as train_main

        return train_main(argv[1:])
    if argv[:1] == ["train"]:
        from specviz.train.pair import main as train_pair_main

        return train_pair_main(argv[1:])
    args = (export_parser() if argv[:1] == ["export-html"] else build_parser()).parse_args(argv)
    try:
        resolve_pair(args)
        return args.handler(args)
    except SpecvizError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`specviz ... | head`): not an error of ours
        sys.stdout = open(os.devnull, "w")  # keeps the flush at exit quiet
        return 0


def export_parser() -> argparse.ArgumentParser:
    """The parser of export-html alone: it loads no model, so it skips the model arguments' imports (transformers)."""
    parser = argparse.ArgumentParser(prog="python -m specviz", description="Speculative decoding, traced.")
    add_export_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specviz", description="Speculative decoding, traced.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run speculative (or plain) decoding on one prompt and print the trace")
    run.add_argument("--prompt", help="the text to continue")
    run.add_argument("--prompt-file", help="read the prompt from this file instead")
    add_model_arguments(run)
    add_sampling_arguments(run)
    run.add_argument("--plain", action="store_true", help="run the target alone (the baseline), no drafts")
    run.add_argument(
        "--method",
        default=None,
        choices=methods.PROPOSERS + methods.CROSSING,
        help="who drafts (default: the draft model, or n-gram lookup with --draft ngram); "
        f"{' / '.join(methods.CROSSING)} = a --draft with a tokenizer of its own (docs/crossvocab.md); "
        f"{methods.heads_words()}: beside the target or given by --head",
    )
    run.add_argument("--json", action="store_true", help="print the full trace as JSON (format specviz.trace v1)")
    run.set_defaults(handler=cmd_run)
    measure = commands.add_parser("measure", help="measure acceptance and speedup on a file of prompts")
    measure.add_argument(
        "prompts_file",
        nargs="?",
        help=".jsonl ({prompt, tag} or Spec-Bench's {question_id, category, turns} per line), .csv (prompt[,tag] "
        "columns) or .txt; or a bundled workload's name (or give --workload)",
    )
    add_workload_arguments(measure)
    add_model_arguments(measure)
    add_sampling_arguments(measure)
    choices = ", ".join(methods.PROPOSERS)
    measure.add_argument(
        "--method",
        default=None,
        help=f"comma-separated: {choices} (default draft); all (or family) = every one this pair can run (the heads "
        "found beside the target or given by --head; each one left out is named with the reason), ranked by "
        "measured speedup per tag",
    )
    measure.add_argument("--repeats", type=int, default=1, help="time every prompt this many times (clock noise)")
    measure.set_defaults(k=None)  # 4, or with --server the server's K
    measure.add_argument("--json", dest="json_out", help="write every run and the summary to this JSON file")
    measure.add_argument("--csv", dest="csv_out", help="write one row per prompt x method x K to this CSV file")
    add_server_arguments(measure)
    measure.set_defaults(handler=cmd_measure)
    bench = commands.add_parser("bench", help="benchmark every lane (ours and Hugging Face's) against plain decoding")
    add_model_arguments(bench)
    add_sampling_arguments(bench)
    bench.add_argument("--prompts", default=None, help="prompts file (default: assets/workloads/code.jsonl)")
    bench.add_argument("--limit", type=int, default=0, help="use only the first N prompts (0 = all)")
    bench.add_argument("--repeats", type=int, default=1)
    bench.add_argument(
        "--lanes",
        default=None,
        help=f"comma-separated; plain is always one (default: {','.join(methods.LANES)}, without the feature-head "
        "lanes when the target has no head beside it)",
    )
    tree_drafters = ",".join(methods.SHAPED + methods.BRANCHING)
    bench.add_argument(
        "--tree-methods",
        default=methods.TREE,
        help=f"with --tree: the methods that draft each tree shape, comma-separated, any of {tree_drafters} "
        f"(default {methods.TREE}: the draft model's tree)",
    )
    bench.add_argument("--json", dest="json_out", help="write the results JSON here")
    bench.add_argument(
        "--verify-curve",
        action="store_true",
        help="instead of the lanes: v(K), the verify cost of K drafts in target steps for K = 1..16, for each target "
        "of --pairs, with its weight bytes and this machine's measured memory bandwidth (format specviz.verify-curve)",
    )
    bench.add_argument(
        "--pairs", default="pystdlib,smollm2", help="with --verify-curve: the pairs whose targets are measured"
    )
    bench.set_defaults(handler=cmd_bench, k="1,2,4,8", max_new_tokens=128)
    add_theory_parser(commands)
    add_serve_parser(commands)
    add_export_parser(commands)
    add_pairs_parser(commands)
    add_bench_player_parser(commands)
    commands.add_parser("train-tiny", help="build the bundled model pair (see python -m specviz train-tiny --help)")
    commands.add_parser("train", help="train drafters for a real pair (see python -m specviz train --help)")
    return parser


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.engine.catalogue import DEFAULT_PAIR, PAIR_NAMES
    from specviz.engine.models import BUNDLED_DRAFT, BUNDLED_TARGET

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
        f"pystdlib, with --method tli or slem), or 'ngram' for prompt lookup (default: the pair's, {BUNDLED_DRAFT!r})",
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
    from specviz.engine.catalogue import DEFAULT_PAIR, find_pair, uses_chat
    from specviz.engine.models import BUNDLED_DRAFT

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
    args.draft = args.draft if args.draft is not None else (draft or methods.NGRAM)
    args.draft = pair_draft(args.draft)
    args.chat = spec.chat and not args.raw


def pair_draft(draft: str) -> str:
    """--draft PAIR: the draft model of a pair by name (--pair smollm2 --draft pystdlib), else --draft as given."""
    from specviz.engine.catalogue import PAIR_NAMES, find_pair

    named = draft.strip() in PAIR_NAMES and not Path(draft).expanduser().exists()
    return (find_pair(draft.strip()).draft or draft) if named else draft


def add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.engine.catalogue import SMOLLM2_EXIT_LAYER

    parser.add_argument("--k", default="4", help="draft tokens per round (1-16); measure takes a list like 2,4,8")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    parser.add_argument("--top-k", type=int, default=0, help="0 = off")
    parser.add_argument("--top-p", type=float, default=1.0, help="1 = off")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ngram-min", type=int, default=1, help="shortest suffix n-gram lookup matches")
    parser.add_argument("--ngram-max", type=int, default=3, help="longest suffix n-gram lookup matches")
    add_suffix_arguments(parser)
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
        "top-k frontier nodes for DEPTH levels, keep the BUDGET best by cumulative draft log-prob; draft model, "
        "eagle, eagle3); bench takes several",
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
    pair.draft_kept(n if pair.draft is not None else 0)  # a clear message now if this draft cannot be trimmed
    return replace(settings, draft_vocab=n)


def method_of(args: argparse.Namespace) -> str:
    if getattr(args, "plain", False):
        if getattr(args, "method", None):
            raise SpecvizError("--plain runs the target alone, with no drafts: drop --method, or drop --plain.")
        return methods.PLAIN
    if getattr(args, "method", None):
        return args.method
    return methods.NGRAM if args.draft.strip().lower() == methods.NGRAM else methods.DRAFT


def load_named(args: argparse.Namespace, draft: str | None, cross: bool = False) -> ModelPair:
    """The target the model arguments name, with this draft (None: none), on their device, precision and threads;
    cross: a draft with another tokenizer is mapped to the target's (for TLI and SLEM) instead of refused."""
    from specviz.engine.models import load_pair

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
    if needing and args.draft.strip().lower() == methods.NGRAM:
        from specviz.engine.catalogue import NO_DRAFT_MODEL

        raise SpecvizError(
            f"{', '.join(needing)} needs a draft model, and this pair has none (yet): use --method "
            f"{', '.join(NO_DRAFT_MODEL)} or --plain, or give a draft model with --draft."
        )


def chat_rows(args: argparse.Namespace, pair: ModelPair, rows):
    """A workload's rows with each prompt wrapped in the target's chat template: for an instruct pair (not --raw), or
    where a row's own "chat" field says so."""
    from specviz.measure.prompts import wrapped_rows

    return wrapped_rows(pair, rows, getattr(args, "chat", False))


def load_family(args: argparse.Namespace, base: RunSettings) -> tuple[ModelPair, list[str]]:
    """--method all: the pair with every method it can run (draft model, lookups, the heads found beside the target
    or given, early exit at --exit-layer); each one left out is named on stderr with the reason."""
    from specviz.engine.early_exit import check_exit_layer
    from specviz.engine.models import find_heads

    pair = load_named(args, None if args.draft.strip().lower() == methods.NGRAM else args.draft)
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


def read_prompt(args: argparse.Namespace) -> str:
    """--prompt, or at most MAX_PROMPT_FILE_BYTES of --prompt-file (so /dev/zero is refused, not read forever)."""
    from specviz.measure.prompts import read_capped

    if args.prompt_file:
        data = read_capped(args.prompt_file, MAX_PROMPT_FILE_BYTES, "prompt")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SpecvizError(f"Cannot read the prompt file {args.prompt_file!r}: {exc}") from exc
    if args.prompt is None:
        raise SpecvizError("Give a prompt with --prompt TEXT or --prompt-file FILE.")
    return args.prompt


def cmd_run(args: argparse.Namespace) -> int:
    from specviz.engine.decode import chat_wrapped, generate
    from specviz.engine.proposers import draft_cap_note

    if args.plain and args.tree:
        raise SpecvizError("--plain runs the target alone, with no drafts: drop --tree, or drop --plain.")
    if len(int_list(args.k, "--k")) > 1:
        raise SpecvizError(f"run takes one K (e.g. --k 4); got {args.k!r}. measure and bench compare several.")
    settings = settings_from(args, method_of(args))  # validate before the slow model load
    prompt = check_prompt(read_prompt(args))
    pair = load_for(args, [settings.method])
    note = draft_cap_note(pair, settings)
    if note:
        print(note, file=sys.stderr)
    if getattr(args, "chat", False):
        prompt = chat_wrapped(pair, prompt)
    trace = generate(pair, prompt, with_draft_vocab(settings, args, pair))
    if args.json:
        print(trace.to_json(indent=2))
    else:
        colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        print(render_text(trace, colour))
        print(summary_line(trace))
    return 0


def render_text(trace: Trace, colour: bool) -> str:
    """The prompt and the output, each token marked by origin: colour on a terminal, [!x] / [+x] markers elsewhere."""
    if colour:
        parts = [ANSI["prompt"] + trace.prompt + RESET]
        parts += [ANSI[origin] + text + (RESET if ANSI[origin] else "") for _, text, origin in trace.tokens()]
        legend = " · ".join(f"{ANSI[kind]}{name}{RESET}" for kind, name in LEGEND)
    else:
        parts = [trace.prompt] + [MARKERS[o][0] + text + MARKERS[o][1] for _, text, o in trace.tokens()]
        legend = "plain text = accepted draft · [!x] = correction · [+x] = bonus"
    return "".join(parts) + "\n\n" + ("" if trace.settings.method == methods.PLAIN else legend)


def summary_line(trace: Trace) -> str:
    t, s = trace.totals, trace.settings
    alpha = "n/a" if t.alpha is None else f"{t.alpha:.2f}"
    how = "greedy" if s.sampling.greedy else f"T={s.sampling.temperature:g}"
    what = methods.label(methods.PLAIN) if s.method == methods.PLAIN else f"{s.method}, K={s.k}"
    if s.adaptive != schedule.CONSTANT:
        drafted = t.proposed / t.rounds if t.rounds else 0.0
        what += f" ({schedule.label(s)} schedule, {drafted:.2f} drafts per round)"
    if s.is_tree:
        what = f"tree {s.tree_label} ({s.draft_slots} nodes, depth {s.draft_length})"
        what = what.replace("nodes,", "nodes kept,") if s.dynamic else what
        what = what if s.method == methods.TREE else f"{s.method} {what}"
    return (
        f"{what}, {how}: {t.committed} tokens in {t.rounds} rounds · α {alpha} · τ {t.tau:.2f} · "
        f"{t.tokens_per_s:.1f} tokens/s ({t.wall_s:.2f} s)"
    )


def check_ks(ks: list[int]) -> None:
    """Validate every K before anything slow is loaded."""
    for k in ks:
        RunSettings(k=k)


def _exit_lanes_that_fit(pair: ModelPair, lanes: tuple[str, ...], base: RunSettings, asked: bool) -> tuple[str, ...]:
    """The lanes, without the early-exit ones when --exit-layer does not fit this target (or its decoder cannot be
    split): skipped with a note from the default lanes, refused with the reason when --lanes asked for them."""
    from specviz.engine.early_exit import check_exit_layer

    exiting = [lane for lane in lanes if methods.get(lane).exits_early]
    if not exiting:
        return lanes
    try:
        check_exit_layer(pair.target, base.exit_layer)
    except SpecvizError as exc:
        if asked:
            raise
        print(f"skipped the {', '.join(exiting)} lanes: {exc}", file=sys.stderr)
        return tuple(lane for lane in lanes if lane not in exiting)
    return lanes


def cmd_measure(args: argparse.Namespace) -> int:
    from specviz.measure.lanes import run_method
    from specviz.measure.local import step_costs
    from specviz.measure.prompts import tags_found
    from specviz.measure.ranking import best_lines, ranking
    from specviz.measure.recommend import judge, verdict_document, verdict_line
    from specviz.measure.summary import results_csv, results_json, summarize
    from specviz.measure.timing import timing_words, workload_interval_kind
    from specviz.measure.workload import run_workload, runnable_rows

    check_server_options(args)
    check_outputs(args)
    if args.method is not None and not args.method.strip():
        raise SpecvizError(f"--method is empty: give one or more of {', '.join(methods.PROPOSERS)}, or leave it out.")
    if args.server and (args.method or "").strip().lower() in methods.FAMILY:
        raise SpecvizError(
            f"--method {args.method.strip()} measures the whole family in this process; a server runs the one method "
            "it was started with: drop --server, or give that one method."
        )
    if args.server:  # measured through a vLLM server: no model loads here
        return cmd_measure_server(args)
    tree = one_tree(args)
    family = (args.method or "").strip().lower() in methods.FAMILY
    if family and tree:
        raise SpecvizError(
            f"--method {args.method.strip()} measures the chain methods; a tree needs a tree method "
            f"({', '.join(methods.SHAPED + methods.BRANCHING)}): drop --tree, or name the methods."
        )
    args.method, args.k = args.method or (methods.TREE if tree else method_of(args)), args.k or "4"
    tree_drafters = methods.SHAPED + methods.BRANCHING
    method_names = (
        list(methods.PROPOSERS)
        if family
        else methods.parse_list(
            args.method, "--method", tree_drafters if tree else methods.PROPOSERS + methods.CROSSING
        )
    )
    ks = [tree_fields(tree)["k"]] if tree else int_list(args.k, "--k")
    check_ks(ks)
    if args.repeats < 1:
        raise SpecvizError("--repeats must be at least 1.")
    base = settings_from(args, methods.DRAFT if family else method_names[0])
    workload = selected_workload(args)
    for problem in workload.problems:
        print(f"skipped {problem}", file=sys.stderr)
    if family:
        pair, method_names = load_family(args, base)
    else:
        pair = load_for(args, method_names)
    base = with_draft_vocab(base, args, pair)
    asked = second_turns(args, pair, workload.rows, base)
    rows, skipped = runnable_rows(
        pair, chat_rows(args, pair, asked), [replace(base, method=name) for name in method_names]
    )
    for problem in skipped:
        print(f"skipped {problem}", file=sys.stderr)
    print(tags_found(rows), file=sys.stderr)

    def progress(p) -> None:
        eta = "" if p.done == 0 else f", about {p.eta_s:.0f} s left"
        print(f"\r[{p.done}/{p.total}] {p.elapsed_s:.0f} s{eta}   ", end="", file=sys.stderr, flush=True)

    print("measuring step costs", file=sys.stderr)
    costs = step_costs(pair, ks, base, method_names)
    memories: dict[tuple[str, int], SuffixMemory] = {}  # suffix decoding remembers earlier outputs per method x K

    def run(prompt, settings, tag):
        memory = memories.setdefault((settings.method, settings.k), SuffixMemory())
        return run_method(pair, prompt, settings, settings.method, tag=tag, memory=memory)

    results, error = collect(run_workload(run, rows, method_names, ks, base, progress, args.repeats))
    print(file=sys.stderr)
    summary = summarize(results, costs, args.seed)
    print(summary_table(summary))
    ranked = ranking(results, costs, args.seed, summary)
    print()
    print("Ranked by measured speedup over plain decoding, per tag (c: a draft step / a target step, measured here):")
    print(ranking_table(ranked))
    for line in best_lines(ranked):
        print(line)
    spec_bench = spec_bench_report(ranked, results, rows, args, skipped)
    if base.k_schedule != schedule.CONSTANT:
        print(f"K schedule: {schedule.label(base)} (K = {', '.join(map(str, ks))} is its start or cap)")
    print(
        timing_words(args.repeats, base.sampling.temperature, None, len(rows), base.max_new_tokens)
        + " Speedup CI: "
        + workload_interval_kind(args.repeats)
        + "."
    )
    verdicts = judge(results, pair.describe()["draft"], base.sampling.temperature, costs, args.seed, summary)
    for verdict in verdicts:
        print(verdict_line(verdict))
    meta, verdict = {"methods": method_names, "ks": ks, **pair.describe()}, verdict_document(verdicts)
    written = write_all(
        [
            (
                args.json_out,
                lambda: with_section(
                    results_json(results, base, meta, costs, args.seed, verdict, ranked), "spec_bench", spec_bench
                ),
            ),
            (args.csv_out, lambda: results_csv(results, verdict, meta, ranked)),
        ]
    )
    if error is not None:  # reported after the finished runs are written
        print(f"error: {error}", file=sys.stderr)
    return 0 if error is None and written else 2


def check_outputs(args: argparse.Namespace) -> None:
    """Every --json / --csv path must be writable before anything runs, so no finished run is lost."""
    check_writable(getattr(args, "json_out", None), "--json")
    check_writable(getattr(args, "csv_out", None), "--csv")


def cmd_verify_curve(args: argparse.Namespace) -> int:
    """bench --verify-curve: each target's v(K) for K = 1..16 beside its weight bytes and the measured bandwidth."""
    import json

    from specviz.engine.catalogue import find_pair
    from specviz.engine.models import load_pair
    from specviz.measure.bench import environment
    from specviz.measure.load_model import measured_hardware
    from specviz.measure.verify_curve import curve_document, curve_lines, verify_curve

    specs = [find_pair(name) for name in args.pairs.split(",") if name.strip()]
    if not specs:
        raise SpecvizError("--pairs names at least one pair, e.g. pystdlib,smollm2.")
    curves, env = [], {}
    for spec in specs:
        print(f"measuring v(K) on {spec.key}", file=sys.stderr, flush=True)
        target, _ = spec.sources()
        pair = load_pair(target, None, device=args.device, dtype=args.dtype, threads=parse_threads(args.threads))
        curves.append(verify_curve(pair, spec.key, repeats=max(args.repeats, 5), forward=args.forward))
        env = environment(pair)
    env = {k: v for k, v in env.items() if k not in ("target", "draft")}
    doc = curve_document(curves, measured_hardware().bandwidth_gb_s, env)
    print("\n".join(curve_lines(doc)))
    return 0 if write_all([(args.json_out, lambda: json.dumps(doc, indent=2) + "\n")]) else 2


def cmd_bench(args: argparse.Namespace) -> int:
    import json

    from specviz.engine.decode import make_proposer
    from specviz.engine.models import ASSETS, find_heads
    from specviz.measure.bench import forward_table, results_table, run_bench, timing_note, with_forwards
    from specviz.measure.lanes import tree_settings
    from specviz.measure.prompts import read_workload
    from specviz.measure.workload import runnable_rows

    check_outputs(args)
    if args.verify_curve:
        return cmd_verify_curve(args)
    if args.limit < 0:
        raise SpecvizError(f"--limit is how many prompts to use (0 = all); got {args.limit}.")
    crossing_lanes = methods.CROSSING_LANES[1:]  # asked for by name: a draft with a tokenizer of its own
    lanes = tuple(methods.parse_list(args.lanes or ",".join(methods.LANES), "--lanes", methods.LANES + crossing_lanes))
    if methods.PLAIN not in lanes:
        raise SpecvizError(
            f"--lanes must include plain, the baseline every speedup is measured against; got {args.lanes!r}."
        )
    ks = int_list(args.k, "--k")
    check_ks(ks)
    if args.repeats < 1:
        raise SpecvizError("--repeats must be at least 1.")
    trees = tree_shapes(args)
    tree_methods = tuple(
        methods.parse_list(args.tree_methods, "--tree-methods", methods.SHAPED + methods.BRANCHING) if trees else ()
    )
    for shape in trees:  # validate before the slow model load
        for name in tree_methods:
            RunSettings(method=name, **tree_fields(shape))
    args.tree = None
    plans = schedule_variants(args)
    for plan in plans:  # validate before the slow model load
        RunSettings(k=ks[0], **plan)
    args.k_schedule = args.confidence_threshold = None
    forwards = [name.strip() for name in args.forward.split(",")]
    for name in forwards:  # validate before the slow model load
        RunSettings(forward=name)
    args.forward = forwards[0]
    base = settings_from(args, methods.PLAIN)
    rows = read_workload(args.prompts or ASSETS / "workloads" / "code.jsonl").rows
    rows = rows[: args.limit] if args.limit else rows
    heads = find_heads(args.target, args.head)
    headless = [lane for lane in lanes if methods.get(lane).loads_head and lane not in heads]
    if args.lanes is None and headless:
        lanes = tuple(lane for lane in lanes if lane not in headless)  # the default, for any target
        for lane in headless:
            print(
                f"skipped the {lane} lane: no head for it beside the target (give one with --head DIR)", file=sys.stderr
            )
    drafted = [lane for lane in lanes if methods.get(lane).loads_draft]
    if args.lanes is None and drafted and args.draft.strip().lower() == methods.NGRAM:
        lanes = tuple(lane for lane in lanes if lane not in drafted)  # a pair with no draft model: the others
        print(f"skipped the {', '.join(drafted)} lanes: this pair has no draft model", file=sys.stderr)
    pair = load_for(args, lanes + tree_methods)
    lanes = _exit_lanes_that_fit(pair, lanes, base, asked=args.lanes is not None)
    base = with_draft_vocab(base, args, pair)
    lanes_of_trees = [tree_settings(base, shape, name) for shape in trees for name in tree_methods]
    for settings in lanes_of_trees:  # a shape a head cannot draft (a tree deeper than its parallel heads): now
        make_proposer(pair, settings)
    rows, skipped = runnable_rows(pair, chat_rows(args, pair, rows), [base, *lanes_of_trees])
    for problem in skipped:
        print(f"skipped {problem}", file=sys.stderr)
    prompts = [row.prompt for row in rows]
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    docs = {}
    for name in forwards:
        say(f"forward {name}")
        docs[name] = run_bench(
            pair,
            prompts,
            ks,
            replace(base, forward=name),
            args.repeats,
            lanes,
            say,
            trees=trees,
            schedules=plans,
            tree_methods=tree_methods,
        )
    doc = with_forwards(docs)
    for name, one in docs.items():
        if len(docs) > 1:
            print(f"forward {name}:")
        print(results_table(one))
    print(timing_note(doc))
    if len(docs) > 1:
        print(forward_table(doc))
    return 0 if write_all([(args.json_out, lambda: json.dumps(doc, indent=2))]) else 2
