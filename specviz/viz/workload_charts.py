"""Charts and tables of a measured workload (pure: paired run records in, frames and Altair charts out).

Every figure comes from core/stats.py; the predictions are computed by the caller (measure/predict.py) and passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import altair as alt
import pandas as pd

from specviz import methods
from specviz.core import stats
from specviz.core.record import TABLE, RunRecord, result_columns
from specviz.viz.layout import band_height
from specviz.viz.text import literal, user_message

# A multiselect's chips wrap onto more lines instead of scrolling on one: with two methods chosen, Streamlit scrolled
# the first one out of its box, out of sight. Streamlit's own test id, on the workload page only.
CHIPS_WRAP_CSS = (
    "<style>[data-testid='stMultiSelectTagsContainer'], [data-testid='stMultiSelectTagsContainer'] > "
    "span[role='group'] {flex-wrap: wrap !important; overflow: visible !important; height: auto !important; "
    "min-width: 0 !important; flex-shrink: 1 !important;} "
    "div[role='group']:has(> [data-testid='stMultiSelectTagsContainer']) {height: auto !important; max-height: none "
    "!important;}</style>"
)


class Paired(Protocol):
    """A run and the plain run of the same prompt (measure.workload.PairedRun)."""

    run: RunRecord
    plain_tokens_per_s: float
    speedup: float
    speedups: tuple[float, ...]  # per timing repeat


def setting_label(method: str, k: int) -> str:
    """'draft model, K = 4': a setting as every chart, table and sentence of the workload names it (the registry's
    label, as measure/ranking.py setting_words writes it), never the method's key ("draft", "ngram")."""
    return f"{methods.label(method)}, K = {k}"


def _label(rec: Paired | RunRecord) -> str:
    return setting_label(rec.method, rec.k)


def setting_groups(records: Sequence[Paired]) -> dict[str, list[Paired]]:
    """ "draft model, K = 4" -> its results, in first-seen order."""
    groups: dict[str, list[Paired]] = {}
    for rec in records:
        groups.setdefault(_label(rec), []).append(rec)
    return groups


SPEEDUP_COLUMNS = (
    "plain_tokens_per_s",
    "speedup",
    "speedup_low",
    "speedup_high",
    "speedup 95% CI",
    "predicted_speedup",
)


def _without_speedup(frame: pd.DataFrame, speedup: bool) -> pd.DataFrame:
    """The frame, less its speedup columns when no speedup was measured (a server: no plain baseline)."""
    return frame if speedup else frame.drop(columns=[c for c in SPEEDUP_COLUMNS if c in frame.columns])


def _labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with each method named by the registry's label, as the verdicts and the ranking name it (the CSV and
    the JSON keep the key: "draft", "ngram")."""
    if "method" in frame.columns:
        frame = frame.assign(method=[methods.label(m) for m in frame["method"]])
    return frame


def per_prompt_frame(records: Sequence[Paired], speedup: bool = True) -> pd.DataFrame:
    columns = [*(c for c in result_columns(TABLE) if c != "prompt"), "prompt"]  # the long text last
    frame = pd.DataFrame([{c: getattr(r, c) for c in columns} for r in records], columns=columns)
    frame["prompt"] = [user_message(p) for p in frame["prompt"]]  # the user's message, not the template's system turn
    return _without_speedup(_labelled(frame), speedup)


def summary_frame(summary: list[dict], speedup: bool = True) -> pd.DataFrame:
    rows = [
        {
            **{k: v for k, v in row.items() if not k.endswith("_ci")},
            "alpha 95% CI": "{:.2f}–{:.2f}".format(*row["alpha_ci"]),
            "speedup 95% CI": "{:.2f}–{:.2f}".format(*row["speedup_ci"]),
        }
        for row in summary
    ]
    return _without_speedup(_labelled(pd.DataFrame(rows)), speedup)


STRIP_PROMPT_CHARS = 28  # of a prompt in its strip's label, which also names the method and K


def strip_label(number: int, rec: Paired | RunRecord) -> str:
    """A strip's label: the prompt's number and start, and the method and K that ran it (one strip per both)."""
    text = " ".join(user_message(rec.prompt).split())
    text = text if len(text) <= STRIP_PROMPT_CHARS else text[: STRIP_PROMPT_CHARS - 1] + "…"
    return f"{number}. {text} · {_label(rec)}"


def step_strip_frame(records: Sequence[Paired | RunRecord]) -> pd.DataFrame:
    """One row per verify step of each run that reports its steps: which run (its prompt, numbered in first-seen
    order, with the method and K: one strip per prompt per setting, a prompt's strips together), the step's number
    among the run's target passes (1 = the first pass), drafted and accepted counts. Passes that drafted nothing
    (vLLM's prefill, an n-gram miss) are left out; runs with totals only (a server's counters) have no rows."""
    numbers = {prompt: i for i, prompt in enumerate(dict.fromkeys(rec.prompt for rec in records), 1)}
    settings = {label: i for i, label in enumerate(dict.fromkeys(_label(rec) for rec in records))}
    ordered = sorted(records, key=lambda rec: (numbers[rec.prompt], settings[_label(rec)]))
    rows = []
    for rec in ordered:
        if rec.per_round_drafted is None or rec.per_round_accepted is None:
            continue
        label = strip_label(numbers[rec.prompt], rec)
        for step, (drafted, accepted) in enumerate(zip(rec.per_round_drafted, rec.per_round_accepted), 1):
            if drafted:
                rows.append(
                    {
                        "run": label,
                        "step": step,
                        "drafted": drafted,
                        "accepted": accepted,
                        "share": accepted / drafted,
                        "setting": _label(rec),
                        "source": rec.source,
                    }
                )
    return pd.DataFrame(rows, columns=["run", "step", "drafted", "accepted", "share", "setting", "source"])


def step_strip_chart(records: Sequence[Paired | RunRecord]) -> alt.Chart:
    """Each run's accepted drafts step by step, one strip per run: a cell per verify step, darker = more accepted."""
    frame = step_strip_frame(records)
    k_max = int(frame["drafted"].max()) if len(frame) else 1
    return (
        alt.Chart(frame, title="Accepted drafts at each verify step, one strip per prompt and method")
        .mark_rect(stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("step:O", title="target pass (step)", axis=alt.Axis(labelAngle=0, labelOverlap=True)),
            y=alt.Y("run:N", title=None, sort=None, axis=alt.Axis(labelOverlap=False, labelLimit=0)),
            color=alt.Color(
                "accepted:Q",
                title="drafts accepted",
                scale=alt.Scale(domain=[0, k_max], scheme="greens"),
                legend=alt.Legend(tickCount=k_max + 1, format="d"),
            ),
            tooltip=[
                "run:N",
                "setting:N",
                "step:O",
                "accepted:Q",
                "drafted:Q",
                alt.Tooltip("share:Q", format=".0%", title="accepted / drafted"),
            ],
        )
        .properties(height=alt.Step(20))
    )


def per_position_frame(records: Sequence[Paired]) -> pd.DataFrame:
    """Per method/K and position: measured P(accept | reached) and the analytic mean sum min(p, q)."""
    rows = []
    for label, group in setting_groups(records).items():
        for row in stats.per_position([rec.run for rec in group]):
            if row["reached"]:
                common = {"setting": label, "position": row["position"], "reached": row["reached"]}
                rows.append({**common, "kind": "measured P(accept | reached)", "rate": row["rate"]})
                if row["overlap"] is not None:
                    rows.append({**common, "kind": "analytic Σ min(p, q)", "rate": row["overlap"]})
    return pd.DataFrame(rows, columns=["setting", "position", "kind", "rate", "reached"])


def per_position_chart(records: Sequence[Paired]) -> alt.Chart:
    return (
        alt.Chart(per_position_frame(records), title="Acceptance by draft position: measured vs analytic")
        .mark_line(point=True)
        .encode(
            x=alt.X("position:O", title="draft position i"),
            y=alt.Y("rate:Q", title="acceptance rate", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("setting:N", title="method"),
            strokeDash=alt.StrokeDash("kind:N", title=None),
            tooltip=["setting:N", "position:O", "kind:N", alt.Tooltip("rate:Q", format=".3f"), "reached:Q"],
        )
        .properties(height=260)
    )


def acceptance_length_frame(records: Sequence[Paired]) -> pd.DataFrame:
    rows = []
    for label, group in setting_groups(records).items():
        for accepted, n in enumerate(stats.accepted_length_histogram([rec.run for rec in group])):
            rows.append({"setting": label, "accepted": accepted, "rounds": n})
    return pd.DataFrame(rows, columns=["setting", "accepted", "rounds"])


def acceptance_length_chart(records: Sequence[Paired]) -> alt.Chart:
    return (
        alt.Chart(acceptance_length_frame(records), title="Accepted drafts per round")
        .mark_bar()
        .encode(
            x=alt.X("accepted:O", title="drafts accepted in a round"),
            y=alt.Y("rounds:Q", title="rounds"),
            color=alt.Color("setting:N", title="method"),
            xOffset="setting:N",
            tooltip=["setting:N", "accepted:O", "rounds:Q"],
        )
        .properties(height=240)
    )


def class_frame(records: Sequence[Paired]) -> pd.DataFrame:
    pooled: dict[tuple[str, str], list[int]] = {}
    for rec in records:
        for cls, (judged, accepted) in rec.by_class.items():
            acc = pooled.setdefault((_label(rec), cls), [0, 0])
            acc[0] += judged
            acc[1] += accepted
    rows = [{"setting": s, "class": c, "judged": j, "rate": a / j} for (s, c), (j, a) in sorted(pooled.items()) if j]
    return pd.DataFrame(rows, columns=["setting", "class", "judged", "rate"])


BOTTOM_LEGEND = alt.Legend(orient="bottom", columns=1, labelLimit=0)
LEGEND_ROOM = 60  # px under the plot for a legend of a few methods


def class_chart(records: Sequence[Paired]) -> alt.Chart:
    """Acceptance rate per token class, a bar per method in each class's row; the legend under the plot, so that a
    half column's width stays the bars' (methods' long names beside it left them none at 1280 px)."""
    frame = class_frame(records)
    rows = max(1, len(frame))
    return (
        alt.Chart(frame, title="Acceptance by token class")
        .mark_bar()
        .encode(
            y=alt.Y("class:N", title=None, axis=alt.Axis(labelLimit=0)),
            x=alt.X("rate:Q", title="acceptance rate", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("setting:N", title="method", legend=BOTTOM_LEGEND),
            yOffset="setting:N",
            tooltip=["setting:N", "class:N", alt.Tooltip("rate:Q", format=".3f"), "judged:Q"],
        )
        .properties(height=band_height(rows) + LEGEND_ROOM)
    )


def speedup_frame(records: Sequence[Paired], predictions: dict, seed: int = 0) -> pd.DataFrame:
    """Measured mean speedup per setting, with the interval the verdict quotes (stats.speedup_interval over its
    prompts and repeats, same seed), next to its prediction (setting label -> Prediction or None)."""
    rows = []
    for label, group in setting_groups(records).items():
        measured = sum(r.speedup for r in group) / len(group)
        low, high = stats.speedup_interval([r.speedups for r in group], seed=seed)
        prediction = predictions.get(label)
        costs = (
            {"c": prediction.c, "verify_cost": prediction.verify_cost}
            if prediction
            else {"c": None, "verify_cost": None}
        )
        rows.append({"setting": label, "kind": "measured", "speedup": measured, "low": low, "high": high, **costs})
        if prediction:
            rows.append(
                {"setting": label, "kind": "predicted from measured τ, c, v", "speedup": prediction.speedup, **costs}
            )
    return pd.DataFrame(rows, columns=["setting", "kind", "speedup", "low", "high", "c", "verify_cost"])


def speedup_chart(records: Sequence[Paired], predictions: dict, seed: int = 0) -> alt.LayerChart:
    """Bars of the measured and predicted speedups, a row per method (its long name along y, where it has room: along
    x, turned on end, the names took the whole plot's height), the 95% interval the verdict quotes on each measured
    bar, and 1× dashed."""
    frame = speedup_frame(records, predictions, seed)
    base = alt.Chart(frame, title="Speedup over plain: measured (95% CI) vs predicted")
    bars = base.mark_bar().encode(
        y=alt.Y("setting:N", title=None, axis=alt.Axis(labelLimit=0)),
        x=alt.X("speedup:Q", title="speedup (×)"),
        color=alt.Color("kind:N", title=None, legend=BOTTOM_LEGEND),
        yOffset="kind:N",
        tooltip=[
            "setting:N",
            "kind:N",
            alt.Tooltip("speedup:Q", format=".2f"),
            alt.Tooltip("low:Q", format=".2f", title="95% interval from"),
            alt.Tooltip("high:Q", format=".2f", title="95% interval to"),
            alt.Tooltip("c:Q", format=".3f"),
            alt.Tooltip("verify_cost:Q", format=".2f"),
        ],
    )
    intervals = (
        base.transform_filter("isValid(datum.low)")
        .mark_errorbar(ticks=True, color="black")
        .encode(y="setting:N", yOffset="kind:N", x=alt.X("low:Q", title="speedup (×)"), x2="high:Q")
    )
    even = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4], color="black").encode(x="x:Q")
    return (bars + intervals + even).properties(height=band_height(max(1, len(frame))) + LEGEND_ROOM)


def heatmap_html(rec: Paired | RunRecord) -> str:
    """The output with each accepted draft shaded by its acceptance probability min(1, p/q); grey: tokens no accept
    test judged (corrections, bonus and plain tokens)."""
    spans = [f'<span style="color:#757575">{literal(rec.prompt)}</span>']
    for text, prob, origin in rec.tokens:
        if prob is None:
            style, tip = "background:#eeeeee", origin
        else:
            hue = int(120 * prob)  # 0 = red (unlikely to be accepted) ... 120 = green (certain)
            style, tip = f"background:hsl({hue},70%,80%)", f"{origin} · min(1, p/q) = {prob:.3f}"
        spans.append(f'<span style="{style}" title="{literal(tip)}">{literal(text)}</span>')
    legend = (
        '<div style="font-size:.8em">shade: <span style="background:hsl(0,70%,80%)">low</span> → '
        '<span style="background:hsl(120,70%,80%)">high</span> acceptance probability min(1, p/q) of each accepted '
        "draft; grey: a correction (drawn from the residual), bonus or plain token, which no accept test judged</div>"
    )
    return '<div style="white-space:pre-wrap;font-family:monospace">' + "".join(spans) + "</div>" + legend


def agreement_row(run) -> dict:
    """One prompt decoded by both engines (remote/agreement.py EngineRun) as a row of the page's table; `steps` and the
    `_` keys are kept for the step table and the verdict, not shown as columns."""
    found = run.found
    before = found.first_same or 0
    return {
        "prompt": run.prompt,
        "text equal": found.text_equal,
        "first differing token": found.first_divergence,
        "vLLM steps compared": found.steps,
        "same steps": found.same,
        "first same step": found.first_same,
        "agree from there": f"{found.same_after_first}/{found.steps - before}" if found.first_same is not None else "–",
        "specviz tokens/s": run.local.tokens_per_s,
        "vLLM tokens/s": run.served.tokens_per_s,
        "steps": run.steps,
        "_before": before,
        "_after": (found.same_after_first, found.steps - before),
    }


def agreement_frame(rows: Sequence[dict]) -> pd.DataFrame:
    """The engines' agreement per prompt: agreement_row's columns, less the steps and the `_` keys."""
    return pd.DataFrame([{k: v for k, v in r.items() if k != "steps" and not k.startswith("_")} for r in rows])


def agreement_steps_frame(row: dict) -> pd.DataFrame:
    """One prompt's steps on both engines, side by side (remote/agreement.py side_by_side)."""
    return pd.DataFrame(row["steps"])


def agreement_verdict(rows: Sequence[dict]) -> tuple[bool, str]:
    """(all agree, the sentence saying how far): texts equal, and steps the same once the engines line up."""
    equal = sum(r["text equal"] for r in rows)
    agree, after = (sum(r["_after"][i] for r in rows) for i in (0, 1))
    before = sum(r["_before"] for r in rows)
    sentence = (
        f"{equal}/{len(rows)} texts equal. From the first verify step where both engines start at the same "
        f"token, {agree}/{after} steps are the same step (same drafts, same accepted count); {before} vLLM "
        "step(s) came before that."
    )
    return equal == len(rows) and agree == after, sentence


RANKING_COLUMNS = ("rank", "tag", "setting", "speedup", "speedup 95% CI", "alpha", "tau", "c", "drafts per round")


def ranking_frame(rows: Sequence[dict], speedup: bool = True) -> pd.DataFrame:
    """The whole family ranked per tag (measure/ranking.py's rows), best first: one row per setting, the best of each
    tag marked; without a measured speedup (a server) its columns are left out."""
    out = [
        {
            "rank": ("★ " if row["best"] else "") + str(row["rank"]),
            "tag": row["tag"],
            "setting": row["setting"],
            "speedup": row["speedup"],
            "speedup 95% CI": _interval(row["speedup_ci"]) if row["speedup"] is not None else "–",
            "alpha": row["alpha"],
            "tau": row["tau"],
            "c": c_cell(row["c"], row.get("c_note", "")),
            "drafts per round": row["drafts_per_round"],
        }
        for row in rows
    ]
    return _without_speedup(pd.DataFrame(out, columns=list(RANKING_COLUMNS)), speedup)


def c_cell(c: float | None, note: str = "") -> str:
    """The ranking's c as its cell reads: '0' for a lookup (as the caption says), '0.215', or why there is none
    ('dropped: busy timings', 'not timed', 'not measured'): never 'None'."""
    if c is not None:
        return "0" if c == 0 else f"{c:.3f}"
    if note.startswith("dropped"):  # measure/ranking.py C_DROPPED: the step costs cannot be true
        return "dropped: busy timings"
    return note or "–"


def _interval(bounds) -> str:
    low, high = bounds
    return f"{low:.2f}–{high:.2f}"


def ranking_chart(rows: Sequence[dict], tag: str) -> alt.LayerChart:
    """One tag's settings as bars of measured speedup, best on top, each with its 95% interval; the dashed line is
    plain decoding (1×). Its height grows with its rows (layout.band_height): Streamlit keeps a chart's total height,
    title and axis included, so a fixed one squeezed every bar onto one row and printed the labels over each other."""
    chosen = [r for r in rows if r["tag"] == tag and r["speedup"] is not None]
    frame = pd.DataFrame(
        [
            {
                "setting": r["setting"],
                "method": methods.label(r["method"]),
                "speedup": r["speedup"],
                "low": r["speedup_ci"][0],
                "high": r["speedup_ci"][1],
                "alpha": r["alpha"],
                "tau": r["tau"],
                "c": r["c"],
                "drafts per round": r["drafts_per_round"],
            }
            for r in chosen
        ],
        columns=["setting", "method", "speedup", "low", "high", "alpha", "tau", "c", "drafts per round"],
    )
    order = list(frame["setting"])  # best first: the ranking's order
    scope = "all prompts" if tag == "all" else f"prompts tagged {tag!r}"
    base = alt.Chart(frame, title=f"The family ranked on {scope}: measured speedup over plain (95% CI)")
    y = alt.Y("setting:N", sort=order, title=None, axis=alt.Axis(labelOverlap=False))
    bars = base.mark_bar().encode(
        x=alt.X("speedup:Q", title="speedup over plain decoding (×)"),
        y=y,
        color=alt.Color("method:N", title="method"),
        tooltip=[
            "setting:N",
            alt.Tooltip("speedup:Q", format=".2f"),
            alt.Tooltip("low:Q", format=".2f", title="95% interval from"),
            alt.Tooltip("high:Q", format=".2f", title="95% interval to"),
            alt.Tooltip("alpha:Q", format=".2f", title="α"),
            alt.Tooltip("tau:Q", format=".2f", title="τ (tokens per target pass)"),
            alt.Tooltip("c:Q", format=".3f", title="c (draft step / target step)"),
            alt.Tooltip("drafts per round:Q", format=".2f"),
        ],
    )
    intervals = base.mark_errorbar(ticks=True, color="black").encode(
        x=alt.X("low:Q", title="speedup over plain decoding (×)"), x2="high:Q", y=y
    )
    even = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4], color="black").encode(x="x:Q")
    return (bars + intervals + even).properties(height=band_height(len(frame)))
