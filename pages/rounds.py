"""Round by round: watch the draft propose, the target verify in one pass, and the sampler accept, reject and commit.

Lecture-ready: the arrow keys, PageDown/PageUp (a presenter's clicker) and Space step through the phases without a
click first; every moment has a URL (?round=N&phase=...&pos=i, plus the settings and prompt or a bundled trace's
name) that the page keeps current, and two buttons copy it (as is, or as a presenter's link, present=1: lecture mode,
focus view, sidebar collapsed); bundled traces replay with no model; the focus view shows one phase, large, on the
first screen. The page says whenever the run shown is not what the sidebar or the machine would give (run_notes).
"""

from dataclasses import replace

import streamlit as st

from specviz import methods
from specviz.core.trace import Totals, Trace
from specviz.engine.models import recorded_name
from specviz.errors import SpecvizError
from specviz.ui import render, url
from specviz.ui.controls import active_sources, prompt_box, sidebar_controls
from specviz.ui.limits import Limits, shown_meta
from specviz.ui.render import (
    apply_lecture_mode,
    bundled_traces,
    load_bundled_trace,
    page_header,
    page_run,
    show_text,
)
from specviz.viz import feature_flow, run_notes, steps
from specviz.viz import round_charts as charts
from specviz.viz import tree_charts as trees
from specviz.viz.explain import (
    ALPHA_HELP,
    commit_sentence,
    draft_sentence,
    judge_sentence,
    resolve_sentence,
    tree_judge_sentence,
    verify_html,
)
from specviz.viz.text import key_html, legend_html, literal, phase_strip_html, proposals_html, trace_html, visible

page_header(
    "Round by round",
    "Teaching point: each round costs K cheap draft steps and **one** target pass, and the accept/reject rule keeps "
    "exactly the target's distribution, so every accepted draft is a token the target did not have to generate alone.",
)
state = st.session_state
LIMITS = Limits.from_env()

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
notes = st.container() if focus_when_drawn else None
trace_controls = (
    st.expander("Trace picker · new run · download") if focus_when_drawn else st.container()
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
        replayed = Trace.from_json(uploaded.getvalue(), max_bytes=LIMITS.max_upload_bytes)  # checked before it is kept
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
    else:
        if settings.tree:
            about_run.caption(
                "A draft tree: when the draft's first guess at a position is rejected, its sibling may still be "
                "accepted (judged against the residual), so one target pass can commit more."
            )
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
    st.download_button("Download this trace (JSON)", shown.to_json(indent=2), "specviz-trace.json", "application/json")
if notes is None:
    notes = st.container()
describe_run(state["rounds_trace"])


def advance(move) -> None:
    state["rounds_cursor"] = move(state["rounds_trace"], state["rounds_cursor"])


def jump(kind: str) -> None:
    found = steps.next_event(state["rounds_trace"], state["rounds_cursor"], kind)
    if found is not None:
        state["rounds_cursor"] = found


def set_playing(on: bool) -> None:
    state["playing"] = on


def draw(where, chart) -> None:
    render.draw(where, chart, controls.lecture)


def committed_length(trace: Trace, round_index: int) -> int:
    """Tokens of the committed text when a round starts: the prompt and every earlier round's output."""
    return len(trace.prompt_ids) + sum(len(r.committed) for r in trace.rounds[:round_index])


def show_tree(trace: Trace, cursor: steps.Cursor, step: steps.Step, where=st, large: bool = True) -> None:
    """The draft tree as the walk has decided it at this step, with its key (large=False: not made taller in lecture
    mode, so the focus view fits the chart beside it on the first screen)."""
    r = trace.rounds[cursor.round]
    earlier = trace.tokens(cursor.round)
    tree = trees.tree_chart(r, step, trace.settings.tree, earlier[-1][1] if earlier else "prompt")
    render.draw(where, tree, controls.lecture and large)
    render.show_html(key_html(trees.tree_key()), where)


def beside_tree(trace: Trace, cursor: steps.Cursor, step: steps.Step):
    """The focus view of a tree round's judge or resolve phase: the tree on the left, and the column on the right
    where the phase's own chart goes (both on the first screen); the full view stacks them."""
    if not state.get("focus_view"):
        return st
    tree_col, phase_col = st.columns([3, 2])
    show_tree(trace, cursor, step, tree_col, large=False)
    return phase_col


# ---- one renderer per phase: a tree round draws its tree where a chain round draws its chips ---------------------
def show_draft(trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    st.write(draft_sentence(trace, r))
    if r.is_tree:  # in the full view this one tree follows the cursor; the focus view draws it at every phase
        show_tree(trace, cursor, steps.current_step(trace, cursor))
    elif flow := feature_flow.FLOWS.get(trace.settings.method):  # a head: which feature each draft came from
        render.show_html(feature_flow.flow_html(flow, feature_flow.feature_steps(flow, trace, cursor.round)))
    else:
        render.show_html(proposals_html(r))


def show_verify(trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    committed = committed_length(trace, cursor.round)
    render.show_html(verify_html(r, committed, timing_said(cursor.round)))
    if note := run_notes.verify_time_note(cursor.round, LIVE):
        st.caption(note)
    if r.is_tree:
        draw(st, trees.mask_chart(r, committed))


def timing_said(round_index: int) -> str:
    """Beside a verify pass's time: whose it is (a recorded trace's machine) and what round 1's holds (warm-up)."""
    if not LIVE:
        return f"recorded on {run_notes.machine_name(state['rounds_trace'].meta)}, not this machine's"
    return "includes first-call warm-up" if run_notes.verify_time_note(round_index, LIVE) else ""


def show_judge(trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    if r.is_tree:
        show_tree_judge(trace, cursor, step)
        return
    pos = r.positions[step.position]
    left, right = st.columns(2)
    draw(left, charts.pq_chart(pos))
    draw(right, charts.acceptance_chart(pos))
    right.markdown(judge_sentence(pos))


def show_tree_judge(trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    """One child's test: q and what it is judged against, min(1, p/q) against u, and the residual it leaves."""
    r = trace.rounds[cursor.round]
    node = r.nodes[step.position]
    pq = charts.pq_chart(node, f"Node {node.id + 1} (depth {node.depth}): q and p of '{visible(node.text)}'")
    right = beside_tree(trace, cursor, step)
    focus = right is not st  # the focus view: the test beside the tree, q and p under both
    if not focus:
        left, right = st.columns(2)
        draw(left, pq)
    draw(right, charts.acceptance_chart(node))
    right.markdown(tree_judge_sentence(r, node))
    if focus:
        draw(st, pq)
    if node.verdict == "rejected" and (residual := trees.sibling_residual_chart(r, node)) is not None:
        draw(st, residual)


def show_resolve(trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    where = beside_tree(trace, cursor, step) if r.is_tree else st
    chart = charts.residual_chart(r) if r.extra.kind == "correction" else charts.bonus_chart(r)
    draw(where, chart)
    where.markdown(resolve_sentence(r))


def show_commit(trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    if r.is_tree and state.get("focus_view"):
        show_tree(trace, cursor, step)
    prev = trace.rounds[cursor.round - 1] if cursor.round else None
    before = (prev.target_cache[1], prev.draft_cache[1]) if prev else None
    earlier = trace.tokens(cursor.round)
    if r.is_tree:  # the pass first re-reads everything the previous round committed
        pending = tuple(text for _, text, _ in earlier[len(earlier) - len(prev.committed) :]) if prev else ()
    else:
        pending = (earlier[-1][1] if earlier else "prompt",)
    has_draft = methods.get(trace.settings.method).loads_draft
    draw(st, charts.cache_chart(r, has_draft, before, pending))
    st.markdown(commit_sentence(r))


PHASE_RENDERERS = {
    steps.DRAFT: show_draft,
    steps.VERIFY: show_verify,
    steps.JUDGE: show_judge,
    steps.RESOLVE: show_resolve,
    steps.COMMIT: show_commit,
}


def show_step(trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    """One phase's panel; the focus view's phase strip already names the phase, so it draws no heading of its own."""
    if not state.get("focus_view") and (step.phase != steps.JUDGE or step.position == 0):
        st.subheader(steps.PHASE_TITLES[step.phase])
    PHASE_RENDERERS[step.phase](trace, cursor, step)


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
        draw(left, charts.timing_chart(rounds))
        draw(right, charts.accepted_length_chart(rounds, trace.settings.draft_length))
        if LIVE:
            left.caption(run_notes.FIRST_ROUND_NOTE)
        else:
            left.caption(f"Times recorded on {run_notes.machine_name(trace.meta)}: not this machine's.")


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


# The focus view's committed text: at most a few lines high, scrolled to its end (the newest tokens), with the
# older ones above a scroll.
FOCUS_TEXT_CSS = (
    "<style>.focus-text{max-height:12rem;overflow-y:auto;display:flex;flex-direction:column-reverse}</style>"
)


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
    r = trace.rounds[cursor.round]
    step = steps.current_step(trace, cursor)
    where = steps.step_label(r, step)
    st.caption(f"Round {cursor.round + 1} of {len(trace.rounds)} · {steps.PHASE_TITLES[step.phase]}{where}")
    if focus:  # the text's last lines only (it scrolls), so the phase and its chart stay on the first screen
        text = trace_html(trace, steps.rounds_committed(trace, cursor))
        render.show_html(f'{FOCUS_TEXT_CSS}<div class="focus-text">{text}</div>')
        render.show_html(legend_html())
    else:
        show_text(trace, steps.rounds_committed(trace, cursor))
    if focus:
        with st.container(key="focus_panel"):
            render.show_html(phase_strip_html(step.phase, steps.PHASE_TITLES))
            show_step(trace, cursor, step)
        navigation(trace, cursor)
        return
    for shown in steps.steps_shown(trace, cursor):
        show_step(trace, cursor, shown)
    st.divider()
    show_stats(trace, steps.rounds_committed(trace, cursor))


if state.get("focus_view"):
    with stage:
        playback()
else:
    playback()
