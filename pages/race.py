"""The race: the same prompt through plain decoding, specviz's speculative lanes and Hugging Face's, timed live."""

import streamlit as st

from specviz import methods
from specviz.engine.decode import forwards_run
from specviz.engine.models import ASSETS, HEAD_KINDS, find_heads
from specviz.errors import SpecvizError
from specviz.measure.bench import environment, headline, recorded_benches
from specviz.measure.lanes import refusal
from specviz.measure.race import (
    MAX_PICKED,
    RACE_TREES,
    SWEEP_KS,
    k_sweep,
    race,
    sweep_warnings,
    three_lanes,
    tree_label,
)
from specviz.measure.timing import (
    DISAGREES,
    REPEATS,
    against_bench,
    agreement_words,
    implausible_lanes,
    timing_words,
)
from specviz.ui.controls import active_pair, active_sources, exit_layer_fits, prompt_box, sidebar_controls
from specviz.ui.hall import in_the_hall, reporting
from specviz.ui.race_player import race_player
from specviz.ui.render import apply_lecture_mode, draw, page_header, show_table
from specviz.viz import race_charts as charts
from specviz.viz import run_notes
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
heads = find_heads(active_sources()[0], None)  # a feature head's lane is offered only where its head is
runnable = [lane for lane in methods.LANES if lane in heads or not methods.get(lane).loads_head]
if exit_refused := exit_layer_fits(controls.settings, active_sources()[0]):  # early exit's E beyond this target's
    runnable = [lane for lane in runnable if not methods.get(lane).exits_early]
    st.caption(exit_refused)
EVERY, THREE = "every lane offered", "up to three of my choice, beside plain"
picking = st.radio(
    "Race",
    [EVERY, THREE],
    horizontal=True,
    key="race_picking",
    help="Every lane (specviz's and Hugging Face's, the heads found beside the target) or the speculative lanes you "
    "pick, at most three, each beside plain decoding (always raced: the baseline of every speedup).",
)
if picking == EVERY:
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
    st.caption(
        f"{len(lanes)} of at most {MAX_PICKED} chosen"
        + (f": {', '.join(methods.lane_label(lane) for lane in lanes)}" if lanes else "")
        + ", each beside plain decoding. Remove one to choose another."
    )
missing = [lane for lane in methods.LANES if methods.get(lane).loads_head and lane not in heads]
if missing:
    names = [methods.label(lane) for lane in missing]
    listed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
    stages = " | ".join(HEAD_KINDS[lane].stage for lane in missing)
    st.caption(
        f"No {listed} sit beside this target, so the lanes that draft with them are not offered "
        f"(`python -m specviz train-tiny {stages}` trains them for the bundled target)."
    )
refused = {lane: refusal(lane, controls.settings) for lane in lanes if controls.settings}
for lane, why in refused.items():
    if why:
        st.caption(f"{methods.lane_label(lane)} is left out of this race. {why}")
lanes = [lane for lane in lanes if not refused.get(lane)]
if methods.PLAIN not in lanes:
    st.caption("Plain decoding is always raced too: it is the baseline every speedup is measured against.")
    lanes = [methods.PLAIN, *lanes]
TREE_CHOICES = {"no tree lane": ()} | {tree_label(shape): shape for shape in RACE_TREES}
tree_pick = st.radio("Add a draft-tree lane", list(TREE_CHOICES), horizontal=True, key="race_tree")
tree = TREE_CHOICES[tree_pick]
if tree and picking == THREE and len([lane for lane in lanes if lane != methods.PLAIN]) >= MAX_PICKED:
    st.warning(
        f"The tree lane would be a fourth speculative lane: remove one of the {MAX_PICKED} chosen above to race it, "
        "or choose no tree lane. It is left out of this race."
    )
    tree = ()
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

        @reporting
        def racing(report) -> object:  # in the lecture hall's pool; its reports go to the waiting page
            def advance(done: int, runs: int, lane: str) -> None:  # between runs only
                report(done / runs, f"decoded {done} of {runs} runs (last: {methods.lane_label(lane)})")

            return race(pair, prompt, settings, lanes, advance, tree)

        key = (active_sources(), prompt, settings, tuple(lanes), tree)
        raced = in_the_hall("race", key, racing, "race", cache=False)
        state["race"] = (raced, settings, environment(pair) | {"forward": forwards_run(pair, settings)})
    except SpecvizError as exc:
        st.error(str(exc))

if "race" in state:
    raced, raced_settings, env = state["race"]
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
        + " Tokens/s is each lane's median over the repeats (the playback shows that median repeat); speedup vs "
        "plain is the median of its per-repeat speedups (each against plain in the same repeat), with their range. "
        "Nothing was drawn while a lane decoded, so tokens/s here are the bench's for the same lane and settings. "
        + run_notes.forward_words(env.get("forward", {}))
    )
    doubts = implausible_lanes(results, raced.timings)
    if doubts:
        st.warning("Some lanes' speedups are not to be trusted: " + "; ".join(doubts) + ".")
    if methods.DRAFT in raced.timings:
        draft = raced.timings[methods.DRAFT]
        bench = against_bench(
            draft.speedup,
            draft.interval,
            env,
            raced_settings.k,
            raced_settings.draft_vocab,
            raced_settings.sampling.temperature,
            recorded_benches(ASSETS / "bench"),
        )
        (st.warning if bench.verdict == DISAGREES else st.caption)(f"The draft-model lane: {agreement_words(bench)}")
    if greedy and dtype != "float32":
        st.caption(f"In {str(dtype).removeprefix('torch.')}, {BF16_GREEDY_NOTE} (Precision is in the sidebar.)")
    if not greedy:
        st.caption(
            "Sampling (temperature > 0): lanes draw different random numbers, so their texts differ; "
            "each follows the target's distribution."
        )
    left, right = st.columns(2) if charts.side_by_side(results) else (st, st)  # many lanes: each the page's width
    draw(left, charts.arrivals_chart(results))
    draw(right, charts.latency_chart(results))

st.subheader("K sweep")
st.write(
    f"specviz with the draft model at K = {', '.join(map(str, SWEEP_KS))}: measured speedup over plain decoding, "
    "next to τ / (K·c + v(K)) with τ from each run and c, v(K) timed on this machine."
)
if st.button("Run the K sweep", disabled=controls.settings is None):
    try:
        pair, settings = active_pair(), controls.settings
        sweep = reporting(lambda report: k_sweep(pair, prompt, settings, on_progress=report))
        state["sweep"] = in_the_hall("k_sweep", (active_sources(), prompt, settings), sweep, "K sweep", cache=False)
    except SpecvizError as exc:
        st.error(str(exc))
if "sweep" in state:
    sweep = state["sweep"]
    if sweep.costs.implausible:
        st.warning(f"No prediction is drawn: {sweep.costs.implausible}")
    doubts = sweep_warnings(sweep, state["race"][0] if "race" in state else None)
    if doubts:
        st.warning("Some sweep points are not to be trusted: " + "; ".join(doubts) + ".")
    draw(st, charts.sweep_chart(sweep.rows))
    st.caption(sweep.words())

st.subheader("Measured with the bench on this project's machines")
recorded = recorded_benches(ASSETS / "bench")
if recorded:
    show_table(st, [headline(doc) for doc in recorded])
    st.caption(
        "From `python -m specviz bench` (JSON in assets/bench, each with its environment; a file named prose ran the "
        "prose workload, the others the held-out code prompts): greedy, the specviz draft lane at its best K, its "
        "speedup the median over prompts and repeats of each run's speed over plain's run of the same prompt and "
        "repeat. A speed names its CPU: run the bench on yours, and the race above on your prompt."
    )
