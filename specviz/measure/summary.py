"""A measured workload summarised: pooled statistics per tag, method and K, with bootstrap intervals; CSV and JSON.

Every figure comes from core/stats.py; the prediction from measure/predict.py.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

import numpy as np

from specviz.core import stats
from specviz.core.record import CSV, result_columns
from specviz.core.settings import RunSettings
from specviz.engine.costs import MeasuredCosts
from specviz.measure.predict import predict
from specviz.measure.workload import PairedRun

ALL = "all"
CSV_COLUMNS = result_columns(CSV)  # one row per prompt x method x K: the scalar fields


def groups(results: Sequence[PairedRun], by_tag: bool = True) -> dict[tuple[str, str, str, int], list[PairedRun]]:
    """(tag, source, method, K) -> results; every result also counts in its ("all", source, method, K) group.

    The source (specviz's own engine, "vllm", ...) keeps runs measured by different engines apart: the same method and
    K on two engines are two settings, never pooled."""
    out: dict[tuple[str, str, str, int], list[PairedRun]] = {}
    for res in results:
        if by_tag:
            out.setdefault((res.tag, res.source, res.method, res.k), []).append(res)
        out.setdefault((ALL, res.source, res.method, res.k), []).append(res)
    return out


def summarize(results: Sequence[PairedRun], costs: MeasuredCosts | None = None, seed: int = 0) -> list[dict]:
    """Per (tag, source, method, K), "all" tags first: pooled alpha and tau, mean speedup, bootstrap CIs, the
    prediction. Each row names its source (which engine measured it)."""
    out = []
    for (tag, source, method, k), group in sorted(
        groups(results).items(), key=lambda item: (item[0][0] != ALL, item[0])
    ):
        runs = [res.run for res in group]
        counts = stats.tally(runs)
        prediction = predict(runs, costs)
        out.append(
            {
                "tag": tag,
                "source": source,
                "method": method,
                "k": k,
                "prompts": len(group),
                "alpha": counts.alpha,
                "alpha_ci": stats.bootstrap_ci([r.alpha for r in runs], [r.judged for r in runs], seed),
                "acceptance_rate": counts.acceptance_rate,
                "tau": counts.tau,
                "tokens_per_s": float(np.mean([r.tokens_per_s for r in runs])),
                "plain_tokens_per_s": mean_of([res.plain_tokens_per_s for res in group]),
                "speedup": mean_of([res.speedup for res in group]),
                "speedup_ci": stats.bootstrap_ci_nested([res.speedups for res in group], seed=seed),
                "predicted_speedup": prediction.speedup if prediction else None,
            }
        )
    return out


def mean_of(values: Sequence[float | None]) -> float | None:
    """Mean of the measured values; None when nothing was measured (a source without a plain baseline)."""
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def results_csv(results: Sequence[PairedRun]) -> str:
    """One row per prompt x method x K (the scalar fields)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for res in results:
        writer.writerow(res.to_dict())
    return buffer.getvalue()


def results_json(
    results: Sequence[PairedRun], settings: RunSettings, meta: dict, costs: MeasuredCosts | None = None, seed: int = 0
) -> str:
    """Everything: settings, one entry per run (with vLLM-shaped metrics), the measured costs and the summary."""
    doc = {
        "format": "specviz.workload",
        "version": 1,
        "settings": {**settings.to_dict(), **meta},
        "runs": [res.to_dict() for res in results],
        "costs": costs.to_dict() if costs else None,
        "summary": summarize(results, costs, seed),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)
