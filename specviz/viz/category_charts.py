"""Spec-Bench per category: the measured ranking and the published table as frames, and a method × category chart
that makes the flip visible (the best method changes with the category), measured above published, each full width.

Pure: frames and Altair charts from measure/ranking.py's rows and measure/spec_bench.py's Published tables. Missing
figures are shown as a dash, never as None.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from specviz import methods
from specviz.measure.spec_bench import CATEGORIES, PUBLISHED_TO_OURS, Published, category_rows
from specviz.viz.layout import band_height

DASH = "–"
CATEGORY_WORDS = {  # short enough that six fit side by side in a narrow column, each under its own column
    "mt_bench": "MT-bench",
    "translation": "translation",
    "summarization": "summary",
    "qa": "QA",
    "math_reasoning": "math",
    "rag": "RAG",
}


def _x(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}x"


def _num(value: float | None, digits: int = 2) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def measured_frame(ranked: Sequence[dict]) -> pd.DataFrame:
    """One row per category and setting, best first within each category (★ marks it), figures as text."""
    out = [
        {
            "category": row["tag"],
            "rank": ("★ " if row["best"] else "") + str(row["rank"]),
            "setting": row["setting"],
            "speedup": _x(row["speedup"]),
            "speedup 95% CI": DASH
            if row["speedup"] is None
            else f"{row['speedup_ci'][0]:.2f}–{row['speedup_ci'][1]:.2f}",
            "alpha": _num(row["alpha"]),
            "tau": _num(row["tau"]),
            "prompts": row["prompts"],
        }
        for row in category_rows(ranked)
    ]
    columns = ["category", "rank", "setting", "speedup", "speedup 95% CI", "alpha", "tau", "prompts"]
    return pd.DataFrame(out, columns=columns)


def published_frame(table: Published) -> pd.DataFrame:
    """Spec-Bench's table: one row per method, a column per category, then overall and τ; ★ marks each category's
    best; the specviz method that does the same thing, where there is one."""
    best = {c: max(table.speedups, key=lambda m: table.speedups[m].get(c, 0.0)) for c in CATEGORIES}
    out = []
    for name, figures in table.speedups.items():
        row = {
            "method": name,
            "specviz method": methods.label(PUBLISHED_TO_OURS[name]) if name in PUBLISHED_TO_OURS else DASH,
        }
        for category in CATEGORIES:
            row[category] = ("★ " if best[category] == name else "") + _x(figures.get(category))
        row["overall"] = _x(figures.get("overall"))
        row["tau"] = _num(table.tau.get(name))
        out.append(row)
    return pd.DataFrame(out, columns=["method", "specviz method", *CATEGORIES, "overall", "tau"])


def agreement_frame(profile: Sequence[dict]) -> pd.DataFrame:
    """Per shared method: Spearman ρ of its category profile, measured against published, and each side's best and
    worst category."""
    out = [
        {
            "method": methods.label(entry["method"]),
            "published as": entry["published_method"],
            "categories": len(entry["categories"]),
            "Spearman rho": _num(entry["rho"]),
            "best here": entry["measured_best"] or DASH,
            "best published": entry["published_best"] or DASH,
            "worst here": entry["measured_worst"] or DASH,
            "worst published": entry["published_worst"] or DASH,
        }
        for entry in profile
    ]
    columns = ["method", "published as", "categories", "Spearman rho"]
    return pd.DataFrame(out, columns=[*columns, "best here", "best published", "worst here", "worst published"])


def prefill_frame(split: Sequence[dict]) -> pd.DataFrame:
    """Prefill apart from decoding, per category and method: prompt length, seconds before the first round, decode
    tokens/s."""
    out = [
        {
            "category": row["category"],
            "method": methods.label(row["method"]),
            "runs": row["runs"],
            "prompt chars": f"{row['prompt_chars']:,.0f}",
            "before round 1 s": _num(row["prefill_s"], 3),
            "decode tokens/s": _num(row["decode_tokens_per_s"], 1),
        }
        for row in split
    ]
    return pd.DataFrame(
        out, columns=["category", "method", "runs", "prompt chars", "before round 1 s", "decode tokens/s"]
    )


def flip_cells(ranked: Sequence[dict], table: Published | None = None) -> pd.DataFrame:
    """The chart's cells: (panel, method, category, speedup, rank within the category, best?) for the best K of each
    measured method, and for the published table's methods when a table is given."""
    cells = []
    best_of: dict[tuple[str, str], float] = {}
    for row in category_rows(ranked):
        if row["speedup"] is not None:
            key = (methods.label(row["method"]), row["tag"])
            best_of[key] = max(best_of.get(key, 0.0), row["speedup"])
    cells += _ranked_cells("measured here", best_of)
    if table is not None:
        published = {(name, c): v[c] for name, v in table.speedups.items() for c in CATEGORIES if c in v}
        cells += _ranked_cells(f"published: {table.model}, {table.gpu.split(',')[0]}", published)
    return pd.DataFrame(cells, columns=["panel", "method", "category", "speedup", "rank", "best", "label"])


def _ranked_cells(panel: str, speedups: dict[tuple[str, str], float]) -> list[dict]:
    """Each (method, category) cell with its rank among the methods of its category (1 = fastest)."""
    out = []
    for category in CATEGORIES:
        here = sorted(((v, m) for (m, c), v in speedups.items() if c == category), key=lambda t: (-t[0], t[1]))
        for rank, (value, method) in enumerate(here, start=1):
            label = ("★ " if rank == 1 else "") + f"{value:.2f}x"
            out.append(
                {
                    "panel": panel,
                    "method": method,
                    "category": CATEGORY_WORDS[category],
                    "speedup": value,
                    "rank": rank,
                    "best": rank == 1,
                    "label": label,
                }
            )
    return out


def flip_charts(ranked: Sequence[dict], table: Published | None = None) -> list[alt.LayerChart]:
    """Method × category, coloured by rank within the category (darkest = fastest, ★ and the speedup written in each
    cell): the measured chart, then the published one (each drawn full width, one above the other), so a method that
    leads one category and trails another shows as a colour that flips along its row."""
    cells = flip_cells(ranked, table)
    return [_flip_chart(cells[cells["panel"] == panel], panel) for panel in dict.fromkeys(cells["panel"])]


def _flip_chart(frame: pd.DataFrame, panel: str) -> alt.LayerChart:
    """One panel of flip_charts."""
    order = [CATEGORY_WORDS[c] for c in CATEGORIES]
    base = alt.Chart(frame).encode(
        x=alt.X("category:N", sort=order, title="Spec-Bench category", axis=alt.Axis(labelAngle=0, labelOverlap=False)),
        y=alt.Y("method:N", title=None, sort=alt.EncodingSortField("speedup", op="mean", order="descending")),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("rank:O", title="rank in its category", scale=alt.Scale(scheme="blues", reverse=True)),
        tooltip=[
            "method:N",
            "category:N",
            alt.Tooltip("speedup:Q", format=".2f", title="speedup (×)"),
            alt.Tooltip("rank:O", title="rank in its category"),
        ],
    )
    text = base.mark_text(fontSize=12).encode(
        text="label:N", color=alt.condition("datum.rank <= 2", alt.value("white"), alt.value("black"))
    )
    title = f"Speedup by category, ranked within each ({panel})"
    return (rect + text).properties(title=title, height=band_height(max(1, frame["method"].nunique())))
