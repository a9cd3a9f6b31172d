"""The ranking's table and chart (viz/workload_charts.py): best first, the tag's best starred, the interval in words,
no speedup columns for a server, and a chart of one tag's settings in the ranking's order with its intervals."""

import math

from specviz.viz.layout import BAND_ROW, FRAME_ROOM, band_height
from specviz.viz.tables import COLUMNS
from specviz.viz.workload_charts import RANKING_COLUMNS, ranking_chart, ranking_frame


def row(tag, rank, method, speedup, ci=(0.9, 1.3), c=0.2, drafts=4.0):
    return {
        "tag": tag,
        "rank": rank,
        "best": rank == 1,
        "source": "specviz",
        "method": method,
        "k": 4,
        "setting": f"{method}, K = 4",
        "speedup": speedup,
        "speedup_ci": ci,
        "alpha": 0.5,
        "tau": 2.0,
        "c": c,
        "drafts_per_round": drafts,
    }


ROWS = [
    row("all", 1, "suffix", 1.2, (1.05, 1.4), c=0.0, drafts=1.7),
    row("all", 2, "draft", 1.1),
    row("code", 1, "draft", 1.5, (1.4, 1.6)),
    row("code", 2, "suffix", 1.0, c=0.0),
]


def test_the_table_stars_each_tags_best_and_writes_the_interval():
    frame = ranking_frame(ROWS)
    assert list(frame.columns) == list(RANKING_COLUMNS)
    assert list(frame["rank"]) == ["★ 1", "2", "★ 1", "2"]
    assert list(frame["speedup 95% CI"]) == ["1.05–1.40", "0.90–1.30", "1.40–1.60", "0.90–1.30"]
    assert list(frame["drafts per round"]) == [1.7, 4.0, 4.0, 4.0]
    assert all(name in COLUMNS and "_" not in COLUMNS[name].header for name in frame.columns)  # human headers


def test_without_a_measured_speedup_its_columns_are_left_out():
    served = [{**r, "speedup": None, "speedup_ci": (math.nan, math.nan)} for r in ROWS]
    frame = ranking_frame(served, speedup=False)
    assert not {"speedup", "speedup 95% CI"} & set(frame.columns)
    assert {"alpha", "tau", "c", "drafts per round"} <= set(frame.columns)


def test_the_chart_draws_one_tag_best_on_top_with_intervals_and_the_plain_line():
    spec = ranking_chart(ROWS, "code").to_dict()
    bars, intervals, plain = spec["layer"]
    assert bars["title"] == "The family ranked on prompts tagged 'code': measured speedup over plain (95% CI)"
    assert bars["mark"]["type"] == "bar" and intervals["mark"]["type"] == "errorbar"
    assert bars["encoding"]["y"]["sort"] == ["draft, K = 4", "suffix, K = 4"]  # the ranking's order
    assert {t["field"] for t in bars["encoding"]["tooltip"]} >= {"speedup", "low", "high", "alpha", "tau", "c"}
    assert plain["mark"]["type"] == "rule"
    data = spec["datasets"]
    values = [v for vs in data.values() for v in vs if "setting" in v]
    assert [v["setting"] for v in values] == ["draft, K = 4", "suffix, K = 4"]  # code's rows only


def test_the_chart_gives_every_setting_its_row_whatever_their_number():
    """A past bug: the chart was 120 px for up to 4 settings (Streamlit keeps a chart's total height, its
    three-line title and x axis included), so its bars overlapped on one row and their labels printed over each other.
    """
    for n in (1, 2, 4, 9):
        rows = [
            {**row("all", i + 1, "draft", 1.0 + i / 10), "k": i + 1, "setting": f"draft model, K = {i + 1}"}
            for i in range(n)
        ]
        spec = ranking_chart(rows, "all").to_dict()
        assert spec["height"] == band_height(n) >= n * BAND_ROW + FRAME_ROOM, (n, spec["height"])
        assert spec["layer"][0]["encoding"]["y"]["axis"]["labelOverlap"] is False  # never thinned: one label a row
