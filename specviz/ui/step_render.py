"""The round page's drawing of a step: a viz.step_view.StepView's blocks, with Streamlit, in their rows."""

from __future__ import annotations

import streamlit as st

from specviz.ui.render import show_html
from specviz.viz import step_view as sv


def show_section(view: sv.StepView, section: str, where=st) -> None:
    """Every row of one section of the view (its text, its phase panels or its totals), in order."""
    for row in sv.rows(view.blocks, section):
        if len(row.columns) == 1:
            for block in row.columns[0].blocks:
                show_block(block, where)
            continue
        places = where.columns([column.width for column in row.columns])
        for place, column in zip(places, row.columns):
            for block in column.blocks:
                show_block(block, place)


def show_block(block: sv.Block, where=st) -> None:
    """One block as Streamlit draws it (charts come styled from the view: drawn as they are, full width)."""
    kind, content = block.kind, block.content
    if kind == sv.MARKDOWN:
        where.markdown(content)
    elif kind == sv.HTML:
        show_html(content, where)
    elif kind == sv.CAPTION:
        where.caption(content)
    elif kind == sv.HEADING:
        where.subheader(content)
    elif kind == sv.CHART:
        where.altair_chart(content, width="stretch")
    elif kind == sv.METRICS:
        for column, (label, value, tip) in zip(where.columns(len(content)), content):
            column.metric(label, value, help=tip or None)
    elif kind == sv.DIVIDER:
        where.divider()
    else:
        raise ValueError(f"unknown block kind {kind!r}: one of {', '.join(sv.KINDS)}")
