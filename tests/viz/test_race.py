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
    assert sweep["encoding"]["x"]["field"] == "k"
