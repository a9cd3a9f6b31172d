"""python -m specviz measure: acceptance and speedup over a workload, per method x K, ranked per tag."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from specviz import methods
from specviz.cli.args import (
    check_ks,
    check_outputs,
    int_list,
    one_tree,
    ranking_table,
    settings_from,
    summary_table,
    write_all,
)
from specviz.cli.loading import chat_rows, load_family, load_for
from specviz.cli.model_args import add_model_arguments, add_sampling_arguments, method_of, with_draft_vocab
from specviz.cli.remote import add_server_arguments, check_server_options, cmd_measure_server, collect
from specviz.cli.workloads import (
    add_workload_arguments,
    second_turns,
    selected_workload,
    spec_bench_report,
    with_section,
)
from specviz.core import schedule
from specviz.core.settings import tree_fields
from specviz.core.suffix_tree import SuffixMemory
from specviz.errors import SpecvizError


def add_measure_parser(commands) -> None:
    """The measure command's parser."""
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


def cmd_measure(args: argparse.Namespace) -> int:
    from specviz.measure.lanes import run_method
    from specviz.measure.local import step_costs
    from specviz.measure.prompts import tags_found
    from specviz.measure.race_lanes import untrusted_words
    from specviz.measure.ranking import best_lines, c_lines, doubt_lines, ranking
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
    for line in c_lines(ranked):  # a measured cost that was dropped says so
        print(line)
    if doubts := untrusted_words("speedups", doubt_lines(ranked)):  # the race's words for the same rule
        print(doubts)
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
