"""Spec-Bench's frames and charts: dashes for missing figures, ranks within each category, and the flip
(the best method changes with the category) visible in both the measured and the published chart."""

from specviz.measure.spec_bench import published_tables
from specviz.viz import category_charts as charts
from specviz.viz.layout import BAND_ROW


def row(tag, method, speedup, rank, alpha=0.5):
    return {
        "tag": tag,
        "method": method,
        "k": 4,
        "setting": f"{method}, K = 4",
        "speedup": speedup,
        "speedup_ci": (0.9, 1.1) if speedup is not None else (float("nan"), float("nan")),
        "alpha": alpha,
        "tau": 1.5,
        "prompts": 5,
        "rank": rank,
        "best": rank == 1,
    }


RANKED = [
    row("all", "ngram", 1.2, 1),
    row("summarization", "ngram", 1.6, 1),  # n-gram leads summarization ...
    row("summarization", "suffix", 1.1, 2),
    row("qa", "suffix", 1.2, 1),  # ... and trails in qa: the flip
    row("qa", "ngram", 0.9, 2, alpha=None),
    row("rag", "early_exit", None, 3),
]


def test_the_measured_frame_is_per_category_in_spec_benchs_order_with_dashes_for_missing_figures():
    frame = charts.measured_frame(RANKED)
    assert list(frame["category"]) == ["summarization", "summarization", "qa", "qa", "rag"]
    assert list(frame["rank"]) == ["★ 1", "2", "★ 1", "2", "3"]
    assert frame.iloc[3]["alpha"] == "–" and frame.iloc[4]["speedup"] == "–" and frame.iloc[4]["speedup 95% CI"] == "–"
    assert not frame.astype(str).isin(["None", "nan"]).any().any()


def test_the_published_frame_marks_each_categorys_best_and_names_our_method():
    frame = charts.published_frame(published_tables()[0]).set_index("method")
    assert frame.loc["PLD", "summarization"] == "2.46x" and frame.loc["PLD", "translation"] == "1.15x"
    assert frame.loc["SAMD[EAGLE2]", "summarization"] == "★ 2.64x"
    assert frame.loc["EAGLE2", "math_reasoning"] == "★ 2.66x"  # the flip there: EAGLE-2 leads math, SAMD the rest
    assert frame.loc["PLD", "specviz method"] == "n-gram lookup (prompt lookup)"
    assert frame.loc["Lookahead", "specviz method"] == "–"


def test_the_flip_shows_as_ranks_that_change_along_a_methods_row():
    cells = charts.flip_cells(RANKED, published_tables()[0])
    here = cells[cells["panel"] == "measured here"].set_index(["method", "category"])
    ngram = "n-gram lookup (prompt lookup)"
    assert here.loc[(ngram, "summary"), "rank"] == 1 and here.loc[(ngram, "QA"), "rank"] == 2
    assert here.loc[(ngram, "summary"), "label"] == "★ 1.60x"
    published = cells[cells["panel"] != "measured here"].set_index(["method", "category"])
    assert published.loc[("PLD", "summary"), "rank"] < published.loc[("PLD", "translation"), "rank"]
    measured_chart, published_chart = charts.flip_charts(RANKED, published_tables()[0])
    spec = measured_chart.to_dict()
    assert "measured here" in spec["title"] and "Vicuna-7B-v1.3" in published_chart.to_dict()["title"]
    assert spec["layer"][0]["encoding"]["color"]["field"] == "rank"
    assert {"method", "category", "speedup", "rank"} <= {t["field"] for t in spec["layer"][0]["encoding"]["tooltip"]}


def test_each_method_gets_its_row_and_each_category_its_label():
    """Streamlit keeps a chart's total height: a chart sized below a row per method (plus its title and axis) drew
    the published table's ten methods with every other label hidden and one measured method with no row at all."""
    for chart in charts.flip_charts(RANKED, published_tables()[0]):
        spec = chart.to_dict()
        methods_drawn = len({row["method"] for row in spec["datasets"][spec["data"]["name"]]})
        assert spec["height"] >= methods_drawn * BAND_ROW + 100
        assert spec["layer"][0]["encoding"]["x"]["axis"]["labelOverlap"] is False
    assert max(len(words) for words in charts.CATEGORY_WORDS.values()) <= 13  # six fit side by side in 600 px
