"""The race page's numbers agree with the numbers beside them: its comparison with a
recorded bench reads like with like, a speedup that is not the ratio of the tokens/s beside it says why, and twelve
lanes get charts as wide as the page, with every lane labelled.

The lanes' timings are set here (measure.race.run_method answers with records of chosen speeds), so the page's own
race, timing and words run on numbers the test knows; the pair is the tiny test pair, the environment the bench's."""

import json

import pytest
from app_helpers import click, open_page

from specviz import methods
from specviz.core.record import RunRecord
from specviz.engine.loading.models import ASSETS
from specviz.viz.layout import BAND_ROW

TOKENS = 12
# A race as once shown: plain's speed moved between repeats. Paired ratios 1.45, 1.33, 1.51 (median 1.45); each side's
# median taken apart, 184.2 / 137.7 = 1.34.
PLAIN = (127.0, 137.7, 150.0)
DRAFT = (127.0 * 1.45, 137.7 * 1.33, 150.0 * 1.51)
BENCH = json.loads((ASSETS / "bench" / "cpu-float32-forwards-code.json").read_text())["environment"]


def record(method: str, tokens_per_s: float) -> RunRecord:
    """A run of TOKENS tokens at this speed: plain one token a pass, a speculative lane three a pass."""
    per_round = (1,) * TOKENS if method == methods.PLAIN else (3,) * (TOKENS // 3)
    wall = TOKENS / tokens_per_s
    ends = tuple(wall * (i + 1) / len(per_round) for i in range(len(per_round)))
    drafted = None if method == methods.PLAIN else (4,) * len(per_round)
    accepted = None if method == methods.PLAIN else (2,) * len(per_round)
    return RunRecord(
        "specviz", method, 4, "p", "", tuple(range(TOKENS)), per_round, drafted, accepted, drafted, ends, wall
    )


@pytest.fixture
def timed_lanes(tiny_default, monkeypatch):
    """Every lane's runs at set speeds: the first call of a lane is its warm-up, then repeat r runs at speeds[r]."""
    calls: dict[str, int] = {}

    def run_method(pair, prompt, settings, lane):
        calls[lane] = calls.get(lane, 0) + 1
        repeat = calls[lane] - 2  # -1: the warm-up
        speeds = PLAIN if lane == methods.PLAIN else DRAFT if lane == methods.DRAFT else (100.0, 100.0, 100.0)
        return record(lane, speeds[max(repeat, 0)])

    monkeypatch.setattr("specviz.measure.race.run_method", run_method)
    monkeypatch.setattr("specviz.measure.bench.environment", lambda pair, lanes=(): dict(BENCH))
    return calls


def raced(lanes: list[str], exit_layer: int | None = None):
    at = open_page("pages/race.py")
    if exit_layer:
        at.sidebar.number_input(key="exit_layer").set_value(exit_layer).run()
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="k").set_value(4).run()
    at.sidebar.number_input(key="draft_vocab").set_value(1024).run()
    at.multiselect[0].set_value(lanes).run()
    at = click(at, "Start the race")
    assert not at.exception
    assert not at.error
    return at


def said(at) -> str:
    return " ".join(e.value for e in [*at.caption, *at.warning])


def test_the_draft_lane_is_compared_with_the_bench_figure_of_its_own_k_and_agrees_only_when_its_range_holds_it(
    timed_lanes,
):
    """The bench file lists 1.85× at K = 4 (its runs ranged 1.19–2.77×) and 1.95× at its best K, 5, which the bench
    table shows; the lane measured 1.45× (1.33–1.51). Its range does not hold 1.85×: not "agrees"."""
    at = raced([methods.PLAIN, methods.DRAFT])
    words = next(c.value for c in at.caption if c.value.startswith("The draft-model lane:"))
    assert "agrees" not in words
    assert "cpu-float32-forwards-code.json (the draft-model lane at K = 4, float32" in words
    assert "measured 1.85×" in words and "1.45× (1.33–1.51)" in words
    assert "ranged 1.19–2.77×" in words  # why it is no disagreement either: one prompt against the bench's spread
    assert "lists this file at its best K, 5: 1.95×" in words  # the number the table below shows, named
    bench_table = at.dataframe[1].value.set_index("file")
    assert bench_table.loc["cpu-float32-forwards-code.json", "speedup"] == 1.95
    assert bench_table.loc["cpu-float32-forwards-code.json", "best K"] == 5


def test_a_speedup_that_is_not_the_ratio_of_the_tokens_per_s_beside_it_says_why(timed_lanes):
    at = raced([methods.PLAIN, methods.DRAFT])
    table = at.dataframe[0].value.set_index("lane")
    plain, draft = table.loc[methods.lane_label(methods.PLAIN)], table.loc[methods.lane_label(methods.DRAFT)]
    assert round(plain["tokens/s"], 1) == 137.7 and round(draft["tokens/s"], 1) == 184.2
    assert draft["speedup vs plain"] == "1.45× (1.33–1.51)"  # not 184.2 / 137.7 = 1.34: the page must say why
    words = next(c.value for c in at.caption if "is not the ratio of the tokens/s beside it" in c.value)
    assert "Plain ran at 127.0, 137.7, 150.0 tokens/s in its repeats" in words
    assert (
        f"{methods.lane_label(methods.DRAFT)} 184.2 / 137.7 = 1.34, its repeats' ratios 1.45, 1.33, 1.51: 1.45×"
        in words
    )


def test_fourteen_lanes_get_charts_as_wide_as_the_page_with_every_lane_labelled(timed_lanes):
    at = raced(list(methods.LANES), exit_layer=2)  # early exit's E: the tiny target has 3 layers
    assert len(at.session_state["race"][0].records) == len(methods.LANES) == 14
    in_columns = [chart for column in at.columns for chart in column.get("vega_lite_chart")]
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    (arrivals,) = [s for s in specs if s["mark"]["type"] == "line" and s["encoding"]["x"]["field"] == "ms"]
    (latency,) = [s for s in specs if s["mark"]["type"] == "tick"]
    assert not in_columns  # each chart the page's width: in a half column the legend left the plot about 80 px
    legend = arrivals["encoding"]["color"]["legend"]
    assert legend["orient"] == "bottom" and legend["columns"] >= 2
    assert len(arrivals["encoding"]["color"]["scale"]["domain"]) == 14
    assert arrivals["encoding"]["color"]["scale"]["scheme"] == "tableau20"  # category10 would repeat two colours
    assert latency["height"] >= 14 * BAND_ROW  # a row per lane: 200 px left 16 px each, and Vega hid 9 labels
    assert latency["encoding"]["y"]["axis"]["labelOverlap"] is False
    assert latency["encoding"]["y"]["sort"] == [methods.lane_label(lane) for lane in methods.LANES]


def test_a_few_lanes_keep_their_charts_side_by_side(timed_lanes):
    at = raced([methods.PLAIN, methods.DRAFT])
    assert len([chart for column in at.columns for chart in column.get("vega_lite_chart")]) == 2
