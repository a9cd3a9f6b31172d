"""Round by round: watch the draft propose, the target verify in one pass, and the sampler accept, reject and commit."""

import streamlit as st

from specviz.core.trace import Totals, Trace
from specviz.errors import SpecvizError
from specviz.ui.controls import active_sources, prompt_box, sidebar_controls
from specviz.ui.render import apply_lecture_mode, cached_run, page_header, show_text
from specviz.viz import round_charts as charts
from specviz.viz import steps
from specviz.viz.explain import (
    ALPHA_HELP,
    commit_sentence,
    draft_sentence,
    judge_sentence,
    resolve_sentence,
    verify_html,
)
from specviz.viz.text import proposals_html

page_header(
    "Round by round",
    "Teaching point: each round costs K cheap draft steps and **one** target pass, and the accept/reject rule keeps "
    "exactly the target's distribution, so every accepted draft is a token the target did not have to generate alone.",
)
controls = sidebar_controls()
apply_lecture_mode(controls.lecture)
state = st.session_state


def start(trace: Trace) -> None:
    state["rounds_trace"], state["rounds_cursor"], state["playing"] = trace, steps.Cursor(), False


with st.expander("Edit the prompt · replay a saved trace"):
    prompt = prompt_box(controls.target)
    uploaded = st.file_uploader("Replay a trace JSON (no model needed)", type=["json"], key="trace_upload")
clicked = st.button("▶ New run with these settings", type="primary")
if (clicked or "rounds_trace" not in state) and controls.settings:
    try:
        start(cached_run(active_sources(), prompt, controls.settings))
    except SpecvizError as exc:
        st.error(str(exc))
if uploaded is not None and state.get("replayed") != uploaded.file_id:
    state["replayed"] = uploaded.file_id
    try:
        start(Trace.from_json(uploaded.getvalue()))
        st.success(f"Replaying a trace of {len(state['rounds_trace'].rounds)} rounds from {uploaded.name}.")
    except SpecvizError as exc:
        st.error(f"{uploaded.name}: {exc}")

if "rounds_trace" not in state:
    st.stop()
st.download_button(
    "Download this trace (JSON)", state["rounds_trace"].to_json(indent=2), "specviz-trace.json", "application/json"
)


def advance(move) -> None:
    state["rounds_cursor"] = move(state["rounds_trace"], state["rounds_cursor"])


def set_playing(on: bool) -> None:
    state["playing"] = on


def show_step(trace: Trace, r, step: steps.Step) -> None:
    if step.phase != steps.JUDGE or step.position == 0:
        st.subheader(steps.PHASE_TITLES[step.phase])
    if step.phase == steps.DRAFT:
        st.write(draft_sentence(trace, r))
        st.markdown(proposals_html(r), unsafe_allow_html=True)
    elif step.phase == steps.VERIFY:
        st.markdown(verify_html(r), unsafe_allow_html=True)
    elif step.phase == steps.JUDGE:
        pos = r.positions[step.position]
        left, right = st.columns(2)
        left.altair_chart(charts.pq_chart(pos), width="stretch")
        right.altair_chart(charts.acceptance_chart(pos), width="stretch")
        right.markdown(judge_sentence(pos))
    elif step.phase == steps.RESOLVE:
        chart = charts.residual_chart(r) if r.extra.kind == "correction" else charts.bonus_chart(r)
        st.altair_chart(chart, width="stretch")
        st.markdown(resolve_sentence(r))
    else:
        st.altair_chart(charts.cache_chart(r, has_draft=trace.settings.method == "draft"), width="stretch")
        st.markdown(commit_sentence(r))


def show_stats(trace: Trace, done: int) -> None:
    rounds = trace.rounds[:done]
    totals = Totals.of(rounds, sum(r.draft_ms + r.verify_ms for r in rounds) / 1e3)
    cols = st.columns(4)
    cols[0].metric("Rounds committed", totals.rounds)
    cols[1].metric("α (accepted / judged)", "n/a" if totals.alpha is None else f"{totals.alpha:.2f}", help=ALPHA_HELP)
    cols[2].metric("τ (tokens per target pass)", f"{totals.tau:.2f}")
    cols[3].metric("Tokens/s (model time)", f"{totals.tokens_per_s:.0f}")
    if rounds:
        left, right = st.columns(2)
        left.altair_chart(charts.timing_chart(rounds), width="stretch")
        right.altair_chart(charts.accepted_length_chart(rounds, trace.settings.k), width="stretch")


speed = state.get("play_speed", 1.0)


playing_when_defined = bool(state.get("playing"))


@st.fragment(run_every=speed if playing_when_defined else None)
def playback() -> None:
    if bool(state.get("playing")) != playing_when_defined:
        st.rerun()  # play/pause changes the fragment's timer, which only a full rerun can set
    trace, cursor = state["rounds_trace"], state["rounds_cursor"]
    if state.get("playing"):
        if steps.at_end(trace, cursor):
            state["playing"] = False
            st.rerun()
        advance(steps.next_step)
        cursor = state["rounds_cursor"]
    buttons = st.columns([1, 1, 1, 1, 1, 2])
    buttons[0].button("Next phase", on_click=advance, args=(steps.next_step,), disabled=steps.at_end(trace, cursor))
    buttons[1].button("Next round", on_click=advance, args=(steps.next_round,), disabled=steps.at_end(trace, cursor))
    if state.get("playing"):
        buttons[2].button("⏸ Pause", on_click=set_playing, args=(False,))
    else:
        buttons[2].button("▶ Play", on_click=set_playing, args=(True,), disabled=steps.at_end(trace, cursor))
    buttons[3].button("Run to the end", on_click=advance, args=(lambda t, c: steps.last_cursor(t),))
    buttons[4].button("Reset", on_click=advance, args=(lambda t, c: steps.Cursor(),))
    buttons[5].select_slider(
        "Seconds per phase when playing",
        [0.25, 0.5, 1.0, 2.0, 3.0],
        value=speed,
        key="play_speed",
        label_visibility="collapsed",
        help="Seconds per phase when playing",
    )

    r = trace.rounds[cursor.round]
    step = steps.current_step(trace, cursor)
    where = f" (position {step.position + 1} of {r.proposed})" if step.phase == steps.JUDGE else ""
    st.caption(f"Round {cursor.round + 1} of {len(trace.rounds)} · {steps.PHASE_TITLES[step.phase]}{where}")
    show_text(trace, steps.rounds_committed(trace, cursor))
    for shown in steps.steps_shown(trace, cursor):
        show_step(trace, r, shown)
    st.divider()
    show_stats(trace, steps.rounds_committed(trace, cursor))


playback()
