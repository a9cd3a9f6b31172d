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
WITHIN_SPREAD = "within the bench's spread"  # the live figure misses the bench's, but meets its runs' range


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


def median_repeat(spec_tokens_per_s: Sequence[float], plain_tokens_per_s: Sequence[float]) -> int | None:
    """The repeat whose paired ratio is the median speedup (an odd count of repeats); None for an even count, whose
    median lies between two repeats."""
    ratios = [s / p if p else math.nan for s, p in zip(spec_tokens_per_s, plain_tokens_per_s)]
    if not ratios or len(ratios) % 2 == 0 or any(math.isnan(r) for r in ratios):
        return None
    order = sorted(range(len(ratios)), key=lambda i: ratios[i])
    return order[len(order) // 2]


def shown_ratio_differs(spec_shown: float, plain_shown: float, speedup: float) -> bool:
    """Whether a speedup shown with two decimals is not the ratio of the two tokens/s shown beside it."""
    return bool(plain_shown) and round(spec_shown / plain_shown, 2) != round(speedup, 2)


def medians_apart_words(
    name: str, spec_tokens_per_s: Sequence[float], plain_tokens_per_s: Sequence[float], speedup: float
) -> str | None:
    """Why a speedup is not the ratio of the two sides' median tokens/s, in words with the numbers (None when it is,
    to two decimals): the speedup is the median of the repeats' paired ratios, and plain's speed moved between
    repeats, which each paired ratio cancels and the medians taken apart do not."""
    spec, plain = statistics.median(spec_tokens_per_s), statistics.median(plain_tokens_per_s)
    if not shown_ratio_differs(spec, plain, speedup):
        return None
    ratios = ", ".join(f"{r:.2f}" for r in paired_ratios(spec_tokens_per_s, plain_tokens_per_s))
    return f"{name} {spec:.1f} / {plain:.1f} = {spec / plain:.2f}, its repeats' ratios {ratios}: {speedup:.2f}×"


PAIRED_NOT_MEDIANS = (
    "A speedup is not the ratio of the tokens/s beside it when the machine's speed moved between repeats: tokens/s is "
    "each side's median run, taken apart, while the speedup is the median of the repeats' paired ratios (each run "
    "over plain's run in the same repeat, so a slow moment slows both sides of its ratio and cancels)."
)


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


TAU_SLACK = 1.05  # a speedup more than 5% above τ cannot be the clock's rounding: the machine's speed moved


def above_tau(speedup: float | None, tau: float | None) -> bool:
    """Whether a measured speedup cannot be true: above τ (with TAU_SLACK). Each target pass costs at least a plain
    step and commits τ tokens on average, so no method gives more than τ tokens in a plain step's time. The one rule
    the race's lanes, its K sweep and the workload's verdicts and tables all judge by."""
    return bool(tau) and speedup is not None and not math.isnan(speedup) and speedup > tau * TAU_SLACK


def above_tau_words(name: str, speedup: float, tau: float, tau_is: str = "") -> str:
    """'K = 4: 1.26× is above τ = 1.16, more than any pass can give' (tau_is: what that τ is, where it needs saying)."""
    return f"{name}: {speedup:.2f}× is above τ = {tau:.2f}{tau_is}, more than any pass can give"


def implausible_points(rows: Sequence[dict]) -> list[str]:
    """Why some K sweep points cannot be true: a speedup above τ (above_tau), or an interval wider than the figure
    itself (the machine was too busy to time). rows: the sweep's measured rows (k, speedup, low, high, tau)."""
    out = []
    for row in rows:
        tau, low, high = row.get("tau"), row.get("low"), row.get("high")
        name = row.get("name") or f"K = {row['k']}"
        if above_tau(row["speedup"], tau):
            out.append(above_tau_words(name, row["speedup"], tau))
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
    """A live figure next to a recorded bench: agrees, lies within the bench's spread, disagrees, or not comparable,
    and why."""

    verdict: str  # AGREES, WITHIN_SPREAD, DISAGREES or NOT_COMPARABLE
    reason: str
    bench_speedup: float | None = None
    file: str = ""


def _pair_name(source: str | None) -> str:
    """A model source with where the repository was cloned left off (old bench files hold absolute paths)."""
    text = str(source or "")
    return "assets/" + text.split("assets/", 1)[1] if "assets/" in text else text


# The settings a bench must share with a live figure, in the order a reader needs the reason: how it was sampled and
# what ran first (a greedy bench says nothing of a sampled run), then where and how it ran.
TEMPERATURE, PAIR, DRAFT_MODEL, K_ROW = "temperature", "pair", "draft", "K"
SETTINGS_ORDER = (
    TEMPERATURE, PAIR, DRAFT_MODEL, K_ROW, "precision", "CPU", "CPU capability", "torch threads", "draft vocabulary"
)  # fmt: skip


Difference = tuple[str, object, object]  # a setting, a bench file's value, the live figure's


def _differences(doc: dict, env: dict, k: int, draft_vocab: int, temperature: float) -> list[Difference]:
    """Every setting in which a bench file differs from a live figure: (setting, the file's value, the live one);
    K_ROW's file value is the Ks of its draft-model rows. Empty when the file can be compared."""
    bench_env, settings = doc.get("environment", {}), doc.get("settings", {})
    checks = [
        (TEMPERATURE, settings.get("sampling", {}).get("temperature", 0.0), temperature),
        (PAIR, _pair_name(bench_env.get("target")), _pair_name(env.get("target"))),
        (DRAFT_MODEL, _pair_name(bench_env.get("draft")), _pair_name(env.get("draft"))),
        ("precision", bench_env.get("dtype"), env.get("dtype")),
        ("CPU", bench_env.get("cpu"), env.get("cpu")),
        ("CPU capability", bench_env.get("cpu_capability"), env.get("cpu_capability")),
        ("torch threads", bench_env.get("torch_threads"), env.get("torch_threads")),  # on a busy CPU 2 threads stall
        ("draft vocabulary", settings.get("draft_vocab") or 0, draft_vocab or 0),
    ]
    out = [(name, recorded, live) for name, recorded, live in checks if recorded != live]
    ks = sorted({r.get("k") for r in doc.get("results", []) if r.get("method") == methods.DRAFT})
    if k not in ks:
        out.append((K_ROW, tuple(ks), k))
    return sorted(out, key=lambda d: SETTINGS_ORDER.index(d[0]))


def _value(name: str, value: object) -> str:
    if name == TEMPERATURE:
        return "greedy, T = 0" if not value else f"sampled, T = {value:g}"
    if name == "draft vocabulary":
        return "the whole vocabulary" if not value else f"its {value} most frequent tokens"
    return str(value)


def _nobody(name: str, live: object, recorded: list, benches: str) -> str:
    """Why no recorded bench can be compared, for one setting every one of them differs in (benches: "the 16
    recorded benches")."""
    theirs = ", ".join(dict.fromkeys(_value(name, v) for v in recorded))
    are, have = ("are", "have") if benches.endswith("benches") else ("is", "has")
    if name == TEMPERATURE:
        kind = "sampled" if live else "greedy"
        return f"no recorded bench is {kind} (this figure is {_value(name, live)}; {benches} {are} {theirs})"
    if name == K_ROW:
        ks = ", ".join(map(str, sorted({k for ks in recorded for k in ks})))
        return f"no recorded bench has a draft-model row at K = {live} ({benches} {have} K = {ks})"
    if name in (PAIR, DRAFT_MODEL):
        what = "target" if name == PAIR else "draft model"
        return f"no recorded bench ran this {what}, {live} ({benches} ran {theirs})"
    return f"no recorded bench has {name} {_value(name, live)} ({benches} {have} {theirs})"


def _not_comparable(docs: Sequence[dict], differences: list[list[Difference]]) -> str:
    """The reason no recorded bench compares, grouped by setting: first the settings every file differs in (the real
    reason, whichever file comes first by name), else the nearest file and what it differs in."""
    every = [name for name in SETTINGS_ORDER if all(any(d[0] == name for d in diffs) for diffs in differences)]
    benches = f"the {len(docs)} recorded benches" if len(docs) > 1 else "the recorded bench"
    if every:
        live = {name: value for diffs in differences for name, _, value in diffs}
        recorded = {name: [r for diffs in differences for n, r, _ in diffs if n == name] for name in every}
        reasons = [_nobody(name, live[name], recorded[name], benches) for name in every]
        more = f"; and {len(reasons) - 2} more settings" if len(reasons) > 2 else ""
        return "; ".join(reasons[:2]) + more
    nearest = min(range(len(docs)), key=lambda i: len(differences[i]))
    parts = [
        f"a draft-model row at K = {live} (it has K = {', '.join(map(str, recorded))})"
        if name == K_ROW
        else f"{name} ({_value(name, recorded)} there, {_value(name, live)} here)"
        for name, recorded, live in differences[nearest]
    ]
    return f"the nearest of {benches}, {docs[nearest].get('file', 'a bench')}, differs in " + "; ".join(parts)


def _bench_row_words(doc: dict, k: int, row: dict) -> str:
    """What a bench file's figure is, so it reads like with like: its lane, K, precision, prompts and the range its
    runs spread over, and, when the race page's table lists another K of the file, that one too."""
    settings, env = doc.get("settings", {}), doc.get("environment", {})
    vocab = settings.get("draft_vocab") or 0
    prompts, tokens = settings.get("prompts"), settings.get("max_new_tokens")
    runs = f", {prompts} prompts × {tokens} tokens" if prompts and tokens else ""
    what = (
        f"{doc.get('file', 'the bench')} (the draft-model lane at K = {k}, {env.get('dtype', '?')}, "
        f"{_value('draft vocabulary', vocab)}, greedy{runs})"
    )
    out = f"{what} measured {row['speedup_vs_plain']:.2f}×"
    spread = row.get("speedup_range")
    if spread:
        out += f", the median of its runs, which ranged {spread[0]:.2f}–{spread[1]:.2f}× over its prompts"
    drafts = [r for r in doc.get("results", []) if r.get("method") == methods.DRAFT]
    best = max(drafts, key=lambda r: r["speedup_vs_plain"])
    if best.get("k") != k:
        out += f" (the bench table lists this file at its best K, {best['k']}: {best['speedup_vs_plain']:.2f}×)"
    return out


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
    Agrees only when the live interval holds the bench's figure at the same K; when it does not, but the live figure
    (or interval) meets the range the bench's runs spread over, the figure lies within the bench's spread (one prompt
    against many: neither confirms it nor contradicts it); else it disagrees."""
    if not docs:
        return Agreement(NOT_COMPARABLE, "no bench is recorded")
    differences = [_differences(doc, env, k, draft_vocab, temperature) for doc in docs]
    doc = next((doc for doc, diffs in zip(docs, differences) if not diffs), None)
    if doc is None:
        return Agreement(NOT_COMPARABLE, _not_comparable(docs, differences))
    row = next(r for r in doc["results"] if r.get("method") == methods.DRAFT and r.get("k") == k)
    bench = row["speedup_vs_plain"]
    bench_range = tuple(row.get("speedup_range") or (bench, bench))
    live = interval or (speedup, speedup)
    file, said = doc.get("file", ""), _bench_row_words(doc, k, row)
    this = with_interval(speedup, interval)
    if interval is not None and interval[0] <= bench <= interval[1]:
        return Agreement(AGREES, f"{said}; this figure, {this}, holds it", bench, file)
    if overlap(live, bench_range):
        return Agreement(
            WITHIN_SPREAD,
            f"{said}. This figure, {this}, does not hold {bench:.2f}×, but it lies within the spread of the bench's "
            "runs: the bench ran many prompts, this page one, and one prompt's speedup differs from another's that "
            "much, so it neither confirms the bench nor contradicts it",
            bench,
            file,
        )
    load = doc.get("environment", {}).get("load_average")
    return Agreement(
        DISAGREES,
        f"{said}, on this CPU and settings, outside this figure's range, {this}, and this figure is outside the "
        "bench's. Why that can happen: a busy machine (timings swing with other work; the bench met a load average "
        f"of {load}, this run {env.get('load_average', '?')}), other prompts (the bench's held-out prompts, this "
        "page's one), another length, or a run too short to time well",
        bench,
        file,
    )


def agreement_words(agreement: Agreement) -> str:
    """The sentence a page shows next to its figure."""
    if agreement.verdict == AGREES:
        return f"It agrees with the recorded bench: {agreement.reason}."
    if agreement.verdict == WITHIN_SPREAD:
        return f"Beside the recorded bench: {agreement.reason}."
    if agreement.verdict == DISAGREES:
        return f"It disagrees with the recorded bench: {agreement.reason}."
    return f"Not comparable with a recorded bench: {agreement.reason}."
