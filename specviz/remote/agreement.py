"""Does the server speculate as specviz does? A served run against an in-process run of the same pair, step by step.

Two engines that decode the same pair greedily in the same precision commit the same tokens; their verify steps line
up once both start a step at the same token: from there each drafts the same K tokens from the same context and
accepts the same prefix. They start out of line: vLLM's prefill commits the first token before any draft (its first
verify step drafts from prompt + 1 token), while specviz's first round drafts straight from the prompt (its prefill
commits nothing). At the end, specviz never drafts past max_new_tokens while vLLM drafts K and cuts the output, so
the steps that could reach past the limit are left out of the comparison.

    python -m specviz.remote.agreement PROMPTS --server URL [--pair NAME] [--raw] [--max-new-tokens 64] [--limit N]
runs every prompt on both (the named pair in process, default the bundled one, float32, greedy, the server's K; an
instruct pair's prompts through its chat template unless --raw) and prints the agreement and both engines' tokens/s;
--json adds each prompt's steps side by side, each difference with its reason. n-gram and suffix steps without a
draft are placed where specviz's lookup missed (place); a step with no specviz round to meet is not comparable.
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
    steps: int  # the server's verify steps compared: placed where a specviz round starts, not past the limit
    same: int  # of them, the ones specviz also ran: same first token, same drafts, same accepted count
    first_same: int | None  # index (among those steps) of the first one specviz also ran
    same_after_first: int  # steps from first_same on that agree
    text_equal: bool
    first_divergence: int | None  # first differing output token (None: identical ids)
    not_comparable: int = 0  # the server's steps that start inside a specviz round, or whose start is not known


def spans(record: RunRecord) -> list[tuple[int, int, int]]:
    """(first token index, drafted, accepted) of every round that drafted, from the rounds' uncut lengths."""
    return [(start, drafted, accepted) for start, drafted, accepted in rounds_of(record) if drafted]


def rounds_of(record: RunRecord) -> list[tuple[int, int, int]]:
    """(first token index, drafted, accepted) of every round, those that drafted nothing (a lookup's miss) included."""
    out, start = [], 0
    rounds = zip(record.per_round_drafted, record.per_round_accepted, record.per_round_committed)
    for drafted, accepted, committed in rounds:
        out.append((start, drafted, accepted))
        start += committed
    return out


SAME, DIFFERENT, NOT_COMPARABLE = "same", "different", "not comparable"


@dataclass(frozen=True)
class Placed:
    """One of the server's verify steps at the output token where it started."""

    start: int
    drafted: int
    accepted: int
    verdict: str  # SAME, DIFFERENT (specviz started a round there and ran another step) or NOT_COMPARABLE


def place(
    served: RunRecord, local: RunRecord, missed_at: Callable[[int], bool] | None = None
) -> tuple[list[Placed], int]:
    """Each of the server's drafting steps at the output token where it started, judged against specviz's round that
    starts at the same token; and the server's steps without a draft that could not be placed.

    vLLM lists only the steps that drafted: its steps without a draft (an n-gram or suffix miss) each commit one token
    at places it does not say (its record lists them after the prefill). Greedy, a miss is a function of the tokens
    before it (and, for suffix decoding, of the earlier requests), so it falls where specviz's round missed too; where
    specviz has no round starting at a token, missed_at(token) says whether the lookup finds nothing there, and
    without it the step is taken to have drafted there. A step that starts inside a specviz round (before the engines
    line up, or after a different accepted count) has no round to be compared with: NOT_COMPARABLE, not a failure.
    Returns the placed steps and the misses left unplaced (0 when every miss found its place).
    """
    ours = {start: (drafted, accepted) for start, drafted, accepted in rounds_of(local)}
    left, placed = served.meta.get("rounds_without_drafts", 0), []
    for start, drafted, accepted in spans(served):
        at = start - left  # its record put every miss after the prefill: those not placed yet come after this step
        while left and (ours[at][0] == 0 if at in ours else bool(missed_at and missed_at(at))):
            at, left = at + 1, left - 1
        mine = ours.get(at)
        verdict = NOT_COMPARABLE if mine is None else (SAME if mine == (drafted, accepted) else DIFFERENT)
        placed.append(Placed(at, drafted, accepted, verdict))
    return placed, left


def compare(
    served: RunRecord, local: RunRecord, max_new_tokens: int, missed_at: Callable[[int], bool] | None = None
) -> Agreement:
    """The served run's verify steps against the local run's rounds (both need per-round counts), placed by `place`;
    the steps that could reach past max_new_tokens are left out: there vLLM still asks for K drafts and cuts, while
    specviz asks its drafter for fewer (n-gram and suffix drafts can then differ, and a draft model's do)."""
    if served.per_round_drafted is None or local.per_round_drafted is None:
        raise ValueError("both runs need per-round counts (the server's per-request metrics at the detailed level)")
    placed, _ = place(served, local, missed_at)
    inside = [p for p in placed if p.start + served.k + 1 <= max_new_tokens]  # specviz's budget was K there
    compared = [p.verdict == SAME for p in inside if p.verdict != NOT_COMPARABLE]
    first = compared.index(True) if True in compared else None
    return Agreement(
        steps=len(compared),
        same=sum(compared),
        first_same=first,
        same_after_first=sum(compared[first:]) if first is not None else 0,
        text_equal=served.text == local.text,
        first_divergence=stats.first_divergence(local.output_ids, served.output_ids) if served.output_ids else None,
        not_comparable=len(inside) - len(compared),
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
INSIDE_A_ROUND = "starts inside a specviz round (after a different accepted count): no specviz step to compare it with"


def side_by_side(
    served: RunRecord, local: RunRecord, max_new_tokens: int, missed_at: Callable[[int], bool] | None = None
) -> list[dict]:
    """Per output position where either engine started a verify step: both engines' drafted and accepted counts,
    whether they are the same step, and why not (the reasons above)."""
    placed, _ = place(served, local, missed_at)
    theirs = {p.start: (p.drafted, p.accepted) for p in placed}
    ours = {start: (d, a) for start, d, a in spans(local)}
    compared = [s for s, (d, _) in theirs.items() if s + d + 1 <= max_new_tokens and s in ours]
    first = min((s for s in compared if theirs[s] == ours.get(s)), default=None)
    rows = []
    for start in sorted(theirs.keys() | ours.keys()):
        mine, yours = theirs.get(start), ours.get(start)
        same = mine is not None and mine == yours
        if same:
            why = ""
        elif mine is not None and start + mine[0] + 1 > max_new_tokens or start + served.k + 1 > max_new_tokens:
            why = PAST_THE_LIMIT
        elif first is None or start < first:
            why = BEFORE_IN_LINE
        elif mine is None:
            why = "specviz started a round here; vLLM's step covering this token started earlier: " + AFTER_IN_LINE
        elif yours is None:
            why = INSIDE_A_ROUND
        else:
            why = AFTER_IN_LINE
        rows.append(_row(start, mine, yours, same, why))
    return rows


def _row(start: int, mine, yours, same: bool, why: str) -> dict:
    return {
        "starts at token": start,
        "vLLM drafted": None if mine is None else mine[0],
        "vLLM accepted": None if mine is None else mine[1],
        "specviz drafted": None if yours is None else yours[0],
        "specviz accepted": None if yours is None else yours[1],
        "same step": same,
        "why not": why,
    }


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
    missed_at: Callable[[int], bool] | None = None  # whether the lookup drafts nothing at a token (place)

    @property
    def steps(self) -> list[dict]:
        """Both engines' steps side by side, each difference with its reason."""
        return side_by_side(self.served, self.local, self.max_new_tokens, self.missed_at)


MissedAt = Callable[[str, RunRecord], Callable[[int], bool] | None]  # (prompt, local run) -> its missed_at, or None


def compare_engines(
    run_local: RunFn,
    run_served: RunFn,
    rows: Sequence,
    settings: RunSettings,
    on_prompt: Callable | None = None,
    missed_at: MissedAt | None = None,
) -> Iterator[EngineRun]:
    """Each row's prompt on both engines with the same settings (after a short warm-up of each), and their agreement,
    yielded as each prompt finishes. on_prompt(i, row) is called before the i-th prompt runs (a progress bar);
    missed_at places the server's steps without a draft where specviz has no round (place)."""
    warm = replace(settings, max_new_tokens=min(WARM_UP_TOKENS, settings.max_new_tokens))
    run_local(rows[0].prompt, warm, rows[0].tag)
    run_served(rows[0].prompt, warm, rows[0].tag)
    for i, row in enumerate(rows):
        if on_prompt:
            on_prompt(i, row)
        local = run_local(row.prompt, settings, row.tag)
        served = run_served(row.prompt, settings, row.tag)
        misses = missed_at(row.prompt, local) if missed_at else None
        found = compare(served, local, settings.max_new_tokens, misses)
        yield EngineRun(row.prompt, found, local, served, settings.max_new_tokens, misses)


def totals(results: list[dict]) -> dict:
    """What the summary adds up over the prompts' results (Agreement's fields, the two speeds, side_by_side)."""
    return {
        "texts_equal": sum(r["text_equal"] for r in results),
        "steps": sum(r["steps"] for r in results),
        "steps_same": sum(r["same"] for r in results),
        "steps_not_comparable": sum(r.get("not_comparable", 0) for r in results),
        "steps_from_first_same": sum(r["steps"] - r["first_same"] for r in results if r["first_same"] is not None),
        "steps_same_from_first_same": sum(r["same_after_first"] for r in results),
        "first_same_index": [r["first_same"] for r in results],
        "specviz_tokens_per_s_median": statistics.median(r["local_tokens_per_s"] for r in results),
        "vllm_tokens_per_s_median": statistics.median(r["served_tokens_per_s"] for r in results),
    }


def ngram_misses(pair, settings: RunSettings) -> MissedAt:
    """For n-gram lookup: whether specviz's lookup (vLLM's rule, engine/proposers/ngram.py) finds nothing after a
    token of a local run's output, its prompt's tokens first."""
    from specviz.engine.decode import encode_prompt
    from specviz.engine.proposers import ngram_lookup

    def for_run(prompt: str, local: RunRecord) -> Callable[[int], bool]:
        ids = encode_prompt(pair, prompt)
        out = list(local.output_ids)
        return lambda at: not ngram_lookup(ids + out[:at], settings.k, settings.ngram_min, settings.ngram_max)

    return for_run


def remembered(pair, settings: RunSettings):
    """What suffix decoding remembers before the first prompt, as the server's global tree does: the connection
    check's probe completion ("def", greedy, PROBE_TOKENS tokens; remote/vllm.py). None for the other methods."""
    if settings.method != methods.SUFFIX:
        return None
    from specviz.core.suffix_tree import SuffixMemory
    from specviz.measure.lanes import run_method
    from specviz.remote.vllm import PROBE_TOKENS

    memory = SuffixMemory()
    probe = replace(settings, max_new_tokens=PROBE_TOKENS, stop_at_eos=True)
    run_method(pair, "def", probe, methods.SUFFIX, memory=memory)
    return memory


def main(argv: list[str] | None = None) -> int:
    from specviz.engine.loading.catalogue import DEFAULT_PAIR, PAIR_NAMES, find_pair
    from specviz.engine.loading.models import load_pair, recorded_name
    from specviz.errors import SpecvizError
    from specviz.measure.local import engine_source
    from specviz.measure.prompts import read_workload, wrapped_rows
    from specviz.measure.spec_bench import sample_per_category, select_categories
    from specviz.remote.vllm import connect

    parser = argparse.ArgumentParser(prog="python -m specviz.remote.agreement", description=__doc__.split("\n")[0])
    parser.add_argument(
        "prompts_file", nargs="?", help="a workload file, or a bundled workload's name (spec-bench, ...)"
    )
    parser.add_argument("--workload", help="the same as the positional file: a bundled workload's name or a file")
    parser.add_argument(
        "--per-category", type=int, default=0, help="N rows of each category, drawn by --seed (0 = all)"
    )
    parser.add_argument("--category", action="append", default=[], help="only this category (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="draws the --per-category sample")
    parser.add_argument("--server", required=True)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--limit", type=int, default=0, help="first N prompts only (0 = all)")
    parser.add_argument(
        "--pair", default=None, help=f"the served pair by name: {', '.join(PAIR_NAMES)} (default {DEFAULT_PAIR})"
    )
    parser.add_argument("--target", default=None, help="a target directory instead of --pair's")
    parser.add_argument("--draft", default=None, help="a draft directory instead of --pair's")
    parser.add_argument(
        "--raw", action="store_true", help="send prompts as they are (default for an instruct pair: its chat template)"
    )
    parser.add_argument(
        "--method",
        choices=sorted({*methods.FROM_VLLM.values(), methods.TLI}),
        help="the server's speculative method, when it does not say (a server outside vLLM's dev mode hides it)",
    )
    parser.add_argument("--head", help="the feature head directory the server drafts with (default: beside the target)")
    parser.add_argument("--json", dest="json_out", help="write per-prompt results here")
    args = parser.parse_args(argv)
    if not (args.prompts_file or args.workload):
        parser.error("give a workload: a file, or --workload NAME")
    try:
        spec = find_pair(args.pair or DEFAULT_PAIR)
        target, draft = spec.sources()
        rows = read_workload(args.workload or args.prompts_file).rows
        rows = sample_per_category(select_categories(rows, args.category), args.per_category, args.seed)
    except SpecvizError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = connect(args.server, method=args.method)
    cross = bool(args.method) and methods.get(args.method).crosses  # vLLM's use_heterogeneous_vocab: TLI
    pair = load_pair(
        args.target or target, args.draft or draft, device="cpu", dtype="float32", head=args.head, cross_vocab=cross
    )
    rows = wrapped_rows(pair, rows[: args.limit] if args.limit else rows, spec.chat and not args.raw)
    settings = server.settings(RunSettings(max_new_tokens=args.max_new_tokens, stop_at_eos=False))
    misses = ngram_misses(pair, settings) if settings.method == methods.NGRAM else None
    results = []
    source = engine_source(pair, remembered(pair, settings))
    for run in compare_engines(source, server.run, rows, settings, None, misses):
        found, local, served = run.found, run.local, run.served
        speeds = {"local_tokens_per_s": local.tokens_per_s, "served_tokens_per_s": served.tokens_per_s}
        # the steps side by side under their own key: "steps" is Agreement's count, which the summary adds up
        results.append({"prompt": run.prompt, **asdict(found), **speeds, "side_by_side": run.steps})
        print(
            f"{len(results):>3} steps {found.steps:>3} same {found.same:>3} not comparable {found.not_comparable:>3} "
            f"text equal {found.text_equal}  specviz {local.tokens_per_s:6.1f} tok/s  "
            f"vLLM {served.tokens_per_s:6.1f} tok/s",
            file=sys.stderr,
        )
    described = server.describe()
    summary = {
        "server": {**described, "model": recorded_name(described.get("model"))},  # no home directory in the file
        "pair": spec.key,
        "chat": spec.chat and not args.raw,
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
