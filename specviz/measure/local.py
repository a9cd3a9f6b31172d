"""A workload on this process's engine: the prompts that fit the model, the step costs, and the source of runs.

The workload page's "this app's models" driver is these three calls around measure/workload.py's run_workload.
"""

from __future__ import annotations

from collections.abc import Sequence

from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixMemory
from specviz.engine.costs import MeasuredCosts, measure_costs
from specviz.engine.loading.models import ModelPair
from specviz.measure.lanes import run_method
from specviz.measure.workload import RunSource

COST_REPEATS = 5  # timings per step cost measured before a workload


def step_costs(
    pair: ModelPair, ks: Sequence[int], base: RunSettings, method_names: Sequence[str] = ()
) -> MeasuredCosts:
    """The draft and verify costs up to the largest K, timed on this machine before the workload (for predictions
    and each method's c): with a step of each feature head and of early exit that method_names run."""
    return measure_costs(
        pair,
        k_max=max(ks),
        repeats=COST_REPEATS,
        draft_vocab=base.draft_vocab,
        methods=method_names,
        exit_layer=base.exit_layer,
        forward=base.forward,
    )


def engine_source(pair: ModelPair, memory: SuffixMemory | None = None) -> RunSource:
    """Runs on this process's engine, as run_workload takes them: (prompt, settings, tag) -> the run's record.
    memory: what suffix decoding remembers across the runs (the caller's: an app session's, one measurement's)."""
    memory = memory or SuffixMemory()
    return lambda prompt, settings, tag: run_method(pair, prompt, settings, settings.method, tag=tag, memory=memory)
