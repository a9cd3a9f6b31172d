"""The round page's sections, drawn: the trace controls (bundled trace, prompt, upload, new run, downloads), what the
run shown is, and its stepping, in the browser (ui.player) or on the server with the Streamlit buttons and their keys
(pages/rounds.py puts them in order; the decisions are in viz/rounds_policy.py and viz/explain.py, the prose in
assets/lessons/rounds.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.uploaded_file_manager import UploadedFile

from specviz.core.trace import Trace
from specviz.core.trace_json import trace_from_json
from specviz.engine.hall import plural
from specviz.engine.loading.models import ASSETS, recorded_name
from specviz.errors import SpecvizError
from specviz.ui import render, url
from specviz.ui.controls import Controls, active_sources, first_run_note, is_first_run, prompt_box
from specviz.ui.hall_bundle import prepared_bundle
from specviz.ui.lectures import static_link
from specviz.ui.limits import Limits
from specviz.ui.player import BROWSER_STEPPING, player_data, show_player
from specviz.ui.render import bundled_traces, cached_export_html, load_bundled_trace, page_run
from specviz.ui.step_render import show_section
from specviz.viz import rounds_policy as policy
from specviz.viz import run_notes, steps
from specviz.viz import step_view as sv
from specviz.viz.explain import setting_captions
from specviz.viz.player_bundle import step_index
from specviz.viz.step_view import ViewOptions, step_view
from specviz.viz.text import literal

LESSON = json.loads((ASSETS / "lessons" / "rounds.json").read_text(encoding="utf-8"))
TRACE_NONE = "(a live run with the sidebar's settings)"
SPEEDS = [0.25, 0.5, 1.0, 2.0, 3.0]  # seconds per phase
# The clicker's keys: visible buttons carry → ← and N; these hidden ones add PageDown, Space and PageUp (one key per
# button in Streamlit). Streamlit's shortcuts listen on the whole page from the first paint and ignore key presses
# while a text box, select or slider has the focus.
HIDDEN_KEYS_CSS = "<style>.st-key-clicker_keys{display:none !important}</style>"
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


@dataclass(frozen=True)
class Picked:
    """The trace controls as entered: the bundled pick, the prompt, an uploaded trace (None), and where the run shown
    is described (`about_run`, beside the picker) and its notes go (`notes`: None until placed)."""

    name: str
    prompt: str
    uploaded: UploadedFile | None
    about_run: DeltaGenerator
    notes: DeltaGenerator | None
    controls_box: DeltaGenerator


def start(trace: Trace, source: str = "live", cursor: steps.Cursor | None = None) -> None:
    """Show `trace` from `cursor` (its start), paused, and remember where it came from."""
    state = st.session_state
    state["rounds_trace"], state["rounds_cursor"], state["playing"] = trace, cursor or steps.Cursor(), False
    state["rounds_source"] = source


def open_bundled(name: str, moment: dict | None = None) -> None:
    """Show a bundled lecture trace at `moment` (a link's), else at the moment it names itself."""
    trace = load_bundled_trace(name)
    info = bundled_traces()[name]
    cursor = link_cursor(trace, moment) if moment is not None else steps.cursor_from_params(trace, info)
    start(trace, url.BUNDLED + name, cursor)


def on_pick_trace() -> None:
    """The bundled-trace picker changed: open the trace picked, or drop it for a live run."""
    state = st.session_state
    name = state["bundled_pick"]
    if name != TRACE_NONE:
        open_bundled(name)
    else:
        state.pop("rounds_trace", None)


def say_of_link(note: str) -> None:
    """What a shared link asked for that is not shown, and what is shown instead, as the page's link notes are said."""
    if note:
        st.info(literal(note))


def link_cursor(trace: Trace, moment: dict) -> steps.Cursor:
    """The cursor a link's moment names in this trace, saying so where the trace has no such moment."""
    say_of_link(steps.moment_note(trace, moment))
    return steps.cursor_from_params(trace, moment)


def follow_link(opened: url.OpenedUrl | None, pending_moment: dict | None) -> dict | None:
    """A shared link's trace opened at its moment, or a bundled run dropped for the live run its settings ask for;
    returns the moment still to apply (to the live run)."""
    if not opened:
        return pending_moment
    state = st.session_state
    source = state.get("rounds_source", "live")
    say_of_link(policy.unknown_trace_note(opened.trace, bundled_traces(), source, url.BUNDLED))
    action = policy.link_action(opened.trace, bundled_traces(), source, url.BUNDLED)
    if action == policy.OPEN_BUNDLED and opened.trace:
        state["bundled_pick"] = opened.trace
        open_bundled(opened.trace, pending_moment or None)
        return None
    if action == policy.ASK_LIVE:
        state.pop("rounds_trace", None)  # a URL with settings asks for a live run
        state["bundled_pick"] = TRACE_NONE
    return pending_moment


def on_new_run() -> None:
    """Runs before the widgets are drawn again, so it may reset the bundled-trace picker (a widget's key)."""
    st.session_state["bundled_pick"] = TRACE_NONE
    st.session_state["new_run"] = True


def show_trace_controls(controls: Controls, focus: bool) -> Picked:
    """The trace picker, the prompt and an upload, and the New run button: folded below the phase in the focus view
    (they do not push it down), in the page's flow otherwise."""
    # What the page says about the run shown (its settings against the sidebar's, its timings): under the phase in
    # the focus view, under the trace controls in the full one.
    notes = st.container(key="rounds_notes") if focus else None
    box = st.expander("Trace picker · new run · download") if focus else st.container(key="rounds_controls")
    traces = bundled_traces()
    with box:
        pick_col, note_col = st.columns([2, 3])
        picked = pick_col.selectbox(
            "Bundled lecture trace (replays with no model)",
            [TRACE_NONE, *traces],
            format_func=lambda n: n if n == TRACE_NONE else traces[n]["title"],
            key="bundled_pick",
            on_change=on_pick_trace,
        )
        about_run = note_col.container()  # filled once the run shown is known: it is described, not the sidebar
        with st.expander("Edit the prompt · replay a saved trace"):
            prompt = prompt_box(controls.target)
            uploaded = st.file_uploader("Replay a trace JSON (no model needed)", type=["json"], key="trace_upload")
    with box:
        st.button(run_notes.NEW_RUN, type="primary", on_click=on_new_run)
    return Picked(picked, prompt, uploaded, about_run, notes, box)


def run_or_replay(controls: Controls, picked: Picked, pending_moment: dict | None, limits: Limits) -> None:
    """A live run when New run was pressed or nothing is shown (and no bundled trace is picked); an uploaded trace
    replayed once, checked before it is kept."""
    state = st.session_state
    clicked = state.pop("new_run", False)
    wants_live = state.get("bundled_pick") in (None, TRACE_NONE)
    if (clicked or "rounds_trace" not in state) and controls.settings and wants_live:
        try:
            trace = page_run(active_sources(), picked.prompt, controls.settings)
            start(trace, "live", link_cursor(trace, pending_moment) if pending_moment else None)
        except SpecvizError as exc:
            st.error(str(exc))
    uploaded = picked.uploaded
    if uploaded is not None and state.get("replayed") != uploaded.file_id:
        state["replayed"] = uploaded.file_id
        try:
            replayed = trace_from_json(uploaded.getvalue(), max_bytes=limits.max_upload_bytes)
            limits.check_trace(replayed)
            start(replayed, "upload")
            held = plural(len(state["rounds_trace"].rounds), "round")
            st.success(f"Replaying a trace of {held} from {literal(uploaded.name)}.")
        except SpecvizError as exc:
            st.error(f"{literal(uploaded.name)}: {literal(str(exc))}")


def show_downloads(picked: Picked, shown_json: str, info: dict) -> None:
    """Beside the trace controls: the stepping switch and the trace as JSON and as an offline HTML file."""
    with picked.controls_box:
        stepping_col, json_col, html_col = st.columns([1, 1, 1.3], vertical_alignment="center")  # one row, not three
        stepping_col.toggle("Step in the browser", key=BROWSER_STEPPING, help=LESSON["stepping_help"])
        json_col.download_button("Download this trace (JSON)", shown_json, "specviz-trace.json", "application/json")
        html_col.download_button(
            "Download as an offline HTML file",
            lambda: cached_export_html(shown_json, info.get("title", ""), info.get("what", "")),
            "specviz-run.html",
            "text/html",
            help=LESSON["html_help"],
        )


def describe_run(trace: Trace, controls: Controls, picked: Picked, notes: DeltaGenerator, source: str) -> None:
    """Under the trace picker: what the run shown is (a bundled trace's own words, or how a run with these settings
    behaves); above the phase, or under it in the focus view: where it disagrees with the sidebar, and whose
    timings it holds."""
    settings, about_run = trace.settings, picked.about_run
    traces = bundled_traces()
    if source.startswith(url.BUNDLED) and picked.name != TRACE_NONE:
        about_run.info(traces[picked.name]["what"])
        static = static_link(picked.name, trace, traces[picked.name])
        if static:
            about_run.markdown(static)
    else:
        first_run = is_first_run(settings, trace.prompt, controls.target)
        first = first_run_note(controls.target, controls.draft) if first_run else None
        tree = bool(settings.tree or settings.dynamic)
        for caption in setting_captions(tree, bool(settings.dynamic), settings.sampling.temperature, first, LESSON):
            about_run.caption(caption)
    if source == "live":
        target, draft, _, _ = active_sources()
        now = (recorded_name(target), recorded_name(draft), picked.prompt)
        stale = run_notes.stale_run_note(
            settings, controls.settings, run_notes.source_differences(trace.meta, trace.prompt, now)
        )
        if stale:
            notes.warning(stale, icon=":material/sync_problem:")
    else:
        notes.info(
            run_notes.recorded_note(settings, trace.meta, bundled=source.startswith(url.BUNDLED)),
            icon=":material/history:",
        )


def advance(move) -> None:
    """Move the cursor by one of viz.steps' moves."""
    st.session_state["rounds_cursor"] = move(st.session_state["rounds_trace"], st.session_state["rounds_cursor"])


def jump(kind: str) -> None:
    """Move the cursor to the next rejection or bonus, if there is one."""
    found = steps.next_event(st.session_state["rounds_trace"], st.session_state["rounds_cursor"], kind)
    if found is not None:
        st.session_state["rounds_cursor"] = found


def set_playing(on: bool) -> None:
    """Play or pause the server's stepping."""
    st.session_state["playing"] = on


def navigation(trace: Trace, cursor: steps.Cursor, speed: float) -> None:
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
    if st.session_state.get("playing"):
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
    st.caption(LESSON["keys"])
    url.copy_link_buttons(url.shown_params(trace, cursor))


def playback(lecture: bool, live: bool, speed: float, playing_when_drawn: bool, focus_when_drawn: bool) -> None:
    """The server's stepping, as a fragment (rerun alone on each step, and on a timer while playing)."""
    state = st.session_state
    if bool(state.get("playing")) != playing_when_drawn:
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
        navigation(trace, cursor, speed)
    url.keep_url(trace, cursor)
    view = step_view(trace, cursor, ViewOptions(lecture=lecture, focus=focus, live=live))
    st.caption(view.title)
    show_section(view, sv.TEXT)
    if focus:
        with st.container(key="focus_panel"):
            show_section(view, sv.PANEL)
        navigation(trace, cursor, speed)
        return
    show_section(view, sv.PANEL)
    show_section(view, sv.TOTALS)


def show_server_stepping(lecture: bool, live: bool, focus_when_drawn: bool) -> None:
    """The server's stepping fragment, its timer set from the play state and speed at this full run."""
    state = st.session_state
    speed, playing = state.get("play_speed", 1.0), bool(state.get("playing"))
    fragment = st.fragment(playback, run_every=speed if playing else None)
    fragment(lecture, live, speed, playing, focus_when_drawn)


def in_page_player(shown_json: str, info: dict, lecture: bool, source: str) -> None:
    """The run stepped in the browser (ui.player): the bundle of the run shown, started at the moment shown, in the
    view shown; the player keeps the address on its moment, so the server's own URL writer stays out of the way."""
    state = st.session_state
    trace, cursor = state["rounds_trace"], state["rounds_cursor"]
    live = source == "live"
    others = policy.player_params(url.shown_params(trace, cursor), url.MOMENT_KEYS)
    start_at = step_index(trace, cursor)
    focus = bool(state.get("focus_view"))
    title, what = info.get("title", ""), info.get("what", "")
    if not source.startswith(url.BUNDLED):  # built in the lecture hall's pool; a bundled trace's is prebuilt
        prepared_bundle(shown_json, title, what, live=live)
    url.keep_replayed(url.shown_params(trace, cursor))  # before the player starts: it keeps the address's other keys
    show_player(player_data(shown_json, start_at, lecture, focus, others, title, what, live=live))
