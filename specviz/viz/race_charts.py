"""Charts of a race between lanes and of a K sweep (pure: run records in, Altair charts out)."""

from __future__ import annotations

import hashlib
import json

import altair as alt
import pandas as pd

from specviz import methods
from specviz.core import stats
from specviz.core.record import RunRecord
from specviz.viz.layout import band_height

NOT_REPORTED = "not reported"
PLAYBACK_WORDS = (
    "The lanes were decoded one after another with nothing drawn while they ran; the playback replays each lane's "
    "recorded arrival times at their real pace (speed ×1), all lanes started together."
)


def lanes_frame(
    results: list[RunRecord],
    reference: tuple[int, ...] | None = None,
    timings: dict | None = None,
    tokens_per_s: dict[str, float] | None = None,
) -> pd.DataFrame:
    """One row per lane. With the race's timings (lane -> measure.timing.Timing) and median speeds over its repeats,
    tokens/s is that median and a "speedup vs plain" column gives each lane's median paired speedup with its range
    over the repeats; without them, the first run's tokens/s alone."""
    rows = []
    for r in results:
        timing = (timings or {}).get(r.method)
        speed = (tokens_per_s or {}).get(r.method, r.tokens_per_s)
        speedup = {} if timing is None else {"speedup vs plain": timing.cell(), "repeats": timing.repeats}
        gaps = stats.inter_token_latencies_ms(r.arrivals())
        same = "n/a (sampling)"
        if reference is not None:
            divergence = stats.first_divergence(reference, r.output_ids)
            same = "✓" if divergence is None else f"✗ from token {divergence + 1}"
        rows.append(
            {
                "lane": methods.lane_label(r.method),
                "tokens": len(r.output_ids),
                "time to first token (ms)": r.ttft_s * 1e3,
                "tokens/s": speed,
                **speedup,
                "median gap (ms)": float(pd.Series(gaps).median()) if gaps else 0.0,
                "max gap (ms)": max(gaps, default=0.0),
                "α": _alpha_text(r),
                "τ": r.tau,
                "same text as plain": same,
            }
        )
    return pd.DataFrame(rows)


def _alpha_text(r: RunRecord) -> str:
    """α as the table shows it: a number, "not reported" (Hugging Face lanes), or "–" (nothing judged)."""
    if r.per_round_judged is None:
        return NOT_REPORTED
    return "–" if r.alpha is None else f"{r.alpha:.2f}"


def arrivals_frame(results: list[RunRecord]) -> pd.DataFrame:
    rows = []
    for r in results:
        total, lane = 0, methods.lane_label(r.method)
        rows.append({"lane": lane, "ms": 0.0, "tokens": 0})
        for t, n in r.arrivals():
            total += n
            rows.append({"lane": lane, "ms": t * 1e3, "tokens": total})
    return pd.DataFrame(rows, columns=["lane", "ms", "tokens"])


SIDE_BY_SIDE = 4  # lanes at most for the two timing charts to share a row: more, and each takes the page's width
LEGEND_COLUMNS = 3  # a full-width arrivals chart's legend, below the plot: three lanes a row
LEGEND_ROW = 20  # px per row of that legend (Streamlit keeps a chart's total height: the plot must not lose it)


def side_by_side(results: list[RunRecord]) -> bool:
    """Whether the arrivals and latency charts fit side by side in half-width columns: with more lanes the legend
    alone takes a half column (12 lanes left the plot about 80 px) and the lanes' rows need the height."""
    return len(results) <= SIDE_BY_SIDE


def lane_colors(results: list[RunRecord]) -> alt.Scale:
    """One colour per lane, the same in both charts, never repeated (category10 has ten; more lanes take tableau20)."""
    labels = list(dict.fromkeys(methods.lane_label(r.method) for r in results))
    return alt.Scale(domain=labels, scheme="category10" if len(labels) <= 10 else "tableau20")


def arrivals_chart(results: list[RunRecord]) -> alt.Chart:
    """Tokens delivered over time per lane: speculative lanes climb in steps (bursts), plain decoding evenly. With more
    lanes than fit side by side, the legend goes below the plot in columns, and the chart grows by its rows."""
    legend = alt.Legend(title="lane")
    height = 280
    if not side_by_side(results):
        legend = alt.Legend(title="lane", orient="bottom", columns=LEGEND_COLUMNS)
        height += -(-len(results) // LEGEND_COLUMNS) * LEGEND_ROW
    return (
        alt.Chart(arrivals_frame(results), title="Tokens delivered over time")
        .mark_line(interpolate="step-after", point=True)
        .encode(
            x=alt.X("ms:Q", title="milliseconds since the start"),
            y=alt.Y("tokens:Q", title="tokens delivered"),
            color=alt.Color("lane:N", scale=lane_colors(results), legend=legend),
            tooltip=["lane:N", alt.Tooltip("ms:Q", format=".1f"), "tokens:Q"],
        )
        .properties(height=height)
    )


def latency_frame(results: list[RunRecord]) -> pd.DataFrame:
    rows = [
        {"lane": methods.lane_label(r.method), "gap_ms": g}
        for r in results
        for g in stats.inter_token_latencies_ms(r.arrivals())
    ]
    return pd.DataFrame(rows, columns=["lane", "gap_ms"])


def latency_chart(results: list[RunRecord]) -> alt.Chart:
    """Inter-token latency per lane: speculation gives many zero gaps (a burst) and some long ones. Every lane has its
    row and its label (a fixed 200 px left 12 lanes 16 px each, and Vega hid 9 of their labels as overlapping)."""
    lanes = list(dict.fromkeys(methods.lane_label(r.method) for r in results))
    return (
        alt.Chart(latency_frame(results), title="Inter-token latency (gap before each token)")
        .mark_tick(thickness=2, size=18, opacity=0.6)
        .encode(
            x=alt.X("gap_ms:Q", title="milliseconds since the previous token"),
            y=alt.Y("lane:N", title=None, sort=lanes, axis=alt.Axis(labelOverlap=False)),
            color=alt.Color("lane:N", scale=lane_colors(results), legend=None),
            tooltip=["lane:N", alt.Tooltip("gap_ms:Q", format=".2f")],
        )
        .properties(height=max(200, band_height(len(lanes))))
    )


def sweep_chart(rows: list[dict]) -> alt.LayerChart:
    """Measured speedup vs K (the median of its repeats, with their range as bars) next to the prediction from
    measured tau and costs on this machine."""
    frame = pd.DataFrame(rows, columns=["k", "kind", "speedup", "low", "high"])
    title = "K sweep: measured speedup (range over repeats) vs the prediction from measured costs"
    base = alt.Chart(frame, title=title)
    k_axis = alt.X("k:O", title="K (draft tokens per round)", axis=alt.Axis(labelAngle=0))
    lines = base.mark_line(point=True).encode(
        x=k_axis,
        y=alt.Y("speedup:Q", title="speedup over plain (×)"),
        color=alt.Color("kind:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=400)),
        tooltip=[
            "k:O",
            "kind:N",
            alt.Tooltip("speedup:Q", format=".2f"),
            alt.Tooltip("low:Q", format=".2f", title="lowest repeat"),
            alt.Tooltip("high:Q", format=".2f", title="highest repeat"),
        ],
    )
    ranged = base.transform_filter("isValid(datum.low)")
    bars = ranged.mark_rule().encode(x=k_axis, y="low:Q", y2="high:Q", color=alt.Color("kind:N"))
    low, high = (  # short caps at each end, at their K only (an error bar's ticks span the whole band between K)
        ranged.mark_tick(size=14, thickness=1.5).encode(x=k_axis, y=f"{end}:Q", color=alt.Color("kind:N"))
        for end in ("low", "high")
    )
    return (lines + bars + low + high).properties(height=260)


def playback_data(results: list[RunRecord], pieces: dict) -> dict:
    """The race player's data (ui/race_player.py): per lane its label, its text cut where its tokens arrived with the
    arrival times (seconds of decoding since the lane's start, from its clock), tokens per piece, its decode time and
    tokens/s. pieces: lane -> measure.race.Piece tuple for that lane's record. The id changes with the race."""
    lanes = []
    for r in results:
        cut = pieces[r.method]
        lanes.append({
            "method": r.method,
            "label": methods.lane_label(r.method),
            "times": [p.seconds for p in cut],
            "pieces": [p.text for p in cut],
            "tokens": [p.tokens for p in cut],
            "end_s": r.wall_s,
            "tokens_per_s": r.tokens_per_s,
        })  # fmt: skip
    digest = hashlib.sha1(json.dumps(lanes, sort_keys=True).encode()).hexdigest()[:12]
    return {"id": digest, "lanes": lanes}
