"""The load sweep's chart and tables (viz/concurrency_charts.py): measured latency and throughput speedups with their
intervals beside the roofline, servers named as a reader calls them, and where speculation stopped paying."""

from __future__ import annotations

import copy
import json

from specviz.engine.loading.models import ASSETS
from specviz.viz import concurrency_charts

RECORDED = json.loads((ASSETS / "bench" / "vllm-cpu-load-draft-k4-code.json").read_text())
PREDICTED = [
    {"server": RECORDED["servers"][0]["server"], "concurrency": level["concurrency"], "predicted": 0.9}
    for level in RECORDED["levels"]
]


def test_the_frame_has_both_measured_kinds_with_their_intervals_and_the_roofline():
    frame = concurrency_charts.speedup_frame(RECORDED, PREDICTED)
    levels = len(RECORDED["levels"])
    counts = frame["kind"].value_counts()
    assert (
        counts[concurrency_charts.LATENCY]
        == counts[concurrency_charts.THROUGHPUT]
        == counts[concurrency_charts.ROOFLINE]
        == levels
    )
    measured = frame[frame["kind"] != concurrency_charts.ROOFLINE]
    assert ((measured["low"] <= measured["speedup"]) & (measured["speedup"] <= measured["high"])).all()
    latency = frame[frame["kind"] == concurrency_charts.LATENCY]["speedup"].tolist()
    assert latency == [level["speedups"][0]["latency_speedup"] for level in RECORDED["levels"]]
    assert set(frame["server"]) == {"draft model, K = 4"}


def test_the_chart_draws_points_interval_bars_the_dashed_roofline_and_the_one_times_rule():
    spec = concurrency_charts.speedup_chart(RECORDED, PREDICTED).to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["line", "point", "errorbar", "line", "rule"]
    assert spec["layer"][3]["mark"]["strokeDash"] == [6, 4]  # the roofline: dashed
    assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"


def test_servers_are_named_by_method_and_k_and_by_url_when_two_read_alike():
    doc = copy.deepcopy(RECORDED)
    assert concurrency_charts.server_names(doc)[doc["baseline"]["server"]] == "plain"
    twin = {**doc["servers"][0], "server": "http://127.0.0.1:8102"}
    doc["servers"].append(twin)
    names = concurrency_charts.server_names(doc)
    assert names["http://127.0.0.1:8102"] == "draft model, K = 4 (http://127.0.0.1:8102)"


def test_where_speculation_stopped_paying_is_said_per_server():
    assert "still paid at the highest level measured, 8" in concurrency_charts.stops_paying_words(RECORDED)
    stopped = {**RECORDED, "stops_paying": {RECORDED["servers"][0]["server"]: 4}}
    assert "stopped paying from concurrency 4 on" in concurrency_charts.stops_paying_words(stopped)
    assert concurrency_charts.stops_paying_words({**RECORDED, "levels": []}) == "No level finished."


def test_the_level_table_has_a_row_per_server_and_level():
    frame = concurrency_charts.level_frame(RECORDED)
    assert len(frame) == 2 * len(RECORDED["levels"])
    assert list(frame["server"][:2]) == ["plain", "draft model, K = 4"]


def test_a_sweep_on_a_machine_busier_than_its_cores_says_its_figures_are_noisy():
    """A past bug: the recorded sweep, at load 15.51 on 2 cores, showed 2.68× against a roofline of 0.33× with
    no word on the noise."""
    recorded = json.loads((ASSETS / "bench" / "vllm-cpu-load-draft-k4-code.json").read_text())
    words = concurrency_charts.noise_words(recorded)
    assert "load average was 15.51 on 2 cores, about 8 times as much work as cores" in words
    assert "at concurrency 8, 2.68× with a 95% interval of 1.78–3.10×" in words  # the widest interval
    assert "a gap between the two says little here" in words
    quiet = {**recorded, "machine": {**recorded["machine"], "load_average": 1.2}}
    assert concurrency_charts.noise_words(quiet) is None
    assert concurrency_charts.noise_words({**recorded, "machine": {}}) is None  # a sweep that did not record its load
