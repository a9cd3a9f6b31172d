"""The concurrency sweep's numbers (specviz/measure/concurrency.py) from hand-built request timings, each figure
worked by hand."""

from __future__ import annotations

import csv
import io
import json

import pytest

from specviz.core import stats
from specviz.measure import concurrency
from specviz.measure.concurrency import LevelRun, RequestTiming


def timing(prompt, e2e, tokens=4, ttft=0.1, sent=0.0, bursts=None, accepted=None, drafted=None, steps=None):
    """A request whose tokens arrive evenly after the first (one per event unless bursts says otherwise)."""
    bursts = bursts or [1] * tokens
    gap = (e2e - ttft) / max(len(bursts) - 1, 1)
    arrivals = tuple((ttft + i * gap, n) for i, n in enumerate(bursts))
    return RequestTiming(prompt, sent, ttft, e2e, arrivals, tokens, sum(bursts), accepted, drafted, steps)


def test_a_levels_figures():
    run = LevelRun(
        "http://spec",
        2,
        wall_s=2.0,
        requests=(
            # 4 tokens in two bursts of 2: gaps 0 (burst), 0.9 s, 0 -> ITL [0, 900, 0] ms; TPOT (1.0-0.1)/3 = 300 ms
            timing(0, 1.0, bursts=[2, 2], accepted=3, drafted=4, steps=(1, 2)),
            timing(1, 2.0, ttft=0.2, accepted=1, drafted=4, steps=(0, 1)),  # 4 single tokens, 0.6 s apart
        ),
    )
    s = concurrency.level_summary(run)
    assert (s["requests"], s["output_tokens"], s["streamed_tokens"]) == (2, 8, 8)
    assert s["tokens_per_s"] == pytest.approx(4.0)  # 8 tokens over 2 s of wall time, not over summed request time
    assert s["e2e_ms"]["median"] == pytest.approx(1500)  # halfway between 1000 and 2000
    assert s["ttft_ms"]["median"] == pytest.approx(150)
    assert s["tpot_ms"]["median"] == pytest.approx((300 + 600) / 2)
    assert sorted(run.requests[0].itl_ms) == pytest.approx([0, 0, 900])
    assert s["itl_ms"]["median"] == pytest.approx(600)  # [0, 0, 900, 600, 600, 600] -> 600
    assert s["alpha"] == pytest.approx(4 / 8)  # pooled over the requests' drafts
    assert s["accepted_length_histogram"] == [1, 2, 1]  # steps accepting 0, 1, 2 drafts
    assert s["mean_accepted_length"] == pytest.approx((4 + 4) / 4)  # (accepted + steps) / steps


def plain_and_spec(plain_e2e, spec_e2e, tokens=8):
    plain = LevelRun("http://plain", 1, sum(plain_e2e), tuple(timing(i, e, tokens) for i, e in enumerate(plain_e2e)))
    spec = LevelRun("http://spec", 1, sum(spec_e2e), tuple(timing(i, e, tokens) for i, e in enumerate(spec_e2e)))
    return plain, spec


def test_speedups_are_plain_over_speculative_latency_and_speculative_over_plain_throughput():
    plain, spec = plain_and_spec([2.0, 2.2, 1.8, 2.0], [1.0, 1.1, 0.9, 1.0])  # twice as fast on every prompt
    c = concurrency.compare(spec, plain)
    assert c["latency_speedup"] == pytest.approx(2.0)
    assert c["throughput_speedup"] == pytest.approx(2.0)  # 32 tokens in 4 s vs in 8 s
    assert c["tpot_speedup"] == pytest.approx((2.0 - 0.1) / (1.0 - 0.1))
    low, high = c["latency_speedup_ci"]
    assert low <= 2.0 <= high and low > 1  # the interval is over prompts, each of them faster
    assert c["verdict"] == "pays"


def test_a_slower_speculative_server_costs_and_the_sweep_says_where_it_stopped_paying():
    paying = concurrency.compare(*reversed(plain_and_spec([2.0, 2.1, 1.9], [1.0, 1.1, 0.9])))
    costing = concurrency.compare(*reversed(plain_and_spec([1.0, 1.1, 0.9], [2.0, 2.2, 1.8])))
    assert costing["latency_speedup"] == pytest.approx(0.5) and costing["verdict"] == "costs"
    assert concurrency.stops_paying([paying, {**costing, "concurrency": 4}]) == 4
    assert concurrency.stops_paying([paying, {**costing, "concurrency": 4}, {**costing, "concurrency": 8}]) == 4
    assert concurrency.stops_paying([paying]) is None
    # a level below 1 with a higher one paying again (seen on a loaded machine): it did not stop paying there
    assert concurrency.stops_paying([{**costing, "concurrency": 1}, {**paying, "concurrency": 2}]) is None


def test_the_interval_uses_the_bootstrap_over_prompts_with_its_seed():
    plain, spec = plain_and_spec([2.0, 3.0, 1.0, 2.5, 1.5], [1.0, 2.5, 0.9, 1.0, 1.4])
    c = concurrency.compare(spec, plain, seed=3)
    assert c == concurrency.compare(spec, plain, seed=3)  # seeded: the same numbers give the same interval
    assert c["latency_speedup_ci"][0] < c["latency_speedup"] < c["latency_speedup_ci"][1]
    low, high = stats.bootstrap_statistic(5, lambda pick: float(sum(pick)), seed=3)
    assert 0 <= low <= high <= 20


def test_the_document_csv_and_table_hold_every_level_and_request():
    plain, spec = plain_and_spec([2.0, 2.0], [1.0, 1.0])
    doc = concurrency.document(
        [{"concurrency": 1, "runs": [plain, spec]}],
        {"server": "http://plain", "model": "m"},
        [{"server": "http://spec", "model": "m", "method": "draft", "k": 4}],
        {"max_new_tokens": 8},
        {"cpu": "test CPU"},
        [{"tag": "a", "chars": 3}, {"tag": "b", "chars": 4}],
        failure={"server": "http://plain", "concurrency": 2, "error": "Nothing is listening"},
    )
    doc = json.loads(concurrency.to_json(doc))
    assert doc["format"] == "specviz.load" and doc["machine"]["cpu"] == "test CPU"
    assert [len(v) for v in doc["levels"][0]["requests"].values()] == [2, 2]
    assert doc["stops_paying"] == {"http://spec": None}
    rows = list(csv.DictReader(io.StringIO(concurrency.to_csv(doc))))
    assert [(r["server"], r["role"]) for r in rows] == [("http://plain", "baseline"), ("http://spec", "speculative")]
    assert float(rows[1]["latency_speedup"]) == pytest.approx(2.0) and rows[0]["latency_speedup"] == ""
    text = concurrency.table(doc)
    assert "concurrency 1" in text and "latency 2.00x" in text
    assert "failed at concurrency 2 on http://plain: Nothing is listening" in text


def test_the_committed_sweep_is_reproduced_from_its_own_requests():
    """assets/bench's load sweep (docs/vllm.md quotes it): every figure follows from the requests it stores."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "assets" / "bench" / "vllm-cpu-load-draft-k4-code.json"
    doc = json.loads(path.read_text())
    assert doc["format"] == "specviz.load" and doc["failure"] is None
    for level in doc["levels"]:
        runs = []
        for summary in level["summaries"]:
            requests = level["requests"][summary["server"]]
            timings = tuple(
                RequestTiming(
                    **{
                        **r,
                        "arrivals": tuple(map(tuple, r["arrivals"])),
                        "per_step_accepted": r["per_step_accepted"] and tuple(r["per_step_accepted"]),
                    }
                )
                for r in requests
            )
            assert all(t.tokens == t.streamed == doc["settings"]["max_new_tokens"] for t in timings)
            runs.append(LevelRun(summary["server"], level["concurrency"], summary["wall_s"], timings))
            again = concurrency.level_summary(runs[-1])
            assert again["tokens_per_s"] == pytest.approx(summary["tokens_per_s"])
            assert again["e2e_ms"]["median"] == pytest.approx(summary["e2e_ms"]["median"], abs=0.05)
        speedup = concurrency.compare(runs[1], runs[0], seed=0)
        assert speedup["latency_speedup"] == pytest.approx(level["speedups"][0]["latency_speedup"], rel=1e-3)
        assert speedup["throughput_speedup"] == pytest.approx(level["speedups"][0]["throughput_speedup"], rel=1e-3)
