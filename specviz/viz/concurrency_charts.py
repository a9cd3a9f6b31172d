"""The load sweep drawn: speedup of each speculative server over the plain one against concurrency, measured (with
its 95% interval over prompts) beside the roofline's prediction for the same pair and machine
(measure/sweep_roofline.py).
Pure: a specviz.load document (measure/concurrency.py) and the roofline's rows in, frames and Altair charts out."""

from __future__ import annotations

import altair as alt
import pandas as pd

from specviz import methods

LATENCY, THROUGHPUT, ROOFLINE = "end-to-end latency (measured)", "throughput (measured)", "roofline (predicted)"
KINDS = (LATENCY, THROUGHPUT, ROOFLINE)
KIND_COLORS = ("#0072B2", "#009E73", "#757575")  # Okabe-Ito blue, bluish green; grey for the model
FRAME_COLUMNS = ["server", "concurrency", "kind", "speedup", "low", "high", "verdict"]


def server_names(doc: dict) -> dict[str, str]:
    """URL -> what a reader calls it: "plain" for the baseline, the method and K for each speculative server (its
    URL too when two would read alike)."""
    names = {doc["baseline"]["server"]: "plain"}
    spec = [(s["server"], f"{methods.label(s['method'])}, K = {s['k']}") for s in doc["servers"]]
    alike = [name for _, name in spec]
    for url, name in spec:
        names[url] = name if alike.count(name) == 1 else f"{name} ({url})"
    return names


def speedup_frame(doc: dict, predicted: list[dict] | None = None) -> pd.DataFrame:
    """One row per server x level x kind: latency and throughput speedups with their intervals, and the roofline's."""
    rows, named = [], server_names(doc)
    for level in doc["levels"]:
        for c in level["speedups"]:
            for kind, key in ((LATENCY, "latency_speedup"), (THROUGHPUT, "throughput_speedup")):
                if c[key] is None:
                    continue
                low, high = c[f"{key}_ci"]
                rows.append({
                    "server": named[c["server"]], "concurrency": c["concurrency"], "kind": kind, "speedup": c[key],
                    "low": low, "high": high, "verdict": c["verdict"] if kind == LATENCY else "",
                })  # fmt: skip
    for row in predicted or []:
        rows.append({
            "server": named[row["server"]], "concurrency": row["concurrency"], "kind": ROOFLINE,
            "speedup": row["predicted"], "low": None, "high": None, "verdict": "",
        })  # fmt: skip
    return pd.DataFrame(rows, columns=FRAME_COLUMNS)


def speedup_chart(doc: dict, predicted: list[dict] | None = None) -> alt.LayerChart:
    """Speedup against concurrency (log scale): measured latency and throughput with interval bars, the roofline as
    a dashed line, 1× (no gain) as a rule; a speculative server's later lines are told apart by their shape."""
    frame = speedup_frame(doc, predicted)
    several = frame["server"].nunique() > 1
    x = alt.X("concurrency:Q", title="requests in flight (concurrency)", scale=alt.Scale(type="log", base=2),
              axis=alt.Axis(values=sorted(frame["concurrency"].unique().tolist()), format="d"))  # fmt: skip
    y = alt.Y("speedup:Q", title="speedup over plain (×)", scale=alt.Scale(zero=False))
    color = alt.Color("kind:N", title=None, scale=alt.Scale(domain=list(KINDS), range=list(KIND_COLORS)),
                      legend=alt.Legend(orient="top", direction="horizontal"))  # fmt: skip
    base = alt.Chart(frame, title="Does speculation still pay under load? Speedup over plain by concurrency")
    measured = base.transform_filter(alt.datum.kind != ROOFLINE)
    lines = measured.mark_line(point=True).encode(x=x, y=y, color=color, detail=alt.Detail("server:N"))
    tooltip = [
        "server:N", "concurrency:Q", "kind:N", alt.Tooltip("speedup:Q", format=".2f"),
        alt.Tooltip("low:Q", format=".2f", title="95% interval from"),
        alt.Tooltip("high:Q", format=".2f", title="95% interval to"), "verdict:N",
    ]  # fmt: skip
    points = measured.mark_point(size=50, filled=True).encode(x=x, y=y, color=color, tooltip=tooltip)
    bars = (
        measured.transform_filter("isValid(datum.low)")
        .mark_errorbar(ticks=True)
        .encode(x=x, y=alt.Y("low:Q", title="speedup over plain (×)"), y2="high:Q", color=color)
    )
    roof = (
        base.transform_filter(alt.datum.kind == ROOFLINE)
        .mark_line(strokeDash=[6, 4], point=True)
        .encode(x=x, y=y, color=color, tooltip=tooltip[:4])
    )
    if several:  # one line per server and kind: the servers told apart by their dashes
        lines = lines.encode(strokeDash=alt.StrokeDash("server:N", title="speculative server"))
    even = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(color="black", strokeDash=[2, 2]).encode(y="y:Q")
    return (lines + points + bars + roof + even).properties(height=340)


def level_frame(doc: dict) -> pd.DataFrame:
    """Each server at each level, as a table reads it: requests, tokens/s, median and p99 latency figures, α."""
    rows, named = [], server_names(doc)
    for level in doc["levels"]:
        for s in level["summaries"]:
            rows.append({
                "concurrency": s["concurrency"], "server": named[s["server"]], "requests": s["requests"],
                "tokens/s": s["tokens_per_s"], "TTFT median (ms)": s["ttft_ms"]["median"],
                "TPOT median (ms)": s["tpot_ms"]["median"], "end-to-end median (ms)": s["e2e_ms"]["median"],
                "end-to-end p99 (ms)": s["e2e_ms"]["p99"], "α": s["alpha"],
            })  # fmt: skip
    return pd.DataFrame(rows)


def stops_paying_words(doc: dict) -> str:
    """Where speculation stopped paying (median end-to-end latency no better than plain's from that level on), per
    speculative server, as one sentence."""
    levels = [level["concurrency"] for level in doc["levels"]]
    if not levels:
        return "No level finished."
    parts, named = [], server_names(doc)
    for server, level in doc["stops_paying"].items():
        server = named[server]
        if level is None:
            parts.append(f"speculation ({server}) still paid at the highest level measured, {max(levels)}")
        else:
            parts.append(f"speculation ({server}) stopped paying from concurrency {level} on")
    return "By median end-to-end latency: " + "; ".join(parts) + "."


def noise_words(doc: dict) -> str | None:
    """What the machine's load says about a sweep's figures, when it was busier than its cores (None when it was not,
    or did not say): a load average above the core count means work waiting for a core the whole time, so every
    latency was timed while sharing the cores, and the widest interval shows how far the figures swing."""
    machine = doc.get("machine", {})
    load, cores = machine.get("load_average"), machine.get("cores")
    if not load or not cores or load <= cores:
        return None
    widest = max(
        ((c["latency_speedup_ci"], c["latency_speedup"], c["concurrency"]) for level in doc["levels"]
         for c in level["speedups"] if c.get("latency_speedup") is not None and c.get("latency_speedup_ci")),
        key=lambda row: row[0][1] - row[0][0],
        default=None,
    )  # fmt: skip
    swing = ""
    if widest:
        (low, high), figure, level = widest
        swing = f" (at concurrency {level}, {figure:.2f}× with a 95% interval of {low:.2f}–{high:.2f}×)"
    return (
        f"A noisy measurement: the machine's load average was {load:g} on {cores} cores, about {load / cores:.0f} "
        "times as much work as cores to run it, so every request was timed while other work took turns on the same "
        f"cores, and the figures swing with it{swing}. Read them as one busy moment's, not as what speculation gives "
        "on a quiet machine; the roofline models no other work, so a gap between the two says little here."
    )
