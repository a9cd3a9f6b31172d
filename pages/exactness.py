"""Exactness lab: the two-token example, the shop model with exact enumeration, bug switches, trees, the real pair."""

import json

import pandas as pd
import streamlit as st

from specviz.core import lab
from specviz.engine.models import ASSETS
from specviz.errors import SpecvizError
from specviz.ui.controls import model_sidebar, pair_or_error
from specviz.ui.limits import Limits
from specviz.ui.render import apply_lecture_mode, draw, page_header, show_table, show_text_table
from specviz.viz import lab_charts as charts
from specviz.viz.tables import format_p

LIMITS = Limits.from_env()

LESSON = json.loads((ASSETS / "lessons" / "exactness.json").read_text(encoding="utf-8"))
PRESETS = {"the seed's draft (close to the target)": lab.SHOP_DRAFT, "a poor draft": lab.POOR_DRAFT}
BUG_DRAFTS = ("a poor draft (every bias easy to see)", "the draft table above")
TREE_HOWS = {v.label: v.how for v in lab.TREE_VARIANTS[:3]}

page_header("Exactness lab", LESSON["teaching_point"])
apply_lecture_mode(model_sidebar())


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


def rows_of(frame: pd.DataFrame) -> tuple:
    return tuple(tuple(float(x) for x in row) for row in frame.to_numpy().tolist())


def table_frame(rows) -> pd.DataFrame:
    return pd.DataFrame([list(r) for r in rows], index=list(lab.ROWS), columns=list(lab.EVENTS))


# ---- the two-token example -------------------------------------------------------------------------------------------
st.header("1. Two tokens")
st.caption(LESSON["two_token"])
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
cols[2].metric("Rejected, then corrected", f"{flow.rejected_mass:.3f}", help="the mass drawn again from the residual")

# ---- the shop model --------------------------------------------------------------------------------------------------
st.header("2. The shop model: Monte Carlo vs enumeration")
st.caption(LESSON["shop"])
preset = st.selectbox("Draft preset", list(PRESETS), key="draft_preset")
t_col, d_col = st.columns(2)
t_col.markdown("**Target p** (row: previous event)")
target_table = t_col.data_editor(table_frame(lab.SHOP_TARGET), key="target_table")
d_col.markdown("**Draft q** (row: previous event)")
draft_table = d_col.data_editor(table_frame(PRESETS[preset]), key=f"draft_table_{list(PRESETS).index(preset)}")
k_col, n_col, s_col = st.columns(3)
k = k_col.slider(
    "K (drafts per round)", 1, 4, 2, key="lab_k", help="Sequences are K + 1 events long, so every round can draft K."
)
samples = n_col.select_slider(
    "Samples each way", [2_000, 5_000, 10_000, 20_000, 50_000, 100_000], 20_000, key="lab_samples"
)
seed = s_col.number_input("Seed", 0, 10_000, 0, key="lab_seed")

try:
    target_rows, draft_rows = rows_of(target_table), rows_of(draft_table)
    experiment = shop(target_rows, draft_rows, k, samples, int(seed))
except (SpecvizError, ValueError) as exc:
    st.error(str(exc))
    st.stop()

alphas = lab.chain_alpha(*(lab.chain_from_rows(r) for r in (target_rows, draft_rows)))
st.caption("α = Σ min(p, q) after each event: " + " · ".join(f"{n} {a:.2f}" for n, a in zip(lab.ROWS, alphas)))
cols = st.columns(3) + st.columns(2)
cols[0].metric("Largest gap, sampled", f"{experiment.largest_gap:.3f}", help="plain vs speculative samples")
cols[1].metric("Largest gap, exact", f"{experiment.largest_gap_exact:.1e}", help="by enumeration")
cols[2].metric("χ², speculative vs exact p", format_p(experiment.chi2_spec.p_value), help="the samples' χ² p-value")
cols[3].metric("Verify passes per 64 events", f"{experiment.passes_per_64:.2f}", help="plain decoding: 64 target steps")
cols[4].metric("Draft acceptance fraction", f"{experiment.acceptance_fraction:.1%}")
draw(st, charts.shop_chart(experiment))
st.caption(
    "64 / passes is a count of sequential target passes, not a wall-clock speedup: it ignores the draft's cost and "
    "the verify pass being dearer than one step."
)

# ---- bug switches ----------------------------------------------------------------------------------------------------
st.header("3. Bug switches")
st.caption(f"{charts.switches_words()} {LESSON['bugs']}")
bug_draft = st.radio("Draft for the bug switches", BUG_DRAFTS, horizontal=True, key="bug_draft")
bug_rows = rows_of(table_frame(lab.POOR_DRAFT)) if bug_draft == BUG_DRAFTS[0] else draft_rows
labels = {v.label: v.key for v in lab.VARIANTS}
chosen = st.radio("Sampler", list(labels), horizontal=True, key="bug")
frame, exact, target_vec = bugs(target_rows, bug_rows, k, samples, int(seed))
row = frame.set_index("key").loc[labels[chosen]]
cols = st.columns(4)
cols[0].metric("TV distance from p (exact)", f"{row['tv']:.3g}")
cols[1].metric(f"χ² ({samples:,} samples)", format_p(row["p_value"]))
cols[2].metric("Verdict", str(row["verdict"]))
cols[3].metric("Acceptance fraction", f"{row['acceptance']:.1%}")
st.caption(f"{chosen}: {row['what']}." + (f" Where: {row['seen in']}." if row["seen in"] else ""))
draw(st, charts.variant_chart(lab.sequence_labels(k + 1), target_vec, exact[labels[chosen]], chosen))
draw(st, charts.bug_chart(frame))
show_text_table(st, frame.drop(columns=["key"]))  # its "What it does" and "Seen in" are sentences: wrapped

# ---- trees -----------------------------------------------------------------------------------------------------------
st.header("4. Trees: several children per node")
st.caption(LESSON["tree"])


@st.cache_data(show_spinner="Enumerating and sampling every tree sampler…", max_entries=32)
def trees(target_rows: tuple, draft_rows: tuple, shape: tuple, samples: int, seed: int, extra: tuple) -> tuple:
    """The listed tree samplers (and `extra`, a combination of the switches, when one is chosen): frame, exact
    distributions, and p's."""
    p, q = lab.chain_from_rows(target_rows, "target table"), lab.chain_from_rows(draft_rows, "draft table")
    target, checks = lab.tree_checks(p, q, shape, samples=samples, seed=seed)
    if extra:
        checks += lab.tree_checks(p, q, shape, samples, seed + len(checks), [lab.tree_variant(*extra)])[1]
    return charts.tree_check_frame(checks), {c.variant.key: c.exact.tolist() for c in checks}, target.tolist()


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
tree_rows = rows_of(table_frame(lab.POOR_DRAFT)) if tree_draft == BUG_DRAFTS[0] else draft_rows
listed = variant.key in lab.TREE_VARIANTS_BY_KEY
extra = () if listed else (variant.how, variant.update_residual, variant.soft_q_for_top_b)
tree_table, tree_exact, tree_target = trees(target_rows, tree_rows, shape, tree_samples, int(seed), extra)
tree_row = tree_table.set_index("key").loc[variant.key]
cols = st.columns(4)
cols[0].metric("Tree: max |output − p| (exact)", f"{tree_row['max_abs_diff']:.1e}")
cols[1].metric("Tree: TV from p (exact)", f"{tree_row['tv']:.3g}")
cols[2].metric(f"Tree: χ² ({tree_samples:,} samples)", format_p(tree_row["p_value"]))
cols[3].metric("Tree verdict", lab.pass_fail(tree_row["verdict"]))
tree_why = f"{variant.label}: {variant.why}."
if tree_row["verdict"] == lab.EXACT_VERDICT:
    st.success(f"Exact to 1e-9 over {len(shape) + 1}-event sequences. {tree_why}")
else:
    st.warning(f"Not exact: the output is {tree_row['tv']:.3g} in total variation away from p. {tree_why}")
draw(st, charts.variant_chart(lab.sequence_labels(len(shape) + 1), tree_target, tree_exact[variant.key], variant.label))
draw(st, charts.tree_check_chart(tree_table))
show_table(st, tree_table.drop(columns=["key"]), key="tree_table")

# ---- the real pair ---------------------------------------------------------------------------------------------------
st.header("5. On the loaded model pair")
st.caption(LESSON["real_pair"])


prompt = st.text_input("Prompt", "def add(a, b):\n    return", key="real_prompt")
c1, c2, c3, c4 = st.columns(4)
sample_choices = [n for n in (50, 100, 200, 300, 500, 1000, 2000) if n <= LIMITS.max_lab_samples]  # public caps
real_n = c1.select_slider("Samples each way", sample_choices, min(300, sample_choices[-1]), key="real_samples")
longest = max(5, min(120, LIMITS.max_lab_seconds))
budget = c2.slider("Time budget (s)", 5, longest, min(30, longest), key="real_budget")
temperature = c3.slider("Temperature", 0.1, 1.5, 1.0, 0.1, key="real_temperature")
top_k = c4.number_input("Top-k (0 = off)", 0, 1000, 8, key="real_top_k")
SIDES = {"the draft model": None} | {v.label: v.key for v in lab.EXIT_VARIANTS}  # who drafts, on the real target
s1, s2 = st.columns([3, 1])
side = s1.radio("Speculative side", list(SIDES), horizontal=True, key="real_side")
exit_layer = s2.number_input(
    "Exit layer E", 1, 64, 6, key="real_exit_layer", help="for an early-exit side, and the early-exit check below"
)
st.caption(
    "Each speculative run drafts one token and judges it against p: accepted, the target's pass adds the second token "
    "as a bonus; rejected, a correction from the residual is the first token and a plain step the second. With two "
    "tokens a round can only ever draft one, so K is 1 here; the greedy check below takes any K."
)

if st.button("Sample the next two tokens, plain and speculative", key="real_run"):
    from specviz.core.sampling import SamplingSettings
    from specviz.engine.lab import two_token_samples  # engine imports wait for a click: the page opens fast

    pair = pair_or_error()
    if pair is not None:
        bar = st.progress(0.0, text="Sampling…")
        try:
            result = two_token_samples(
                pair,
                prompt,
                samples=real_n,
                k=1,
                sampling=SamplingSettings(temperature, int(top_k)),
                time_budget_s=float(budget),
                on_progress=lambda done, total: bar.progress(done / total, text=f"{done}/{total} runs each way"),
                exit_variant=SIDES[side],
                exit_layer=int(exit_layer),
            )
        except SpecvizError as exc:
            st.error(str(exc))
        else:
            st.session_state["real_result"] = {
                "samples": result.samples,
                "requested": result.requested,
                "p_value": result.chi2.p_value,
                "dof": result.chi2.dof,
                "statistic": result.chi2.statistic,
                "stopped_early": result.stopped_early,
                "elapsed_s": result.elapsed_s,
                "rows": result.table(pair.token_texts),
                "side": side,
            }
        finally:
            bar.empty()

real = st.session_state.get("real_result")
if real:
    requested = real.get("requested", real["samples"])
    power = charts.power_note(real["samples"], requested, real["dof"], real["stopped_early"])
    (st.warning if real["stopped_early"] else st.caption)(power)
    if real["dof"] < 1:
        st.warning("Too few samples for a test: every outcome is rare. Raise the samples, or lower top-k.")
    st.caption(f"Speculative side: {real.get('side', 'the draft model')}.")
    cols = st.columns(3)
    cols[0].metric("Samples each way", f"{real['samples']}")
    cols[1].metric("χ², plain vs speculative", format_p(real["p_value"]), help="the two samples' χ² p-value")
    cols[2].metric("χ² statistic / dof", f"{real['statistic']:.1f} / {real['dof']}")
    differ = real["p_value"] <= charts.REAL_PAIR_LEVEL
    verdict = "the two samples differ" if differ else "no difference detected"
    st.write(
        f"Verdict: **{verdict}** ({format_p(real['p_value'])}; an exact sampler gives p < 0.001 one time in a "
        "thousand)."
    )
    draw(st, charts.real_pair_chart(real["rows"], "Most frequent next-two-token outcomes"))

st.subheader("Early exit: leave out the final norm")
st.caption(LESSON["early_exit"])
if st.button("Compute each exit's first token exactly (one target pass)", key="exit_run"):
    from specviz.core.sampling import SamplingSettings
    from specviz.engine.lab import exit_variants_at

    pair = pair_or_error()
    if pair is not None:
        try:
            checks = exit_variants_at(pair, prompt, int(exit_layer), SamplingSettings(temperature, int(top_k)))
        except SpecvizError as exc:
            st.error(str(exc))
        else:
            st.session_state["exit_result"] = (int(exit_layer), charts.exit_frame(checks))
if exit_result := st.session_state.get("exit_result"):
    shown_layer, frame = exit_result
    st.caption(
        f"At E = {shown_layer}, the prompt's next token: the chance the draft is kept, and the total variation "
        "between the first committed token's distribution and p (exact, in float64; an exact sampler's is rounding)."
    )
    show_table(st, frame, key="exit_table")

st.subheader("Greedy equivalence")
st.caption(LESSON["greedy"])
g1, g2 = st.columns(2)
most_tokens = max(8, min(128, LIMITS.max_new_tokens))
max_tokens = g1.slider("Tokens to generate", 8, most_tokens, min(48, most_tokens), 8, key="greedy_tokens")
greedy_k = g2.slider("K (drafts per round)", 1, min(8, LIMITS.max_k), min(4, LIMITS.max_k), key="greedy_k")
if st.button("Run plain greedy and speculative greedy", key="greedy_run"):
    pair = pair_or_error()
    if pair is not None:
        try:
            from specviz.engine.lab import greedy_equivalence

            check = greedy_equivalence(pair, prompt, k=greedy_k, max_new_tokens=max_tokens)
        except SpecvizError as exc:
            st.error(str(exc))
        else:
            st.session_state["greedy_result"] = check


def divergence_text(check) -> str:
    """Where the two paths parted, and whether their own logits put that within the precision's rounding."""
    head = (
        f"diverged at output token {check.first_divergence + 1}: plain {check.plain_token!r} vs speculative "
        f"{check.speculative_token!r}"
    )
    if check.within_rounding is None:
        return head + " (one path stopped at EOS there)."
    margins = (
        f"; the plain path's pass put its token ahead by {check.plain_margin:.2e} logits, the verify pass put the "
        f"other ahead by {check.speculative_margin:.2e}: the two passes moved those logits "
        f"{check.plain_margin + check.speculative_margin:.2e} apart, against {check.tolerance:.2e} = "
        f"{check.rounding_ulps} units in the last place of {check.dtype} at their size"
    )
    if check.within_rounding:
        return head + margins + ". Within rounding: passes of different shapes round differently; not a bug."
    return head + margins + ". Wider than rounding can explain: a bug."


greedy = st.session_state.get("greedy_result")
if greedy is not None:
    if greedy.identical:
        st.success(f"identical: {len(greedy.plain_ids)} tokens, token for token (K = {greedy.k}).")
    else:
        st.error(divergence_text(greedy))
