"""The race page's sections, drawn (pages/race.py puts them in order; the decisions are in measure/race_lanes.py, the
prose in assets/lessons/race.json)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from specviz import methods
from specviz.engine.decode import forwards_run
from specviz.engine.loading import models
from specviz.engine.loading.models import ASSETS
from specviz.errors import SpecvizError
from specviz.measure import bench
from specviz.measure import race_lanes as policy
from specviz.measure.lanes import refusal
from specviz.measure.race import MAX_PICKED, SWEEP_KS, k_sweep, race, sweep_warnings, three_lanes
from specviz.measure.timing import REPEATS, implausible_lanes, timing_words
from specviz.ui.controls import Controls, active_pair, active_sources, exit_layer_fits
from specviz.ui.hall import in_the_hall, reporting, resume
from specviz.ui.loaders import draft_crosses
from specviz.ui.notes import show_note
from specviz.ui.race_player import race_player
from specviz.ui.render import check_prompt_cost, draw, show_table
from specviz.viz import race_charts as charts
from specviz.viz import run_notes

LESSON = json.loads((ASSETS / "lessons" / "race.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Entry:
    """The race as entered: its lanes (plain first where it was added) and the tree lane's shape (() for none)."""

    lanes: list[str]
    tree: tuple[int, ...]


def show_lane_picker(controls: Controls) -> Entry:
    """Every lane or up to three, what is not offered and why, lanes refused at these settings, and a tree lane."""
    target = active_sources()[0]
    heads = models.find_heads(target, None)  # looked up now, not at import: tests replace it
    exit_refused = exit_layer_fits(controls.settings, target)  # early exit's E beyond this target's layers
    crosses = draft_crosses(*active_sources()[:2])  # a draft with its own tokenizer: TLI, SLEM and HF's UAG lanes
    runnable = policy.runnable_lanes(heads, bool(exit_refused), crosses)
    if exit_refused:
        st.caption(exit_refused)
    picking = st.radio(
        "Race", [policy.EVERY, policy.THREE], horizontal=True, key="race_picking", help=LESSON["picking_help"]
    )
    if picking == policy.EVERY:
        lanes = st.multiselect("Lanes", runnable, default=runnable, format_func=methods.lane_label)
    else:
        offered = [lane for lane in runnable if lane != methods.PLAIN]
        lanes = st.multiselect(
            "Speculative lanes (at most three), raced beside plain decoding",
            offered,
            default=three_lanes(offered),
            max_selections=MAX_PICKED,
            format_func=methods.lane_label,
            key="race_three",
        )
        st.caption(policy.picked_words(lanes))
    if missing := policy.missing_heads_words(heads):
        st.caption(missing)
    refusals = {lane: refusal(lane, controls.settings) for lane in lanes if controls.settings}
    lanes, notes = policy.with_plain(lanes, refusals)
    for note in notes:
        st.caption(note)
    tree_pick = st.radio("Add a draft-tree lane", list(policy.TREE_CHOICES), horizontal=True, key="race_tree")
    lanes, tree, note = policy.with_tree(lanes, tree_pick, picking)
    show_note(note)
    return Entry(lanes, tree)


RACE_RUN, SWEEP_RUN = "race_run", "sweep_run"  # the page's own runs, kept until done (ui/hall.py, resume)


def start_race(controls: Controls, prompt: str, entry: Entry) -> None:
    """Race the entered lanes in the lecture hall's pool and keep the result, its settings and environment."""
    try:
        pair, settings, lanes, tree = active_pair(), controls.settings, entry.lanes, entry.tree
        check_prompt_cost(pair, prompt)  # every lane reads it, each run repeated

        @reporting
        def racing(report) -> object:  # in the lecture hall's pool; its reports go to the waiting page
            report(0.0, "warming up every lane, untimed")
            return race(pair, prompt, settings, lanes, race_progress(report, lanes), tree)

        st.session_state["race_started"] = (
            settings,
            bench.environment(pair) | {"forward": forwards_run(pair, settings)},
        )
        key = (active_sources(), prompt, settings, tuple(lanes), tree)
        running = race_words(raced_lanes(lanes))
        keep_race(in_the_hall("race", key, racing, "race", cache=False, running=running, keep=RACE_RUN))
    except SpecvizError as exc:
        st.error(str(exc))


def raced_lanes(lanes: list[str]) -> int:
    """How many lanes a race runs: the entered ones, and plain decoding beside them where it was left out."""
    return len(lanes) + (methods.PLAIN not in lanes)


def race_words(lanes: int) -> str:
    """What a race runs, said while it runs: every lane once untimed (the warm-up), then each timed REPEATS times."""
    return f"Racing {lanes} lanes (each once untimed, then {lanes * REPEATS} timed runs)"


def race_progress(report, lanes) -> Callable[[int, int, str], None]:
    """The race's between-runs callback: runs done, the last lane, and the time left at the pace so far (the warm-up
    counted as one run per lane)."""
    started, warm = time.monotonic(), raced_lanes(lanes)

    def advance(done: int, runs: int, lane: str) -> None:
        pace = (time.monotonic() - started) / (done + warm)
        report(done / runs, f"{done} of {runs} timed runs done (last: {methods.lane_label(lane)}), about "
               f"{pace * (runs - done):.0f} s left")  # fmt: skip

    return advance


def resume_race() -> None:
    """A race this page started that a rerun interrupted (the K sweep pressed, a widget touched meanwhile): waited
    for again here, then kept like any other."""
    try:
        raced = resume(RACE_RUN)
    except SpecvizError as exc:
        st.error(str(exc))
        return
    if raced is not None:
        keep_race(raced)


def keep_race(raced) -> None:
    settings, env = st.session_state.pop("race_started")
    st.session_state["race"] = (raced, settings, env)


def show_race(raced, raced_settings, env: dict) -> None:
    """A finished race: its playback, the lanes' table, how it was timed, and what not to trust."""
    results, greedy, dtype = raced.records, raced_settings.sampling.greedy, env["dtype"]
    plain = next(r for r in results if r.method == methods.PLAIN)
    reference = plain.output_ids if greedy else None
    st.caption(charts.PLAYBACK_WORDS)
    race_player(charts.playback_data(results, raced.pieces))
    show_table(st, charts.lanes_frame(results, reference, raced.timings, raced.tokens_per_s))
    if ratio_words := raced.ratio_words():  # a speedup that is not the ratio of the tokens/s beside it says why
        st.caption(ratio_words)
    st.caption(
        timing_words(REPEATS, raced_settings.sampling.temperature, None, tokens=raced_settings.max_new_tokens)
        + LESSON["timing"]
        + run_notes.forward_words(env.get("forward", {}))
    )
    if doubts := policy.untrusted_words("lanes' speedups", implausible_lanes(results, raced.timings)):
        st.warning(doubts)
    show_note(policy.bench_note(raced.timings, env, raced_settings, bench.recorded_benches(ASSETS / "bench")))
    if precision := policy.precision_note(greedy, dtype):
        st.caption(precision)
    if not greedy:
        st.caption(LESSON["sampling"])
    left, right = st.columns(2) if charts.side_by_side(results) else (st, st)  # many lanes: each the page's width
    draw(left, charts.arrivals_chart(results))
    draw(right, charts.latency_chart(results))


def show_sweep_section(controls: Controls, prompt: str) -> None:
    """The K sweep: its button, then measured speedups beside τ / (K·c + v(K)), with what not to trust."""
    state = st.session_state
    st.write(LESSON["sweep"].format(ks=", ".join(map(str, SWEEP_KS))))
    pressed = st.button("Run the K sweep", disabled=controls.settings is None)
    try:
        if pressed:
            pair, settings = active_pair(), controls.settings
            check_prompt_cost(pair, prompt)  # every K reads it
            sweep = reporting(lambda report: k_sweep(pair, prompt, settings, on_progress=report))
            key = (active_sources(), prompt, settings)
            state["sweep"] = in_the_hall("k_sweep", key, sweep, "K sweep", cache=False, keep=SWEEP_RUN)
        elif (resumed := resume(SWEEP_RUN)) is not None:  # a sweep a rerun interrupted
            state["sweep"] = resumed
    except SpecvizError as exc:
        st.error(str(exc))
    if "sweep" in state:
        sweep = state["sweep"]
        if sweep.costs.implausible:
            st.warning(f"No prediction is drawn: {sweep.costs.implausible}")
        if doubts := policy.untrusted_words(
            "sweep points", sweep_warnings(sweep, state["race"][0] if "race" in state else None)
        ):
            st.warning(doubts)
        draw(st, charts.sweep_chart(sweep.rows))
        st.caption(sweep.words())


def show_recorded_benches() -> None:
    """The bench results recorded in assets/bench, one headline row each, and how they were measured."""
    recorded = bench.recorded_benches(ASSETS / "bench")
    if recorded:
        show_table(st, [bench.headline(doc) for doc in recorded])
        st.caption(LESSON["bench"])
