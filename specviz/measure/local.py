"""A workload on this process's engine: the prompts that fit the model, the step costs, and the source of runs.

The workload page's "this app's models" driver is these three calls around measure/workload.py's run_workload.
"""

from __future__ import annotations

from collections.abc import Sequence

from specviz.core.settings import RunSettings
from specviz.engine.costs import MeasuredCosts, measure_costs
from specviz.engine.decode import encode_prompt
from specviz.engine.models import ModelPair
from specviz.errors import SpecvizError
from specviz.measure.lanes import run_method
from specviz.measure.prompts import PromptRow
from specviz.measure.workload import RunSource

COST_REPEATS = 5  # timings per step cost measured before a workload


def fitting_rows(pair: ModelPair, rows: Sequence[PromptRow], max_new_tokens: int) -> tuple[list[PromptRow], list[str]]:
    """The rows whose prompt and new tokens fit the model's context, and a problem per other row (by line number)."""
    fitting, problems = [], []
    for row in rows:
        try:
            ids = encode_prompt(pair, row.prompt)
            if pair.context_length and len(ids) + max_new_tokens > pair.context_length:
                raise SpecvizError(
                    f"{len(ids)} prompt tokens + {max_new_tokens} new tokens exceed the context "
                    f"of {pair.context_length}"
                )
            fitting.append(row)
        except SpecvizError as exc:
            problems.append(f"line {row.line}: {exc}")
    return fitting, problems


def step_costs(pair: ModelPair, ks: Sequence[int], base: RunSettings) -> MeasuredCosts:
    """The draft and verify costs up to the largest K, timed on this machine before the workload (for predictions)."""
    return measure_costs(pair, k_max=max(ks), repeats=COST_REPEATS, draft_vocab=base.draft_vocab)


def engine_source(pair: ModelPair) -> RunSource:
    """Runs on this process's engine, as run_workload takes them: (prompt, settings, tag) -> the run's record."""
    return lambda prompt, settings, tag: run_method(pair, prompt, settings, settings.method, tag=tag)
