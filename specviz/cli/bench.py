"""python -m specviz bench: every lane against plain decoding, or (--verify-curve) each target's v(K)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from specviz import methods
from specviz.cli.args import check_ks, check_outputs, int_list, schedule_variants, settings_from, tree_shapes, write_all
from specviz.cli.loading import chat_rows, load_for
from specviz.cli.model_args import add_model_arguments, add_sampling_arguments, no_draft_model, with_draft_vocab
from specviz.core.settings import RunSettings, parse_threads, tree_fields
from specviz.errors import SpecvizError

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair


def add_bench_parser(commands) -> None:
    """The bench command's parser."""
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


def cmd_verify_curve(args: argparse.Namespace) -> int:
    """bench --verify-curve: each target's v(K) for K = 1..16 beside its weight bytes and the measured bandwidth."""
    import json

    from specviz.engine.loading.catalogue import find_pair
    from specviz.engine.loading.models import load_pair
    from specviz.measure.bench import environment
    from specviz.measure.sweep_roofline import measured_hardware
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
    from specviz.engine.loading.models import ASSETS, find_heads
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
    if args.lanes is None and drafted and no_draft_model(args.draft):
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
