"""The race: the same prompt through plain decoding, specviz's speculative lanes and Hugging Face's, timed live."""

import streamlit as st

from specviz.ui import race as sections
from specviz.ui.controls import prompt_box, sidebar_controls
from specviz.ui.race import LESSON
from specviz.ui.render import apply_lecture_mode, page_header

page_header("The race", LESSON["teaching_point"])
controls = sidebar_controls("race")
apply_lecture_mode(controls.lecture)
prompt = prompt_box(controls.target, key="race_prompt")
entry = sections.show_lane_picker(controls)

if st.button("Start the race", type="primary", disabled=controls.settings is None):
    sections.start_race(controls, prompt, entry)
else:
    sections.resume_race()  # this page's race, if a rerun interrupted its wait (the K sweep pressed meanwhile)
if "race" in st.session_state:
    sections.show_race(*st.session_state["race"])

st.subheader("K sweep")
sections.show_sweep_section(controls, prompt)

st.subheader("Measured with the bench on this project's machines")
sections.show_recorded_benches()
