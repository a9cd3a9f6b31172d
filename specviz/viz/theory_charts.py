"""Frames and Altair charts for the speedup calculator (pure: no streamlit)."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from specviz.core.roofline import LoadPoint
from specviz.core.theory import IDEAL, MAX_K, PositionalComparison, VerifyCost, best_k, expected_tokens, speedup
from specviz.core.tree_theory import TreeComparison
from specviz.measure.quantized_bits import BitsPoint
from specviz.viz.layout import band_height

HEATMAP_ALPHAS = tuple(round(0.05 * i, 2) for i in range(2, 20)) + (0.97, 0.99)  # 0.10 .. 0.95, then 0.97, 0.99
PLAIN_COLOR = "#424242"  # = ORIGIN_COLORS["target"]: plain decoding
SPEC_COLOR = "#1565c0"
BREAK_EVEN_COLOR = "#D55E00"


def curve_alphas(alpha: float, others: Sequence[float] = (0.5, 0.7, 0.9)) -> list[float]:
    """The chosen α plus a few reference values (without duplicates), sorted."""
    return sorted({round(alpha, 4), *others})


def speedup_frame(
    alphas: Sequence[float], c: float, verify: VerifyCost = IDEAL, k_max: int = MAX_K, chosen_alpha: float | None = None
) -> pd.DataFrame:
    """One row per (α, K): E, the ideal speedup and the speedup with the verify cost model."""
    k_max = min(k_max, verify.k_max)
    rows = []
    for a in alphas:
        for k in range(1, k_max + 1):
            rows.append(
                {
                    "alpha": a,
                    "alpha_label": f"α = {a:g}"
                    + (" (chosen)" if chosen_alpha is not None and abs(a - chosen_alpha) < 1e-9 else ""),
                    "k": k,
                    "expected_tokens": expected_tokens(a, k),
                    "speedup_ideal": speedup(a, k, c),
                    "verify_cost": verify(k),
                    "speedup": speedup(a, k, c, verify(k)),
                }
            )
    return pd.DataFrame(rows)


def speedup_vs_k_chart(frame: pd.DataFrame, current_k: int, title: str = "Speedup vs K") -> alt.LayerChart:
    """Lines of speedup over K, one per α, with S = 1 (break-even) and the chosen K marked."""
    base = alt.Chart(frame)
    lines = base.mark_line(point=True).encode(
        x=alt.X("k:O", title="K (draft tokens per round)"),
        y=alt.Y("speedup:Q", title="speedup over plain decoding (×)"),
        color=alt.Color("alpha_label:N", title="acceptance rate"),
        tooltip=[
            alt.Tooltip("alpha:Q", title="α"),
            alt.Tooltip("k:O", title="K"),
            alt.Tooltip("expected_tokens:Q", title="E tokens/round", format=".3f"),
            alt.Tooltip("verify_cost:Q", title="v(K)", format=".3f"),
            alt.Tooltip("speedup:Q", title="speedup", format=".3f"),
            alt.Tooltip("speedup_ideal:Q", title="speedup (ideal verify)", format=".3f"),
        ],
    )
    one = (
        alt.Chart(pd.DataFrame({"speedup": [1.0]}))
        .mark_rule(color=BREAK_EVEN_COLOR, strokeDash=[4, 4])
        .encode(y="speedup:Q", tooltip=[alt.Tooltip("speedup:Q", title="break-even")])
    )
    chosen = (
        alt.Chart(pd.DataFrame({"k": [current_k]}))
        .mark_rule(color="black", opacity=0.4)
        .encode(x="k:O", tooltip=[alt.Tooltip("k:O", title="chosen K")])
    )
    return (lines + one + chosen).properties(title=title, height=300)


def heatmap_frame(
    c: float, verify: VerifyCost = IDEAL, alphas: Sequence[float] = HEATMAP_ALPHAS, k_max: int = MAX_K
) -> pd.DataFrame:
    frame = speedup_frame(alphas, c, verify, k_max)
    best = {a: best_k(a, c, verify, k_max)[0] for a in alphas}
    frame["best"] = [best[a] == k for a, k in zip(frame["alpha"], frame["k"])]
    return frame


def heatmap_chart(frame: pd.DataFrame, alpha: float, k: int, title: str = "Speedup over α × K") -> alt.LayerChart:
    """Cells coloured by speedup (diverging at 1), the best K per α as a black diamond, the current (α, K) as a black
    ring (the lesson's caption names both)."""
    low, high = float(frame["speedup"].min()), float(frame["speedup"].max())
    domain = [min(low, 0.99), 1.0, max(high, 1.01)]
    alpha_order = sorted(frame["alpha"].unique(), reverse=True)
    base = alt.Chart(frame)
    cells = base.mark_rect().encode(
        x=alt.X("k:O", title="K (draft tokens per round)"),
        y=alt.Y("alpha:O", title="acceptance rate α", sort=alpha_order),
        color=alt.Color(
            "speedup:Q", title="speedup", scale=alt.Scale(domain=domain, range=["#D55E00", "#f5f5f5", "#0072B2"])
        ),
        tooltip=[
            alt.Tooltip("alpha:O", title="α"),
            alt.Tooltip("k:O", title="K"),
            alt.Tooltip("speedup:Q", title="speedup", format=".3f"),
            alt.Tooltip("best:N", title="best K for this α"),
        ],
    )
    best = (
        base.transform_filter("datum.best")
        .mark_point(shape="diamond", filled=True, color="black", size=60)
        .encode(
            x="k:O",
            y=alt.Y("alpha:O", sort=alpha_order),
            tooltip=[alt.Tooltip("alpha:O", title="α"), alt.Tooltip("k:O", title="best K")],
        )
    )
    nearest = min(frame["alpha"].unique(), key=lambda a: abs(a - alpha))
    here = (
        alt.Chart(pd.DataFrame({"alpha": [nearest], "k": [k], "label": [f"you: α≈{nearest:g}, K={k}"]}))
        .mark_point(shape="circle", size=220, filled=False, stroke="black", strokeWidth=2)  # a black ring
        .encode(x="k:O", y=alt.Y("alpha:O", sort=alpha_order), tooltip=["label:N"])
    )
    return (cells + best + here).properties(title=title, height=360)


def expected_tokens_chart(alpha: float, k_max: int = MAX_K, current_k: int | None = None) -> alt.LayerChart:
    """E(α, K) against K, with the ceiling K + 1 (every draft accepted)."""
    rows = []
    for k in range(1, k_max + 1):
        rows.append({"k": k, "series": f"E at α = {alpha:g}", "tokens": expected_tokens(alpha, k)})
        rows.append({"k": k, "series": "K + 1 (all accepted)", "tokens": float(k + 1)})
    frame = pd.DataFrame(rows)
    lines = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("k:O", title="K (draft tokens per round)"),
            y=alt.Y("tokens:Q", title="expected tokens per round"),
            color=alt.Color("series:N", title=None, scale=alt.Scale(range=[SPEC_COLOR, "#9e9e9e"])),
            tooltip=[alt.Tooltip("k:O", title="K"), "series:N", alt.Tooltip("tokens:Q", format=".3f")],
        )
    )
    chart = lines
    if current_k is not None:
        chart = lines + alt.Chart(pd.DataFrame({"k": [current_k]})).mark_rule(color="black", opacity=0.4).encode(
            x="k:O"
        )
    limit = 1 / (1 - alpha) if alpha < 1 else None
    title = (
        f"Expected tokens per round (limit 1/(1 − α) = {limit:.2f} as K grows)"
        if limit
        else "Expected tokens per round"
    )
    return chart.properties(title=title, height=260)


def positional_frame(comparison: PositionalComparison) -> pd.DataFrame:
    """Per position: the rate, the chance of reaching and passing it (product so far), and the i.i.d. version."""
    rows, survive, survive_iid = [], 1.0, 1.0
    for i, a in enumerate(comparison.alphas, start=1):
        survive *= a
        survive_iid *= comparison.mean_alpha
        rows.append({"position": i, "series": "per-position rates", "rate": a, "passes": survive})
        iid = f"i.i.d. at {comparison.alpha_label} = {comparison.mean_alpha:.3f}"
        rows.append({"position": i, "series": iid, "rate": comparison.mean_alpha, "passes": survive_iid})
    return pd.DataFrame(rows)


def positional_chart(comparison: PositionalComparison) -> alt.Chart:
    """P(draft i is accepted) = Π_{j≤i} α_j for the measured rates and for the i.i.d. assumption; E is 1 + the sum."""
    frame = positional_frame(comparison)
    series = list(dict.fromkeys(frame["series"]))  # measured first (green), i.i.d. second (grey)
    title = (
        f"E = 1 + Σ Π α_j = {comparison.expected_tokens:.3f} vs i.i.d. {comparison.iid_expected_tokens:.3f} "
        f"({comparison.relative_error:+.1%})"
    )
    return (
        alt.Chart(frame, title=title)
        .mark_bar()
        .encode(
            x=alt.X("position:O", title="draft position i"),
            xOffset=alt.XOffset("series:N"),
            y=alt.Y("passes:Q", title="P(drafts 1..i all accepted)", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("series:N", title=None, scale=alt.Scale(domain=series, range=["#0072B2", "#9e9e9e"])),
            tooltip=[
                "position:O",
                "series:N",
                alt.Tooltip("rate:Q", title="α_i", format=".3f"),
                alt.Tooltip("passes:Q", format=".3f"),
            ],
        )
        .properties(height=240)
    )


def load_frame(points: Sequence[LoadPoint]) -> pd.DataFrame:
    rows = []
    for pt in points:
        for series, tps in (("plain decoding", pt.plain_tokens_s), ("speculative", pt.spec_tokens_s)):
            rows.append(
                {
                    "batch": pt.batch,
                    "series": series,
                    "tokens_s": tps,
                    "gain": pt.gain,
                    "compute_bound": pt.verify_compute_bound,
                    "fits": pt.fits,
                }
            )
    return pd.DataFrame(rows)


def load_chart(points: Sequence[LoadPoint], break_even: int | None, hardware: str) -> alt.LayerChart:
    """Modelled total tokens/s against concurrency, plain vs speculative, with the batch where speculation stops
    paying."""
    frame = load_frame(points)
    lines = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("batch:Q", title="concurrent sequences (batch)", scale=alt.Scale(type="log", base=2)),
            y=alt.Y("tokens_s:Q", title="tokens/s, all sequences (model)", scale=alt.Scale(type="log")),
            color=alt.Color(
                "series:N",
                title=None,
                scale=alt.Scale(domain=["plain decoding", "speculative"], range=[PLAIN_COLOR, SPEC_COLOR]),
            ),
            opacity=alt.condition("datum.fits", alt.value(1.0), alt.value(0.35)),
            tooltip=[
                "batch:Q",
                "series:N",
                alt.Tooltip("tokens_s:Q", title="tokens/s", format=",.0f"),
                alt.Tooltip("gain:Q", title="speculative / plain", format=".2f"),
                alt.Tooltip("compute_bound:N", title="verify pass compute-bound"),
                alt.Tooltip("fits:N", title="fits in memory"),
            ],
        )
    )
    title = f"A roofline model on {hardware}: " + (
        f"speculation stops paying at batch ≈ {break_even}"
        if break_even
        else "speculation still pays at every batch shown"
    )
    chart = lines
    if break_even:
        chart = lines + alt.Chart(pd.DataFrame({"batch": [break_even]})).mark_rule(
            color=BREAK_EVEN_COLOR, strokeDash=[4, 4]
        ).encode(x="batch:Q", tooltip=[alt.Tooltip("batch:Q", title="break-even batch")])
    return chart.properties(title=title, height=300)


def measured_costs_frame(verify_relative: Sequence[float], c: float) -> pd.DataFrame:
    """v(K) measured vs the ideal 1, per K."""
    rows = []
    for k, v in enumerate(verify_relative, start=1):
        rows.append({"k": k, "series": "measured v(K)", "cost": v})
        rows.append({"k": k, "series": "ideal v(K) = 1", "cost": 1.0})
        rows.append({"k": k, "series": "K·c (drafting)", "cost": k * c})
    return pd.DataFrame(rows)


def measured_costs_chart(verify_relative: Sequence[float], c: float) -> alt.Chart:
    """The measured verify cost and the drafting cost per round, in target steps."""
    title = "Measured costs on this machine (in target steps)"
    return (
        alt.Chart(measured_costs_frame(verify_relative, c), title=title)
        .mark_line(point=True)
        .encode(
            x=alt.X("k:O", title="K (draft tokens per round)"),
            y=alt.Y("cost:Q", title="cost (one target step = 1)"),
            color=alt.Color("series:N", title=None),
            tooltip=[alt.Tooltip("k:O", title="K"), "series:N", alt.Tooltip("cost:Q", format=".3f")],
        )
        .properties(height=240)
    )


def tree_frame(comparison: TreeComparison) -> pd.DataFrame:
    """One row per way of filling a target pass: the tree and the three chains it is compared with."""
    plans = (comparison.tree, comparison.same_nodes, comparison.same_depth, comparison.best_chain)
    return pd.DataFrame(
        [
            {
                "plan": plan.label,
                "kind": "tree" if plan is comparison.tree else "chain",
                "nodes": plan.nodes,
                "draft_forwards": plan.depth,
                "expected_tokens": plan.expected_tokens,
                "verify_cost": plan.verify_cost,
                "round_cost": plan.round_cost,
                "speedup": plan.speedup,
            }
            for plan in plans
        ]
    )


def tree_chart(comparison: TreeComparison) -> alt.LayerChart:
    """Predicted speedup of the tree and of the chains, with S = 1 marked; tooltips carry E and the round's cost."""
    frame = tree_frame(comparison)
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("plan:N", title=None, sort=list(frame["plan"]), axis=alt.Axis(labelLimit=260)),  # names whole
            x=alt.X("speedup:Q", title="predicted speedup over plain decoding (×)"),
            color=alt.Color(
                "kind:N", title=None, scale=alt.Scale(domain=["tree", "chain"], range=[SPEC_COLOR, PLAIN_COLOR])
            ),
            tooltip=[
                "plan:N",
                alt.Tooltip("nodes:Q", title="nodes verified"),
                alt.Tooltip("draft_forwards:Q", title="draft forwards"),
                alt.Tooltip("expected_tokens:Q", title="E tokens/pass", format=".3f"),
                alt.Tooltip("verify_cost:Q", title="v(nodes)", format=".3f"),
                alt.Tooltip("round_cost:Q", title="round cost (target steps)", format=".3f"),
                alt.Tooltip("speedup:Q", format=".3f"),
            ],
        )
    )
    rule = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(color=BREAK_EVEN_COLOR, strokeDash=[4, 3]).encode(x="x:Q")
    title = "Tree vs chains: predicted speedup (dashed: break-even)"
    return (bars + rule).properties(title=title, height=band_height(len(frame)))


def verify_curve_frame(doc: dict) -> pd.DataFrame:
    """One row per target and K of a specviz.verify-curve document (measure/verify_curve.py)."""
    rows = []
    for target in doc["targets"]:
        series = f"{target['pair']} ({target['weight_bytes'] / 1e6:,.0f} MB)"  # short: the legend shares the width
        for k, v in enumerate(target["verify_cost"], start=1):
            rows.append({"k": k, "target": series, "cost": v, "ideal": 1.0})
    return pd.DataFrame(rows)


def verify_curve_chart(doc: dict) -> alt.LayerChart:
    """v(K) for K = 1..16 of every target on one chart, against the memory-bound ideal v(K) = 1 (a pass over K + 1
    tokens streams the weights once, as a step does) and the compute-bound K + 1."""
    frame = verify_curve_frame(doc)
    title = f"v(K) in plain steps (bandwidth {doc['bandwidth_gb_s']:.1f} GB/s measured)"
    base = alt.Chart(frame)
    lines = base.mark_line(point=True).encode(
        x=alt.X("k:O", title="K (drafts verified in one pass)"),
        y=alt.Y("cost:Q", title="v(K) (one plain step = 1)"),
        color=alt.Color("target:N", title=None),
        tooltip=["target:N", alt.Tooltip("k:O", title="K"), alt.Tooltip("cost:Q", title="v(K)", format=".2f")],
    )
    ideal = base.mark_rule(strokeDash=[4, 4], color="gray").encode(y="mean(ideal):Q")
    return (lines + ideal).properties(height=260, title=title)  # on the layer: lecture mode sizes its title


def verify_curve_words(doc: dict) -> str:
    """One sentence on what the curves show, from their own numbers."""
    parts = [
        f"{t['pair']} v(8) = {t['verify_cost'][7]:.2f} with {t['weight_bytes'] / 1e6:,.0f} MB a step "
        f"(plain {t['tokens_per_s']:.1f} tokens/s, {t['fraction_of_bound']:.0%} of the "
        f"{t['bound_tokens_per_s']:.0f} tokens/s that bandwidth / weight bytes allows)"
        for t in doc["targets"]
    ]
    return (
        "A pass over K + 1 tokens streams the weights once, as one plain step does, so where a step is bound by "
        "memory bandwidth verifying K drafts costs far less than K steps (the dashed line: v(K) = 1); measured here: "
        + "; ".join(parts)
        + ". Where weights are few the step is mostly per-step overhead, and v(K) follows that instead."
    )


def bits_frame(points: Sequence[BitsPoint]) -> pd.DataFrame:
    """One row per bits of the target's quantized copy: α, c and the speedup measured at its best K."""
    return pd.DataFrame(
        [
            {
                "bits": f"{p.bits} bits",
                "alpha": p.alpha,
                "c": p.c,
                "k": p.k,
                "speedup": p.speedup,
                "label": f"α {p.alpha:.2f} · {p.speedup:.2f}×",
            }
            for p in points
        ]
    )


def bits_chart(points: Sequence[BitsPoint]) -> alt.LayerChart:
    """α of the target's own copy by bits, each bar labelled with the speedup it measured: where fewer bits stop
    paying (the draft's q drifts from p, so α falls, while 3 and 2 bits run at 4-bit speed)."""
    frame = bits_frame(points)
    order = list(frame["bits"])
    base = alt.Chart(frame).encode(
        x=alt.X("bits:N", sort=order, title="the draft: the target's own weights at", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("alpha:Q", title="α (per-token acceptance)", scale=alt.Scale(domain=[0, 1.1])),
        tooltip=[
            "bits:N",
            alt.Tooltip("alpha:Q", title="α", format=".3f"),
            alt.Tooltip("c:Q", title="c", format=".3f"),
            alt.Tooltip("k:O", title="best K"),
            alt.Tooltip("speedup:Q", title="measured speedup", format=".2f"),
        ],
    )
    bars = base.mark_bar(color=SPEC_COLOR, size=48)
    labels = base.mark_text(dy=-8, fontSize=13).encode(text="label:N")
    return (bars + labels).properties(title="α by bits, measured · the label adds the speedup", height=260)
