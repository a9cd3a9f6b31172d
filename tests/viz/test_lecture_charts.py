"""Lecture mode styles every chart in one place (viz.layout.lectured): titles, axis titles, ticks, legends and text
marks reach projector sizes, whatever size the chart builder set (the u label, the KV-cache slot labels)."""

import altair as alt
import pandas as pd

from specviz.core.trace_json import trace_from_json
from specviz.ui.render import TRACES_DIR
from specviz.viz import layout
from specviz.viz import round_charts as charts
from specviz.viz.layout import LECTURE_FONT_FLOORS, LECTURE_TITLE_SIZE, lectured


def font_sizes(spec, key: str) -> list[float]:
    """Every value of `key` anywhere in a Vega-Lite spec."""
    found = []
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == key and isinstance(v, int | float):
                found.append(v)
            else:
                found += font_sizes(v, key)
    elif isinstance(spec, list):
        for v in spec:
            found += font_sizes(v, key)
    return found


def a_round():
    trace = trace_from_json((TRACES_DIR / "early-rejection-residual.json").read_text())
    return trace.rounds[2]


def test_a_lectured_chart_raises_every_font_size_it_set_to_the_floors():
    r = a_round()
    pos = r.positions[0]
    for chart in (charts.acceptance_chart(pos), charts.cache_chart(r)):
        before = chart.to_dict()
        assert min(font_sizes(before, "fontSize")) < LECTURE_FONT_FLOORS["fontSize"]  # the builders set smaller
        spec = lectured(chart).to_dict()
        for key, floor in LECTURE_FONT_FLOORS.items():
            assert all(size >= floor for size in font_sizes(spec, key)), key
        assert spec["title"]["fontSize"] == LECTURE_TITLE_SIZE >= 20
        assert spec["title"]["subtitleFontSize"] >= 18  # the u formula is the acceptance chart's subtitle
        config = spec["config"]
        assert config["axis"]["labelFontSize"] >= 16 and config["axis"]["titleFontSize"] >= 18
        assert config["axis"]["labelLimit"] >= 300  # Streamlit's theme cuts axis labels at 100 px with "…"
        assert config["legend"]["labelFontSize"] >= 16 and config["legend"]["titleFontSize"] >= 18
        assert config["text"]["fontSize"] >= 17
        assert chart.to_dict() == before  # the chart itself is left as it was


def test_text_marks_and_axes_a_builder_sized_are_raised_and_larger_ones_kept():
    frame = pd.DataFrame({"x": [1], "label": ["u = 0.4"]})
    small = alt.Chart(frame).mark_text(fontSize=11).encode(x=alt.X("x:Q", axis=alt.Axis(labelFontSize=9)), text="label")
    large = alt.Chart(frame).mark_text(fontSize=30).encode(x="x:Q", text="label")
    spec = lectured((small + large).properties(title="A chart")).to_dict()
    assert [layer["mark"]["fontSize"] for layer in spec["layer"]] == [LECTURE_FONT_FLOORS["fontSize"], 30]
    assert spec["layer"][0]["encoding"]["x"]["axis"]["labelFontSize"] == LECTURE_FONT_FLOORS["labelFontSize"]


def test_lecture_titles_are_wrapped_to_a_projector_width_and_never_cut():
    text = "Acceptance by draft position: measured vs the analytic sum of min(p, q) over the workload"
    title = lectured(alt.Chart(pd.DataFrame({"x": [1]}), title=text).mark_bar()).to_dict()["title"]
    assert " ".join(title["text"]) == text
    assert len(title["text"]) > 1
    assert max(map(len, title["text"])) <= layout.LECTURE_TITLE_CHARS
    assert title["limit"] == 0  # never cut with an ellipsis


def test_outside_lecture_mode_labels_are_not_cut_at_streamlits_100_px():
    chart = alt.Chart(pd.DataFrame({"x": [1], "y": ["copied from prompt"]}), title="t").mark_bar().encode(x="x", y="y")
    config = layout.readable(chart).to_dict()["config"]
    assert config["axis"]["labelLimit"] >= 200
    assert config["legend"]["labelLimit"] >= 200


def test_lecture_charts_are_taller_and_rows_leave_room_for_their_labels():
    frame = pd.DataFrame({"x": [1], "y": ["a"]})
    fixed = alt.Chart(frame, title="t").mark_bar().encode(x="x", y="y").properties(height=200)
    rows = alt.Chart(frame, title="t").mark_rect().encode(x="x", y="y").properties(height=alt.Step(20))
    assert lectured(fixed).to_dict()["height"] == 200 * layout.LECTURE_HEIGHT
    assert lectured(rows).to_dict()["height"] == {"step": layout.LECTURE_ROW}
    assert layout.LECTURE_ROW >= 1.5 * LECTURE_FONT_FLOORS["labelFontSize"]
    roomy = rows.properties(height=alt.Step(42))
    assert lectured(roomy).to_dict()["height"] == {"step": 42}


def test_a_title_inside_a_layer_is_projector_sized_too():
    frame = pd.DataFrame({"x": [1]})
    layered = alt.Chart(frame, title="Speedup: measured vs predicted").mark_bar().encode(x="x") + alt.Chart(
        frame
    ).mark_rule().encode(x="x")
    config = lectured(layered).to_dict()["config"]
    assert config["title"]["fontSize"] == LECTURE_TITLE_SIZE


def test_a_lectured_chart_writes_its_axes_legends_and_titles_in_dark_ink():
    """A past bug: Streamlit's theme greys axis and legend text (#808495), which a projector washes out; lecture mode
    sets every text colour of the chart's config to layout.LECTURE_INK."""
    config = lectured(charts.pq_chart(a_round().positions[0])).to_dict()["config"]
    for part in ("axis", "legend", "header"):
        assert config[part]["labelColor"] == config[part]["titleColor"] == layout.LECTURE_INK, part
    assert config["title"]["color"] == config["title"]["subtitleColor"] == layout.LECTURE_INK
    assert "labelColor" not in layout.readable(charts.pq_chart(a_round().positions[0])).to_dict().get("config", {}).get(
        "axis", {}
    )  # outside lecture mode the theme's colours stay
