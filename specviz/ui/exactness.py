"""The exactness lab's sections, drawn (pages/exactness.py puts them in order; the decisions and words are in
viz/exactness.py, the prose in assets/lessons/exactness.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from specviz.core import lab
from specviz.engine.loading.models import ASSETS
from specviz.errors import SpecvizError
from specviz.ui.controls import pair_or_error
from specviz.ui.limits import Limits
from specviz.ui.notes import show_note
from specviz.ui.render import check_prompt_cost, draw, show_table, show_text_table
from specviz.viz import exactness as words
from specviz.viz import lab_charts as charts
from specviz.viz.exactness import BUG_DRAFTS, PRESETS, SIDES, TREE_HOWS, rows_of, table_frame
from specviz.viz.tables import format_p

LESSON = json.loads((ASSETS / "lessons" / "exactness.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Shop:
    """The shop model as set: the tables' rows, K, the samples each way and the seed."""

    target_rows: tuple
    draft_rows: tuple
    k: int
    samples: int
    seed: int


@dataclass(frozen=True)
class RealPair:
    """The real pair's settings: prompt, samples, time budget, sampling, the speculative side and its exit layer."""

    prompt: str
    samples: int
    budget: int
    temperature: float
    top_k: int
    side: str
    exit_layer: int


@st.cache_data(show_spinner="Sampling and enumerating…", max_entries=32)
def shop(target_rows: tuple, draft_rows: tuple, k: int, samples: int, seed: int) -> lab.ShopExperiment:
    p, q = lab.chain_from_rows(target_rows, "target table"), lab.chain_from_rows(draft_rows, "draft table")
    return lab.shop_experiment(p, q, k=k, samples=samples, length=k + 1, seed=seed)


@st.cache_data(show_spinner="Checking every sampler variant…", max_entries=32)
def bugs(target_rows: tuple, draft_rows: tuple, k: int, samples: int, seed: int) -> tuple[pd.DataFrame, dict, list]:
    p, q = lab.chain_from_rows(target_rows, "target table"), lab.chain_from_rows(draft_rows, "draft table")
    checks = lab.bug_checks(p, q, k=k, samples=samples, length=k + 1, seed=seed)
    exact = {c.variant.key: c.exact.tolist() for c in checks}
    return (
        charts.bug_frame(checks),
        exact,
        lab.as_vector(lab.target_distribution(p, (), k + 1), len(lab.EVENTS), k + 1).tolist(),
    )


@st.cache_data(show_spinner="Enumerating and sampling every tree sampler…", max_entries=32)
def trees(target_rows: tuple, draft_rows: tuple, shape: tuple, samples: int, seed: int, extra: tuple) -> tuple:
    """The listed tree samplers (and `extra`, a combination of the switches, when one is chosen): frame, exact
    distributions, and p's."""
    p, q = lab.chain_from_rows(target_rows, "target table"), lab.chain_from_rows(draft_rows, "draft table")
    target, checks = lab.tree_checks(p, q, shape, samples=samples, seed=seed)
    if extra:
        checks += lab.tree_checks(p, q, shape, samples, seed + len(checks), [lab.tree_variant(*extra)])[1]
    return charts.tree_check_frame(checks), {c.variant.key: c.exact.tolist() for c in checks}, target.tolist()


def show_two_tokens() -> None:
    """p(A) and q(A) sliders, the flow of accepted and corrected mass, and the final distribution."""
    left, right = st.columns(2)
    p_a = left.slider("p(A): target", 0.0, 1.0, 0.7, 0.01, key="p_a")
    q_a = right.slider("q(A): draft", 0.0, 1.0, 0.9, 0.01, key="q_a")
    flow = lab.two_token_flow(p_a, q_a)
    chart_col, numbers_col = st.columns([3, 2])
    draw(chart_col, charts.flow_chart(flow))
    show_table(numbers_col, charts.flow_numbers(flow), key="flow_table", formats=charts.flow_formats(flow))
    cols = st.columns(3)
    cols[0].metric("Final P(A)", f"{flow.final[0]:.3f}")
    cols[1].metric("Final P(B)", f"{flow.final[1]:.3f}")
    cols[2].metric(
        "Rejected, then corrected", f"{flow.rejected_mass:.3f}", help="the mass drawn again from the residual"
    )


def show_shop_section() -> Shop:
    """The editable target and draft tables, K, samples and seed; then Monte Carlo against enumeration (the page stops
    with a message on a table that is not a chain)."""
    preset = st.selectbox("Draft preset", list(PRESETS), key="draft_preset")
    t_col, d_col = st.columns(2)
    t_col.markdown("**Target p** (row: previous event)")
    target_table = t_col.data_editor(table_frame(lab.SHOP_TARGET), key="target_table")
    d_col.markdown("**Draft q** (row: previous event)")
    draft_table = d_col.data_editor(table_frame(PRESETS[preset]), key=f"draft_table_{list(PRESETS).index(preset)}")
    k_col, n_col, s_col = st.columns(3)
    k = k_col.slider(
        "K (drafts per round)",
        1,
        4,
        2,
        key="lab_k",
        help="Sequences are K + 1 events long, so every round can draft K.",
    )
    samples = n_col.select_slider(
        "Samples each way", [2_000, 5_000, 10_000, 20_000, 50_000, 100_000], 20_000, key="lab_samples"
    )
    seed = s_col.number_input("Seed", 0, 10_000, 0, key="lab_seed")
    try:
        given = Shop(rows_of(target_table), rows_of(draft_table), k, samples, int(seed))
        experiment = shop(given.target_rows, given.draft_rows, given.k, given.samples, given.seed)
    except (SpecvizError, ValueError) as exc:
        st.error(str(exc))
        st.stop()
    show_shop_results(given, experiment)
    return given


def show_shop_results(given: Shop, experiment: lab.ShopExperiment) -> None:
    """Monte Carlo against enumeration on the shop model: the gaps, the χ² test, passes per 64 events."""
    alphas = lab.chain_alpha(*(lab.chain_from_rows(r) for r in (given.target_rows, given.draft_rows)))
    st.caption(words.alpha_words(alphas))
    cols = st.columns(3) + st.columns(2)
    cols[0].metric("Largest gap, sampled", f"{experiment.largest_gap:.3f}", help="plain vs speculative samples")
    cols[1].metric("Largest gap, exact", f"{experiment.largest_gap_exact:.1e}", help="by enumeration")
    cols[2].metric("χ², speculative vs exact p", format_p(experiment.chi2_spec.p_value), help="the samples' χ² p-value")
    cols[3].metric(
        "Verify passes per 64 events", f"{experiment.passes_per_64:.2f}", help="plain decoding: 64 target steps"
    )
    cols[4].metric("Draft acceptance fraction", f"{experiment.acceptance_fraction:.1%}")
    draw(st, charts.shop_chart(experiment))
    st.caption(LESSON["passes"])


def show_bugs(given: Shop) -> None:
    """One bug switch at a time against p, exactly and by χ², then every switch side by side."""
    bug_draft = st.radio("Draft for the bug switches", BUG_DRAFTS, horizontal=True, key="bug_draft")
    labels = {v.label: v.key for v in lab.VARIANTS}
    chosen = st.radio("Sampler", list(labels), horizontal=True, key="bug")
    bug_rows = words.draft_rows_for(bug_draft, given.draft_rows)
    frame, exact, target_vec = bugs(given.target_rows, bug_rows, given.k, given.samples, given.seed)
    row = frame.set_index("key").loc[labels[chosen]]
    cols = st.columns(4)
    cols[0].metric("TV distance from p (exact)", f"{row['tv']:.3g}")
    cols[1].metric(f"χ² ({given.samples:,} samples)", format_p(row["p_value"]))
    cols[2].metric("Verdict", str(row["verdict"]))
    cols[3].metric("Acceptance fraction", f"{row['acceptance']:.1%}")
    st.caption(words.variant_words(chosen, row["what"], row["seen in"]))
    draw(st, charts.variant_chart(lab.sequence_labels(given.k + 1), target_vec, exact[labels[chosen]], chosen))
    draw(st, charts.bug_chart(frame))
    show_text_table(st, frame.drop(columns=["key"]))  # its "What it does" and "Seen in" are sentences: wrapped


def show_trees(given: Shop) -> None:
    """A tree shape, how its children are drawn and the two negative controls; exact and χ² verdicts."""
    t1, t2, t3 = st.columns(3)
    shape_text = t1.selectbox(
        "Tree shape (children per depth)", [",".join(map(str, s)) for s in lab.TREE_SHAPES], index=3, key="tree_shape"
    )
    tree_draft = t2.radio("Draft", BUG_DRAFTS, key="tree_draft")
    tree_samples = t3.select_slider("Samples per sampler", [500, 1000, 2000, 5000], 1000, key="tree_samples")
    how = TREE_HOWS[st.radio("Children", list(TREE_HOWS), horizontal=True, key="tree_how")]
    w1, w2 = st.columns(2)
    no_residual = w1.toggle("Negative control: no residual update between siblings", key="tree_no_residual")
    soft_q = w2.toggle(
        "Negative control: soft q for top-b children",
        key="tree_soft_q",
        disabled=how != lab.TOP_B,
        help="Only top-b children are chosen deterministically; sampled children are always judged with their own q.",
    )
    variant = lab.tree_variant(how, not no_residual, soft_q)
    shape = tuple(int(b) for b in shape_text.split(","))
    tree_rows = words.draft_rows_for(tree_draft, given.draft_rows)
    extra = words.tree_extra(variant)
    tree_table, tree_exact, tree_target = trees(given.target_rows, tree_rows, shape, tree_samples, given.seed, extra)
    tree_row = tree_table.set_index("key").loc[variant.key]
    cols = st.columns(4)
    cols[0].metric("Tree: max |output − p| (exact)", f"{tree_row['max_abs_diff']:.1e}")
    cols[1].metric("Tree: TV from p (exact)", f"{tree_row['tv']:.3g}")
    cols[2].metric(f"Tree: χ² ({tree_samples:,} samples)", format_p(tree_row["p_value"]))
    cols[3].metric("Tree verdict", lab.pass_fail(tree_row["verdict"]))
    show_note(words.tree_verdict(tree_row["verdict"], tree_row["tv"], variant, len(shape)))
    draw(
        st,
        charts.variant_chart(lab.sequence_labels(len(shape) + 1), tree_target, tree_exact[variant.key], variant.label),
    )
    draw(st, charts.tree_check_chart(tree_table))
    show_table(st, tree_table.drop(columns=["key"]), key="tree_table")


def show_real_pair_inputs(limits: Limits) -> RealPair:
    """The prompt, samples, time budget, temperature, top-k, speculative side and exit layer, within public caps."""
    cap = words.caps(limits.max_lab_samples, limits.max_lab_seconds, limits.max_new_tokens, limits.max_k)
    prompt = st.text_input("Prompt", "def add(a, b):\n    return", key="real_prompt")
    c1, c2, c3, c4 = st.columns(4)
    real_n = c1.select_slider("Samples each way", list(cap.samples), cap.samples_default, key="real_samples")
    budget = c2.slider("Time budget (s)", 5, cap.longest_s, cap.budget_default, key="real_budget")
    temperature = c3.slider("Temperature", 0.1, 1.5, 1.0, 0.1, key="real_temperature")
    top_k = c4.number_input("Top-k (0 = off)", 0, 1000, 8, key="real_top_k")
    s1, s2 = st.columns([3, 1])
    side = s1.radio("Speculative side", list(SIDES), horizontal=True, key="real_side")
    exit_layer = s2.number_input(
        "Exit layer E", 1, 64, 6, key="real_exit_layer", help="for an early-exit side, and the early-exit check below"
    )
    return RealPair(prompt, real_n, budget, temperature, int(top_k), side, int(exit_layer))


def sample_real_pair(given: RealPair) -> None:
    """Sample the next two tokens plain and speculative on the loaded pair; keep what the page shows."""
    from specviz.core.sampling import SamplingSettings
    from specviz.engine.lab import two_token_samples  # engine imports wait for a click: the page opens fast

    pair = pair_or_error()
    if pair is None:
        return
    try:
        check_prompt_cost(pair, given.prompt)  # public mode's prompt-token cap: every sample reads the prompt
    except SpecvizError as exc:
        st.error(str(exc))
        return
    bar = st.progress(0.0, text="Sampling…")
    try:
        result = two_token_samples(
            pair,
            given.prompt,
            samples=given.samples,
            k=1,
            sampling=SamplingSettings(given.temperature, given.top_k),
            time_budget_s=float(given.budget),
            on_progress=lambda done, total: bar.progress(done / total, text=f"{done}/{total} runs each way"),
            exit_variant=SIDES[given.side],
            exit_layer=given.exit_layer,
        )
    except SpecvizError as exc:
        st.error(str(exc))
    else:
        st.session_state["real_result"] = words.real_result(result, pair.token_texts, given.side)
    finally:
        bar.empty()


def show_real_result(real: dict) -> None:
    """The kept real-pair result: the test's power, the χ² numbers, the verdict and the outcomes' chart."""
    for note in words.real_notes(real):
        show_note(note)
    cols = st.columns(3)
    cols[0].metric("Samples each way", f"{real['samples']}")
    cols[1].metric("χ², plain vs speculative", format_p(real["p_value"]), help="the two samples' χ² p-value")
    cols[2].metric("χ² statistic / dof", f"{real['statistic']:.1f} / {real['dof']}")
    st.write(words.real_verdict(real["p_value"]))
    draw(st, charts.real_pair_chart(real["rows"], "Most frequent next-two-token outcomes"))


def show_early_exit(given: RealPair) -> None:
    """Each early-exit variant's first token computed exactly in one target pass, on a click; then its table."""
    if st.button("Compute each exit's first token exactly (one target pass)", key="exit_run"):
        from specviz.core.sampling import SamplingSettings
        from specviz.engine.lab import exit_variants_at

        pair = pair_or_error()
        if pair is not None:
            try:
                check_prompt_cost(pair, given.prompt)
                sampling = SamplingSettings(given.temperature, given.top_k)
                checks = exit_variants_at(pair, given.prompt, given.exit_layer, sampling)
            except SpecvizError as exc:
                st.error(str(exc))
            else:
                st.session_state["exit_result"] = (given.exit_layer, charts.exit_frame(checks))
    if exit_result := st.session_state.get("exit_result"):
        shown_layer, frame = exit_result
        st.caption(words.exit_words(shown_layer))
        show_table(st, frame, key="exit_table")


def show_greedy(limits: Limits, prompt: str) -> None:
    """Plain greedy against speculative greedy on the loaded pair, and where they parted if they did."""
    cap = words.caps(limits.max_lab_samples, limits.max_lab_seconds, limits.max_new_tokens, limits.max_k)
    g1, g2 = st.columns(2)
    max_tokens = g1.slider("Tokens to generate", 8, cap.most_tokens, cap.tokens_default, 8, key="greedy_tokens")
    greedy_k = g2.slider("K (drafts per round)", 1, cap.k_top, cap.k_default, key="greedy_k")
    if st.button("Run plain greedy and speculative greedy", key="greedy_run"):
        pair = pair_or_error()
        if pair is not None:
            try:
                from specviz.engine.lab import greedy_equivalence

                check_prompt_cost(pair, prompt, limits)
                check = greedy_equivalence(pair, prompt, k=greedy_k, max_new_tokens=max_tokens)
            except SpecvizError as exc:
                st.error(str(exc))
            else:
                st.session_state["greedy_result"] = check
    greedy = st.session_state.get("greedy_result")
    if greedy is not None:
        show_note(words.greedy_note(greedy))
