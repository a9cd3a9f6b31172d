"""The race: one prompt through several methods (plain, specviz's, Hugging Face's), each timed as its tokens arrive;
and the K sweep, measured speedup next to the prediction from measured costs.

Lanes run one after another, never concurrently, so no lane steals another's cores, after a short warm-up of each.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from specviz import methods
from specviz.core import stats
from specviz.core.record import RunRecord
from specviz.core.settings import RunSettings
from specviz.core.trace import Trace
from specviz.core.verify import tree_size
from specviz.engine.costs import MeasuredCosts, measure_costs
from specviz.engine.decode import generate
from specviz.engine.models import ModelPair
from specviz.errors import SettingsError
from specviz.measure.lanes import OnTokens, run_method, tree_settings
from specviz.measure.predict import predict

SWEEP_KS = (1, 2, 4, 8)


def warm_up(
    pair: ModelPair, prompt: str, settings: RunSettings, lanes: Sequence[str], tree: tuple[int, ...] = ()
) -> None:
    """A few tokens through every lane: first calls pay for allocation and kernel selection."""
    short = replace(settings, max_new_tokens=min(8, settings.max_new_tokens))
    for lane in lanes:
        run_method(pair, prompt, _lane_settings(short, lane, tree), lane)


def race(
    pair: ModelPair,
    prompt: str,
    settings: RunSettings,
    lanes: Sequence[str],
    on_tokens: OnTokens | None = None,
    tree: tuple[int, ...] = (),
) -> list[RunRecord]:
    """Every lane on the prompt, one after another (warm-up first); a "tree" lane drafts a tree of this shape."""
    warm_up(pair, prompt, settings, lanes, tree)
    return [run_method(pair, prompt, _lane_settings(settings, lane, tree), lane, on_tokens) for lane in lanes]


def _lane_settings(settings: RunSettings, lane: str, tree: tuple[int, ...]) -> RunSettings:
    if lane != methods.TREE:
        return settings
    if not tree:
        raise SettingsError("A tree lane needs a tree shape: children per depth, e.g. 2,2,1,1.")
    return tree_settings(settings, tree)


@dataclass(frozen=True)
class VersusPlain:
    """A speculative run against plain decoding of the same prompt, timed fairly, and whether their outputs agree."""

    spec: Trace
    plain: Trace
    spec_tokens_per_s: float  # median over the timed runs
    plain_tokens_per_s: float
    timed_runs: int  # of each
    first_divergence: int | None  # None when the outputs are identical token for token

    @property
    def speedup(self) -> float:
        return self.spec_tokens_per_s / self.plain_tokens_per_s


def versus_plain(pair: ModelPair, prompt: str, settings: RunSettings, repeats: int = 2) -> VersusPlain:
    """Warm both up, then time them `repeats` times each in alternating order (plain first, then speculative
    first, ...), so neither always runs on a cold or a warm machine; compare the outputs token by token."""
    plain_settings = replace(settings, method=methods.PLAIN)
    for s in (plain_settings, settings):
        generate(pair, prompt, replace(s, max_new_tokens=min(8, s.max_new_tokens)))
    times: dict[str, list[float]] = {"plain": [], "spec": []}
    runs: dict[str, Trace] = {}
    for i in range(repeats):
        order = (("plain", plain_settings), ("spec", settings))
        for name, s in order if i % 2 == 0 else order[::-1]:
            runs[name] = generate(pair, prompt, s)
            times[name].append(runs[name].totals.tokens_per_s)
    return VersusPlain(
        runs["spec"],
        runs["plain"],
        statistics.median(times["spec"]),
        statistics.median(times["plain"]),
        repeats,
        stats.first_divergence(runs["plain"].output_ids, runs["spec"].output_ids),
    )


@dataclass(frozen=True)
class Sweep:
    rows: list[dict]  # per K: a "measured" row and, when the costs allow one, a "predicted from ..." row
    costs: MeasuredCosts


def k_sweep(
    pair: ModelPair,
    prompt: str,
    settings: RunSettings,
    ks: Sequence[int] = SWEEP_KS,
    on_progress: Callable[[float], None] | None = None,
) -> Sweep:
    """Draft-model speedup over plain at each K, measured, and predicted from measured tau and costs (no prediction
    when the costs cannot be true: see MeasuredCosts.implausible)."""
    costs = measure_costs(pair, k_max=max(ks), repeats=5, draft_vocab=settings.draft_vocab)
    warm_up(pair, prompt, replace(settings, k=ks[0]), [methods.PLAIN, methods.DRAFT])
    plain = run_method(pair, prompt, settings, methods.PLAIN)
    rows = []
    for i, k in enumerate(ks):
        lane = run_method(pair, prompt, replace(settings, k=k), methods.DRAFT)
        rows.append({"k": k, "kind": "measured", "speedup": lane.tokens_per_s / plain.tokens_per_s})
        prediction = predict([lane], costs)
        if prediction:
            rows.append({
                "k": k, "kind": "predicted from measured τ and costs", "speedup": prediction.speedup,
                "alpha": lane.alpha, "tau": lane.tau, "drafts_per_round": prediction.drafts_per_round,
            })  # fmt: skip
        if on_progress:
            on_progress((i + 1) / len(ks))
    return Sweep(rows, costs)


RACE_TREES = ((2, 2, 1, 1), (3, 2, 1, 1))  # the tree lanes the race offers beside the chain


def tree_label(shape: tuple[int, ...]) -> str:
    """'tree 2,2,1,1 (14 nodes)': a shape named with its real node count (the verify pass reads every node)."""
    return f"tree {','.join(map(str, shape))} ({tree_size(shape)} nodes)"
