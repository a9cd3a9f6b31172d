"""Go / no-go: the method and K with the best measured speedup, whether it pays, and how to deploy it.

A verdict needs enough prompts (MIN_PROMPTS): its interval resamples prompts and, within each, the timing repeats,
so both the prompt-to-prompt spread and the clock noise widen it. The best of several settings, picked on the same
prompts it is judged on, is an optimistic figure: the verdict says so whenever it picked among several.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specviz import methods
from specviz.core import stats
from specviz.engine.costs import MeasuredCosts
from specviz.measure.predict import predict
from specviz.measure.summary import groups, mean_of
from specviz.measure.workload import PairedRun

MIN_PROMPTS = 5  # fewer prompts: no verdict (a bootstrap over 1-3 prompts under-covers badly)
GO_SPEEDUP = 1.1  # the mean must reach this, and the interval's lower end must be above 1
RULE = f"GO needs a mean speedup of at least {GO_SPEEDUP:.2f}x with the interval's lower end above 1.00x"


@dataclass(frozen=True)
class Recommendation:
    go: bool | None  # None: too few prompts or no speedup measured for a verdict
    reason: str
    method: str
    k: int
    measured_speedup: float | None
    speedup_ci: tuple[float, float]
    predicted_speedup: float | None
    vllm_config: dict | None
    hf_generate: str | None


def recommend(
    results: Sequence[PairedRun], draft_source: str | None, temperature: float, costs: MeasuredCosts | None = None
) -> Recommendation | None:
    """The best measured setting, with its interval and the prediction from measured costs beside it."""
    settings_measured = {key[1:]: group for key, group in groups(results, by_tag=False).items()}  # (source, method, K)
    if not settings_measured:
        return None
    (_, method, k), best = max(settings_measured.items(), key=lambda item: mean_of([r.speedup for r in item[1]]) or 0.0)
    runs = [r.run for r in best]
    measured = mean_of([r.speedup for r in best])
    low, high = stats.bootstrap_ci_nested([r.speedups for r in best])
    prediction = predict(runs, costs)
    alpha = stats.alpha(runs)
    go, reason = _verdict(method, k, len(best), len(settings_measured), measured, (low, high), alpha, prediction)
    entry, settings = methods.get(method), runs[0].settings
    return Recommendation(
        go,
        reason,
        method,
        k,
        measured,
        (low, high),
        prediction.speedup if prediction else None,
        entry.vllm_config(k, draft_source, settings.get("ngram_min", 1), settings.get("ngram_max", 3)),
        entry.hf_generate_call(k, temperature, settings.get("ngram_max", 3)),
    )


def _verdict(method, k, prompts, candidates, measured, ci, alpha, prediction) -> tuple[bool | None, str]:
    if measured is None:
        return None, "No speedup was measured (no plain run to compare with), so there is no go / no-go."
    setting = f"{method}, K = {k}"
    alpha_text = "α not reported" if alpha is None else f"α {alpha:.2f}"
    figure = f"{measured:.2f}x (95% CI {ci[0]:.2f}x–{ci[1]:.2f}x over {prompts} prompts and their timing repeats)"
    if prompts < MIN_PROMPTS:
        return None, (
            f"{setting} measured {figure} at {alpha_text}; a go / no-go needs at least {MIN_PROMPTS} prompts, "
            "so there is no verdict yet: measure more prompts."
        )
    picked = (
        f" It is the best of {candidates} settings measured on these same prompts, so this figure is optimistic: "
        "confirm it on prompts it was not picked on."
        if candidates > 1
        else ""
    )
    if measured >= GO_SPEEDUP and ci[0] > 1.0:
        return True, f"{setting} measured {figure} at {alpha_text} ({RULE}).{picked}"
    why = ""
    if prediction:
        why = (
            f": a draft step costs c = {prediction.c:.2f} of a target step and a verify pass "
            f"{prediction.verify_cost:.2f} "
            f"steps here, so even without loop overhead the model passes allow only {prediction.speedup:.2f}x"
        )
    short = "its interval reaches 1.00x or below" if measured >= GO_SPEEDUP else f"it is under {GO_SPEEDUP:.2f}x"
    return False, (
        f"The best setting ({setting}) measured {figure} at {alpha_text}{why}. {RULE}, and {short}. Decode plainly, "
        f"or try a cheaper or better-matched proposer.{picked}"
    )
