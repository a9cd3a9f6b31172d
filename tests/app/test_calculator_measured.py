"""The calculator's measured mode never builds on timings that cannot be true, and never shows one c while its
formulas use another (issue 27, item 3)."""

from __future__ import annotations

from app_helpers import open_page

from specviz.engine.costs import MeasuredCosts

BUSY = MeasuredCosts("t", "d", "cpu", "float32", 30, 5, 0.0078, 0.077, (0.080, 1.15, 0.075, 0.08))  # v(K) 1, 15, 1
QUIET = MeasuredCosts("t", "d", "cpu", "float32", 30, 5, 0.0005, 0.005, (0.0055, 0.006, 0.0065, 0.007))


def measured(costs: MeasuredCosts):
    at = open_page("pages/calculator.py")
    at.session_state["measured_costs"] = costs
    at.radio(key="verify_mode").set_value("measured on this machine").run()
    return at


def metric(at, label: str) -> float:
    return float(next(m for m in at.metric if m.label == label).value.rstrip("×"))


def test_implausible_timings_are_refused_with_the_reason_and_the_ideal_cost_is_used():
    assert BUSY.implausible
    at = measured(BUSY)
    assert not at.exception
    assert any("cannot be true" in w.value for w in at.warning)
    assert metric(at, "Speedup (with verify cost)") <= metric(at, "Speedup (ideal verify)")
    assert not at.slider(key="c").disabled  # the slider's c is the one in use


def test_a_measured_c_in_use_is_the_one_the_slider_shows():
    assert QUIET.implausible is None
    at = measured(QUIET)
    assert not at.exception
    slider = at.slider(key="c")
    assert slider.disabled
    assert f"{QUIET.c:.3f}" in slider.label
    assert any(m.label == "Measured c" and m.value == f"{QUIET.c:.3f}" for m in at.metric)
