"""Lecture mode on every page: the sidebar's toggle styles every chart of the page at projector sizes (not only the
round page's), and the home page, which has no toggle, follows the session's mode."""

import json

import pytest
from app_helpers import open_page

from specviz.ui.render import LECTURE_CSS
from specviz.viz.layout import LECTURE_FONT_FLOORS, LECTURE_TITLE_SIZE

LECTURE = "Lecture mode (large, high contrast)"


def chart_specs(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]


def lecture_css_shown(at) -> bool:
    return any(LECTURE_CSS.split("\n")[1] in m.value for m in at.markdown)


def test_the_toggle_styles_every_chart_of_the_calculator_for_a_projector():
    at = open_page("pages/calculator.py", 120)
    off = chart_specs(at)
    assert len(off) >= 5
    assert all("fontSize" not in spec["config"].get("axis", {}) for spec in off)
    assert not lecture_css_shown(at)
    next(t for t in at.toggle if t.label == LECTURE).set_value(True).run()
    assert not at.exception
    on = chart_specs(at)
    assert len(on) == len(off)
    for spec in on:
        assert spec["config"]["axis"]["labelFontSize"] >= LECTURE_FONT_FLOORS["labelFontSize"]
        assert spec["config"]["axis"]["titleFontSize"] >= LECTURE_FONT_FLOORS["titleFontSize"]
        assert spec["config"]["legend"]["labelFontSize"] >= LECTURE_FONT_FLOORS["labelFontSize"]
        assert spec["title"]["fontSize"] == LECTURE_TITLE_SIZE
    assert lecture_css_shown(at)


@pytest.mark.slow
def test_the_home_page_follows_lecture_mode_turned_on_elsewhere(tiny_default):
    at = open_page("pages/exactness.py", 120)
    next(t for t in at.toggle if t.label == LECTURE).set_value(True).run()
    at.switch_page("pages/home.py").run()
    assert not at.exception
    assert lecture_css_shown(at)
    at.switch_page("pages/exactness.py").run()
    next(t for t in at.toggle if t.label == LECTURE).set_value(False).run()
    at.switch_page("pages/home.py").run()
    assert not lecture_css_shown(at)
