"""The race: the same prompt through plain decoding, specviz's speculative lanes and Hugging Face's, timed live."""

from dataclasses import replace

import streamlit as st
import torch

from specviz.core.theory import expected_tokens
from specviz.engine.costs import measure_costs
from specviz.errors import SpecvizError
from specviz.race import LANE_LABELS, run_lane
from specviz.ui.controls import active_pair, prompt_box, sidebar_controls
from specviz.ui.render import apply_lecture_mode, page_header
from specviz.viz import race_charts as charts
from specviz.viz.explain import BF16_GREEDY_NOTE

page_header(
    "The race",
    "Teaching point: speculation changes how tokens arrive (in bursts, fewer target passes); whether it is faster "
    "overall is a measurement on this machine, shown here next to what the theory predicts.",
)
controls = sidebar_controls()
apply_lecture_mode(controls.lecture)
state = st.session_state
prompt = prompt_box(controls.target, key="race_prompt")
lanes = st.multiselect("Lanes", list(LANE_LABELS), default=list(LANE_LABELS), format_func=LANE_LABELS.get)
if "plain" not in lanes:
    st.caption("Plain decoding is always raced too: it is the baseline every speedup is measured against.")
    lanes = ["plain", *lanes]

if st.button("Start the race", type="primary", disabled=controls.settings is None):
    try:
        pair = active_pair()
        settings = controls.settings
        warm = replace(settings, max_new_tokens=min(8, settings.max_new_tokens))
        with st.spinner("Warming up every lane (first calls are slower)…"):
            for lane in lanes:
                run_lane(pair, prompt, warm, lane)
        columns = st.columns(len(lanes))
        boxes = {}
        for column, lane in zip(columns, lanes):
            column.markdown(f"**{LANE_LABELS[lane]}**")
            boxes[lane] = column.empty()

        def show(lane, ids, seconds):
            text = pair.tokenizer.decode(ids, skip_special_tokens=True)
            boxes[lane].markdown(f"⏱ {seconds * 1e3:.0f} ms · {len(ids)} tokens\n\n```\n{text}\n```")

        results = [run_lane(pair, prompt, settings, lane, show) for lane in lanes]
        state["race"] = (results, settings.sampling.greedy, pair.dtype)
    except SpecvizError as exc:
        st.error(str(exc))

if "race" in state:
    results, greedy, dtype = state["race"]
    plain = next(r for r in results if r.lane == "plain")
    st.dataframe(charts.lanes_frame(results, plain.output_ids if greedy else None), hide_index=True)
    if greedy and dtype != torch.float32:
        st.caption(f"In {str(dtype).removeprefix('torch.')}, {BF16_GREEDY_NOTE} (Precision is in the sidebar.)")
    if not greedy:
        st.caption("Sampling (temperature > 0): lanes draw different random numbers, so their texts differ; each follows the target's distribution.")
    left, right = st.columns(2)
    left.altair_chart(charts.arrivals_chart(results), width="stretch")
    right.altair_chart(charts.latency_chart(results), width="stretch")

st.subheader("K sweep")
st.write("specviz with the draft model at K = 1, 2, 4, 8: measured speedup over plain decoding, next to "
         "E(α, K) / (K·c + v(K)) with α from the run and c, v(K) measured on this machine.")  # fmt: skip
if st.button("Run the K sweep", disabled=controls.settings is None):
    try:
        pair = active_pair()
        settings = controls.settings
        with st.spinner("Measuring step costs…"):
            costs = measure_costs(pair, k_max=8, repeats=3)
        plain = run_lane(pair, prompt, settings, "plain")
        rows = []
        bar = st.progress(0.0)
        for i, k in enumerate((1, 2, 4, 8)):
            lane = run_lane(pair, prompt, replace(settings, k=k), "draft")
            alpha = lane.alpha or 0.0
            predicted = expected_tokens(alpha, k) / (k * costs.c + costs.verify_relative[k - 1])
            rows += [{"k": k, "kind": "measured", "speedup": lane.tokens_per_s / plain.tokens_per_s},
                     {"k": k, "kind": "predicted from measured costs", "speedup": predicted}]  # fmt: skip
            bar.progress((i + 1) / 4)
        state["sweep"] = rows
    except SpecvizError as exc:
        st.error(str(exc))
if "sweep" in state:
    st.altair_chart(charts.sweep_chart(state["sweep"]), width="stretch")
