"""Charts of a race between lanes and of a K sweep (pure: results in, Altair charts out)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from specviz.race import LANE_LABELS, LaneResult


def lanes_frame(results: list[LaneResult], reference: tuple[int, ...] | None = None) -> pd.DataFrame:
    from specviz.race import first_divergence

    rows = []
    for r in results:
        gaps = r.inter_token_latencies_ms()
        same = "n/a (sampling)"
        if reference is not None:
            divergence = first_divergence(reference, r.output_ids)
            same = "✓" if divergence is None else f"✗ from token {divergence + 1}"
        rows.append({
            "lane": LANE_LABELS[r.lane], "tokens": len(r.output_ids), "time to first token (ms)": r.ttft_s * 1e3,
            "tokens/s": r.tokens_per_s, "median gap (ms)": float(pd.Series(gaps).median()) if gaps else 0.0,
            "max gap (ms)": max(gaps, default=0.0), "α": r.alpha, "τ": r.tau,
            "same text as plain": same,
        })  # fmt: skip
    return pd.DataFrame(rows)


def arrivals_frame(results: list[LaneResult]) -> pd.DataFrame:
    rows = []
    for r in results:
        total = 0
        rows.append({"lane": LANE_LABELS[r.lane], "ms": 0.0, "tokens": 0})
        for t, n in r.arrivals:
            total += n
            rows.append({"lane": LANE_LABELS[r.lane], "ms": t * 1e3, "tokens": total})
    return pd.DataFrame(rows, columns=["lane", "ms", "tokens"])


def arrivals_chart(results: list[LaneResult]) -> alt.Chart:
    """Tokens delivered over time per lane: speculative lanes climb in steps (bursts), plain decoding evenly."""
    return (
        alt.Chart(arrivals_frame(results), title="Tokens delivered over time")
        .mark_line(interpolate="step-after", point=True)
        .encode(
            x=alt.X("ms:Q", title="milliseconds since the start"),
            y=alt.Y("tokens:Q", title="tokens delivered"),
            color=alt.Color("lane:N", title="lane"),
            tooltip=["lane:N", alt.Tooltip("ms:Q", format=".1f"), "tokens:Q"],
        )
        .properties(height=280)
    )


def latency_frame(results: list[LaneResult]) -> pd.DataFrame:
    rows = [{"lane": LANE_LABELS[r.lane], "gap_ms": g} for r in results for g in r.inter_token_latencies_ms()]
    return pd.DataFrame(rows, columns=["lane", "gap_ms"])


def latency_chart(results: list[LaneResult]) -> alt.Chart:
    """Inter-token latency per lane: speculation gives many zero gaps (a burst) and some long ones."""
    return (
        alt.Chart(latency_frame(results), title="Inter-token latency (gap before each token)")
        .mark_tick(thickness=2, size=18, opacity=0.6)
        .encode(
            x=alt.X("gap_ms:Q", title="milliseconds since the previous token"),
            y=alt.Y("lane:N", title=None),
            color=alt.Color("lane:N", legend=None),
            tooltip=["lane:N", alt.Tooltip("gap_ms:Q", format=".2f")],
        )
        .properties(height=200)
    )


def sweep_chart(rows: list[dict]) -> alt.Chart:
    """Measured speedup vs K next to the calculator's prediction from costs measured on this machine."""
    frame = pd.DataFrame(rows, columns=["k", "kind", "speedup"])
    return (
        alt.Chart(frame, title="K sweep: measured speedup vs the prediction from measured costs")
        .mark_line(point=True)
        .encode(
            x=alt.X("k:O", title="K (draft tokens per round)"),
            y=alt.Y("speedup:Q", title="speedup over plain (×)"),
            color=alt.Color("kind:N", title=None),
            tooltip=["k:O", "kind:N", alt.Tooltip("speedup:Q", format=".2f")],
        )
        .properties(height=260)
    )
