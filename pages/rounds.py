"""Round by round: watch the draft propose, the target verify in one pass, and the sampler accept, reject and commit.

Lecture-ready: the arrow keys, PageDown/PageUp (a presenter's clicker) and Space step through the phases without a
click first; every moment has a URL (?round=N&phase=...&pos=i, plus the settings and prompt or a bundled trace's
name) that the page keeps current, and two buttons copy it (as is, or as a presenter's link, present=1: lecture mode,
focus view, sidebar collapsed); bundled traces replay with no model; the focus view shows one phase, large, on the
first screen. The page says whenever the run shown is not what the sidebar or the machine would give (run_notes).

By default the run is stepped in the browser (ui.player: the run's player bundle drawn by the shared player, with no
Python per step; the player keeps the address on the moment and has the copy buttons); "Step in the browser" off, or
SPECVIZ_STEPPING=server, steps on the server with the Streamlit buttons and their key shortcuts (drawn only then).
"""

from dataclasses import replace

import streamlit as st

from specviz.ui.header import apply_lecture_mode, page_header

with st.container(key="rounds_header"):  # the player's focus view puts the phase above it (PLAYER_FOCUS_CSS)
    page_header(
        "Round by round",
        "Teaching point: each round costs K cheap draft steps and **one** target pass, and the accept/reject rule "
        "keeps exactly the target's distribution, so every accepted draft is a token the target did not have to "
        "generate alone.",
    )
with st.spinner("Loading specviz (the models and charts: a few seconds on a fresh server)…"):
    from specviz.core.trace_json import trace_to_json
    from specviz.ui import rounds as sections
    from specviz.ui import url
    from specviz.ui.controls import sidebar_controls
    from specviz.ui.limits import Limits, shown_meta
    from specviz.ui.player import BROWSER_STEPPING, browser_stepping_default
    from specviz.ui.render import bundled_traces
    from specviz.viz import rounds_policy
    from specviz.viz.text import literal
state = st.session_state
LIMITS = Limits.from_env()
state.setdefault(BROWSER_STEPPING, browser_stepping_default())

# ---- a shared link's settings and prompt reach the sidebar before it is drawn ------------------------------------
opened = url.opened_url()
pending_moment, link_notes = None, []
if opened:
    link_notes = url.apply_url(opened)
    pending_moment = opened.moment
    if opened.present:  # a presenter's link: full screen on the phase, the sidebar closed (it can be opened again)
        st.set_page_config(initial_sidebar_state="collapsed")

controls = sidebar_controls("rounds")
apply_lecture_mode(controls.lecture)
for note in link_notes:
    st.info(literal(note))
pending_moment = sections.follow_link(opened, pending_moment)

# ---- the trace controls, then the run shown ----------------------------------------------------------------------
if "focus_view" not in state:
    state["focus_view"] = controls.lecture
focus_when_drawn = bool(state.get("focus_view"))  # toggled inside the fragment: a full rerun moves these controls
stage = st.container()  # the focus view draws here, above the trace controls, so a projector shows the phase first
picked = sections.show_trace_controls(controls, focus_when_drawn)
sections.run_or_replay(controls, picked, pending_moment, LIMITS)
if "rounds_trace" not in state:
    st.stop()
SOURCE = state.get("rounds_source", "live")
shown = replace(state["rounds_trace"], meta=shown_meta(state["rounds_trace"].meta, LIMITS))  # no local paths in public
shown_json = trace_to_json(shown, indent=2)
bundled_info = rounds_policy.bundled_info(SOURCE, bundled_traces(), url.BUNDLED)
sections.show_downloads(picked, shown_json, bundled_info)
notes = picked.notes if picked.notes is not None else st.container(key="rounds_notes")
sections.describe_run(state["rounds_trace"], controls, picked, notes, SOURCE)

# ---- the stepping: in the browser (the player) or on the server (a fragment) ------------------------------------
with stage if state.get("focus_view") else st.container():
    if state[BROWSER_STEPPING]:
        st.html(sections.PLAYER_FOCUS_CSS)
        sections.in_page_player(shown_json, bundled_info, controls.lecture, SOURCE)
    else:
        sections.show_server_stepping(controls.lecture, SOURCE == "live", focus_when_drawn)
