"""The calculator's memory-bound lesson: v(K) for K = 1..16 on both targets, from the recorded bench file."""

from __future__ import annotations

import json

import streamlit as st

from specviz.engine.loading.models import ASSETS
from specviz.ui.render import draw
from specviz.viz.theory_charts import verify_curve_chart, verify_curve_words

RECORDED = ASSETS / "bench" / "verify-curve-cpu-float32.json"  # python -m specviz bench --verify-curve --json ...


def show_verify_curve() -> None:
    """The chart of both targets' measured v(K), its sentence, and where and when it was measured."""
    if not RECORDED.is_file():
        st.info(f"No v(K) curve recorded: `python -m specviz bench --verify-curve --json {RECORDED}` measures one.")
        return
    doc = json.loads(RECORDED.read_text(encoding="utf-8"))
    draw(st, verify_curve_chart(doc))
    st.caption(verify_curve_words(doc))
    env = doc["environment"]
    st.caption(
        f"Measured by `python -m specviz bench --verify-curve` on {env['cpu']} ({env['cores']} cores, "
        f"{env['cpu_capability']}, load {env['load_average']}): a shared, busy machine's figures are noisy."
    )
