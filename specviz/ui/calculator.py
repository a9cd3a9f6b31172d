"""The speedup calculator's sections, drawn (pages/calculator.py puts them in order; the decisions are in
measure/calculator.py, the prose in assets/lessons/calculator.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import streamlit as st

from specviz import methods
from specviz.core import tree_theory
from specviz.core.record import RunRecord
from specviz.core.roofline import HARDWARE, MODELS, LoadSettings, break_even_batch, load_curve, log_batches
from specviz.core.settings import DEFAULT_EXIT_LAYER, MAX_EXIT_LAYER
from specviz.core.theory import MAX_K, TheoryResult, VerifyCost, compare_positional, formulas, parse_rates
from specviz.engine.loading import models
from specviz.engine.loading.models import ASSETS
from specviz.errors import SpecvizError
from specviz.measure import calculator as policy
from specviz.measure import quantized_bits
from specviz.measure.calculator import TREE_RATES, TREE_VERIFY, VERIFY_MODES
from specviz.ui.controls import active_sources, pair_or_error, target_layers
from specviz.ui.notes import show_note
from specviz.ui.render import draw, show_table
from specviz.viz import theory_charts as charts

LESSON = json.loads((ASSETS / "lessons" / "calculator.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Inputs:
    """What the inputs section decided: the formulas' α, K, c, ĉ and verify cost."""

    alpha: float
    k: int
    c: float
    c_hat: float | None
    verify: VerifyCost


def c_drafters() -> list[str]:
    """The drafters whose c can be measured for the pair in use (the heads found beside its target, as the race)."""
    target, draft = active_sources()[:2]
    return policy.offered_drafters(bool(draft), models.find_heads(target, None))  # looked up now: tests replace it


def measure_now() -> None:
    """The Measure button: time the chosen drafter's step, a target step and the verify passes."""
    from specviz.engine.costs import measure_costs, timing_options

    pair = pair_or_error()
    if pair is None:
        return
    drafter = policy.chosen_drafter(st.session_state.get("c_drafter"), c_drafters())
    if drafter == methods.DRAFT and pair.draft is None:
        st.error("Measuring the draft model's c needs a draft model: pick a pair with a draft in the sidebar.")
        return
    bar = st.progress(0.0, text="Timing draft step, target step and verify passes…")
    try:
        costs = measure_costs(
            pair,
            on_progress=lambda done, total: bar.progress(done / total, text=f"round {done}/{total} of timings"),
            draft_vocab=pair.recommended_draft_vocab if pair.draft is not None else 0,  # as the other pages run it
            **timing_options(drafter, int(st.session_state.get("calc_exit_layer", DEFAULT_EXIT_LAYER))),
        )
    except SpecvizError as exc:
        st.error(str(exc))
        return
    finally:
        bar.empty()
    st.session_state["measured_costs"] = costs


def unset(key: str, default):
    """A widget's starting value, or None once its key holds one (the measured preset sets α, K and c: giving the
    widget a value too would make Streamlit warn)."""
    return None if key in st.session_state else default


def show_inputs() -> Inputs:
    """α, K and c sliders, ĉ, the verify-cost mode and, in the measured mode, the measurement: what the formulas use."""
    state = st.session_state
    show_bits_preset()
    left, middle, right = st.columns(3)
    alpha = left.slider("α (per-token acceptance probability)", 0.0, 1.0, unset("alpha", 0.8), 0.01, key="alpha")
    k = middle.slider("K (draft tokens per round)", 1, MAX_K, unset("k", 4), key="k")
    costs = state.get("measured_costs")
    offered = c_drafters()
    drafter = policy.chosen_drafter(state.get("c_drafter"), offered)
    drafter_c = policy.measured_c_of(costs, drafter)  # None: no usable measurement, or it did not time the drafter
    measured = policy.uses_measured_c(state.get("verify_mode"), state.get("use_measured_c", True), drafter_c)
    c = right.slider(
        policy.c_slider_label(drafter, drafter_c, measured),
        0.0,
        1.0,
        unset("c", 0.05),
        0.01,
        key="c",
        disabled=measured,  # the formulas below use the measured c, not this slider's value
    )
    with st.expander("Operations ratio ĉ (for the operations factor)"):
        c_hat_same = st.checkbox("ĉ = c", value=True, key="c_hat_same")
        c_hat = None if c_hat_same else st.slider("ĉ (draft ops / target ops)", 0.0, 1.0, 0.0, 0.01, key="c_hat")
    mode = st.radio("Verify cost v(K)", VERIFY_MODES, horizontal=True, key="verify_mode")
    per_token = 0.0
    if mode == VERIFY_MODES[1]:
        per_token = st.slider(
            "extra verify cost per drafted token (target steps)", 0.0, 0.3, 0.03, 0.01, key="per_token"
        )
    elif mode == VERIFY_MODES[2]:
        c = show_measured(costs, offered, drafter, k, c)
    return Inputs(alpha, k, c, c_hat, policy.verify_cost(mode, per_token, costs))


OWN_INPUTS, BITS_PRESET = "your own α and c", "the target at N bits (measured)"
PRESET_TARGET = "smollm2"  # the preset's measurements: the real target, float32, one thread (assets/bench)


@st.cache_data(show_spinner=False)
def recorded_machines() -> dict[str, tuple[quantized_bits.BitsPoint, ...]]:
    """The committed quantized benches per machine (assets/bench), read once per process."""
    return quantized_bits.recorded_bits(ASSETS / "bench", PRESET_TARGET)


@st.cache_data(show_spinner=False)
def first_machine() -> str:
    """The machine the preset starts on: one like this CPU (its kernel level as torch names it: AVX2, AVX512)."""
    import torch

    return quantized_bits.closest_machine(recorded_machines(), torch.backends.cpu.get_cpu_capability())


def recorded_points() -> tuple[quantized_bits.BitsPoint, ...]:
    """The measured points of the machine the preset shows (its radio's, else the one most like this CPU)."""
    machines = recorded_machines()
    if not machines:
        return ()
    chosen = st.session_state.get("calc_bits_machine")
    return machines[chosen if chosen in machines else first_machine()]


def apply_bits_preset() -> None:
    """The preset or its bits changed: α, K and c move to what the copy at those bits measured."""
    state = st.session_state
    if state.get("calc_preset") != BITS_PRESET:
        return
    point = next((p for p in recorded_points() if p.bits == state.get("calc_bits")), None)
    if point is not None:
        state["alpha"], state["k"], state["c"] = round(point.alpha, 2), min(point.k, MAX_K), round(point.c, 2)


def show_bits_preset() -> None:
    """The measured preset "the target at N bits": a bits knob that sets α, K and c to the bench's figures for
    smollm2's own copy at those bits, the α-by-bits chart, and the measured speedup beside the theory's."""
    points = recorded_points()
    if not points:
        return
    state = st.session_state
    pick, knob = st.columns([2, 1])
    preset = pick.radio(
        "Start from", (OWN_INPUTS, BITS_PRESET), horizontal=True, key="calc_preset", on_change=apply_bits_preset
    )
    if preset != BITS_PRESET:
        return
    machines = list(recorded_machines())
    if len(machines) > 1:  # each CPU's figures apart: the int4 kernel pays on one and not on another
        st.radio(
            "Measured on", machines, index=machines.index(first_machine()), horizontal=True,
            key="calc_bits_machine", on_change=apply_bits_preset,
        )  # fmt: skip
        points = recorded_points()
    knob.select_slider(
        "bits", [p.bits for p in reversed(points)], value=4 if any(p.bits == 4 for p in points) else points[0].bits,
        key="calc_bits", on_change=apply_bits_preset,
    )  # fmt: skip
    if "alpha" not in state or state.get("_bits_applied") != state.get("calc_bits"):
        state["_bits_applied"] = state.get("calc_bits")
        apply_bits_preset()
    point = next(p for p in points if p.bits == state.get("calc_bits"))
    st.caption(LESSON["bits_preset"].format(measured=quantized_bits.point_words(point)))
    draw(st, charts.bits_chart(points))


def show_measured(costs, offered: list[str], drafter: str, k: int, c: float) -> float:
    """The measured mode: whose c, the exit layer, the Measure button and what was measured; the c the formulas use."""
    st.caption(LESSON["measured"])
    pick, at_layer = st.columns([2, 1])
    pick.selectbox(
        "Whose c to measure",
        offered,
        index=offered.index(drafter),
        format_func=methods.label,
        key="c_drafter",
        help=LESSON["drafter_help"],
    )
    exit_layer = DEFAULT_EXIT_LAYER
    layers = target_layers(active_sources()[0])
    if methods.get(drafter).exits_early:
        top = max(1, (layers or MAX_EXIT_LAYER) - 1)
        exit_layer = at_layer.number_input("Exit layer E", 1, top, min(DEFAULT_EXIT_LAYER, top), key="calc_exit_layer")
    if missing := policy.not_offered_words(offered):
        st.caption(missing)
    st.button("Measure on this machine", key="measure", on_click=measure_now)
    show_note(policy.measurement_note(costs, drafter, exit_layer))
    if policy.usable(costs) is None:
        return c
    drafter_c = costs.c_of(drafter)
    cols = st.columns(4)
    cols[0].metric("Draft step", policy.draft_step_value(drafter_c, costs.step_s_of(drafter)))
    cols[1].metric("Target step", f"{costs.target_step_s * 1e3:.2f} ms")
    cols[2].metric("Measured c", "—" if drafter_c is None else f"{drafter_c:.3f}")
    cols[3].metric(f"Verify pass, K = {k}", f"{costs.verify_relative[k - 1]:.2f} target steps")
    if drafter_c is not None:
        st.caption(policy.whose_c(costs, drafter, layers))
    st.caption(policy.costs_caption(costs, drafter))
    if drafter_c is not None and st.checkbox("Use the measured c", value=True, key="use_measured_c"):
        c = drafter_c
    draw(st, charts.measured_costs_chart(costs.verify_relative, c))
    return c


def show_outputs(result: TheoryResult, verify: VerifyCost, k: int) -> None:
    """The six headline metrics, a warning when speculation loses, and the formulas with the numbers filled in."""
    cols = st.columns(3) + st.columns(3)
    cols[0].metric("Expected tokens per round", f"{result.expected_tokens:.3f}")
    cols[1].metric("Speedup (ideal verify)", f"{result.speedup_ideal:.2f}×")
    cols[2].metric("Speedup (with verify cost)", f"{result.speedup:.2f}×", help=verify.describe())
    cols[3].metric("Operations factor", f"{result.ops_factor:.2f}")
    cols[4].metric("Best K", f"{result.best_k}", help=f"speedup {result.best_speedup:.2f}× (K searched 1..{MAX_K})")
    be = result.break_even_alpha_at_k
    cols[5].metric(
        f"Break-even α at K = {k}",
        "none" if be is None else f"{be:.3f}",
        help=policy.break_even_help(k, MAX_K, result.break_even_alpha, result.break_even_k),
    )
    if result.speedup <= 1:
        st.warning(f"At these settings speculation is slower than plain decoding ({result.speedup:.2f}×).")
    f = formulas(result)
    order = ("expected_tokens", "speedup", "speedup_measured", "ops_factor", "best_k")
    order += ("break_even_alpha", "break_even_alpha_any_k")
    st.code("\n".join(f[name] for name in order), language=None)
    st.caption(LESSON["what_if"])


def rates_from_run() -> None:
    """The "take them from a run" button: per-position rates over four workload prompts at T = 1."""
    from specviz.core.sampling import SamplingSettings
    from specviz.core.settings import RunSettings
    from specviz.engine.decode import generate

    pair = pair_or_error()
    if pair is None:
        return
    lines = (ASSETS / "workloads" / "code.jsonl").read_text(encoding="utf-8").splitlines()
    prompts = [json.loads(line)["prompt"] for line in lines if line.strip()][:4]
    settings = RunSettings(k=st.session_state.get("k", 4), sampling=SamplingSettings(1.0), max_new_tokens=48)
    try:
        records = [RunRecord.of_trace(generate(pair, p, settings)) for p in prompts]
    except SpecvizError as exc:
        st.session_state["rates_error"] = str(exc)
        return
    rates = policy.rates_from_records(records)
    st.session_state["rates_text"] = rates.text
    st.session_state["rates_counts"] = (rates.text, rates.counts)  # valid while the text is unchanged
    st.session_state["rates_note"] = rates.note


def show_positional() -> None:
    """Per-position rates typed or taken from a run, against the i.i.d. formula at their mean."""
    st.session_state.setdefault("rates_text", "0.9, 0.8, 0.75, 0.7")
    rates_text = st.text_input(
        "Per-position acceptance rates α_1, α_2, … (conditional on reaching the position)", key="rates_text"
    )
    st.button(
        "Take them from a run on the loaded pair (workload prompts, T = 1)", key="rates_run", on_click=rates_from_run
    )
    if st.session_state.get("rates_error"):
        st.error(st.session_state.pop("rates_error"))
    if st.session_state.get("rates_note"):
        st.caption(st.session_state["rates_note"])
    try:
        run_text, run_counts = st.session_state.get("rates_counts", (None, None))
        comparison = compare_positional(parse_rates(rates_text), run_counts if rates_text == run_text else None)
    except SpecvizError as exc:
        st.error(str(exc))
        return
    p_cols = st.columns(3)
    p_cols[0].metric("E with per-position rates", f"{comparison.expected_tokens:.3f}")
    p_cols[1].metric(
        f"E i.i.d. at {comparison.alpha_label} = {comparison.mean_alpha:.3f}", f"{comparison.iid_expected_tokens:.3f}"
    )
    p_cols[2].metric("i.i.d. formula is off by", f"{comparison.relative_error:+.1%}")
    draw(st, charts.positional_chart(comparison))


def show_tree_inputs() -> tuple[str, tuple | None, str | None, VerifyCost]:
    """The tree's shape, its acceptance (one α with a decay, or typed rates) and its verify cost over the nodes."""
    shape_col, rates_col = st.columns(2)
    shape_text = shape_col.text_input(
        "Tree shape: children per depth (1,1,1,1 is the chain K = 4)", "3,2,1,1", key="tree_shape"
    )
    rates_mode = rates_col.radio("Acceptance", TREE_RATES, horizontal=True, key="tree_rates_mode")
    decayed, rates_source = None, None
    if rates_mode == TREE_RATES[0]:
        a_col, d_col = rates_col.columns(2)
        tree_alpha = a_col.slider("α of the first child", 0.0, 1.0, 0.7, 0.01, key="tree_alpha")
        decayed = (tree_alpha, d_col.slider("decay per younger sibling", 0.0, 1.0, 0.5, 0.05, key="tree_decay"))
    else:
        rates_source = rates_col.text_input(
            "Conditional rates a_1, a_2, … (child i accepted, given its elder siblings were rejected)",
            "0.7, 0.35, 0.2",
            key="tree_rates",
        )
    tree_mode = st.radio("Verify cost over the nodes", TREE_VERIFY, horizontal=True, key="tree_verify")
    tree_verify = VerifyCost.ideal()
    if tree_mode == TREE_VERIFY[1]:
        tree_verify = VerifyCost.linear(
            st.slider("extra verify cost per node (target steps)", 0.0, 0.3, 0.03, 0.01, key="tree_per_token")
        )
    elif tree_mode == TREE_VERIFY[2]:
        costs = st.session_state.get("measured_costs")
        show_note(policy.tree_verify_note(costs))
        if costs is not None:
            tree_verify = costs.verify_cost()
    return shape_text, decayed, rates_source, tree_verify


def show_tree_section(c: float) -> None:
    """A tree against the chains of the same nodes, the same depth and the best K, at the calculator's c."""
    shape_text, decayed, rates_source, tree_verify = show_tree_inputs()
    try:
        shape = tree_theory.parse_shape(shape_text)
        rates = (
            tree_theory.decayed_rates(*decayed, max(shape))
            if rates_source is None
            else tree_theory.check_rates(parse_rates(rates_source))
        )
        t = tree_theory.compare_tree(shape, rates, c, tree_verify)
    except SpecvizError as exc:
        st.error(str(exc))
    else:
        st.caption(
            f"Tree {','.join(map(str, shape))}: {t.tree.nodes} nodes, depth {t.tree.depth}; per-sibling rates "
            + ", ".join(f"{a:.3f}" for a in t.rates)
            + f"; the chains use α = a_1 = {t.rates[0]:.3f}; c = {c:.3f}."
        )
        e_cols = st.columns(3)
        e_cols[0].metric("E tokens/pass: tree", f"{t.tree.expected_tokens:.3f}")
        e_cols[1].metric(f"E: chain K = {t.same_nodes.nodes} (same nodes)", f"{t.same_nodes.expected_tokens:.3f}")
        e_cols[2].metric(f"E: chain K = {t.same_depth.nodes} (same depth)", f"{t.same_depth.expected_tokens:.3f}")
        s_cols = st.columns(4)
        s_cols[0].metric(
            "Speedup: tree", f"{t.tree.speedup:.2f}×", help=f"v({t.tree.nodes}) = {t.tree.verify_cost:.3f}"
        )
        s_cols[1].metric("Speedup: chain, same nodes", f"{t.same_nodes.speedup:.2f}×")
        s_cols[2].metric("Speedup: chain, same depth", f"{t.same_depth.speedup:.2f}×")
        s_cols[3].metric(f"Speedup: best chain (K = {t.best_chain.nodes})", f"{t.best_chain.speedup:.2f}×")
        (st.success if t.pays else st.warning)(t.verdict())
        draw(st, charts.tree_chart(t))
        shapes = dict.fromkeys(tree_theory.COMPARE_SHAPES + (shape,))
        show_table(st, tree_theory.shape_table(shapes, rates, c, tree_verify), key="tree_shapes_table")
        st.caption(LESSON["tree_assumes"].format(verify=tree_verify.describe()))
    st.markdown(policy.cpu_tree_words())


def show_load_section(alpha: float, k: int) -> None:
    """The roofline model: the modelled gain against the batch size for a chosen device and pair of model shapes."""
    h_col, t_col, d_col, ctx_col = st.columns(4)
    hardware = h_col.selectbox("Hardware", list(HARDWARE), index=list(HARDWARE).index("H200"), key="hardware")
    target = t_col.selectbox(
        "Target", list(MODELS), index=list(MODELS).index("8B (Llama-3-8B shape)"), key="target_model"
    )
    draft = d_col.selectbox(
        "Draft", list(MODELS), index=list(MODELS).index("1B (Llama-3.2-1B shape)"), key="draft_model"
    )
    context = ctx_col.select_slider("Context (tokens)", [256, 512, 1024, 2048, 4096, 8192, 16384], 512, key="context")
    try:
        load = LoadSettings(HARDWARE[hardware], MODELS[target], MODELS[draft], alpha, k, context)
        points = load_curve(load, log_batches(1024))
        crossover = break_even_batch(load)
    except SpecvizError as exc:
        st.error(str(exc))
        return
    l_cols = st.columns(3)
    l_cols[0].metric("Modelled gain at batch 1", f"{points[0].gain:.2f}×")
    l_cols[1].metric("Speculation stops paying at batch", "beyond 4096" if crossover is None else f"{crossover}")
    l_cols[2].metric("Gain at batch 256", f"{next(p.gain for p in points if p.batch == 256):.2f}×")
    draw(st, charts.load_chart(points, crossover, hardware))
    st.caption(LESSON["load_memory"])
