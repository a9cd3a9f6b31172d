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
    from specviz.core.trace import Trace
    from specviz.core.trace_json import trace_from_json, trace_to_json
    from specviz.engine.models import recorded_name
    from specviz.errors import SpecvizError
    from specviz.ui import render, url
    from specviz.ui.controls import FIRST_RUN_NOTE, active_sources, is_first_run, prompt_box, sidebar_controls
    from specviz.ui.hall_bundle import prepared_bundle
    from specviz.ui.lectures import static_link
    from specviz.ui.limits import Limits, shown_meta
    from specviz.ui.player import BROWSER_STEPPING, browser_stepping_default, player_data, show_player
    from specviz.ui.render import (
        bundled_traces,
        cached_export_html,
        load_bundled_trace,
        page_run,
    )
    from specviz.ui.step_render import show_section
    from specviz.viz import run_notes, steps
    from specviz.viz import step_view as sv
    from specviz.viz.explain import DYNAMIC_NOTE
    from specviz.viz.player_bundle import step_index
    from specviz.viz.step_view import ViewOptions, step_view
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


def start(trace: Trace, source: str = "live", cursor: steps.Cursor | None = None) -> None:
    state["rounds_trace"], state["rounds_cursor"], state["playing"] = trace, cursor or steps.Cursor(), False
    state["rounds_source"] = source


def open_bundled(name: str, moment: dict | None = None) -> None:
    trace = load_bundled_trace(name)
    info = bundled_traces()[name]
    start(trace, url.BUNDLED + name, steps.cursor_from_params(trace, moment if moment is not None else info))


TRACE_NONE = "(a live run with the sidebar's settings)"


def on_pick_trace() -> None:
    name = state["bundled_pick"]
    if name != TRACE_NONE:
        open_bundled(name)
    else:
        state.pop("rounds_trace", None)


lecture_traces = bundled_traces()
if opened and opened.trace in lecture_traces:
    state["bundled_pick"] = opened.trace
    open_bundled(opened.trace, pending_moment or None)
    pending_moment = None
elif opened and state.get("rounds_source", "live").startswith(url.BUNDLED):
    state.pop("rounds_trace", None)  # a URL with settings asks for a live run
    state["bundled_pick"] = TRACE_NONE

if "focus_view" not in state:
    state["focus_view"] = controls.lecture
focus_when_drawn = bool(state.get("focus_view"))  # toggled inside the fragment: a full rerun moves these controls
stage = st.container()  # the focus view draws here, above the trace controls, so a projector shows the phase first
# What the page says about the run shown (its settings against the sidebar's, its timings): under the phase in the
# focus view, under the trace controls in the full one.
notes = st.container(key="rounds_notes") if focus_when_drawn else None
trace_controls = (
    st.expander("Trace picker · new run · download") if focus_when_drawn else st.container(key="rounds_controls")
)  # in the focus view these sit below the phase, folded, and do not push it down
with trace_controls:
    pick_col, note_col = st.columns([2, 3])
    picked = pick_col.selectbox(
        "Bundled lecture trace (replays with no model)",
        [TRACE_NONE, *lecture_traces],
        format_func=lambda n: n if n == TRACE_NONE else lecture_traces[n]["title"],
        key="bundled_pick",
        on_change=on_pick_trace,
    )
    about_run = note_col.container()  # filled once the run shown is known: it is described, not the sidebar
    with st.expander("Edit the prompt · replay a saved trace"):
        prompt = prompt_box(controls.target)
        uploaded = st.file_uploader("Replay a trace JSON (no model needed)", type=["json"], key="trace_upload")


def on_new_run() -> None:
    """Runs before the widgets are drawn again, so it may reset the bundled-trace picker (a widget's key)."""
    state["bundled_pick"] = TRACE_NONE
    state["new_run"] = True


with trace_controls:
    st.button(run_notes.NEW_RUN, type="primary", on_click=on_new_run)
clicked = state.pop("new_run", False)
if (clicked or "rounds_trace" not in state) and controls.settings and state.get("bundled_pick") in (None, TRACE_NONE):
    try:
        trace = page_run(active_sources(), prompt, controls.settings)
        start(trace, "live", steps.cursor_from_params(trace, pending_moment) if pending_moment else None)
    except SpecvizError as exc:
        st.error(str(exc))
if uploaded is not None and state.get("replayed") != uploaded.file_id:
    state["replayed"] = uploaded.file_id
    try:
        replayed = trace_from_json(uploaded.getvalue(), max_bytes=LIMITS.max_upload_bytes)  # checked before it is kept
        start(replayed, "upload")
        st.success(f"Replaying a trace of {len(state['rounds_trace'].rounds)} rounds from {literal(uploaded.name)}.")
    except SpecvizError as exc:
        st.error(f"{literal(uploaded.name)}: {literal(str(exc))}")

if "rounds_trace" not in state:
    st.stop()
SOURCE = state.get("rounds_source", "live")
LIVE = SOURCE == "live"


def describe_run(trace: Trace) -> None:
    """Under the trace picker: what the run shown is (a bundled trace's own words, or how a run with these settings
    behaves); above the phase, or under it in the focus view: where it disagrees with the sidebar, and whose
    timings it holds."""
    settings = trace.settings
    if SOURCE.startswith(url.BUNDLED) and picked != TRACE_NONE:
        about_run.info(lecture_traces[picked]["what"])
        static = static_link(picked, trace, lecture_traces[picked])
        if static:
            about_run.markdown(static)
    else:
        if settings.tree or settings.dynamic:
            about_run.caption(
                "A draft tree: when the draft's first guess at a position is rejected, its sibling may still be "
                "accepted (judged against the residual), so one target pass can commit more."
                + (DYNAMIC_NOTE if settings.dynamic else "")
            )
        if is_first_run(settings, trace.prompt, controls.target):
            about_run.caption(FIRST_RUN_NOTE)
        sampling = settings.sampling
        about_run.caption(
            "Greedy (temperature 0): a draft is kept exactly when it is the target's top token, so rounds read as "
            "agree / disagree and the text reads well."
            if sampling.greedy
            else f"Sampling at temperature {sampling.temperature:g}: a draft is kept with probability min(1, p/q), "
            "so rejections happen and the correction is drawn from the residual, the heart of the exactness argument."
        )
    if LIVE:
        target, draft, _, _ = active_sources()
        now = (recorded_name(target), recorded_name(draft), prompt)
        stale = run_notes.stale_run_note(
            settings, controls.settings, run_notes.source_differences(trace.meta, trace.prompt, now)
        )
        if stale:
            notes.warning(stale, icon=":material/sync_problem:")
    else:
        notes.info(
            run_notes.recorded_note(settings, trace.meta, bundled=SOURCE.startswith(url.BUNDLED)),
            icon=":material/history:",
        )


shown = replace(state["rounds_trace"], meta=shown_meta(state["rounds_trace"].meta, LIMITS))  # no local paths in public
with trace_controls:
    shown_json = trace_to_json(shown, indent=2)
    stepping_col, json_col, html_col = st.columns([1, 1, 1.3], vertical_alignment="center")  # one row, not three
    stepping_col.toggle(
        "Step in the browser",
        key=BROWSER_STEPPING,
        help="On: the keys and buttons step through the run in your browser, with no wait for the server (the same "
        "steps as the offline HTML file). Off: each step is drawn by the server, as Streamlit pages are.",
    )
    json_col.download_button("Download this trace (JSON)", shown_json, "specviz-trace.json", "application/json")
    bundled_info = lecture_traces.get(SOURCE.removeprefix(url.BUNDLED), {}) if SOURCE.startswith(url.BUNDLED) else {}
    html_col.download_button(
        "Download as an offline HTML file",
        lambda: cached_export_html(shown_json, bundled_info.get("title", ""), bundled_info.get("what", "")),
        "specviz-run.html",
        "text/html",
        help="One HTML file that steps through this run with the same keys, with no network and no Python: for a "
        "slide, a course page or a projector's laptop. Built when clicked (a few seconds).",
    )
if notes is None:
    notes = st.container(key="rounds_notes")
describe_run(state["rounds_trace"])


def advance(move) -> None:
    state["rounds_cursor"] = move(state["rounds_trace"], state["rounds_cursor"])


def jump(kind: str) -> None:
    found = steps.next_event(state["rounds_trace"], state["rounds_cursor"], kind)
    if found is not None:
        state["rounds_cursor"] = found


def set_playing(on: bool) -> None:
    state["playing"] = on


# The clicker's keys: visible buttons carry → ← and N; these hidden ones add PageDown, Space and PageUp (one key per
# button in Streamlit). Streamlit's shortcuts listen on the whole page from the first paint and ignore key presses
# while a text box, select or slider has the focus.
HIDDEN_KEYS_CSS = "<style>.st-key-clicker_keys{display:none !important}</style>"

SPEEDS = [0.25, 0.5, 1.0, 2.0, 3.0]  # seconds per phase
speed = state.get("play_speed", 1.0)
playing_when_defined = bool(state.get("playing"))


def navigation(trace: Trace, cursor: steps.Cursor) -> None:
    """The stepping buttons (with their keys), the jumps, the focus toggle and the play speed."""
    at_start, at_end = cursor == steps.Cursor(), steps.at_end(trace, cursor)
    buttons = st.columns([1.3, 1.3, 1.2, 1, 1.1, 0.9])
    buttons[0].button(
        "Previous phase", on_click=advance, args=(steps.previous_step,), disabled=at_start, shortcut="Left"
    )
    buttons[1].button(
        "Next phase", on_click=advance, args=(steps.next_step,), disabled=at_end, shortcut="Right", type="primary"
    )
    buttons[2].button("Next round", on_click=advance, args=(steps.next_round,), disabled=at_end, shortcut="N")
    if state.get("playing"):
        buttons[3].button("⏸ Pause", on_click=set_playing, args=(False,), shortcut="P")
    else:
        buttons[3].button("▶ Play", on_click=set_playing, args=(True,), disabled=at_end, shortcut="P")
    buttons[4].button("To the end", on_click=advance, args=(lambda t, c: steps.last_cursor(t),))
    buttons[5].button("Reset", on_click=advance, args=(lambda t, c: steps.Cursor(),))
    with st.container(key="clicker_keys"):
        render.show_html(HIDDEN_KEYS_CSS)
        st.button("Next phase (PageDown)", on_click=advance, args=(steps.next_step,), shortcut="PageDown")
        st.button("Next phase (Space)", on_click=advance, args=(steps.next_step,), shortcut="Space")
        st.button("Previous phase (PageUp)", on_click=advance, args=(steps.previous_step,), shortcut="PageUp")
    jumps = st.columns([1, 1, 1.4, 1.6], vertical_alignment="bottom")
    jumps[0].button(
        "Next rejection",
        on_click=jump,
        args=("rejection",),
        disabled=steps.next_event(trace, cursor, "rejection") is None,
        shortcut="J",
    )
    jumps[1].button(
        "Next bonus", on_click=jump, args=("bonus",), disabled=steps.next_event(trace, cursor, "bonus") is None
    )
    jumps[2].toggle("Focus view (one phase, large)", key="focus_view")
    jumps[3].select_slider(
        "Play speed (seconds per phase)",
        SPEEDS,
        value=speed,
        key="play_speed",
        format_func=lambda seconds: f"{seconds:g} s per phase",
        help="How long ▶ Play shows each phase before the next.",
    )
    st.caption("Keys: → PageDown Space next phase · ← PageUp previous · N next round · J next rejection · P play")
    url.copy_link_buttons(url.shown_params(trace, cursor))


@st.fragment(run_every=speed if playing_when_defined else None)
def playback() -> None:
    if bool(state.get("playing")) != playing_when_defined:
        st.rerun()  # play/pause changes the fragment's timer, which only a full rerun can set
    if bool(state.get("focus_view")) != focus_when_drawn:
        st.rerun()  # the focus view moves the trace controls under the phase, outside this fragment
    trace, cursor = state["rounds_trace"], state["rounds_cursor"]
    if state.get("playing"):
        if steps.at_end(trace, cursor):
            state["playing"] = False
            st.rerun()
        advance(steps.next_step)
        cursor = state["rounds_cursor"]
    focus = bool(state.get("focus_view"))
    if not focus:
        navigation(trace, cursor)
    url.keep_url(trace, cursor)
    view = step_view(trace, cursor, ViewOptions(lecture=controls.lecture, focus=focus, live=LIVE))
    st.caption(view.title)
    show_section(view, sv.TEXT)
    if focus:
        with st.container(key="focus_panel"):
            show_section(view, sv.PANEL)
        navigation(trace, cursor)
        return
    show_section(view, sv.PANEL)
    show_section(view, sv.TOTALS)


def in_page_player() -> None:
    """The run stepped in the browser (ui.player): the bundle of the run shown, started at the moment shown, in the
    view shown; the player keeps the address on its moment, so the server's own URL writer stays out of the way."""
    trace, cursor = state["rounds_trace"], state["rounds_cursor"]
    others = {
        k: v for k, v in url.shown_params(trace, cursor).items() if k not in (*url.MOMENT_KEYS, "view", "lecture")
    }
    start_at = step_index(trace, cursor)
    lecture, focus = controls.lecture, bool(state.get("focus_view"))
    if not SOURCE.startswith(url.BUNDLED):  # built in the lecture hall's pool; a bundled trace's is prebuilt
        prepared_bundle(shown_json, bundled_info.get("title", ""), bundled_info.get("what", ""), live=LIVE)
    url.keep_replayed(url.shown_params(trace, cursor))  # before the player starts: it keeps the address's other keys
    show_player(
        player_data(
            shown_json,
            start_at,
            lecture,
            focus,
            others,
            bundled_info.get("title", ""),
            bundled_info.get("what", ""),
            live=LIVE,
        )
    )


# The player's own "Focus view (F)" switches with no rerun, so the page follows it in CSS: while the player shows
# the focus view, the page's header, trace controls and notes come after the phase, in their order, and the page's
# top margin shrinks, so the phase, its charts and its sentence fill a projector's first screen.
PLAYER_FOCUS = '[data-testid="stMainBlockContainer"]:has(.spz-mount.spz-focus)'
PLAYER_FOCUS_CSS = (
    f"<style>{PLAYER_FOCUS}{{padding-top:1.5rem}}"
    # the player scrolls its phase to the top as the focus view turns on; the browser must not then scroll it away to
    # keep what was on screen in place while the charts are drawn (scroll anchoring)
    '[data-testid="stMain"]:has(.spz-mount.spz-focus){overflow-anchor:none}'
    + ",".join(
        f'{PLAYER_FOCUS} [data-testid="stLayoutWrapper"]:has(> .st-key-rounds_{part})'
        for part in ("header", "controls", "notes")
    )
    + "{order:1}</style>"
)

with stage if state.get("focus_view") else st.container():
    if state[BROWSER_STEPPING]:
        st.html(PLAYER_FOCUS_CSS)
        in_page_player()
    else:
        playback()
