"""The workload page's Spec-Bench part: the preset's sampling controls (rows per category, categories) and, after a
run, the measured ranking per category beside Spec-Bench's published table, the method × category charts, the
agreement of the profiles and the prefill apart from decoding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import streamlit as st

from specviz.errors import SpecvizError
from specviz.measure.prompts import Workload
from specviz.measure.spec_bench import (
    CATEGORIES,
    DEFAULT_PER_CATEGORY,
    prefill_split,
    profile_agreement,
    published_tables,
    sample_per_category,
    select_categories,
)
from specviz.ui import render
from specviz.viz import category_charts as charts
from specviz.viz.text import literal

PRESET = "spec-bench"  # assets/workloads/spec-bench.jsonl
LEFT_OUT = (
    "Bundled: MT-bench (80 two-turn questions), question answering, math reasoning and retrieval-augmented generation "
    "(80 each) of Spec-Bench's 480 rows. Left out for their sources' terms: translation (WMT14 news sentences, given "
    "for research use only) and summarization (CNN / Daily Mail articles, copyright of their publishers); measure "
    "them from Spec-Bench's own file with `python -m specviz measure --workload question.jsonl` "
    "(assets/workloads/README.md)."
)


def sample_label(name: str) -> str:
    """A sample workload's name as the page lists it ('Spec-Bench' for the preset)."""
    return "Spec-Bench" if name == PRESET else name


def sample_controls(workload: Workload | None, seed: int) -> Workload | None:
    """With Spec-Bench rows chosen: rows per category and the categories to keep; only the Spec-Bench rows are sampled,
    the other sample workloads' rows stay as they are."""
    if workload is None or not any(row.row_id for row in workload.rows):
        return workload
    bench = [row for row in workload.rows if row.row_id]
    others = [row for row in workload.rows if not row.row_id]
    left, right = st.columns([1, 2])
    per_category = int(
        left.number_input(
            "Spec-Bench rows per category",
            0,
            80,
            value=DEFAULT_PER_CATEGORY,
            key="spec_bench_per_category",
            help=f"Drawn by the sidebar's seed; 0 = every row. {DEFAULT_PER_CATEGORY} per category is about a "
            "minute per method on the bundled pair (docs/spec-bench.md).",
        )
    )
    present = [c for c in CATEGORIES if any(row.tag == c for row in bench)]
    chosen = right.multiselect("Spec-Bench categories", present, default=present, key="spec_bench_categories")
    st.caption(LEFT_OUT)
    if not chosen:
        st.warning("Choose at least one Spec-Bench category.")
        return replace(workload, rows=tuple(others)) if others else None
    try:
        kept = sample_per_category(select_categories(bench, chosen), per_category, seed)
    except SpecvizError as exc:
        st.error(literal(str(exc)))
        return None
    return replace(workload, rows=tuple(others + kept))


def measured_on_spec_bench(records: Sequence) -> bool:
    """Whether a finished workload's runs are Spec-Bench's (every tag one of its categories)."""
    tags = {res.run.tag for res in records}
    return bool(tags) and tags <= set(CATEGORIES)


def results_section(ranked: Sequence[dict], records: Sequence) -> None:
    """The measured ranking per category beside the published table (model, GPU, date named), the flip charts, the ρ of
    each shared method's category profile and the prefill apart from decoding."""
    if not measured_on_spec_bench(records):
        return
    tables = published_tables()
    st.subheader("Spec-Bench: per category, beside the published table")
    pick = st.selectbox(
        "Published table", range(len(tables)), format_func=lambda i: tables[i].title, key="spec_bench_table"
    )
    table = tables[pick]
    st.markdown("**Measured here** (best K of each method; ★ the category's best)")
    render.show_table(st, charts.measured_frame(ranked))
    st.markdown(f"**Published**: {literal(table.model)}, {literal(table.gpu)}, {literal(table.date)}")
    render.show_table(st, charts.published_frame(table))
    st.caption(f"Source: {literal(table.source)} (Apache-2.0).")
    for chart in charts.flip_charts(ranked, table):
        render.draw(st, chart)
    st.caption(
        "Absolute speedups do not carry from a 7B model on a GPU to a small model on a CPU; what can carry is the "
        "order of the methods within a category and where each method does best and worst. Spearman's ρ compares a "
        "method's measured and published speedups across the categories both have (+1: the same order of categories)."
    )
    profile = profile_agreement(ranked, table)
    if profile:
        render.show_table(st, charts.agreement_frame(profile))
    else:
        st.caption("No measured method is in the published table (it has no suffix decoding and no early exit).")
    st.markdown(
        "**Prefill apart from decoding** (a 3,000-character prompt costs a real prefill): the seconds before round 1 "
        "hold the prompt's prefill and the drafter's set-up (a head reading the prompt's features, a suffix tree)"
    )
    render.show_table(st, charts.prefill_frame(prefill_split(records)))
