"""A measured workload summarised: pooled statistics per tag, method and K, with bootstrap intervals; CSV and JSON.

Every figure comes from core/stats.py; the prediction from measure/predict.py. The go / no-go (measure/recommend.py,
which reads these summary rows) goes into both files as the document verdict_document() makes: the JSON's "verdict",
and on every CSV row the verdict of that row's prompts (its tag's when tags were judged apart, else all prompts').
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from specviz import methods
from specviz.core import stats
from specviz.core.record import CSV, result_columns
from specviz.core.settings import RunSettings
from specviz.engine.costs import MeasuredCosts
from specviz.measure.predict import predict
from specviz.measure.workload import PairedRun

ALL = "all"
CSV_COLUMNS = result_columns(CSV)  # one row per prompt x method x K: the scalar fields
# How each row was produced, so a CSV alone says so: the run's own sampling, seed, length and draft vocabulary (0 =
# every token), and the pair, device and precision the JSON's settings name (a server's: its model; no device).
SETTING_COLUMNS = (
    "temperature",
    "top_k",
    "top_p",
    "seed",
    "max_new_tokens",
    "draft_vocab",
    "target",
    "draft",
    "device",
    "dtype",
)
# The go / no-go of the row's prompts: its verdict (GO, NO-GO, no verdict), the group judged (a tag, or all), the
# setting judged (the group's best), its mean speedup and interval, the failed parts of the rule (mean, interval), the
# verdict on all prompts, and the rule.
VERDICT_COLUMNS = (
    "verdict",
    "verdict_group",
    "verdict_method",
    "verdict_k",
    "verdict_speedup",
    "verdict_ci_low",
    "verdict_ci_high",
    "verdict_failed",
    "overall_verdict",
    "rule",
)
# The whole family ranked (measure/ranking.py): this row's setting's rank among its tag's settings (tag_rank; 1 =
# best) and among all prompts' (overall_rank), its c (a draft step / a target step, measured before the workload) and
# the run's mean drafts per round (K for a fixed chain, less for suffix decoding and adaptive schedules); c_note says
# why a c is empty (dropped: the step costs cannot be true, as on a busy machine; not timed; not measured).
RANK_COLUMNS = ("tag_rank", "overall_rank", "c", "drafts_per_round", "c_note")


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
                "speedup_ci": stats.speedup_interval([res.speedups for res in group], seed=seed),
                "predicted_speedup": prediction.speedup if prediction else None,
            }
        )
    return out


MEAN_OF_RATIOS = (
    "A speedup here is the mean over prompts of each prompt's own speedup, and each prompt's is the mean of its "
    "repeats' paired ratios (its run over the plain run of the same prompt in the same repeat, so a slow moment slows "
    "both sides of its ratio and cancels); the tokens/s beside it are each side's mean over prompts, taken apart. The "
    "two agree only when every prompt runs at the same speed: a prompt that decodes slowly weighs as much in the "
    "speedup as a fast one, and less in the mean tokens/s."
)


def ratio_apart_words(summary: Sequence[dict], names: dict[tuple[str, str, int], str] | None = None) -> str | None:
    """Why a summary row's speedup is not the ratio of the tokens/s shown beside it (to one decimal, as the table
    shows them), with the numbers of each row where it differs; None when every row's speedup is that ratio."""
    apart = []
    for row in summary:
        spec, plain, speedup = row["tokens_per_s"], row["plain_tokens_per_s"], row["speedup"]
        if speedup is None or not plain or round(plain, 1) == 0:
            continue
        if round(round(spec, 1) / round(plain, 1), 2) == round(speedup, 2):
            continue
        name = (names or {}).get(
            (row["source"], row["method"], row["k"])
        ) or f"{methods.label(row['method'])}, K = {row['k']}"
        scope = "all prompts" if row["tag"] == ALL else f"prompts tagged {row['tag']!r}"
        apart.append(f"{name} on {scope}: {spec:.1f} / {plain:.1f} tokens/s, a speedup of {speedup:.2f}x")
    if not apart:
        return None
    more = f"; and {len(apart) - 3} more" if len(apart) > 3 else ""
    return f"Why a speedup is not the ratio of the tokens/s beside it ({'; '.join(apart[:3])}{more}): {MEAN_OF_RATIOS}"


def mean_of(values: Sequence[float | None]) -> float | None:
    """Mean of the measured values; None when nothing was measured (a source without a plain baseline)."""
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def results_csv(
    results: Sequence[PairedRun],
    verdict: dict | None = None,
    environment: dict | None = None,
    ranking: Sequence[dict] | None = None,
) -> str:
    """One row per prompt x method x K: the scalar fields, the settings and pair that produced it (environment: the
    JSON's settings meta, e.g. the pair's describe()), the go / no-go of its prompts (verdict: the document
    recommend.verdict_document makes) and its setting's ranks (ranking: measure/ranking.py's rows). Cells not known
    are empty."""
    buffer = io.StringIO()
    columns = (*CSV_COLUMNS, *SETTING_COLUMNS, *VERDICT_COLUMNS, *RANK_COLUMNS)
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    ranks = {(r["tag"], r["source"], r["method"], r["k"]): r for r in ranking or ()}
    for res in results:
        cells = {**res.to_dict(), **_setting_cells(res, environment or {}), **_verdict_cells(res, verdict)}
        writer.writerow({**cells, **_rank_cells(res, ranks)})
    return buffer.getvalue()


def _rank_cells(res: PairedRun, ranks: dict) -> dict:
    """The row's setting's rank in its tag and overall, its c, and the run's own mean drafts per round."""
    own, overall = ranks.get((res.tag, res.source, res.method, res.k)), ranks.get((ALL, res.source, res.method, res.k))
    return {
        "tag_rank": own["rank"] if own else None,
        "overall_rank": overall["rank"] if overall else None,
        "c": (overall or own or {}).get("c"),
        "drafts_per_round": stats.tally([res.run]).drafts_per_round,
        "c_note": (overall or own or {}).get("c_note") or None,
    }


def _setting_cells(res: PairedRun, environment: dict) -> dict:
    settings = res.run.settings
    sampling = settings.get("sampling", {})
    return {
        "temperature": sampling.get("temperature"),
        "top_k": sampling.get("top_k"),
        "top_p": sampling.get("top_p"),
        "seed": settings.get("seed"),
        "max_new_tokens": settings.get("max_new_tokens"),
        "draft_vocab": settings.get("draft_vocab", 0),  # absent: the whole vocabulary (RunSettings.to_dict)
        "target": environment.get("target", environment.get("model")),
        "draft": environment.get("draft"),
        "device": environment.get("device"),
        "dtype": environment.get("dtype"),
    }


def _verdict_cells(res: PairedRun, verdict: dict | None) -> dict:
    if not verdict or not verdict.get("groups"):
        return {}
    by_tag = {group["tag"]: group for group in verdict["groups"]}
    group, overall = by_tag.get(res.tag, by_tag.get(ALL)), by_tag.get(ALL)
    low, high = (v if v is not None and math.isfinite(v) else None for v in group["speedup_ci"])  # none measured: empty
    return {
        "verdict": group["verdict"],
        "verdict_group": group["tag"],
        "verdict_method": group["method"],
        "verdict_k": group["k"],
        "verdict_speedup": group["speedup"],
        "verdict_ci_low": low,
        "verdict_ci_high": high,
        "verdict_failed": " and ".join(group["failed"]),
        "overall_verdict": overall["verdict"] if overall else None,
        "rule": verdict["rule"],
    }


def _finite(interval) -> list:
    """An interval as JSON holds it: a bound not measured (NaN) is null."""
    return [v if v is not None and math.isfinite(v) else None for v in interval]


def results_json(
    results: Sequence[PairedRun],
    settings: RunSettings,
    meta: dict,
    costs: MeasuredCosts | None = None,
    seed: int = 0,
    verdict: dict | None = None,
    ranking: Sequence[dict] | None = None,
) -> str:
    """Everything: settings, one entry per run (with vLLM-shaped metrics), the measured costs, the summary, the go
    / no-go (verdict: the document recommend.verdict_document makes; version 2 added it) and the ranking of every
    setting per tag (measure/ranking.py's rows, best first)."""
    doc = {
        "format": "specviz.workload",
        "version": 2,
        "settings": {**replace(settings, stop_at_eos=False).to_dict(), **meta},  # every workload run ignores EOS
        "runs": [res.to_dict() for res in results],
        "costs": costs.to_dict() if costs else None,
        "summary": summarize(results, costs, seed),
        "verdict": verdict,
        "ranking": [{**row, "speedup_ci": _finite(row["speedup_ci"])} for row in ranking or ()],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)


INTERVAL_COVERS = (  # said under every workload interval the page shows
    "The interval covers these prompts and the clock noise within this one measurement, not a change in this "
    "machine's speed between measurements: measure the same again and the page compares the two."
)


def measurement_figures(summary: Sequence[dict]) -> dict[tuple[str, str, int], tuple[float, float, float]]:
    """(source, method, K) -> (mean speedup, interval low, high) over all prompts: what compare_measurements compares
    (a setting without a measured speedup is left out)."""
    return {
        (row["source"], row["method"], row["k"]): (row["speedup"], *row["speedup_ci"])
        for row in summary
        if row["tag"] == ALL and row["speedup"] is not None and not math.isnan(row["speedup_ci"][0])
    }


def compare_measurements(
    earlier: dict, now: dict, names: dict[tuple[str, str, int], str] | None = None
) -> list[tuple[bool, str]]:
    """Two measurements of the same prompts and settings, minutes apart: per setting both measured, (agree, sentence).

    Each is {"figures": measurement_figures(...), "when": seconds, "load": load average or None}. A workload's interval
    covers its prompts and the clock noise within one measurement (stats.speedup_interval); a machine whose speed moved
    between two measurements (other work, clocks, caches) can put them apart by more than either interval: then the
    sentence says so, and gives the range both together span."""
    out = []
    minutes = max(0.0, (now["when"] - earlier["when"]) / 60)
    ago = "under a minute" if minutes < 1 else f"{minutes:.0f} min"
    load = ""
    if earlier.get("load") is not None and now.get("load") is not None:
        load = f" (load average {earlier['load']:.1f} then, {now['load']:.1f} now)"
    for key, (mean, low, high) in now["figures"].items():
        if key not in earlier["figures"]:
            continue
        mean0, low0, high0 = earlier["figures"][key]
        name = (names or {}).get(key) or f"{methods.label(key[1])}, K = {key[2]}"
        both = f"{name}: {mean:.2f}x ({low:.2f}–{high:.2f}) now, {mean0:.2f}x ({low0:.2f}–{high0:.2f}) {ago} before"
        if low <= high0 and low0 <= high:
            out.append((True, f"Measured again, and the two agree: {both}; their intervals overlap."))
            continue
        out.append(
            (
                False,
                f"Measured again, and the two disagree: {both}, on the same prompts and settings. Their intervals "
                "exclude each other: each covers the prompts and the clock noise within its own measurement, not a "
                f"change in this machine's speed between measurements{load}. Taken together they span "
                f"{min(low, low0):.2f}x–{max(high, high0):.2f}x: judge on that, or measure again on a quieter machine.",
            )
        )
    return out
