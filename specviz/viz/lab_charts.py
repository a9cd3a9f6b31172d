"""Frames and Altair charts for the exactness lab (pure: no streamlit)."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from specviz.core.chisq import detectable_tv
from specviz.core.lab import (
    CLASSIC,
    DETECTED_VERDICT,
    EXACT_VERDICT,
    TYPICAL,
    UNSEEN_VERDICT,
    VARIANTS,
    BugCheck,
    ShopExperiment,
    TreeCheck,
    TwoTokenFlow,
    Variant,
    sequence_labels,
    verdict,
)
from specviz.viz.layout import UPRIGHT_ROOM, band_height, category_axis
from specviz.viz.palette import ORIGIN_COLORS, ORIGIN_LABELS

SOURCE_COLORS = {
    ORIGIN_LABELS["accepted"]: ORIGIN_COLORS["accepted"],
    ORIGIN_LABELS["correction"]: ORIGIN_COLORS["correction"],
}
SERIES_COLORS = {"exact target p": "#6a1b9a", "plain samples": "#9e9e9e", "speculative samples": "#1565c0"}


def flow_frame(flow: TwoTokenFlow) -> pd.DataFrame:
    """Per token: mass emitted as an accepted draft and as a correction (stacked, they make the final probability)."""
    rows = []
    for i, token in enumerate(flow.tokens):
        for origin, mass in (("accepted", flow.accepted[i]), ("correction", flow.corrected[i])):
            rows.append(
                {
                    "token": token,
                    "source": ORIGIN_LABELS[origin],
                    "mass": mass,
                    "p": flow.p[i],
                    "q": flow.q[i],
                    "accept_prob": flow.accept_prob[i],
                    "residual": flow.residual[i],
                    "final": flow.final[i],
                    "order": 0 if origin == "accepted" else 1,
                }
            )
    return pd.DataFrame(rows)


def flow_chart(flow: TwoTokenFlow) -> alt.LayerChart:
    """Stacked bars: accepted-draft mass + correction mass per token, with p marked: the stack reaches p exactly."""
    frame = flow_frame(flow)
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("token:N", title="token", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("mass:Q", title="probability of being emitted", stack="zero", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "source:N",
                title="emitted as",
                scale=alt.Scale(domain=list(SOURCE_COLORS), range=list(SOURCE_COLORS.values())),
            ),
            order=alt.Order("order:Q"),
            tooltip=[
                "token:N",
                "source:N",
                alt.Tooltip("mass:Q", format=".4f"),
                alt.Tooltip("q:Q", title="q(x)", format=".3f"),
                alt.Tooltip("accept_prob:Q", title="min(1, p/q)", format=".4f"),
                alt.Tooltip("residual:Q", title="residual(x)", format=".4f"),
                alt.Tooltip("final:Q", title="final", format=".4f"),
            ],
        )
    )
    targets = pd.DataFrame({"token": list(flow.tokens), "p": list(flow.p)})
    p_marks = (
        alt.Chart(targets)
        .mark_tick(color="black", thickness=3, size=60)
        .encode(x="token:N", y="p:Q", tooltip=["token:N", alt.Tooltip("p:Q", title="target p(x)", format=".4f")])
    )
    title = alt.TitleParams(
        "Accepted drafts + corrections = p", subtitle=f"α = Σ min(p, q) = {flow.alpha:.3f}; black tick = p"
    )
    return (bars + p_marks).properties(title=title, height=260)


def shop_frame(exp: ShopExperiment, top: int = 16) -> pd.DataFrame:
    """The `top` most likely sequences: exact target p, plain and speculative frequencies."""
    labels = sequence_labels(exp.length)
    order = exp.exact_target.argsort(descending=True)[:top].tolist()
    rows = []
    for rank, i in enumerate(order):
        for series, value in (
            ("exact target p", exp.exact_target[i]),
            ("plain samples", exp.plain_freq[i]),
            ("speculative samples", exp.spec_freq[i]),
        ):
            rows.append(
                {
                    "sequence": labels[i],
                    "rank": rank,
                    "series": series,
                    "prob": float(value),
                    "exact_spec": float(exp.exact_spec[i]),
                }
            )
    return pd.DataFrame(rows)


def shop_chart(exp: ShopExperiment, top: int = 16) -> alt.Chart:
    frame = shop_frame(exp, top)
    order = list(dict.fromkeys(frame.sort_values("rank")["sequence"]))
    title = f"The {top} most likely {exp.length}-event sequences: exact p vs {exp.samples:,} samples each way"
    return (
        alt.Chart(frame, title=title)
        .mark_bar()
        .encode(
            x=alt.X("sequence:N", sort=order, title="sequence", axis=category_axis()),
            xOffset=alt.XOffset("series:N", sort=list(SERIES_COLORS)),
            y=alt.Y("prob:Q", title="probability / frequency"),
            color=alt.Color(
                "series:N", title=None, scale=alt.Scale(domain=list(SERIES_COLORS), range=list(SERIES_COLORS.values()))
            ),
            tooltip=[
                "sequence:N",
                "series:N",
                alt.Tooltip("prob:Q", format=".4f"),
                alt.Tooltip("exact_spec:Q", title="exact speculative (enumeration)", format=".6f"),
            ],
        )
        .properties(height=300 + UPRIGHT_ROOM)
    )


def flow_numbers(flow: TwoTokenFlow) -> pd.DataFrame:
    """The two-token example's numbers, one row per quantity and a column per token (lab.two_token_flow's result)."""
    rows = {
        "p (target)": flow.p,
        "q (draft)": flow.q,
        "accept min(1, p/q)": flow.accept_prob,
        "emitted as accepted draft": flow.accepted,
        "residual": flow.residual,
        "emitted as correction": flow.corrected,
        "final": flow.final,
    }
    return pd.DataFrame([{"quantity": name, **dict(zip(flow.tokens, map(float, v)))} for name, v in rows.items()])


FLOW_DIGITS = 3  # every number of the two-token table, as the final P(A), P(B) and the rejected mass beside it


def flow_formats(flow: TwoTokenFlow) -> dict[str, str]:
    """One format for every column of flow_numbers' table (each token's column would get its own from its values:
    0.07 three decimals, 0.7 two)."""
    return {token: f"%.{FLOW_DIGITS}f" for token in flow.tokens}


NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count(n: int) -> str:
    return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)


def switches_words(variants: Sequence[Variant] = VARIANTS) -> str:
    """What the bug switches are, counted from the variants themselves: the mistakes reported in public code, the
    classic ones, and the design choice (Medusa's typical acceptance: lossy on purpose, not a bug)."""
    switches = [v for v in variants if v.key != "exact"]
    choices = [v for v in switches if v.key == TYPICAL]
    bugs = [v for v in switches if v.key != TYPICAL]
    reported = [v for v in bugs if v.seen_in != CLASSIC]
    classic = [v for v in bugs if v.seen_in == CLASSIC]
    names = lambda vs: "; ".join(v.label for v in vs)  # noqa: E731 (a label may hold a comma)
    out = (
        f"{_count(len(switches)).capitalize()} switches below, each swapping one part of the exact sampler. "
        f"{_count(len(bugs)).capitalize()} are mistakes: {_count(len(reported))} reported in public code (the report "
        f"is linked beside each: {names(reported)}), {_count(len(classic))} classic ({names(classic)})."
    )
    if choices:
        verb = "is" if len(choices) == 1 else "are"
        out += (
            f" And {_count(len(choices))}, {names(choices)}, {verb} not a bug but a design choice, lossy on purpose: "
            "it gives up the target's exact distribution for longer accepted runs, and the lab shows what that costs."
        )
    return out


REAL_PAIR_LEVEL = 1e-3  # the loaded pair's test rejects below this p-value: an exact sampler fails it 1 time in 1000
REAL_PAIR_POWER = 0.8


def power_note(samples: int, requested: int, dof: int, stopped_early: bool) -> str:
    """What the loaded pair's χ² test could have seen at the sample size it ran: the smallest total-variation
    distance between plain and speculative it catches 4 times in 5 (core.chisq.detectable_tv)."""
    head = (
        f"The time budget ran out after {samples} of {requested} samples each way"
        if stopped_early
        else f"{samples} samples each way"
    )
    if dof < 1:
        return f"{head}: too few for any test."
    tv = detectable_tv(samples, dof, REAL_PAIR_LEVEL, REAL_PAIR_POWER)
    return (
        f"{head}: at this size the test detects only TV ≥ {tv:.2f} (4 times in 5), so a smaller bias would pass "
        "unseen; more samples or a longer time budget make it sharper. The exact checks above see any bias."
    )


def bug_frame(checks: Sequence[BugCheck]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "variant": c.variant.label,
                "key": c.variant.key,
                "what": c.variant.explanation,
                "seen in": c.variant.seen_in if c.variant.key != "exact" else "",
                "tv": c.tv,
                "p_value": c.chi2.p_value,
                "chi2": c.chi2.statistic,
                "dof": c.chi2.dof,
                "acceptance": c.acceptance_fraction,
                "verdict": verdict(c.tv, c.chi2.p_value),
            }
            for c in checks
        ]
    )


def exit_frame(checks: Sequence) -> pd.DataFrame:
    """The early-exit switches at one position (engine/lab.py ExitCheck rows): each exit's chance of acceptance and
    its first token's distance from p, with the verdict that distance gives."""
    return pd.DataFrame(
        [
            {
                "exit": c.variant.label,
                "drafts from": "LM head(norm(h_E))" if c.variant.norm_drafts else "LM head(h_E), no norm",
                "verifier told": "the normed exit's q" if c.variant.norm_q else "the raw exit's q",
                "P(first draft kept)": c.accepted,
                "TV(first token, p)": c.tv_from_p,
                "verdict": "exact" if c.exact else "not exact: the output leaves p",
                "what": c.variant.explanation,
            }
            for c in checks
        ]
    )


VERDICT_COLORS = {
    EXACT_VERDICT: ORIGIN_COLORS["accepted"],
    DETECTED_VERDICT: ORIGIN_COLORS["correction"],
    UNSEEN_VERDICT: "#CC79A7",
}


P_VALUE_TIP = alt.Tooltip("p_text:N", title="χ² test")
# The p-value as viz.tables.format_p writes it everywhere on the page ("p = 0.43", "p = 0.012", "p < 0.001").
P_TEXT = "datum.p_value < 0.001 ? 'p < 0.001' : 'p = ' + format(datum.p_value, datum.p_value >= 0.1 ? '.2f' : '.2g')"


def bug_chart(frame: pd.DataFrame) -> alt.Chart:
    """Total-variation distance of each variant's exact output from the target's, coloured by the sample test's verdict.

    `frame` comes from `bug_frame(checks)` (a plain frame, so a page can cache it).
    """
    tooltip = ["variant:N", "what:N", alt.Tooltip("tv:Q", format=".3g"), P_VALUE_TIP]
    tooltip.append(alt.Tooltip("acceptance:Q", title="acceptance fraction", format=".3f"))
    title = "How far each sampler's exact output is from the target (total variation)"
    return _tv_bars(frame, title, "χ² test on samples", tooltip, label_limit=260)


def _tv_bars(frame: pd.DataFrame, title: str, legend: str, tooltip: list, label_limit: int) -> alt.Chart:
    """One bar per sampler variant: its exact output's TV distance from p, coloured by its verdict."""
    return (
        alt.Chart(frame, title=title)
        .mark_bar()
        .transform_calculate(p_text=P_TEXT)
        .encode(
            y=alt.Y("variant:N", sort=list(frame["variant"]), title=None, axis=alt.Axis(labelLimit=label_limit)),
            x=alt.X("tv:Q", title="TV distance from p (exact, by enumeration)"),
            color=alt.Color(
                "verdict:N",
                title=legend,
                scale=alt.Scale(domain=list(VERDICT_COLORS), range=list(VERDICT_COLORS.values())),
            ),
            tooltip=tooltip,
        )
        .properties(height=band_height(len(frame)))
    )


def real_pair_frame(rows: Sequence[dict]) -> pd.DataFrame:
    """Rows from `TwoTokenSamples.table` -> long frame (tokens, series, freq)."""
    long = []
    for rank, row in enumerate(rows):
        for series in ("plain", "speculative"):
            long.append({"tokens": row["tokens"], "rank": rank, "series": series, "freq": row[series]})
    return pd.DataFrame(long, columns=["tokens", "rank", "series", "freq"])


def real_pair_chart(rows: Sequence[dict], title: str) -> alt.Chart:
    frame = real_pair_frame(rows)
    order = list(dict.fromkeys(frame["tokens"]))
    colors = {"plain": SERIES_COLORS["plain samples"], "speculative": SERIES_COLORS["speculative samples"]}
    return (
        alt.Chart(frame, title=title)
        .mark_bar()
        .encode(
            x=alt.X("tokens:N", sort=order, title="next two tokens", axis=category_axis()),
            xOffset=alt.XOffset("series:N"),
            y=alt.Y("freq:Q", title="frequency"),
            color=alt.Color("series:N", title=None, scale=alt.Scale(domain=list(colors), range=list(colors.values()))),
            tooltip=["tokens:N", "series:N", alt.Tooltip("freq:Q", format=".3f")],
        )
        .properties(height=260 + UPRIGHT_ROOM)
    )


def variant_frame(
    labels: Sequence[str], target: Sequence[float], variant: Sequence[float], variant_label: str, top: int = 16
) -> pd.DataFrame:
    """The `top` sequences with the largest |variant − p|: exact target and exact variant probabilities."""
    order = sorted(range(len(labels)), key=lambda i: -abs(variant[i] - target[i]))[:top]
    rows = []
    for rank, i in enumerate(order):
        rows.append(
            {
                "sequence": labels[i],
                "rank": rank,
                "series": "exact target p",
                "prob": target[i],
                "gap": variant[i] - target[i],
            }
        )
        rows.append(
            {
                "sequence": labels[i],
                "rank": rank,
                "series": variant_label,
                "prob": variant[i],
                "gap": variant[i] - target[i],
            }
        )
    return pd.DataFrame(rows)


def variant_chart(
    labels: Sequence[str], target: Sequence[float], variant: Sequence[float], variant_label: str, top: int = 16
) -> alt.Chart:
    """Exact output of one sampler variant next to p, on the sequences where they differ most."""
    frame = variant_frame(labels, target, variant, variant_label, top)
    order = list(dict.fromkeys(frame.sort_values("rank")["sequence"]))
    colors = [SERIES_COLORS["exact target p"], ORIGIN_COLORS["correction"]]
    return (
        alt.Chart(frame, title=f"Exact output of '{variant_label}' vs p, where they differ most")
        .mark_bar()
        .encode(
            x=alt.X("sequence:N", sort=order, title="sequence", axis=category_axis()),
            xOffset=alt.XOffset("series:N", sort=["exact target p", variant_label]),
            y=alt.Y("prob:Q", title="exact probability"),
            color=alt.Color(
                "series:N", title=None, scale=alt.Scale(domain=["exact target p", variant_label], range=colors)
            ),
            tooltip=[
                "sequence:N",
                "series:N",
                alt.Tooltip("prob:Q", format=".5f"),
                alt.Tooltip("gap:Q", title="variant − p", format="+.5f"),
            ],
        )
        .properties(height=280 + UPRIGHT_ROOM)
    )


def tree_check_frame(checks: Sequence[TreeCheck]) -> pd.DataFrame:
    """One row per tree sampler: exact distance from p, the χ² test on samples, and the verdict."""
    return pd.DataFrame(
        [
            {
                "variant": c.variant.label,
                "key": c.variant.key,
                "why": c.variant.why,
                "max_abs_diff": c.max_abs_diff,
                "tv": c.tv,
                "p_value": c.chi2.p_value,
                "chi2": c.chi2.statistic,
                "dof": c.chi2.dof,
                "passes_per_token": c.passes_per_token,
                "verdict": c.verdict,
            }
            for c in checks
        ]
    )


def tree_check_chart(frame: pd.DataFrame) -> alt.Chart:
    """Total-variation distance of each tree sampler's exact output from p, coloured by the verdict."""
    tooltip = ["variant:N", "why:N", alt.Tooltip("max_abs_diff:Q", title="max |output − p|", format=".2e")]
    tooltip += [alt.Tooltip("tv:Q", format=".3g"), P_VALUE_TIP]
    title = "Tree samplers: how far each exact output is from p (total variation)"
    return _tv_bars(frame, title, "verdict", tooltip, label_limit=380)  # its longest label whole at 18 px
