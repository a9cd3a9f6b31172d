"""Race bookkeeping (arrivals, gaps, divergence) and its charts."""

from specviz.race import LaneResult, first_divergence
from specviz.viz import race_charts


def lane(name, arrivals, ids=(1, 2, 3, 4, 5), alpha=None):
    return LaneResult(name, tuple(ids), tuple(arrivals), alpha, None)


def test_bursts_become_zero_gaps():
    burst = lane("draft", [(0.010, 1), (0.030, 4)])
    assert [round(g, 6) for g in burst.inter_token_latencies_ms()] == [20.0, 0.0, 0.0, 0.0]
    assert burst.ttft_s == 0.010 and burst.wall_s == 0.030 and round(burst.tokens_per_s) == 167


def test_first_divergence():
    assert first_divergence((1, 2, 3), (1, 2, 3)) is None
    assert first_divergence((1, 2, 3), (1, 9, 3)) == 1
    assert first_divergence((1, 2, 3), (1, 2)) == 2


def test_race_frames_and_charts():
    plain = lane("plain", [(0.01 * i, 1) for i in range(1, 6)])
    spec = lane("draft", [(0.01, 1), (0.02, 4)], alpha=0.75)
    other = lane("ngram", [(0.01, 5)], ids=(1, 2, 7, 4, 5))
    table = race_charts.lanes_frame([plain, spec, other], plain.output_ids)
    assert list(table["same text as plain"]) == ["✓", "✓", "✗ from token 3"]
    assert set(race_charts.lanes_frame([plain, other])["same text as plain"]) == {"n/a (sampling)"}
    arrivals = race_charts.arrivals_frame([spec])
    assert list(arrivals["tokens"]) == [0, 1, 5]
    spec_dict = race_charts.arrivals_chart([plain, spec]).to_dict()
    assert spec_dict["mark"]["interpolate"] == "step-after" and spec_dict["encoding"]["y"]["field"] == "tokens"
    assert race_charts.latency_chart([spec]).to_dict()["mark"]["type"] == "tick"
    sweep = race_charts.sweep_chart([{"k": 1, "kind": "measured", "speedup": 1.2}]).to_dict()
    assert sweep["encoding"]["x"]["field"] == "k"
