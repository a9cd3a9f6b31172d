"""The calculator's measured mode never builds on timings that cannot be true, and never shows one c while its
formulas use another."""

from __future__ import annotations

import pytest
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


# Every drafter timed: an EAGLE-1 head step, an EAGLE-3 one, a pass of 4 Medusa heads, an early exit at E = 4, an
# MTP module step.
EVERY = MeasuredCosts(
    "t", "d", "cpu", "float32", 30, 5, target_step_s=0.005, verify_s=(0.0055, 0.006, 0.0065, 0.007),
    draft_step_s={
        "draft": 0.0005, "eagle": 0.0012, "eagle3": 0.0009, "medusa": 0.0004, "early_exit": 0.002, "mtp": 0.0011,
    },
    pass_drafts={"medusa": 4}, exit_layer=4,
)  # fmt: skip


def picked(costs: MeasuredCosts, drafter: str):
    at = measured(costs)
    at.selectbox(key="c_drafter").set_value(drafter).run()
    assert not at.exception and not at.error
    return at


def formulas_speedup(at, c: float) -> float:
    from specviz.core.theory import TheoryInputs, analyse

    return analyse(TheoryInputs(alpha=0.8, k=4, c=c, verify=EVERY.verify_cost())).speedup


def test_the_picker_offers_the_draft_the_heads_beside_the_target_early_exit_and_the_lookups():
    at = measured(EVERY)  # the bundled pair: a draft model, and EAGLE-1, EAGLE-3 and Medusa heads beside its target
    assert at.selectbox(key="c_drafter").options == [
        "draft model", "EAGLE-1 head", "EAGLE-3 head", "Medusa heads", "MTP module", "early exit (self-speculation)",
        "the target at fewer bits (quantized self-draft)", "n-gram lookup (prompt lookup)", "Suffix decoding",
    ]  # fmt: skip
    assert at.selectbox(key="c_drafter").value == "draft"  # the draft model's c, as before


def test_a_heads_measured_c_is_the_one_the_formulas_use_and_the_page_says_whose():
    heads = {name: EVERY.c_of(name) for name in ("eagle", "eagle3", "medusa", "mtp")}
    at = measured(EVERY)
    for drafter, c in heads.items():  # picked in turn on one page, as a reader does
        at.selectbox(key="c_drafter").set_value(drafter).run()
        assert not at.exception and not at.error
        slider = at.slider(key="c")
        assert slider.disabled and f"measured {c:.3f} is used" in slider.label
        assert any(m.label == "Measured c" and m.value == f"{c:.3f}" for m in at.metric)
        assert metric(at, "Speedup (with verify cost)") == pytest.approx(formulas_speedup(at, c), abs=0.006)
    assert EVERY.c_of("medusa") == pytest.approx(0.0016 / 4 / 0.005)  # a Medusa pass's share per draft
    assert any("c of the MTP module: one head step" in c.value for c in at.caption)
    at.selectbox(key="c_drafter").set_value("medusa").run()
    assert any("one pass of all 4 heads / 4" in c.value for c in at.caption)


def test_early_exits_c_is_shown_beside_e_over_l():
    at = picked(EVERY, "early_exit")
    assert at.number_input(key="calc_exit_layer").value == 4
    assert any(m.label == "Measured c" and m.value == f"{EVERY.c_of('early_exit'):.3f}" for m in at.metric)
    assert any("at E = 4" in c.value and "E/L = 4/10 = 0.40" in c.value for c in at.caption)
    at.number_input(key="calc_exit_layer").set_value(6).run()
    assert any("Measured at E = 4: press Measure again for E = 6" in c.value for c in at.caption)


def test_a_lookups_c_is_zero():
    for drafter in ("ngram", "suffix"):
        at = picked(QUIET, drafter)
        assert any(m.label == "Measured c" and m.value == "0.000" for m in at.metric)
        assert any(m.label == "Draft step" and m.value == "no model run" for m in at.metric)
        assert metric(at, "Speedup (with verify cost)") == pytest.approx(formulas_speedup(at, 0.0), abs=0.006)


def test_a_drafter_this_measurement_did_not_time_leaves_the_slider_in_use():
    at = picked(QUIET, "eagle")  # QUIET timed the draft model only
    assert any("did not time the EAGLE-1 head's step" in w.value for w in at.warning)
    assert not at.slider(key="c").disabled
    assert any(m.label == "Measured c" and m.value == "—" for m in at.metric)


def test_measuring_an_eagle_head_times_its_step_on_the_bundled_pair():
    at = picked(QUIET, "eagle")
    at.button(key="measure").click().run()
    assert not at.exception and not at.error
    costs = at.session_state["measured_costs"]
    assert set(costs.draft_step_s) == {"draft", "eagle"}  # the draft model's step and the EAGLE-1 head's alone
    if not costs.implausible:  # a busy machine's timings are refused (above)
        assert any(m.label == "Measured c" and m.value == f"{costs.c_of('eagle'):.3f}" for m in at.metric)
