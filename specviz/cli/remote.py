"""`python -m specviz measure PROMPTS --server URL`: the workload measured through a running vLLM server.

No model loads here: the server decodes with the method and K it was started with, and there is no plain baseline,
so tokens/s is reported and speedup is not (the summary shows n/a). The API key is read from the environment
variable that --api-key-env names and goes nowhere but the request headers.
"""

from __future__ import annotations

import argparse
import os
import sys

from specviz import methods
from specviz.cli.args import int_list, settings_from, summary_table, write_all, write_file
from specviz.errors import SpecvizError


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("measuring through a vLLM server")
    group.add_argument(
        "--server",
        action="append",
        default=None,
        help="URL of a running vLLM server (e.g. http://127.0.0.1:8000); no model loads here. With --baseline-server, "
        "give it more than once to sweep several speculative servers",
    )
    group.add_argument(
        "--baseline-server",
        metavar="URL",
        help="a plain vLLM server (no --speculative-config) on the same model: runs the load sweep, speculative "
        "against plain at each --concurrency level (docs/vllm.md)",
    )
    group.add_argument("--model", help="which served model (needed when the server serves several)")
    group.add_argument("--api-key-env", metavar="VAR", help="name of the environment variable holding the API key")
    group.add_argument(
        "--concurrency",
        default="1",
        help="requests in flight at once (above 1 needs the server's per-request metrics); with --baseline-server a "
        "list of levels, e.g. 1,2,4,8",
    )
    group.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds to wait for one request (default 300); in a load sweep a slower request ends the sweep at its "
        "level, the levels before kept",
    )


def api_key_from(args: argparse.Namespace) -> str | None:
    if not args.api_key_env:
        return None
    key = os.environ.get(args.api_key_env)
    if not key:
        raise SpecvizError(
            f"--api-key-env names {args.api_key_env}, but that environment variable is not set or empty."
        )
    return key


def check_server_options(args: argparse.Namespace) -> None:
    """Options that only mean something with --server are refused without it."""
    given = [flag for flag, value in (("--model", args.model), ("--api-key-env", args.api_key_env)) if value]
    if str(args.concurrency).strip() != "1":
        given.append("--concurrency")
    if args.baseline_server:
        given.append("--baseline-server")
    if given and not args.server:
        raise SpecvizError(f"{', '.join(given)} only apply with --server URL (the speculative server).")
    if args.server and len(args.server) > 1 and not args.baseline_server:
        raise SpecvizError("Several --server URLs are compared in a load sweep only: add --baseline-server PLAIN_URL.")


def cmd_measure_server(args: argparse.Namespace) -> int:
    from specviz.cli.workloads import selected_workload
    from specviz.measure.prompts import tags_found
    from specviz.measure.ranking import ranking
    from specviz.measure.recommend import judge, verdict_document, verdict_line
    from specviz.measure.summary import results_csv, results_json, summarize
    from specviz.remote.vllm import connect, measure

    declared = None
    if args.method is not None:
        names = methods.parse_list(args.method, "--method", methods.PROPOSERS)
        if len(names) > 1:
            raise SpecvizError("A server runs one method (the one it was started with): give at most one --method.")
        declared = names[0]
    if args.baseline_server:
        return cmd_concurrency_sweep(args, declared)
    concurrency = int_list(args.concurrency, "--concurrency")
    if len(concurrency) > 1:
        raise SpecvizError("A list of --concurrency levels is a load sweep: add --baseline-server PLAIN_URL.")
    args.concurrency = concurrency[0]
    if args.concurrency < 1 or args.repeats < 1:
        raise SpecvizError("--concurrency and --repeats must be at least 1.")
    requested_k, args.k = args.k, args.k or "4"
    base = settings_from(args, declared or methods.DRAFT)  # validates sampling and length before any request
    workload = selected_workload(args)
    for problem in workload.problems:
        print(f"skipped {problem}", file=sys.stderr)
    server = connect(args.server[0], args.model, api_key_from(args), args.timeout, declared)
    if requested_k is not None and int_list(requested_k, "--k") != [server.k]:
        raise SpecvizError(
            f"The server drafts K={server.k} tokens per step; restart it with another "
            f'"num_speculative_tokens" to measure K={requested_k}.'
        )
    print(
        f"measuring {server.url}: {server.model}, {methods.label(server.method)}, K={server.k} "
        f"({'per-request metrics' if server.per_request else 'counters'})",
        file=sys.stderr,
    )
    for note in server.notes:
        print(f"  {note}", file=sys.stderr)
    print(tags_found(workload.rows), file=sys.stderr)

    def progress(p) -> None:
        eta = "" if p.done == 0 else f", about {p.eta_s:.0f} s left"
        print(f"\r[{p.done}/{p.total}] {p.elapsed_s:.0f} s{eta}   ", end="", file=sys.stderr, flush=True)

    results, error = collect(measure(server, workload.rows, base, args.concurrency, progress, args.repeats))
    print(file=sys.stderr)
    warned = sum(bool(r.run.meta.get("warnings")) for r in results)
    if warned:
        print(
            f"{warned} run(s) carry warnings (see meta.warnings in the JSON): other clients used the server?",
            file=sys.stderr,
        )
    summary = summarize(results, None, args.seed)
    print(summary_table(summary))
    verdicts = judge(results, None, base.sampling.temperature, None, args.seed, summary)
    for line in [verdict_line(v) for v in verdicts]:
        print(line)  # no plain baseline on a server: each says there is no go / no-go
    meta = {"methods": [server.method], "ks": [server.k], **server.describe(), "concurrency": args.concurrency}
    verdict = verdict_document(verdicts)
    ranked = ranking(results, None, args.seed, summary)  # the files' shape: one setting, no speedup, ranked by τ
    if args.json_out:
        doc = results_json(results, server.settings(base), meta, None, args.seed, verdict, ranked)
        write_file(args.json_out, doc)
    if args.csv_out:
        write_file(args.csv_out, results_csv(results, verdict, meta, ranked))
    if error is not None:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def collect(results_iter) -> tuple[list, SpecvizError | None]:
    """Every result until the end, Ctrl-C or an error a user can fix (a server that stopped): the finished ones are
    kept either way, and the error is returned for the caller to report after writing them."""
    results = []
    try:
        for result in results_iter:
            results.append(result)
    except KeyboardInterrupt:
        print(f"\nstopped: keeping the {len(results)} finished run(s)", file=sys.stderr)
    except SpecvizError as exc:
        print(f"\nstopped: keeping the {len(results)} finished run(s)", file=sys.stderr)
        return results, exc
    return results, None


def cmd_concurrency_sweep(args: argparse.Namespace, declared: str | None) -> int:
    """The load sweep: every --server and the --baseline-server at each --concurrency level (specviz.load JSON)."""
    from specviz.cli.workloads import selected_workload
    from specviz.measure import concurrency
    from specviz.remote.concurrency import connect_plain, parse_levels, sweep_documents
    from specviz.remote.vllm import connect

    levels = parse_levels(args.concurrency)
    if args.repeats < 1:
        raise SpecvizError(f"--repeats must be at least 1; got {args.repeats}.")
    if args.k is not None:
        raise SpecvizError("The load sweep measures the servers as they run: drop --k (each server has its own K).")
    args.k = "4"
    base = settings_from(args, declared or methods.DRAFT)  # validates sampling and length before any request
    workload = selected_workload(args)
    for problem in workload.problems:
        print(f"skipped {problem}", file=sys.stderr)
    key = api_key_from(args)
    servers = [connect(url, args.model, key, args.timeout, declared) for url in args.server]
    baseline = connect_plain(args.baseline_server, args.model or servers[0].model, key, args.timeout)
    for server in servers:
        print(
            f"speculative: {server.url}: {server.model}, {methods.label(server.method)}, K={server.k}", file=sys.stderr
        )
    print(f"baseline:    {baseline.url}: {baseline.model}, plain decoding", file=sys.stderr)
    say = lambda url, level: print(f"  concurrency {level}: {url}", file=sys.stderr, flush=True)  # noqa: E731
    docs, _ = collect(sweep_documents(servers, baseline, workload.rows, base, levels, args.repeats, say))
    if not docs:  # stopped (Ctrl-C) before the first level finished
        print("stopped before any level finished: nothing to write", file=sys.stderr)
        return 2
    doc = docs[-1]
    print(concurrency.table(doc))
    written = write_all(
        [(args.json_out, lambda: concurrency.to_json(doc)), (args.csv_out, lambda: concurrency.to_csv(doc))]
    )
    if doc["failure"]:
        print(f"error: {concurrency.failure_words(doc['failure'])}", file=sys.stderr)
    return 0 if doc["failure"] is None and written else 2
