"""Does the server speculate as specviz does? A served run against an in-process run of the same pair, step by step.

Two engines that decode the same pair greedily in the same precision commit the same tokens; their verify steps line
up once both start a step at the same token: from there each drafts the same K tokens from the same context and
accepts the same prefix. They start out of line: vLLM's prefill commits the first token before any draft (its first
verify step drafts from prompt + 1 token), while specviz's first round drafts straight from the prompt (its prefill
commits nothing). At the end, specviz never drafts past max_new_tokens while vLLM drafts K and cuts the output, so
the steps that could reach past the limit are left out of the comparison.

    python -m specviz.remote.agreement PROMPTS --server URL [--max-new-tokens 64] [--limit N]
runs every prompt on both (the bundled pair in process, float32, greedy, the server's K) and prints the agreement
and both engines' tokens/s; --json adds each prompt's steps side by side, each difference with its reason.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace

from specviz import methods
from specviz.core import stats
from specviz.core.record import RunRecord
from specviz.core.settings import RunSettings


@dataclass(frozen=True)
class Agreement:
    steps: int  # the server's verify steps compared (those that could not reach past max_new_tokens)
    same: int  # of them, the ones specviz also ran: same first token, same drafts, same accepted count
    first_same: int | None  # index (among those steps) of the first one specviz also ran
    same_after_first: int  # steps from first_same on that agree
    text_equal: bool
    first_divergence: int | None  # first differing output token (None: identical ids)


def spans(record: RunRecord) -> list[tuple[int, int, int]]:
    """(first token index, drafted, accepted) of every round that drafted, from the rounds' uncut lengths."""
    out, start = [], 0
    rounds = zip(record.per_round_drafted, record.per_round_accepted, record.per_round_committed)
    for drafted, accepted, committed in rounds:
        if drafted:
            out.append((start, drafted, accepted))
        start += committed
    return out


def compare(served: RunRecord, local: RunRecord, max_new_tokens: int) -> Agreement:
    """The served run's verify steps against the local run's rounds (both need per-round counts)."""
    if served.per_round_drafted is None or local.per_round_drafted is None:
        raise ValueError("both runs need per-round counts (the server's per-request metrics at the detailed level)")
    if served.meta.get("rounds_without_drafts"):
        raise ValueError("the server skipped drafting on some steps (n-gram misses): their places are not known")
    ours = set(spans(local))
    theirs = [s for s in spans(served) if s[0] + s[1] + 1 <= max_new_tokens]  # could not reach past the limit
    same = [s in ours for s in theirs]
    first = same.index(True) if True in same else None
    return Agreement(
        steps=len(theirs),
        same=sum(same),
        first_same=first,
        same_after_first=sum(same[first:]) if first is not None else 0,
        text_equal=served.text == local.text,
        first_divergence=stats.first_divergence(local.output_ids, served.output_ids) if served.output_ids else None,
    )


BEFORE_IN_LINE = (
    "before the engines line up: vLLM's prefill committed the first token before any draft, so its steps start one "
    "token later than specviz's rounds (which draft straight from the prompt) until both start a step at the same token"
)
PAST_THE_LIMIT = (
    "could reach past max_new_tokens: vLLM drafts K and cuts the output, specviz stops drafting (not compared)"
)
AFTER_IN_LINE = (
    "after the engines lined up: a different draft or accepted count means different numbers: half precision "
    "(bfloat16 / float16) on either side, where a near-tie can flip a token, or a different pair"
)


def side_by_side(served: RunRecord, local: RunRecord, max_new_tokens: int) -> list[dict]:
    """Per output position where either engine started a verify step: both engines' drafted and accepted counts,
    whether they are the same step, and why not (the reasons above)."""
    theirs = {start: (d, a) for start, d, a in spans(served)}
    ours = {start: (d, a) for start, d, a in spans(local)}
    compared = [s for s, (d, _) in theirs.items() if s + d + 1 <= max_new_tokens]
    first = min((s for s in compared if theirs[s] == ours.get(s)), default=None)
    rows = []
    for start in sorted(theirs.keys() | ours.keys()):
        mine, yours = theirs.get(start), ours.get(start)
        same = mine is not None and mine == yours
        if same:
            why = ""
        elif start not in compared and (mine is not None or start + served.k + 1 > max_new_tokens):
            why = PAST_THE_LIMIT
        elif first is None or start < first:
            why = BEFORE_IN_LINE
        elif mine is None:
            why = "specviz started a round here; vLLM's step covering this token started earlier: " + AFTER_IN_LINE
        else:
            why = AFTER_IN_LINE
        rows.append(
            {
                "starts at token": start,
                "vLLM drafted": None if mine is None else mine[0],
                "vLLM accepted": None if mine is None else mine[1],
                "specviz drafted": None if yours is None else yours[0],
                "specviz accepted": None if yours is None else yours[1],
                "same step": same,
                "why not": why,
            }
        )
    return rows


RunFn = Callable[[str, RunSettings, str], RunRecord]  # (prompt, settings, tag) -> the run's record
WARM_UP_TOKENS = 8  # each engine's first call pays for allocation: a short run before the timed ones


@dataclass(frozen=True)
class EngineRun:
    """One prompt decoded by both engines: the two records and how far their steps agree."""

    prompt: str
    found: Agreement
    local: RunRecord  # specviz, in this process
    served: RunRecord  # the server
    max_new_tokens: int

    @property
    def steps(self) -> list[dict]:
        """Both engines' steps side by side, each difference with its reason."""
        return side_by_side(self.served, self.local, self.max_new_tokens)


def compare_engines(
    run_local: RunFn, run_served: RunFn, rows: Sequence, settings: RunSettings, on_prompt: Callable | None = None
) -> Iterator[EngineRun]:
    """Each row's prompt on both engines with the same settings (after a short warm-up of each), and their agreement,
    yielded as each prompt finishes. on_prompt(i, row) is called before the i-th prompt runs (a progress bar)."""
    warm = replace(settings, max_new_tokens=min(WARM_UP_TOKENS, settings.max_new_tokens))
    run_local(rows[0].prompt, warm, rows[0].tag)
    run_served(rows[0].prompt, warm, rows[0].tag)
    for i, row in enumerate(rows):
        if on_prompt:
            on_prompt(i, row)
        local = run_local(row.prompt, settings, row.tag)
        served = run_served(row.prompt, settings, row.tag)
        found = compare(served, local, settings.max_new_tokens)
        yield EngineRun(row.prompt, found, local, served, settings.max_new_tokens)


def totals(results: list[dict]) -> dict:
    """What the summary adds up over the prompts' results (Agreement's fields, the two speeds, side_by_side)."""
    return {
        "texts_equal": sum(r["text_equal"] for r in results),
        "steps": sum(r["steps"] for r in results),
        "steps_same": sum(r["same"] for r in results),
        "steps_from_first_same": sum(r["steps"] - r["first_same"] for r in results if r["first_same"] is not None),
        "steps_same_from_first_same": sum(r["same_after_first"] for r in results),
        "first_same_index": [r["first_same"] for r in results],
        "specviz_tokens_per_s_median": statistics.median(r["local_tokens_per_s"] for r in results),
        "vllm_tokens_per_s_median": statistics.median(r["served_tokens_per_s"] for r in results),
    }


def main(argv: list[str] | None = None) -> int:
    from specviz.engine.models import BUNDLED_DRAFT, BUNDLED_TARGET, load_pair
    from specviz.measure.local import engine_source
    from specviz.measure.prompts import read_workload
    from specviz.remote.vllm import connect

    parser = argparse.ArgumentParser(prog="python -m specviz.remote.agreement", description=__doc__.split("\n")[0])
    parser.add_argument("prompts_file")
    parser.add_argument("--server", required=True)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--limit", type=int, default=0, help="first N prompts only (0 = all)")
    parser.add_argument("--target", default=BUNDLED_TARGET)
    parser.add_argument("--draft", default=BUNDLED_DRAFT)
    parser.add_argument(
        "--method",
        choices=sorted({*methods.FROM_VLLM.values(), methods.TLI}),
        help="the server's speculative method, when it does not say (a server outside vLLM's dev mode hides it)",
    )
    parser.add_argument("--head", help="the feature head directory the server drafts with (default: beside the target)")
    parser.add_argument("--json", dest="json_out", help="write per-prompt results here")
    args = parser.parse_args(argv)
    server = connect(args.server, method=args.method)
    cross = bool(args.method) and methods.get(args.method).crosses  # vLLM's use_heterogeneous_vocab: TLI
    pair = load_pair(args.target, args.draft, device="cpu", dtype="float32", head=args.head, cross_vocab=cross)
    rows = read_workload(args.prompts_file).rows
    rows = rows[: args.limit] if args.limit else rows
    settings = server.settings(RunSettings(max_new_tokens=args.max_new_tokens, stop_at_eos=False))
    results = []
    for run in compare_engines(engine_source(pair), server.run, rows, settings):
        found, local, served = run.found, run.local, run.served
        speeds = {"local_tokens_per_s": local.tokens_per_s, "served_tokens_per_s": served.tokens_per_s}
        # the steps side by side under their own key: "steps" is Agreement's count, which the summary adds up
        results.append({"prompt": run.prompt, **asdict(found), **speeds, "side_by_side": run.steps})
        print(
            f"{len(results):>3} steps {found.steps:>3} same {found.same:>3} first same at {found.first_same} "
            f"text equal {found.text_equal}  specviz {local.tokens_per_s:6.1f} tok/s  "
            f"vLLM {served.tokens_per_s:6.1f} tok/s",
            file=sys.stderr,
        )
    summary = {
        "server": server.describe(),
        "prompts": len(results),
        "max_new_tokens": args.max_new_tokens,
        **totals(results),
    }
    print(json.dumps(summary, indent=2))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as handle:
            json.dump({"summary": summary, "prompts": results}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
