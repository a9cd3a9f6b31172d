"""The race: the same prompt through plain decoding, specviz's speculative lanes and Hugging Face's, timed live."""

import time

import streamlit as st
import torch

from specviz import methods
from specviz.engine.models import ASSETS
from specviz.errors import SpecvizError
from specviz.measure.bench import headline, recorded_benches
from specviz.measure.race import RACE_TREES, SWEEP_KS, k_sweep, race, tree_label
from specviz.ui.controls import active_pair, prompt_box, sidebar_controls
from specviz.ui.render import apply_lecture_mode, draw, page_header
from specviz.viz import race_charts as charts
from specviz.viz.explain import BF16_GREEDY_NOTE

page_header(
    "The race",
    "Teaching point: speculation changes how tokens arrive (in bursts, fewer target passes); whether it is faster "
    "overall is a measurement on this machine, shown here next to what the theory predicts.",
)
controls = sidebar_controls("race")
apply_lecture_mode(controls.lecture)
state = st.session_state
prompt = prompt_box(controls.target, key="race_prompt")
lanes = st.multiselect("Lanes", list(methods.LANES), default=list(methods.LANES), format_func=methods.lane_label)
if methods.PLAIN not in lanes:
    st.caption("Plain decoding is always raced too: it is the baseline every speedup is measured against.")
    lanes = [methods.PLAIN, *lanes]
TREE_CHOICES = {"no tree lane": ()} | {tree_label(shape): shape for shape in RACE_TREES}
tree_pick = st.radio("Add a draft-tree lane", list(TREE_CHOICES), horizontal=True, key="race_tree")
tree = TREE_CHOICES[tree_pick]
if tree:
    lanes = [*lanes, methods.TREE]
    st.caption(
        f"The tree lane drafts {tree_pick.removeprefix('tree ')} and verifies every node in one target pass: its "
        f"depth, {len(tree)}, is the chain's K at equal depth; compare it with the draft-model lane at that K."
    )

if st.button("Start the race", type="primary", disabled=controls.settings is None):
    try:
        pair = active_pair()
        settings = controls.settings
        boxes = {}
        for lane in lanes:  # one full-width row per lane: the whole text shows, code lines are not cut
            row = st.container(border=True)
            row.markdown(f"**{methods.lane_label(lane)}**")
            boxes[lane] = row.empty()
            boxes[lane].caption("waiting…")

        drawn: dict[str, float] = {}

        def show_lane(lane, ids, seconds):
            text = pair.tokenizer.decode(ids, skip_special_tokens=True)
            boxes[lane].markdown(f"⏱ {seconds * 1e3:.0f} ms · {len(ids)} tokens\n\n```text\n{text}\n```")

        def show(lane, ids, seconds):  # at most ten draws a second; the lanes' clocks leave drawing out anyway
            if time.perf_counter() - drawn.get(lane, 0.0) >= 0.1:
                show_lane(lane, ids, seconds)
                drawn[lane] = time.perf_counter()

        with st.spinner("Warming up every lane (first calls are slower), then racing…"):
            results = race(pair, prompt, settings, lanes, show, tree)
        for lane, result in zip(lanes, results):
            show_lane(lane, list(result.output_ids), result.wall_s)
        state["race"] = (results, settings.sampling.greedy, pair.dtype)
    except SpecvizError as exc:
        st.error(str(exc))

if "race" in state:
    results, greedy, dtype = state["race"]
    plain = next(r for r in results if r.method == methods.PLAIN)
    st.dataframe(charts.lanes_frame(results, plain.output_ids if greedy else None), hide_index=True)
    st.caption(
        "Times are decoding times: each lane's clock stops while the page draws its text, so tokens/s here are the "
        "bench's for the same lane and settings, not the browser's drawing speed."
    )
    if greedy and dtype != torch.float32:
        st.caption(f"In {str(dtype).removeprefix('torch.')}, {BF16_GREEDY_NOTE} (Precision is in the sidebar.)")
    if not greedy:
        st.caption(
            "Sampling (temperature > 0): lanes draw different random numbers, so their texts differ; "
            "each follows the target's distribution."
        )
    left, right = st.columns(2)
    draw(left, charts.arrivals_chart(results))
    draw(right, charts.latency_chart(results))

st.subheader("K sweep")
st.write(
    f"specviz with the draft model at K = {', '.join(map(str, SWEEP_KS))}: measured speedup over plain decoding, "
    "next to τ / (K·c + v(K)) with τ from each run and c, v(K) timed on this machine."
)
if st.button("Run the K sweep", disabled=controls.settings is None):
    try:
        bar = st.progress(0.0, text="Measuring step costs…")
        state["sweep"] = k_sweep(active_pair(), prompt, controls.settings, on_progress=bar.progress)
    except SpecvizError as exc:
        st.error(str(exc))
if "sweep" in state:
    sweep = state["sweep"]
    if sweep.costs.implausible:
        st.warning(f"No prediction is drawn: {sweep.costs.implausible}")
    draw(st, charts.sweep_chart(sweep.rows))

st.subheader("Measured with the bench on this project's machines")
recorded = recorded_benches(ASSETS / "bench")
if recorded:
    st.dataframe([headline(doc) for doc in recorded], hide_index=True)
    st.caption(
        "From `python -m specviz bench` (JSON in assets/bench, each with its environment; a file named prose ran the "
        "prose workload, the others the held-out code prompts): greedy, the specviz draft lane at its best K. A speed "
        "names its CPU: run the bench on yours, and the race above on your prompt."
    )
