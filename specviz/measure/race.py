"""The race: one prompt through several methods (plain, specviz's, Hugging Face's), each lane's token arrivals
recorded for playback; and the K sweep, measured speedup next to the prediction from measured costs.

Lanes run one after another, never concurrently, so no lane steals another's cores, after a short warm-up of each,
and every speedup is timed by measure/timing.py's protocol: repeats in alternating order, each paired with the plain
run of its repeat, the median with the repeats' range. Nothing is drawn while a lane decodes: on a 2-core machine a
page redrawing per token took the cores the lanes decode on (the plain lane ran at 0.35 of the bench's speed); the
page replays the recorded arrivals afterwards (arrival_pieces says what appears when).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from specviz import methods
from specviz.core import stats
from specviz.core.record import RunRecord
from specviz.core.settings import RunSettings
from specviz.core.trace import Trace
from specviz.core.verify import tree_size
from specviz.engine.costs import MeasuredCosts, measure_costs
from specviz.engine.decode import generate
from specviz.engine.loading.models import ModelPair
from specviz.errors import SettingsError
from specviz.measure.lanes import run_method, tree_settings
from specviz.measure.predict import predict
from specviz.measure.timing import (
    PAIRED_NOT_MEDIANS,
    REPEATS,
    Timing,
    alternate,
    implausible_points,
    median_repeat,
    medians_apart_words,
    overlap,
    paired_ratios,
    shown_ratio_differs,
    timing_words,
)

SWEEP_KS = (1, 2, 4, 8)
MAX_PICKED = 3  # speculative lanes a chosen race holds beside plain: three fit side by side
PICKED_FIRST = methods.RACE_FIRST  # the lanes a chosen race prefers, in order


def three_lanes(offered: Sequence[str]) -> list[str]:
    """A chosen race's first three lanes: one of each kind of drafter offered (a draft model, a lookup, a feature
    head), then whatever else is offered, so the first race already compares unlike methods."""
    ranked = [lane for lane in PICKED_FIRST if lane in offered] + [lane for lane in offered if lane not in PICKED_FIRST]
    return ranked[:MAX_PICKED]


MEASURED = "measured"


def warm_up(
    pair: ModelPair, prompt: str, settings: RunSettings, lanes: Sequence[str], tree: tuple[int, ...] = ()
) -> None:
    """A few tokens through every lane: first calls pay for allocation and kernel selection."""
    short = replace(settings, max_new_tokens=min(8, settings.max_new_tokens))
    for lane in lanes:
        run_method(pair, prompt, _lane_settings(short, lane, tree), lane)


OnRun = Callable[[int, int, str], None]  # runs done, runs in all, the lane just run: called between runs, never within


@dataclass(frozen=True)
class Race:
    """Each lane's median run (its arrivals feed the playback and the charts) and its timing over the repeats."""

    records: list[RunRecord]  # per lane, in the lanes' order: the repeat whose tokens/s is the median (the lower one
    # of the two middle repeats for an even count)
    tokens_per_s: dict[str, float]  # lane -> median over the repeats
    timings: dict[str, Timing]  # lane -> its speedup over plain, repeat by repeat (plain's own is 1.00 throughout)
    prompt: str = ""
    settings: RunSettings | None = None
    pieces: dict[str, tuple[Piece, ...]] = field(default_factory=dict)  # lane -> its record's text as it arrived
    repeat_speeds: dict[str, tuple[float, ...]] = field(default_factory=dict)  # lane -> tokens/s, repeat by repeat

    def ratio_words(self) -> str:
        """Why a lane's speedup is not its tokens/s over plain's, lane by lane, when the two differ ("" when none
        does): see measure.timing.medians_apart_words."""
        plain = self.repeat_speeds.get(methods.PLAIN)
        if not plain:
            return ""
        parts = [
            medians_apart_words(methods.lane_label(lane), speeds, plain, self.timings[lane].speedup)
            for lane, speeds in self.repeat_speeds.items()
            if lane != methods.PLAIN and lane in self.timings
        ]
        parts = [part for part in parts if part]
        if not parts:
            return ""
        moved = ", ".join(f"{v:.1f}" for v in plain)
        return f"{PAIRED_NOT_MEDIANS} Plain ran at {moved} tokens/s in its repeats. Here: " + "; ".join(parts) + "."


def race(
    pair: ModelPair,
    prompt: str,
    settings: RunSettings,
    lanes: Sequence[str],
    on_run: OnRun | None = None,
    tree: tuple[int, ...] = (),
    repeats: int = REPEATS,
) -> Race:
    """Every lane on the prompt, one after another (warm-up first), `repeats` times in alternating order, with no
    callback while a lane decodes (on_run is told between runs). A "tree" lane drafts a tree of this shape."""
    warm_up(pair, prompt, settings, lanes, tree)
    lanes = list(lanes) if methods.PLAIN in lanes else [methods.PLAIN, *lanes]  # every speedup needs its plain run
    done = [0]

    def runner(lane: str):
        def go() -> RunRecord:
            record = run_method(pair, prompt, _lane_settings(settings, lane, tree), lane)
            done[0] += 1
            if on_run:
                on_run(done[0], len(lanes) * repeats, lane)
            return record

        return go

    runs = alternate([runner(lane) for lane in lanes], repeats)  # runs[repeat][lane]
    plain = [row[lanes.index(methods.PLAIN)].tokens_per_s for row in runs]
    timings, speeds, records, repeat_speeds = {}, {}, [], {}
    for i, lane in enumerate(lanes):
        speed = [row[i].tokens_per_s for row in runs]
        speeds[lane], repeat_speeds[lane] = statistics.median(speed), tuple(speed)
        timings[lane] = Timing(paired_ratios(speed, plain), settings.sampling.temperature, settings.max_new_tokens)
        records.append(median_run([row[i] for row in runs]))
    decode = lambda ids: pair.tokenizer.decode(ids, skip_special_tokens=True)  # noqa: E731
    pieces = {lane: arrival_pieces(record, decode) for lane, record in zip(lanes, records)}
    return Race(records, speeds, timings, prompt, settings, pieces, repeat_speeds)


def median_run(runs: Sequence[RunRecord]) -> RunRecord:
    """The run whose tokens/s is the median (the lower middle one of an even count): the one the page replays, so
    the speed its playback ends on is the table's."""
    ranked = sorted(runs, key=lambda r: r.tokens_per_s)
    return ranked[(len(ranked) - 1) // 2]


@dataclass(frozen=True)
class Piece:
    """What one target pass delivered: when (seconds of decoding since the lane's start), how many tokens, and the
    text they added (may be empty while a character's bytes are incomplete; the pieces join to the whole text)."""

    seconds: float
    tokens: int
    text: str


def arrival_pieces(record: RunRecord, decode: Callable[[list[int]], str]) -> tuple[Piece, ...]:
    """A record's text cut where its tokens arrived. Each cut is the decoded prefix's length, or where it stops
    agreeing with the whole text (a token that completes a character changes the decoded tail), never going back."""
    ids, whole = list(record.output_ids), decode(list(record.output_ids))
    pieces, count, shown = [], 0, 0
    for seconds, tokens in record.arrivals():
        count += tokens
        prefix = decode(ids[:count]) if count < len(ids) else whole
        cut = max(shown, _agreeing(prefix, whole))
        pieces.append(Piece(seconds, tokens, whole[shown:cut]))
        shown = cut
    if pieces and shown < len(whole):  # cannot happen when the last prefix is the whole; kept whole regardless
        last = pieces[-1]
        pieces[-1] = replace(last, text=last.text + whole[shown:])
    return tuple(pieces)


def _agreeing(prefix: str, whole: str) -> int:
    """How many leading characters of prefix agree with whole (a replacement character ends the agreement)."""
    n = 0
    for a, b in zip(prefix, whole):
        if a != b or a == "\ufffd":
            break
        n += 1
    return n


def _lane_settings(settings: RunSettings, lane: str, tree: tuple[int, ...]) -> RunSettings:
    if lane != methods.TREE:
        return settings
    if not tree:
        raise SettingsError("A tree lane needs a tree shape: children per depth, e.g. 2,2,1,1.")
    return tree_settings(settings, tree)


@dataclass(frozen=True)
class VersusPlain:
    """A speculative run against plain decoding of the same prompt, timed by the protocol (measure/timing.py), and
    whether their outputs agree."""

    spec: Trace
    plain: Trace
    spec_tokens_per_s: float  # median over the timed runs
    plain_tokens_per_s: float
    timing: Timing  # the paired per-repeat speedups
    first_divergence: int | None  # None when the outputs are identical token for token
    spec_repeats: tuple[float, ...] = ()  # tokens/s, repeat by repeat
    plain_repeats: tuple[float, ...] = ()

    def speeds_words(self) -> str:
        """The two speeds a reader can divide to get the speedup shown: the median repeat's (an odd count: its
        ratio is the median); for an even count each side's median, and why their ratio is another figure when it
        is."""
        i = median_repeat(self.spec_repeats, self.plain_repeats)
        if i is not None:
            spec, plain = self.spec_repeats[i], self.plain_repeats[i]
            return f"In the median repeat {spec:.1f} vs {plain:.1f} tokens/s: {spec / plain:.2f}×."
        spec, plain = self.spec_tokens_per_s, self.plain_tokens_per_s
        head = f"Median {spec:.1f} vs {plain:.1f} tokens/s"
        if not shown_ratio_differs(spec, plain, self.speedup):
            return head + "."
        moved = ", ".join(f"{v:.1f}" for v in self.plain_repeats)
        return (
            f"{head}, each side's median taken apart: {spec / plain:.2f}×, not the {self.speedup:.2f}× shown, which "
            f"is the median of the repeats' paired ratios; plain ran at {moved} tokens/s in its repeats, and each "
            "paired ratio cancels what slowed both sides of it."
        )

    def summary_words(self) -> str:
        """Two sentences a student can read under the live figure: what was just measured, and what it means."""
        spec, plain = self.spec.totals, self.plain.totals
        measured = (
            "Just now the target answered this prompt twice, alone and with the draft guessing ahead: with the draft "
            f"it needed {spec.rounds} passes instead of {plain.rounds} and was {self.speedup:.2f}× as fast."
        )
        kept = f"The target kept {spec.alpha:.0%} of the draft's guesses, {spec.tau:.1f} tokens per pass"
        if self.speedup >= 1.05:
            return f"{measured} {kept}, enough to pay for the guessing and the checking."
        if self.speedup > 0.95:
            return f"{measured} {kept}: just about what the guessing and the checking cost, so no real gain."
        return f"{measured} {kept}: too few to pay for the guessing and the checking, so speculation lost time here."

    @property
    def timed_runs(self) -> int:
        return self.timing.repeats

    @property
    def speedup(self) -> float:
        """The median of the per-repeat speedups (each against the plain run of its repeat)."""
        return self.timing.speedup


def versus_plain(pair: ModelPair, prompt: str, settings: RunSettings, repeats: int = REPEATS) -> VersusPlain:
    """Warm both up, then time them `repeats` times each in alternating order (plain first, then speculative
    first, ...), so neither always runs on a cold or a warm machine; compare the outputs token by token."""
    plain_settings = replace(settings, method=methods.PLAIN)
    for s in (plain_settings, settings):
        generate(pair, prompt, replace(s, max_new_tokens=min(8, s.max_new_tokens)))
    runners = [lambda: generate(pair, prompt, plain_settings), lambda: generate(pair, prompt, settings)]
    runs = alternate(runners, repeats)
    plain = [row[0].totals.tokens_per_s for row in runs]
    spec = [row[1].totals.tokens_per_s for row in runs]
    last_plain, last_spec = runs[-1]
    return VersusPlain(
        last_spec,
        last_plain,
        statistics.median(spec),
        statistics.median(plain),
        Timing(paired_ratios(spec, plain), settings.sampling.temperature, settings.max_new_tokens),
        stats.first_divergence(last_plain.output_ids, last_spec.output_ids),
        tuple(spec),
        tuple(plain),
    )


@dataclass(frozen=True)
class Sweep:
    rows: list[dict]  # per K: a "measured" row (with low, high: its repeats' range) and maybe a "predicted" row
    costs: MeasuredCosts
    repeats: int = REPEATS
    temperature: float = 0.0
    tokens: int = 0
    prompt: str = ""
    settings: RunSettings | None = None

    def words(self) -> str:
        return (
            timing_words(self.repeats, self.temperature, None, tokens=self.tokens, interval_kind=None)
            + " Each point is the median of its repeats; the bars are their range."
        )


def k_sweep(
    pair: ModelPair,
    prompt: str,
    settings: RunSettings,
    ks: Sequence[int] = SWEEP_KS,
    on_progress: Callable[[float], None] | None = None,
    repeats: int = REPEATS,
) -> Sweep:
    """Draft-model speedup over plain at each K, measured by the protocol (each K paired with its own plain runs,
    `repeats` times in alternating order: one plain run timed once, shared by every K, made one slow or fast moment
    scale every point), and predicted from measured tau and costs (no prediction when the costs cannot be true: see
    MeasuredCosts.implausible)."""
    costs = measure_costs(pair, k_max=max(ks), repeats=5, draft_vocab=settings.draft_vocab, forward=settings.forward)
    warm_up(pair, prompt, settings, [methods.PLAIN, methods.DRAFT])
    for k in ks:  # every K once: a K's first run must not be its timed one
        run_method(pair, prompt, replace(settings, k=k, max_new_tokens=min(8, settings.max_new_tokens)), methods.DRAFT)
    rows = []
    for i, k in enumerate(ks):
        runs = alternate(
            [
                lambda: run_method(pair, prompt, settings, methods.PLAIN),
                lambda k=k: run_method(pair, prompt, replace(settings, k=k), methods.DRAFT),
            ],
            repeats,
        )
        lane = runs[0][1]
        timing = Timing(
            paired_ratios([row[1].tokens_per_s for row in runs], [row[0].tokens_per_s for row in runs]),
            settings.sampling.temperature,
            settings.max_new_tokens,
        )
        low, high = timing.interval or (None, None)
        rows.append({"k": k, "kind": MEASURED, "speedup": timing.speedup, "low": low, "high": high, "tau": lane.tau})
        prediction = predict([lane], costs)
        if prediction:
            rows.append({
                "k": k, "kind": "predicted from measured τ and costs", "speedup": prediction.speedup,
                "alpha": lane.alpha, "tau": lane.tau, "drafts_per_round": prediction.drafts_per_round,
                "verify_cost": prediction.verify_cost,
            })  # fmt: skip
        if on_progress:
            on_progress((i + 1) / len(ks))
    return Sweep(rows, costs, repeats, settings.sampling.temperature, settings.max_new_tokens, prompt, settings)


def sweep_warnings(sweep: Sweep, lanes: Race | None = None) -> list[str]:
    """What the page must say about a sweep: points that cannot be true, and, when the race ran the same prompt and
    settings, a K whose figure disagrees with the race's draft-model lane at that K (their ranges do not meet)."""
    measured = [row for row in sweep.rows if row["kind"] == MEASURED]
    out = implausible_points(measured)
    if lanes is None or lanes.settings is None or sweep.settings is None or lanes.prompt != sweep.prompt:
        return out
    if replace(lanes.settings, k=1, method=methods.DRAFT) != replace(sweep.settings, k=1, method=methods.DRAFT):
        return out
    timing, k = lanes.timings.get(methods.DRAFT), lanes.settings.k
    point = next((row for row in measured if row["k"] == k), None)
    if timing and point and timing.interval and point["low"] is not None:
        if not overlap(timing.interval, (point["low"], point["high"])):
            out.append(
                f"K = {k}: the sweep measured {point['speedup']:.2f}× ({point['low']:.2f}–{point['high']:.2f}), the "
                f"race's draft-model lane {timing.cell()}; the two ranges do not meet, so the machine's speed changed "
                "between them (other work on it): time again when it is quiet"
            )
    return out


RACE_TREES = ((2, 2, 1, 1), (3, 2, 1, 1))  # the tree lanes the race offers beside the chain


def tree_label(shape: tuple[int, ...]) -> str:
    """'tree 2,2,1,1 (14 nodes)': a shape named with its real node count (the verify pass reads every node)."""
    return f"tree {','.join(map(str, shape))} ({tree_size(shape)} nodes)"
