"""Your workload: measure acceptance and speedup on your own prompts, per prompt, per position and per tag."""

import streamlit as st

from specviz.ui import render
from specviz.ui import workload_sections as sections
from specviz.ui.controls import sidebar_controls
from specviz.ui.limits import Limits
from specviz.ui.render import apply_lecture_mode, page_header
from specviz.ui.workload_results import show_results
from specviz.ui.workload_sections import LESSON
from specviz.viz import workload_charts as charts

page_header("Your workload", LESSON["teaching_point"])
controls = sidebar_controls("workload")
apply_lecture_mode(controls.lecture)
render.show_html(charts.CHIPS_WRAP_CSS)  # every chosen method's chip in sight: Streamlit scrolls them on one line
LIMITS = Limits.from_env()

# ---- the prompts and where they run ----------------------------------------------------------------------------------
workload = sections.show_workload_source(controls, LIMITS)
run_limit = sections.show_run_limit(workload, LIMITS.max_prompts)
plan = sections.show_plan(controls, LIMITS)
sections.show_measure(workload, controls.settings, plan, run_limit, LIMITS)
sections.show_two_engines(workload, controls.settings, plan, LIMITS)

# ---- the results -----------------------------------------------------------------------------------------------------
records = st.session_state["workload_records"]
if not records:  # st.stop, as before the split: a stopped run keeps the widget states of widgets it did not draw
    sections.show_under_load(workload, controls.settings, plan, run_limit, LIMITS)
    st.stop()
show_results(records, controls.settings, LIMITS)
sections.show_under_load(workload, controls.settings, plan, run_limit, LIMITS)
