"""python -m specviz run: one prompt, decoded and printed as a coloured (or marked) trace, or as JSON."""

from __future__ import annotations

import argparse
import os
import sys

from specviz import methods
from specviz.cli.args import int_list, settings_from
from specviz.cli.loading import load_for
from specviz.cli.model_args import add_model_arguments, add_sampling_arguments, method_of, with_draft_vocab
from specviz.core import schedule, verify
from specviz.core.settings import check_prompt
from specviz.core.trace import Trace
from specviz.core.trace_json import trace_to_json
from specviz.errors import SpecvizError

ANSI = {"accepted": "\033[32m", "correction": "\033[1;31m", "bonus": "\033[1;34m", "target": "", "prompt": "\033[2m"}
RESET = "\033[0m"
LEGEND = (("accepted", "accepted draft"), ("correction", "correction"), ("bonus", "bonus"))
MAX_PROMPT_FILE_BYTES = 2_000_000  # far past any model's context; the run then says how many tokens fit
MARKERS = {"accepted": ("", ""), "correction": ("[!", "]"), "bonus": ("[+", "]"), "target": ("", "")}


def add_run_parser(commands) -> None:
    """The run command's parser."""
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
        help="who drafts (default: the draft model, or n-gram lookup with --draft none); "
        f"{' / '.join(methods.CROSSING)} = a --draft with a tokenizer of its own (docs/engine.md); "
        f"{methods.heads_words()}: beside the target or given by --head",
    )
    run.add_argument("--json", action="store_true", help="print the full trace as JSON (format specviz.trace v1)")
    run.set_defaults(handler=cmd_run)


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
    if args.plain and args.tree:
        raise SpecvizError("--plain runs the target alone, with no drafts: drop --tree, or drop --plain.")
    if len(int_list(args.k, "--k")) > 1:
        raise SpecvizError(f"run takes one K (e.g. --k 4); got {args.k!r}. measure and bench compare several.")
    settings = settings_from(args, method_of(args))  # validate before the slow model load
    prompt = check_prompt(read_prompt(args))
    from specviz.engine.decode import chat_wrapped, generate  # torch: imported once the input is known to be good
    from specviz.engine.proposers import draft_cap_note

    pair = load_for(args, [settings.method])
    note = draft_cap_note(pair, settings)
    if note:
        print(note, file=sys.stderr)
    if getattr(args, "chat", False):
        prompt = chat_wrapped(pair, prompt)
    trace = generate(pair, prompt, with_draft_vocab(settings, args, pair))
    if args.json:
        print(trace_to_json(trace, indent=2))
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
    if s.verifier == verify.BLOCK and s.method != methods.PLAIN:
        what += ", block verification"
    return (
        f"{what}, {how}: {t.committed} tokens in {t.rounds} rounds · α {alpha} · τ {t.tau:.2f} · "
        f"{t.tokens_per_s:.1f} tokens/s ({t.wall_s:.2f} s)"
    )
