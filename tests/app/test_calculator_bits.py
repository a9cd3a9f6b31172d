"""The calculator's measured preset "the target at N bits": the bits knob moves α, K and c along what the bench
measured for smollm2's own copy, the formulas follow, the measured speedup is said beside them, and α by bits is
charted."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.core.theory import TheoryInputs, analyse
from specviz.measure.quantized_bits import BitsPoint

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "calculator.py")
POINTS = (
    BitsPoint(8, 5, 0.99, 0.62, 5.6, 1.1, 1.21, 1.4, 6, "AMD EPYC (AVX2), float32, 1 thread", "q8.json"),
    BitsPoint(4, 5, 0.98, 0.41, 5.5, 1.04, 1.62, 1.86, 20, "AMD EPYC (AVX2), float32, 1 thread", "q4.json"),
    BitsPoint(2, 1, 0.02, 0.40, 1.0, 1.0, 0.55, 0.6, 6, "AMD EPYC (AVX2), float32, 1 thread", "q2.json"),
)


@pytest.fixture
def page(monkeypatch):
    import specviz.ui.calculator

    monkeypatch.setattr(specviz.ui.calculator, "recorded_points", lambda: POINTS)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception and not at.error
    return at


def speedup_shown(at) -> str:
    return next(m.value for m in at.metric if m.label == "Speedup (with verify cost)")


def test_the_preset_sets_alpha_k_and_c_to_the_measured_4_bit_copy_and_says_what_it_measured(page):
    assert page.slider(key="alpha").value == 0.8  # your own α and c until the preset is picked
    page.radio(key="calc_preset").set_value("the target at N bits (measured)").run()
    assert not page.exception and not page.error
    assert (page.slider(key="alpha").value, page.slider(key="k").value, page.slider(key="c").value) == (0.98, 5, 0.41)
    assert speedup_shown(page) == f"{analyse(TheoryInputs(alpha=0.98, k=5, c=0.41)).speedup:.2f}×"
    said = " ".join(c.value for c in page.caption)
    assert (
        "4 bits: α 0.98, c 0.41, K 5, τ 5.50, v(K) 1.04: 1.62× plain measured (1.86× predicted), 20 prompts on "
        "AMD EPYC (AVX2)" in said
    )
    specs = [json.loads(c.proto.spec) for c in page.get("vega_lite_chart")]
    (chart,) = [s for s in specs if "α by bits" in str(s.get("title"))]
    assert chart["layer"][0]["encoding"]["x"]["sort"] == ["8 bits", "4 bits", "2 bits"]  # a bar per bits benched


def test_the_bits_knob_moves_along_the_measured_points_and_the_sliders_stay_movable(page):
    page.radio(key="calc_preset").set_value("the target at N bits (measured)").run()
    page.select_slider(key="calc_bits").set_value(2).run()
    assert (page.slider(key="alpha").value, page.slider(key="k").value, page.slider(key="c").value) == (0.02, 1, 0.4)
    assert "2 bits: α 0.02" in " ".join(c.value for c in page.caption)
    page.slider(key="alpha").set_value(0.5).run()  # a reader may still move α by hand
    assert page.slider(key="alpha").value == 0.5 and not page.exception


def test_each_machine_measured_is_its_own_curve_and_one_is_picked_by_name():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.radio(key="calc_preset").set_value("the target at N bits (measured)").run()
    machines = at.radio(key="calc_bits_machine")
    assert set(machines.options) == {"AMD EPYC (AVX2), float32, 1 thread", "AMD EPYC (AVX512), float32, 1 thread"}
    machines.set_value("AMD EPYC (AVX512), float32, 1 thread").run()
    assert not at.exception and not at.error
    said = " ".join(c.value for c in at.caption)
    assert "4 bits: α 0.97" in said and "1.50× plain measured" in said and "AMD EPYC (AVX512)" in said
    machines = at.radio(key="calc_bits_machine").set_value("AMD EPYC (AVX2), float32, 1 thread").run()
    at.select_slider(key="calc_bits").set_value(3).run()  # that machine measured 8, 4, 3 and 2 bits
    assert "3 bits: α 0.38" in " ".join(c.value for c in at.caption)
    at.radio(key="calc_bits_machine").set_value("AMD EPYC (AVX512), float32, 1 thread").run()  # it has no 3-bit run
    assert not at.exception and not at.error
    assert "4 bits: α 0.97" in " ".join(c.value for c in at.caption)
