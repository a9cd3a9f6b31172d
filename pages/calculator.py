"""Speedup calculator: expected tokens, speedup (ideal and with the verify cost measured here), best K, break-even α."""

import json

import streamlit as st

from specviz import methods
from specviz.core import stats, tree_theory
from specviz.core.record import RunRecord
from specviz.core.roofline import HARDWARE, MODELS, LoadSettings, break_even_batch, load_curve, log_batches
from specviz.core.settings import DEFAULT_EXIT_LAYER, MAX_EXIT_LAYER
from specviz.core.theory import (
    MAX_K,
    TheoryInputs,
    VerifyCost,
    analyse,
    best_k_table,
    compare_positional,
    cost_examples_table,
    expected_tokens_table,
    formulas,
    leviathan_table,
    parse_rates,
)
from specviz.engine.costs import C_DRAFTERS
from specviz.engine.models import ASSETS, find_heads
from specviz.errors import SpecvizError
from specviz.ui.controls import active_sources, model_sidebar, pair_or_error, target_layers
from specviz.ui.render import apply_lecture_mode, draw, page_header, show_table
from specviz.ui.verify_curve import show_verify_curve
from specviz.viz import theory_charts as charts

LESSON = json.loads((ASSETS / "lessons" / "calculator.json").read_text(encoding="utf-8"))
VERIFY_MODES = ("ideal (one target step)", "linear model", "measured on this machine")
TREE_VERIFY = ("flat in the nodes (GPU-like)", "grows with the nodes (linear)", "measured on this machine")
TREE_RATES = ("one α with a decay per sibling", "per-sibling rates")

page_header("Speedup calculator", LESSON["teaching_point"])
apply_lecture_mode(model_sidebar())


def c_drafters() -> list[str]:
    """The drafters whose c can be measured for the pair in use: the draft model where it has one, the feature heads
    found beside its target (as the race finds them), early exit, and the lookups (c = 0)."""
    target, draft = active_sources()[:2]
    heads = find_heads(target, None)
    offered = [
        m
        for m in C_DRAFTERS
        if (m == methods.DRAFT and draft) or m in heads or not (m == methods.DRAFT or methods.get(m).loads_head)
    ]
    return offered


def chosen_drafter(offered: list[str]) -> str:
    """Whose c the measured mode uses (read before its picker is drawn): the picker's choice, else the first offered."""
    picked = st.session_state.get("c_drafter")
    return picked if picked in offered else offered[0]


def measure_now() -> None:
    from specviz.engine.costs import measure_costs, timing_options

    pair = pair_or_error()
    if pair is None:
        return
    drafter = chosen_drafter(c_drafters())
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


def state_says_measured_c() -> bool:
    """Whether the measured mode is on with "Use the measured c" ticked (read before those widgets are drawn)."""
    state = st.session_state
    return state.get("verify_mode") == VERIFY_MODES[2] and state.get("use_measured_c", True)


def whose_c(costs, drafter: str, exit_layer: int) -> str:
    """What the measured c of `drafter` is a ratio of, in words (early exit: beside E/L, what it should be near)."""
    name = methods.label(drafter)
    cost = methods.get(drafter).draft_cost
    if cost == methods.HOST_LOOKUP:
        return f"c of {name}: 0, a search over tokens already known on the host, no model run"
    if cost == methods.MEDUSA_HEADS_PASS:
        return f"c of the {name}: one pass of all {costs.medusa_heads} heads / {costs.medusa_heads} / one target step"
    if cost == methods.EXIT_LAYERS_STEP:
        layers = target_layers(active_sources()[0])
        ratio = f" (E/L = {costs.exit_layer}/{layers} = {costs.exit_layer / layers:.2f})" if layers else ""
        return f"c of {name} at E = {costs.exit_layer}: its first E layers + LM head / one target step{ratio}"
    if cost == methods.FEATURE_HEAD_STEP:
        return f"c of the {name}: one head step (its layer + an LM head) / one target step"
    return f"c of the {name}: one draft step / one target step"


# ---- inputs ----------------------------------------------------------------------------------------------------------
st.caption(LESSON["inputs"])
left, middle, right = st.columns(3)
alpha = left.slider("α (per-token acceptance probability)", 0.0, 1.0, 0.8, 0.01, key="alpha")
k = middle.slider("K (draft tokens per round)", 1, MAX_K, 4, key="k")
costs = st.session_state.get("measured_costs")
usable = costs if costs is not None and not costs.implausible else None  # a busy machine's timings are never used
offered = c_drafters()
drafter = chosen_drafter(offered)
drafter_c = usable.c_of(drafter) if usable is not None else None  # None: this measurement did not time it
measured_c = drafter_c is not None and state_says_measured_c()
used = f": the {methods.label(drafter)}'s measured {drafter_c:.3f} is used" if measured_c else ""
c = right.slider(
    f"c (draft step / target step){used}",
    0.0,
    1.0,
    0.05,
    0.01,
    key="c",
    disabled=measured_c,  # the formulas below use the measured c, not this slider's value
)
with st.expander("Operations ratio ĉ (for the operations factor)"):
    c_hat_same = st.checkbox("ĉ = c", value=True, key="c_hat_same")
    c_hat = None if c_hat_same else st.slider("ĉ (draft ops / target ops)", 0.0, 1.0, 0.0, 0.01, key="c_hat")

mode = st.radio("Verify cost v(K)", VERIFY_MODES, horizontal=True, key="verify_mode")
verify = VerifyCost.ideal()
if mode == VERIFY_MODES[1]:
    per_token = st.slider("extra verify cost per drafted token (target steps)", 0.0, 0.3, 0.03, 0.01, key="per_token")
    verify = VerifyCost.linear(per_token)
elif mode == VERIFY_MODES[2]:
    st.caption(LESSON["measured"])
    pick, at_layer = st.columns([2, 1])
    pick.selectbox(
        "Whose c to measure",
        offered,
        index=offered.index(drafter),
        format_func=methods.label,
        key="c_drafter",
        help="The drafter whose step the formulas' c is: the draft model, a feature head beside the target "
        "(EAGLE-1, EAGLE-3, Medusa), early exit at E (c near E/L), or a lookup (n-gram, suffix: c = 0).",
    )
    exit_layer = DEFAULT_EXIT_LAYER
    if methods.get(drafter).exits_early:
        layers = target_layers(active_sources()[0]) or MAX_EXIT_LAYER
        exit_layer = at_layer.number_input(
            "Exit layer E", 1, max(1, layers - 1), min(DEFAULT_EXIT_LAYER, max(1, layers - 1)), key="calc_exit_layer"
        )
    missing = [m for m in C_DRAFTERS if m not in offered]
    if missing:
        st.caption(
            f"Not offered for this pair: {', '.join(methods.label(m) for m in missing)} (no draft model, or no such "
            "head beside the target: `python -m specviz train-tiny` trains the bundled target's heads)."
        )
    st.button("Measure on this machine", key="measure", on_click=measure_now)
    if costs is None:
        st.warning("No measurement yet: press the button. Until then the ideal verify cost is used.")
    elif usable is None:
        st.warning(
            f"These timings cannot be true: {costs.implausible} Until a measurement holds, the ideal verify cost and "
            "the c slider are used."
        )
    else:
        verify = costs.verify_cost()
        if drafter_c is None:
            st.warning(
                f"This measurement did not time the {methods.label(drafter)}'s step: press Measure again to time it. "
                "Until then the c slider is used (the verify cost is measured)."
            )
        elif methods.get(drafter).exits_early and costs.exit_layer != exit_layer:
            st.caption(f"Measured at E = {costs.exit_layer}: press Measure again for E = {exit_layer}.")
        step_s = costs.step_s_of(drafter)
        cols = st.columns(4)
        cols[0].metric(
            "Draft step",
            "no model run" if drafter_c == 0 else "not timed" if step_s is None else f"{step_s * 1e3:.2f} ms",
        )
        cols[1].metric("Target step", f"{costs.target_step_s * 1e3:.2f} ms")
        cols[2].metric("Measured c", "—" if drafter_c is None else f"{drafter_c:.3f}")
        cols[3].metric(f"Verify pass, K = {k}", f"{costs.verify_relative[k - 1]:.2f} target steps")
        if drafter_c is not None:
            st.caption(whose_c(costs, drafter, exit_layer))
        trimmed = (
            f" · draft proposing from its {costs.draft_vocab} most frequent tokens (the whole draft: c = "
            f"{costs.untrimmed_c:.3f})"
            if costs.draft_vocab and drafter == methods.DRAFT
            else ""
        )
        st.caption(
            f"{costs.target_name} ← {costs.draft_name} · {costs.device} · {costs.dtype} · median of {costs.repeats}"
            + trimmed
        )
        if drafter_c is not None and st.checkbox("Use the measured c", value=True, key="use_measured_c"):
            c = drafter_c
        draw(st, charts.measured_costs_chart(costs.verify_relative, c))

try:
    inputs = TheoryInputs(alpha=alpha, k=k, c=c, c_hat=c_hat, verify=verify)
    result = analyse(inputs)
except SpecvizError as exc:
    st.error(str(exc))
    st.stop()

# ---- outputs ---------------------------------------------------------------------------------------------------------
cols = st.columns(3) + st.columns(3)
cols[0].metric("Expected tokens per round", f"{result.expected_tokens:.3f}")
cols[1].metric("Speedup (ideal verify)", f"{result.speedup_ideal:.2f}×")
cols[2].metric("Speedup (with verify cost)", f"{result.speedup:.2f}×", help=verify.describe())
cols[3].metric("Operations factor", f"{result.ops_factor:.2f}")
cols[4].metric("Best K", f"{result.best_k}", help=f"speedup {result.best_speedup:.2f}× (K searched 1..{MAX_K})")
be, be_any = result.break_even_alpha_at_k, result.break_even_alpha
cols[5].metric(
    f"Break-even α at K = {k}",
    "none" if be is None else f"{be:.3f}",
    help=f"the α at which K = {k} breaks even, S(α, {k}) = 1: above it this K pays. Over every K = 1..{MAX_K} the "
    + ("smallest is none: no K pays" if be_any is None else f"smallest is {be_any:.3f}, at K = {result.break_even_k}"),
)
if result.speedup <= 1:
    st.warning(f"At these settings speculation is slower than plain decoding ({result.speedup:.2f}×).")
f = formulas(result)
order = ("expected_tokens", "speedup", "speedup_measured", "ops_factor", "best_k")
order += ("break_even_alpha", "break_even_alpha_any_k")
st.code("\n".join(f[name] for name in order), language=None)
st.caption(
    "What-if formulas: they assume K drafts every round, each accepted with the same probability α. Measured runs "
    "(the race, your workload, the bench) predict from what they measured instead: τ / (drafts per round · c + v), "
    "since a lookup may draft fewer than K and acceptance varies by position."
)

st.caption(LESSON["charts"])
chart_left, chart_right = st.columns(2)
frame = charts.speedup_frame(charts.curve_alphas(alpha), c, verify, chosen_alpha=alpha)
draw(chart_left, charts.speedup_vs_k_chart(frame, k))
draw(chart_right, charts.expected_tokens_chart(alpha, MAX_K, k))
draw(st, charts.heatmap_chart(charts.heatmap_frame(c, verify), alpha, k))

st.subheader("The memory-bound lesson: v(K) measured on both targets")
show_verify_curve()

# ---- tables ----------------------------------------------------------------------------------------------------------
st.subheader("Reference tables")
st.caption(LESSON["tables"])
t_left, t_right = st.columns(2)
show_table(t_left, leviathan_table(), key="table1")
show_table(t_right, best_k_table(), key="best_k_table")
st.caption(LESSON["seed_tables"])
s_left, s_right = st.columns([1, 2])
show_table(s_left, expected_tokens_table(4), key="k4_table")
show_table(s_right, cost_examples_table(), key="cost_table")

# ---- non-uniform acceptance ------------------------------------------------------------------------------------------
st.subheader("Non-uniform acceptance")
st.caption(LESSON["positional"])


def rates_from_run() -> None:
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
    rates, counts = stats.conditional_rates(records)
    st.session_state["rates_text"] = ", ".join(f"{r:.3f}" for r in rates)
    st.session_state["rates_counts"] = (st.session_state["rates_text"], counts)  # valid while the text is unchanged
    st.session_state["rates_note"] = (
        f"From {len(prompts)} workload prompts at T = 1: drafts reaching each position {list(counts)}."
    )


st.session_state.setdefault("rates_text", "0.9, 0.8, 0.75, 0.7")
rates_text = st.text_input(
    "Per-position acceptance rates α_1, α_2, … (conditional on reaching the position)", key="rates_text"
)
st.button("Take them from a run on the loaded pair (workload prompts, T = 1)", key="rates_run", on_click=rates_from_run)
if st.session_state.get("rates_error"):
    st.error(st.session_state.pop("rates_error"))
if st.session_state.get("rates_note"):
    st.caption(st.session_state["rates_note"])
try:
    run_text, run_counts = st.session_state.get("rates_counts", (None, None))
    comparison = compare_positional(parse_rates(rates_text), run_counts if rates_text == run_text else None)
except SpecvizError as exc:
    st.error(str(exc))
else:
    p_cols = st.columns(3)
    p_cols[0].metric("E with per-position rates", f"{comparison.expected_tokens:.3f}")
    p_cols[1].metric(
        f"E i.i.d. at {comparison.alpha_label} = {comparison.mean_alpha:.3f}", f"{comparison.iid_expected_tokens:.3f}"
    )
    p_cols[2].metric("i.i.d. formula is off by", f"{comparison.relative_error:+.1%}")
    draw(st, charts.positional_chart(comparison))

# ---- trees ---------------------------------------------------------------------------------------------------------
st.subheader("Trees: several guesses per position")
st.caption(LESSON["tree"])
shape_col, rates_col = st.columns(2)
shape_text = shape_col.text_input(
    "Tree shape: children per depth (1,1,1,1 is the chain K = 4)", "3,2,1,1", key="tree_shape"
)
rates_mode = rates_col.radio("Acceptance", TREE_RATES, horizontal=True, key="tree_rates_mode")
if rates_mode == TREE_RATES[0]:
    a_col, d_col = rates_col.columns(2)
    tree_alpha = a_col.slider("α of the first child", 0.0, 1.0, 0.7, 0.01, key="tree_alpha")
    decay = d_col.slider("decay per younger sibling", 0.0, 1.0, 0.5, 0.05, key="tree_decay")
    rates_source = None
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
    if costs is None:
        st.warning("No measurement yet: choose 'measured on this machine' above and press Measure. Flat until then.")
    else:
        tree_verify = costs.verify_cost()
        st.caption(
            f"Measured for up to {costs.k_max} drafted tokens; larger trees extend the measured costs along their "
            "least-squares line (an extrapolation, not a measurement)."
        )
try:
    shape = tree_theory.parse_shape(shape_text)
    rates = (
        tree_theory.decayed_rates(tree_alpha, decay, max(shape))
        if rates_source is None
        else tree_theory.check_rates(parse_rates(rates_source))
    )
    tree_cmp = tree_theory.compare_tree(shape, rates, c, tree_verify)
except SpecvizError as exc:
    st.error(str(exc))
else:
    t = tree_cmp
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
    s_cols[0].metric("Speedup: tree", f"{t.tree.speedup:.2f}×", help=f"v({t.tree.nodes}) = {t.tree.verify_cost:.3f}")
    s_cols[1].metric("Speedup: chain, same nodes", f"{t.same_nodes.speedup:.2f}×")
    s_cols[2].metric("Speedup: chain, same depth", f"{t.same_depth.speedup:.2f}×")
    s_cols[3].metric(f"Speedup: best chain (K = {t.best_chain.nodes})", f"{t.best_chain.speedup:.2f}×")
    (st.success if t.pays else st.warning)(t.verdict())
    draw(st, charts.tree_chart(t))
    shapes = dict.fromkeys(tree_theory.COMPARE_SHAPES + (shape,))
    show_table(st, tree_theory.shape_table(shapes, rates, c, tree_verify), key="tree_shapes_table")
    st.caption(
        "What the model assumes: a child's acceptance depends only on its place among its siblings (not on the depth "
        "or the parent's token); a draft forward over all the nodes of one depth costs one draft step c; the verify "
        f"pass over N nodes costs v(N) ({tree_verify.describe()})."
    )
st.markdown(
    f"**Measured on this CPU** ({tree_theory.CPU_TREE_MEASUREMENT}), τ = tokens per target pass: "
    + "; ".join(f"{name} {tau:.2f}" for name, tau in tree_theory.CPU_TREE_TAU)
    + f". The wider trees commit more tokens per pass, but there was {tree_theory.CPU_TREE_WALL}: each extra node "
    "makes the verify pass dearer on a CPU."
)

# ---- load and batching -----------------------------------------------------------------------------------------------
st.subheader("Under load: a roofline model")
st.caption(LESSON["load"])
h_col, t_col, d_col, ctx_col = st.columns(4)
hardware = h_col.selectbox("Hardware", list(HARDWARE), index=list(HARDWARE).index("H200"), key="hardware")
target = t_col.selectbox("Target", list(MODELS), index=list(MODELS).index("8B (Llama-3-8B shape)"), key="target_model")
draft = d_col.selectbox("Draft", list(MODELS), index=list(MODELS).index("1B (Llama-3.2-1B shape)"), key="draft_model")
context = ctx_col.select_slider("Context (tokens)", [256, 512, 1024, 2048, 4096, 8192, 16384], 512, key="context")
try:
    load = LoadSettings(HARDWARE[hardware], MODELS[target], MODELS[draft], alpha, k, context)
    points = load_curve(load, log_batches(1024))
    crossover = break_even_batch(load)
except SpecvizError as exc:
    st.error(str(exc))
else:
    l_cols = st.columns(3)
    l_cols[0].metric("Modelled gain at batch 1", f"{points[0].gain:.2f}×")
    l_cols[1].metric("Speculation stops paying at batch", "beyond 4096" if crossover is None else f"{crossover}")
    l_cols[2].metric("Gain at batch 256", f"{next(p.gain for p in points if p.batch == 256):.2f}×")
    draw(st, charts.load_chart(points, crossover, hardware))
    st.caption(
        "Faded points do not fit in one device's memory (weights and both KV caches at full context). Long contexts "
        "make every pass read a lot of KV cache, which keeps it memory-bound: then speculation keeps paying longer."
    )
