"""The workload page's load view: a speculative vLLM server against a plain one at several concurrencies, with the
roofline's prediction for the same pair and machine on the same chart. Before any sweep here, the one recorded in
assets/bench shows what the view reads like (said so)."""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from specviz.engine.loading.models import ASSETS, BUNDLED_DRAFT, BUNDLED_TARGET
from specviz.errors import SpecvizError
from specviz.measure import concurrency
from specviz.measure.sweep_roofline import difference_words, measured_hardware, model_spec, roofline_rows
from specviz.remote.concurrency import parse_levels
from specviz.remote.http import DEFAULT_TIMEOUT_S
from specviz.ui import workload as drive
from specviz.ui.limits import Limits
from specviz.ui.loaders import cached_pair
from specviz.ui.render import draw, show_table
from specviz.viz import concurrency_charts
from specviz.viz.text import literal

RECORDED = ASSETS / "bench" / "vllm-cpu-load-draft-k4-code.json"
MAX_PAGE_TIMEOUT_S = 600  # a request the page waits for holds a script thread: ten minutes at most


@st.cache_data(show_spinner="Measuring this machine's memory bandwidth and FLOP/s for the roofline…")
def machine_hardware():
    """Measured once per app process (about a second): the roofline's two numbers for this machine."""
    return measured_hardware()


def recorded_sweep(path: Path = RECORDED) -> dict | None:
    """The sweep committed in assets/bench (python -m specviz measure ... --concurrency 1,2,4,8), or None."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def predicted(doc: dict, pair_sources: tuple[str, str]) -> list[dict]:
    """The roofline's rows for this sweep, with the pair's shapes read off the loaded models (float32 on the CPU, as
    `python -m specviz serve` runs them) and this machine's measured bandwidth and FLOP/s."""
    pair = cached_pair(pair_sources[0], pair_sources[1], "cpu", "float32")
    hardware = machine_hardware()
    return roofline_rows(doc, hardware, model_spec(pair.target, "target"), model_spec(pair.draft, "draft"))


def sweep_inputs(limits: Limits) -> tuple[list[str], str, list[int] | None, int, float, bool]:
    """The sweep's own inputs: more speculative servers, the plain one, the levels, rounds and the timeout per
    request, and the button."""
    left, right = st.columns(2)
    baseline = left.text_input(
        "Plain server URL (the baseline)", value="http://127.0.0.1:8100", key="load_baseline",
        help="A vLLM server on the same model with no --speculative-config: `python -m specviz serve --method none`.",
    )  # fmt: skip
    more = right.text_input(
        "More speculative servers (optional, comma-separated URLs)", key="load_more",
        help="Other K or methods, each compared with the same plain server at every level.",
    )  # fmt: skip
    left, middle, right = st.columns(3)
    top = min(8, limits.max_concurrency)
    default = ",".join(str(n) for n in (1, 2, 4, 8) if n <= top)
    levels_text = left.text_input(
        f"Concurrency levels (requests in flight, at most {limits.max_concurrency})", value=default, key="load_levels"
    )
    rounds = middle.number_input(
        "Rounds per level", 1, 3, value=1, key="load_rounds",
        help="Each round runs every server once, the order reversed every other round, so a drifting machine load "
        "weighs on all alike.",
    )  # fmt: skip
    timeout = right.number_input(
        "Timeout per request (s)", 1, MAX_PAGE_TIMEOUT_S, value=int(DEFAULT_TIMEOUT_S), key="load_timeout",
        help="A request slower than this ends the sweep at its level (the levels before are kept): a loaded server "
        "is slower.",
    )  # fmt: skip
    levels = None
    try:
        levels = parse_levels(levels_text, "The concurrency levels field")
    except SpecvizError as exc:
        st.error(literal(str(exc)))
    extra = [url.strip() for url in more.split(",") if url.strip()]
    start = st.button("▶ Run the load sweep", key="measure_load", disabled=levels is None or not baseline.strip())
    return extra, baseline, levels, int(rounds), float(timeout), start


def show_sweep(doc: dict, pair_sources: tuple[str, str] | None, recorded: bool) -> None:
    """The sweep's chart (measured beside the roofline), what lies between them, where speculation stopped paying,
    the per-level table, and the JSON and CSV."""
    machine = doc["machine"]
    where = f"{machine['cpu']} ({machine['cpu_capability']}, {machine['cores']} cores, load {machine['load_average']})"
    if recorded:
        st.caption(
            f"Recorded with `python -m specviz measure … --baseline-server … --concurrency` on {literal(where)}, "
            f"in {doc['elapsed_s']:.0f} s: two vllm-cpu servers on the bundled pair, {len(doc['prompts'])} code "
            "prompts. Measure your own servers above; this is what the view shows."
        )
    else:
        st.caption(f"Measured on {literal(where)} in {doc['elapsed_s']:.0f} s.")
    rows = []
    if pair_sources:
        try:
            rows = predicted(doc, pair_sources)
        except SpecvizError as exc:
            st.caption(f"No roofline: {literal(str(exc))}")
    for level in doc["levels"]:
        for server, words in level.get("other_traffic", {}).items():
            st.warning(literal(f"Concurrency {level['concurrency']}, {server}: {words}."))
        for s in level["summaries"]:
            if s.get("retried_requests"):
                st.caption(
                    literal(
                        f"Concurrency {level['concurrency']}: {s['server']} refused {s['retried_requests']} "
                        "request(s) once and served them after the wait its Retry-After asked for (the level's "
                        "tokens/s includes the wait)."
                    )
                )
    draw(st, concurrency_charts.speedup_chart(doc, rows))
    st.caption(literal(concurrency_charts.stops_paying_words(doc)))
    if rows:
        hw = machine_hardware()
        st.caption(
            literal(difference_words(doc, rows))
            + f" The roofline uses {hw.name}: {hw.bandwidth_gb_s:.1f} GB/s and {hw.peak_tflops * 1e3:.0f} GFLOP/s "
            "(float32), the pair's shapes, and the α each server reported."
            + (" The recording machine's own numbers were not recorded." if recorded else "")
        )
    else:
        st.caption(
            "No roofline beside it: the servers' pair is not one this app can load (check the connection to find "
            "out), or no server reported its acceptance."
        )
    if noisy := concurrency_charts.noise_words(doc):  # a machine busier than its cores: its figures are that moment's
        st.caption(literal(noisy))
    show_table(st, concurrency_charts.level_frame(doc))
    left, right = st.columns(2)
    left.download_button("Download the sweep (JSON)", concurrency.to_json(doc), "load-sweep.json", "application/json")
    right.download_button("Download the sweep (CSV)", concurrency.to_csv(doc), "load-sweep.csv", "text/csv")


def concurrency_section(rows, base, url: str, served_model: str, api_key: str, declared: str, found, limits: Limits):
    """The whole load view: inputs, the sweep when asked, then its results (or the recorded one's)."""
    st.subheader("Under load: speculative against plain, by concurrency")
    st.caption(
        "The same prompts, sampling and length through the speculative server above and a plain one on the same "
        "model, at each number of requests in flight (a closed loop, warm-up first, streamed). Speedup = plain / "
        "speculative end-to-end latency per request, and speculative / plain output tokens/s, each with a 95% "
        "interval over prompts. The dashed line is the calculator's roofline for the same pair on this machine."
    )
    extra, baseline, levels, rounds, timeout_s, start = sweep_inputs(limits)
    if start and rows and base:
        drive.run_load_sweep(
            [url, *extra], baseline, served_model, api_key, declared, rows, base, levels, rounds, limits, timeout_s
        )
    doc = st.session_state.get(drive.LOAD)
    if doc and doc["failure"] and not start:  # the sweep's own run showed it already; later reruns still say it
        st.error(literal(concurrency.failure_words(doc["failure"])))
    local = tuple(found["local_pair"]) if found and found.get("local_pair") else None
    if doc and doc["levels"]:
        show_sweep(doc, local, recorded=False)
        return
    recorded = recorded_sweep()
    if recorded:  # its models named as this deployment may show them, as a live sweep's are
        show_sweep(drive.shown_document(recorded, limits), (BUNDLED_TARGET, BUNDLED_DRAFT), recorded=True)
