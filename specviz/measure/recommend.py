"""Go / no-go: the method and K with the best measured speedup, whether it pays, and how to deploy it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from specviz import methods
from specviz.core import stats
from specviz.engine.costs import MeasuredCosts
from specviz.measure.predict import predict
from specviz.measure.summary import groups
from specviz.measure.workload import PairedRun


@dataclass(frozen=True)
class Recommendation:
    go: bool
    reason: str
    method: str
    k: int
    measured_speedup: float
    predicted_speedup: float | None
    vllm_config: dict | None
    hf_generate: str | None


def recommend(
    results: Sequence[PairedRun], draft_source: str | None, temperature: float, costs: MeasuredCosts | None = None
) -> Recommendation | None:
    """The best measured setting, with the prediction from measured costs beside it."""
    if not results:
        return None
    overall = {(method, k): group for (_, method, k), group in groups(results, by_tag=False).items()}
    (method, k), best = max(overall.items(), key=lambda item: float(np.mean([r.speedup for r in item[1]])))
    runs = [r.run for r in best]
    measured = float(np.mean([r.speedup for r in best]))
    low, _ = stats.bootstrap_ci([r.speedup for r in best])
    prediction = predict(runs, costs)
    alpha = stats.alpha(runs) or 0.0
    go = measured >= 1.1 and low > 1.0
    if go:
        reason = f"{method} with K = {k} measured {measured:.2f}x (95% CI from {low:.2f}x) at alpha {alpha:.2f}."
    else:
        reason = f"The best setting ({method}, K = {k}) measured only {measured:.2f}x at alpha {alpha:.2f}"
        if prediction:
            reason += (
                f": a draft step costs c = {prediction.c:.2f} of a target step and a verify pass "
                f"{prediction.verify_cost:.2f} steps here, so even without loop overhead the model passes allow only "
                f"{prediction.speedup:.2f}x"
            )
        reason += ". Decode plainly, or try a cheaper or better-matched proposer."
    entry = methods.get(method)
    settings = runs[0].settings
    return Recommendation(
        go, reason, method, k, measured, prediction.speedup if prediction else None,
        entry.vllm_config(k, draft_source, settings.get("ngram_min", 1), settings.get("ngram_max", 3)),
        entry.hf_generate_call(k, temperature, settings.get("ngram_max", 3)),
    )  # fmt: skip
