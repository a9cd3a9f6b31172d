"""Race charts from run records: the table's columns, arrivals as steps, gaps as ticks."""

from specviz.core.record import HF, RunRecord
from specviz.viz import race_charts


def lane(method, arrivals, ids=(1, 2, 3, 4, 5), accepted=None, source="specviz"):
    """A lane's record; K = 3 drafts a round, or none for plain, or not reported (accepted None) for HF."""
    committed = tuple(n for _, n in arrivals)
    k = 0 if method == "plain" else 3
    if method == "plain":
        accepted = (0,) * len(committed)
    judged = None if accepted is None else tuple(min(a + 1, k) for a in accepted)
    drafted = None if accepted is None else (k,) * len(committed)
    return RunRecord(
        source,
        method,
        k,
        "p",
        "",
        tuple(ids),
        committed,
        drafted,
        accepted,
        judged,
        tuple(t for t, _ in arrivals),
        arrivals[-1][0],
    )


def test_race_frames_and_charts():
    plain = lane("plain", [(0.01 * i, 1) for i in range(1, 6)])
    spec = lane("draft", [(0.01, 1), (0.02, 4)], accepted=(0, 3))
    other = lane("ngram", [(0.01, 5)], ids=(1, 2, 7, 4, 5), accepted=(3,))
    hf = lane("hf_assisted", [(0.01, 2), (0.02, 3)], source=HF)
    table = race_charts.lanes_frame([plain, spec, other, hf], plain.output_ids)
    assert list(table["same text as plain"]) == ["✓", "✓", "✗ from token 3", "✓"]
    assert list(table["lane"]) == [
        "plain decoding (specviz)",
        "specviz · draft model",
        "specviz · n-gram lookup",
        "HF generate · assistant_model",
    ]
    assert list(table["α"]) == ["–", "0.75", "1.00", "not reported"]  # generate() does not report acceptances
    assert table["τ"][3] == 2.5  # but tokens per target pass are measured for every lane
    assert set(race_charts.lanes_frame([plain, other])["same text as plain"]) == {"n/a (sampling)"}
    arrivals = race_charts.arrivals_frame([spec])
    assert list(arrivals["tokens"]) == [0, 1, 5]
    spec_dict = race_charts.arrivals_chart([plain, spec]).to_dict()
    assert spec_dict["mark"]["interpolate"] == "step-after"
    assert spec_dict["encoding"]["y"]["field"] == "tokens"
    assert race_charts.latency_chart([spec]).to_dict()["mark"]["type"] == "tick"
    sweep = race_charts.sweep_chart([{"k": 1, "kind": "measured", "speedup": 1.2}]).to_dict()
    assert sweep["layer"][0]["encoding"]["x"]["field"] == "k"


def test_lanes_table_has_a_speedup_column_with_the_repeats_range():
    from specviz.measure.timing import Timing

    plain, spec = lane("plain", [(0.1, 5)]), lane("draft", [(0.05, 5)])
    timings = {"plain": Timing((1.0, 1.0, 1.0), 0.0, 5), "draft": Timing((1.6, 1.2, 1.4), 0.0, 5)}
    table = race_charts.lanes_frame([plain, spec], plain.output_ids, timings, {"plain": 50.0, "draft": 70.0})
    assert list(table["speedup vs plain"]) == ["1.00× (1.00–1.00)", "1.40× (1.20–1.60)"]  # median, range of repeats
    assert list(table["tokens/s"]) == [50.0, 70.0]  # the median over repeats, not the first run's 50 and 100
    assert list(table["repeats"]) == [3, 3]
    assert "speedup vs plain" not in race_charts.lanes_frame([plain, spec]).columns  # no timings: no column


def test_sweep_chart_draws_the_repeats_range_as_bars_with_caps_at_their_own_k():
    rows = [
        {"k": 1, "kind": "measured", "speedup": 1.2, "low": 1.1, "high": 1.3},
        {"k": 1, "kind": "predicted from measured τ and costs", "speedup": 1.5},
    ]
    chart = race_charts.sweep_chart(rows).to_dict()
    bars, low, high = chart["layer"][1:]
    assert bars["mark"]["type"] == "rule"
    assert (bars["encoding"]["y"]["field"], bars["encoding"]["y2"]["field"]) == ("low", "high")
    for cap, end in ((low, "low"), (high, "high")):  # a fixed short tick, not one spanning the band between K
        assert cap["mark"] == {"type": "tick", "size": 14, "thickness": 1.5} and cap["encoding"]["y"]["field"] == end
    assert chart["layer"][0]["encoding"]["x"]["axis"]["labelAngle"] == 0
    data = next(iter(chart["datasets"].values()))
    assert [(d["low"], d["high"]) for d in data if d["kind"] == "measured"] == [(1.1, 1.3)]
