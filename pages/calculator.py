"""Speedup calculator: expected tokens, speedup (ideal and with the verify cost measured here), best K, break-even α."""

import streamlit as st

from specviz.core.theory import (
    MAX_K,
    TheoryInputs,
    analyse,
    best_k_table,
    cost_examples_table,
    expected_tokens_table,
    leviathan_table,
)
from specviz.errors import SpecvizError
from specviz.ui import calculator as sections
from specviz.ui.calculator import LESSON
from specviz.ui.controls import model_sidebar
from specviz.ui.render import apply_lecture_mode, draw, page_header, show_table
from specviz.ui.verify_curve import show_verify_curve
from specviz.viz import theory_charts as charts

page_header("Speedup calculator", LESSON["teaching_point"])
apply_lecture_mode(model_sidebar())

# ---- inputs ----------------------------------------------------------------------------------------------------------
st.caption(LESSON["inputs"])
given = sections.show_inputs()
alpha, k, c, verify = given.alpha, given.k, given.c, given.verify
try:
    result = analyse(TheoryInputs(alpha=alpha, k=k, c=c, c_hat=given.c_hat, verify=verify))
except SpecvizError as exc:
    st.error(str(exc))
    st.stop()

# ---- outputs ---------------------------------------------------------------------------------------------------------
sections.show_outputs(result, verify, k)
st.caption(LESSON["charts"])
chart_left, chart_right = st.columns(2)
frame = charts.speedup_frame(charts.curve_alphas(alpha), c, verify, chosen_alpha=alpha)
draw(chart_left, charts.speedup_vs_k_chart(frame, k))
draw(chart_right, charts.expected_tokens_chart(alpha, MAX_K, k))
draw(st, charts.heatmap_chart(charts.heatmap_frame(c, verify), alpha, k))

st.subheader("The memory-bound lesson: v(K) measured on both targets")
show_verify_curve()

# ---- tables ----------------------------------------------------------------------------------------------------------
st.subheader("Reference tables")
st.caption(LESSON["tables"])
t_left, t_right = st.columns(2)
show_table(t_left, leviathan_table(), key="table1")
show_table(t_right, best_k_table(), key="best_k_table")
st.caption(LESSON["seed_tables"])
s_left, s_right = st.columns([1, 2])
show_table(s_left, expected_tokens_table(4), key="k4_table")
show_table(s_right, cost_examples_table(), key="cost_table")

# ---- non-uniform acceptance ------------------------------------------------------------------------------------------
st.subheader("Non-uniform acceptance")
st.caption(LESSON["positional"])
sections.show_positional()

# ---- trees -----------------------------------------------------------------------------------------------------------
st.subheader("Trees: several guesses per position")
st.caption(LESSON["tree"])
sections.show_tree_section(c)

# ---- load and batching -----------------------------------------------------------------------------------------------
st.subheader("Under load: a roofline model")
st.caption(LESSON["load"])
sections.show_load_section(alpha, k)
