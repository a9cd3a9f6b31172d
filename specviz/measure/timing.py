"""The one timing protocol behind every speedup the app shows (home, race lanes, K sweep, workload), the words that
say how a figure was timed, and whether a live figure agrees with a recorded bench.

The protocol: a warm-up of every contender (first calls pay for allocation and kernel selection), then R repeats in
alternating order (forward, backward, forward, ...: no contender always runs first on a cold cache, or last on a
machine the others heated), each repeat's speedup taken against the plain run of the same repeat (a load spike hits
both sides of one ratio), and the median of those ratios with their range as the interval. One run per contender,
timed once, is what made the pages disagree: on a shared CPU one plain run can be twice as fast as the next.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from specviz import methods
from specviz.core import stats

T = TypeVar("T")

REPEATS = 3  # the pages' default: a range of 3 paired ratios, cheap enough for the home page (about 3 s on a CPU)
AGREES, DISAGREES, NOT_COMPARABLE = "agrees", "disagrees", "not comparable"


def alternate(runners: Sequence[Callable[[], T]], repeats: int) -> list[list[T]]:
    """Call every runner `repeats` times, forward on even repeats and backward on odd ones. Returns
    results[repeat][runner], in the runners' order whatever order they ran in."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    out = []
    for r in range(repeats):
        order = range(len(runners)) if r % 2 == 0 else range(len(runners) - 1, -1, -1)
        got = {i: runners[i]() for i in order}
        out.append([got[i] for i in range(len(runners))])
    return out


def paired_ratios(spec_tokens_per_s: Sequence[float], plain_tokens_per_s: Sequence[float]) -> tuple[float, ...]:
    """Per repeat: the speculative speed over the plain speed of the same repeat (repeats with no plain speed left
    out)."""
    return tuple(s / p for s, p in zip(spec_tokens_per_s, plain_tokens_per_s) if p)


@dataclass(frozen=True)
class Timing:
    """A speedup over plain decoding timed by the protocol: per-repeat paired ratios, and how they were taken."""

    ratios: tuple[float, ...]  # per repeat: speculative tokens/s / plain tokens/s of the same repeat
    temperature: float
    tokens: int  # new tokens asked of each run
    warmed: bool = True

    @property
    def repeats(self) -> int:
        return len(self.ratios)

    @property
    def speedup(self) -> float:
        return statistics.median(self.ratios) if self.ratios else math.nan

    @property
    def interval(self) -> tuple[float, float] | None:
        """The range of the repeats' ratios; None for one repeat (one run says nothing about its own noise)."""
        return stats.spread(self.ratios) if self.repeats > 1 else None

    def words(self) -> str:
        return timing_words(self.repeats, self.temperature, self.interval, tokens=self.tokens, warmed=self.warmed)

    def cell(self) -> str:
        """'1.24× (1.10–1.31)': the figure with its range, as a table cell."""
        return with_interval(self.speedup, self.interval)


def with_interval(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    if interval is None or math.isnan(interval[0]):
        return f"{value:.2f}×"
    return f"{value:.2f}× ({interval[0]:.2f}–{interval[1]:.2f})"


def timing_words(
    repeats: int,
    temperature: float,
    interval: tuple[float, float] | None,
    prompts: int = 1,
    tokens: int | None = None,
    warmed: bool = True,
    interval_kind: str | None = None,
) -> str:
    """How a speedup was timed, in one sentence: runs, repeats, greedy or sampled, warm-up, the interval."""
    sampling = "greedy" if temperature == 0 else f"sampled at temperature {temperature:g} (the same seed every repeat)"
    what = "one prompt" if prompts == 1 else f"{prompts} prompts"
    length = f", {tokens} new tokens per run" if tokens else ""
    warm = "after a warm-up of each, " if warmed else "without a warm-up, "
    if repeats <= 1:
        timed = "each timed once, so it carries no interval (one run says nothing about its own noise)"
    else:
        timed = f"each timed {repeats} times in alternating order, every speedup against the plain run of its repeat"
    head = f"Timed on {what}{length}, {sampling}: {warm}{timed}"
    if repeats <= 1 or interval is None or math.isnan(interval[0]):
        return head + "."
    kind = interval_kind or f"median of the {repeats} repeats; the interval is their range"
    return f"{head}; {kind}: {interval[0]:.2f}–{interval[1]:.2f}×."


def workload_interval_kind(repeats: int) -> str:
    """What a workload's speedup interval is (stats.speedup_interval), in words."""
    held = f" and the mean of each of the {repeats} repeats alone" if repeats > 1 else ""
    return (
        "mean over prompts of each prompt's mean; the 95% interval resamples prompts and, within each, its "
        f"repeats, widened to hold every repeat's own figure{held}"
    )


def implausible_points(rows: Sequence[dict]) -> list[str]:
    """Why some K sweep points cannot be true: a speedup above τ (each target pass costs at least a plain step, so
    no more than τ tokens per plain step's time), or an interval wider than the figure itself (the machine was too
    busy to time). rows: the sweep's measured rows (k, speedup, low, high, tau)."""
    out = []
    for row in rows:
        tau, low, high = row.get("tau"), row.get("low"), row.get("high")
        name = row.get("name") or f"K = {row['k']}"
        if tau and row["speedup"] > tau * 1.05:
            out.append(f"{name}: {row['speedup']:.2f}× is above τ = {tau:.2f}, more than any pass can give")
        if low is not None and high is not None and high - low > row["speedup"]:
            out.append(f"{name}: its repeats spread from {low:.2f}× to {high:.2f}× (a busy machine)")
    return out


def implausible_lanes(records: Sequence, timings: dict) -> list[str]:
    """implausible_points for a race's lanes (records: each lane's first RunRecord; timings: lane -> Timing)."""
    rows = []
    for record in records:
        timing = timings.get(record.method)
        if timing is not None and record.method != methods.PLAIN and timing.interval:
            low, high = timing.interval
            row = {"name": methods.lane_label(record.method), "k": record.k, "speedup": timing.speedup}
            rows.append({**row, "low": low, "high": high, "tau": record.tau})
    return implausible_points(rows)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


@dataclass(frozen=True)
class Agreement:
    """A live figure next to a recorded bench: agrees, disagrees, or not comparable, and why."""

    verdict: str  # AGREES, DISAGREES or NOT_COMPARABLE
    reason: str
    bench_speedup: float | None = None
    file: str = ""


def _pair_name(source: str | None) -> str:
    """A model source with where the repository was cloned left off (old bench files hold absolute paths)."""
    text = str(source or "")
    return "assets/" + text.split("assets/", 1)[1] if "assets/" in text else text


def _mismatch(doc: dict, env: dict, k: int, draft_vocab: int, temperature: float) -> str | None:
    """Why a bench file cannot be compared with a live figure (None when it can)."""
    bench_env, settings = doc.get("environment", {}), doc.get("settings", {})
    checks = [
        ("pair", _pair_name(bench_env.get("target")), _pair_name(env.get("target"))),
        ("draft", _pair_name(bench_env.get("draft")), _pair_name(env.get("draft"))),
        ("CPU", bench_env.get("cpu"), env.get("cpu")),
        ("CPU capability", bench_env.get("cpu_capability"), env.get("cpu_capability")),
        ("precision", bench_env.get("dtype"), env.get("dtype")),
        ("torch threads", bench_env.get("torch_threads"), env.get("torch_threads")),  # on a busy CPU 2 threads stall
        ("draft vocabulary", settings.get("draft_vocab") or 0, draft_vocab or 0),
        ("temperature", settings.get("sampling", {}).get("temperature", 0.0), temperature),
    ]
    for name, recorded, live in checks:
        if recorded != live:
            return f"{doc.get('file', 'the bench')} was recorded with {name} {recorded}, this figure has {live}"
    if not any(r.get("method") == methods.DRAFT and r.get("k") == k for r in doc.get("results", [])):
        return f"{doc.get('file', 'the bench')} has no draft-model row at K = {k}"
    return None


def against_bench(
    speedup: float,
    interval: tuple[float, float] | None,
    env: dict,
    k: int,
    draft_vocab: int,
    temperature: float,
    docs: Sequence[dict],
) -> Agreement:
    """Does a live draft-model speedup agree with a recorded bench for the same pair, CPU, precision and settings?
    env: the live run's environment (measure.bench.environment keys: target, draft, cpu, cpu_capability, dtype).
    Agrees when the bench's figure (or its per-prompt range) and the live interval (or figure) meet."""
    if not docs:
        return Agreement(NOT_COMPARABLE, "no bench is recorded")
    reasons = []
    for doc in docs:
        why = _mismatch(doc, env, k, draft_vocab, temperature)
        if why:
            reasons.append(why)
            continue
        row = next(r for r in doc["results"] if r.get("method") == methods.DRAFT and r.get("k") == k)
        bench = row["speedup_vs_plain"]
        bench_range = tuple(row.get("speedup_range") or (bench, bench))
        live = interval or (speedup, speedup)
        file = doc.get("file", "")
        if overlap(live, bench_range):
            return Agreement(AGREES, f"the bench ({file}) measured {bench:.2f}× here", bench, file)
        load = doc.get("environment", {}).get("load_average")
        return Agreement(
            DISAGREES,
            f"the bench ({file}) measured {bench:.2f}× on this CPU and settings, outside this figure's range, and this "
            "figure is outside the bench's. Why that can happen: a busy machine (timings swing with other work; "
            f"the bench met a load average of {load}, this run {env.get('load_average', '?')}), other prompts (the "
            "bench's held-out prompts, this page's one), another length, or a run too short to time well",
            bench,
            file,
        )
    more = f" (and {len(reasons) - 1} more files differ)" if reasons[1:] else ""
    return Agreement(NOT_COMPARABLE, reasons[0] + more)


def agreement_words(agreement: Agreement) -> str:
    """The sentence a page shows next to its figure."""
    if agreement.verdict == AGREES:
        return f"It agrees with the recorded bench: {agreement.reason}."
    if agreement.verdict == DISAGREES:
        return f"It disagrees with the recorded bench: {agreement.reason}."
    return f"Not comparable with a recorded bench: {agreement.reason}."
