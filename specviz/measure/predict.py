"""The one predicted speedup of measured runs: tau / (drafts per round * c + v), from measured tau and measured costs.

It says what the model passes alone allow on this machine; measured / predicted (the efficiency) is what the loop
keeps of it. The formula is `core.stats.predicted_speedup`; this module picks c and v for a method's runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specviz import methods
from specviz.core import stats
from specviz.core.record import RunRecord
from specviz.core.schedule import CONSTANT
from specviz.engine.costs import MeasuredCosts


@dataclass(frozen=True)
class Prediction:
    speedup: float
    c: float  # draft step / target step (0 for a lookup on the host: it costs next to nothing)
    verify_cost: float  # verify pass / target step, averaged over the runs' rounds (verify_cost_of)
    drafts_per_round: float


def draft_step_cost(method: methods.Method, costs: MeasuredCosts, exit_layer: int = 0) -> float | None:
    """c for this method: a draft model's measured step (the whole head for transformers' lanes, which keep it), its
    own drafter's measured step per drafted token (a feature head's step, a pass of parallel heads per draft it
    makes, an early-exit step at the runs' exit layer), or 0 for a lookup on the host; None when not measured."""
    if method.draft_cost == methods.DRAFT_MODEL_STEP and method.engine == methods.HF:
        return costs.untrimmed_c
    if method.exits_early and costs.exit_layer != exit_layer:  # timed at one E: runs at another have no measured c
        return None
    return costs.c_of(method.name) if method.speculative else None


def predict(records: Sequence[RunRecord], costs: MeasuredCosts | None) -> Prediction | None:
    """The prediction for runs of one method and K; None when the costs or the counts it needs are missing."""
    if not records or costs is None or costs.implausible:
        return None
    method = methods.get(records[0].method)
    if records[0].settings.get("tree") and method.takes_tree:
        return None  # a tree drafts one pass per depth but verifies every node: the chain cost model is not its
    counts = stats.tally(records)
    drafts = counts.drafts_per_round
    constant = records[0].settings.get("k_schedule", CONSTANT) == CONSTANT  # adaptive: not K a round, not known
    assisted = method.hf_option in (methods.HF_ASSISTANT_MODEL, methods.HF_ASSISTANT_EARLY_EXIT)
    if drafts is None and constant and method.engine == methods.HF and assisted:
        drafts = float(records[0].k)  # assisted generation with the constant schedule drafts K tokens a round
    c = draft_step_cost(method, costs, records[0].settings.get("exit_layer", 0))
    if not method.speculative or drafts is None or c is None or counts.tau is None:
        return None
    v = verify_cost_of(records, costs, drafts)  # early exit's verify skips layers < E for all but one draft
    #   (engine/early_exit.py), so the full pass's v(K) over-states its cost: its prediction errs low
    return Prediction(stats.predicted_speedup(counts.tau, drafts, c, v), c, v, drafts)


def verify_cost_of(records: Sequence[RunRecord], costs: MeasuredCosts, drafts: float) -> float:
    """v of these runs' rounds: each round's pass costs v(its drafts), 1 target step for a round with none (an n-gram
    miss is a plain step), averaged over the rounds; the runs' mean drafts per round where a source reports totals
    only. v(K) is taken monotone (MeasuredCosts.verify_monotone): a v(1) timed above v(4) is clock noise, and a
    lookup that mostly drafts one token would otherwise be priced at that noise."""
    v = costs.verify_monotone
    per_round = [d for rec in records for d in (rec.per_round_drafted or ())]
    if not per_round or any(rec.per_round_drafted is None for rec in records):
        return stats.verify_cost_at(v, drafts)
    return sum(stats.verify_cost_at(v, d) for d in per_round) / len(per_round)


def below_measured(setting: str, prediction: Prediction | None, measured: float | None, context_tokens: int) -> str:
    """Why a prediction is under the measured speedup it is read as bounding, in words ("" when it is not under it).

    The prediction prices a round by the model passes alone, timed before the workload on one prompt; the plain runs
    it is measured against pay the loop's per-token work as well (sampling, bookkeeping, a context that grows), which
    a speculative round shares among its τ tokens. Where that work is a large share of a step, or the machine ran
    faster during the workload than while the costs were timed, the measured figure passes the prediction."""
    if prediction is None or measured is None or prediction.speedup >= measured:
        return ""
    return (
        f"{setting}: predicted {prediction.speedup:.2f}x, below the measured {measured:.2f}x, so here it is no upper "
        f"bound. It prices each round by the model passes alone (c {prediction.c:.2f}, v {prediction.verify_cost:.2f} "
        f"target steps), timed before the workload on one prompt of {context_tokens} tokens; the plain runs also pay "
        "the loop's per-token work (sampling, bookkeeping, a growing context), which a round shares among its "
        "tokens, and the machine's speed moves between the two timings."
    )
