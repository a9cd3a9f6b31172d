"""The sidebar's forward-pass choice (Advanced) reaches the run, whose trace names the forward each model ran."""

import streamlit as st
from app_helpers import open_page

from specviz.viz.run_notes import NEW_RUN


def test_the_forward_choice_reaches_the_run_and_its_trace(tiny_default, monkeypatch):
    monkeypatch.delenv("SPECVIZ_FORWARD", raising=False)  # auto's own meaning, whatever the suite runs on
    st.cache_data.clear()  # a run cached by an earlier test of this process may have run under SPECVIZ_FORWARD=hf
    at = open_page("pages/rounds.py")
    assert not at.exception
    (choice,) = [box for box in at.sidebar.selectbox if box.label == "Forward pass"]
    assert choice.value == "auto"
    assert at.session_state["rounds_trace"].meta["forward"] == {"target": "lean", "draft": "lean"}  # Llama: lean
    choice.set_value("hf").run()
    next(b for b in at.button if b.label == NEW_RUN).click().run()
    assert not at.exception and not at.error
    trace = at.session_state["rounds_trace"]
    assert trace.settings.forward == "hf"
    assert trace.meta["forward"] == {"target": "hf", "draft": "hf"}
