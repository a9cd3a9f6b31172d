"""Exactness lab: the two-token example, the shop model with exact enumeration, bug switches, trees, the real pair."""

import streamlit as st

from specviz.ui import exactness as sections
from specviz.ui.controls import model_sidebar
from specviz.ui.exactness import LESSON
from specviz.ui.limits import Limits
from specviz.ui.render import apply_lecture_mode, page_header
from specviz.viz.lab_charts import switches_words

LIMITS = Limits.from_env()

page_header("Exactness lab", LESSON["teaching_point"])
apply_lecture_mode(model_sidebar())

# ---- the two-token example -------------------------------------------------------------------------------------------
st.header("1. Two tokens")
st.caption(LESSON["two_token"])
sections.show_two_tokens()

# ---- the shop model --------------------------------------------------------------------------------------------------
st.header("2. The shop model: Monte Carlo vs enumeration")
st.caption(LESSON["shop"])
shop = sections.show_shop_section()

# ---- bug switches ----------------------------------------------------------------------------------------------------
st.header("3. Bug switches")
st.caption(f"{switches_words()} {LESSON['bugs']}")
sections.show_bugs(shop)

# ---- trees -----------------------------------------------------------------------------------------------------------
st.header("4. Trees: several children per node")
st.caption(LESSON["tree"])
sections.show_trees(shop)

# ---- the real pair ---------------------------------------------------------------------------------------------------
st.header("5. On the loaded model pair")
st.caption(LESSON["real_pair"])
real_pair = sections.show_real_pair_inputs(LIMITS)
st.caption(LESSON["real_pair_k"])
if st.button("Sample the next two tokens, plain and speculative", key="real_run"):
    sections.sample_real_pair(real_pair)
if real := st.session_state.get("real_result"):
    sections.show_real_result(real)

st.subheader("Early exit: leave out the final norm")
st.caption(LESSON["early_exit"])
sections.show_early_exit(real_pair)

st.subheader("Greedy equivalence")
st.caption(LESSON["greedy"])
sections.show_greedy(LIMITS, real_pair.prompt)
