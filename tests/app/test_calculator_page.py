"""The calculator page: move the sliders, and the numbers shown are the pure functions' numbers."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.core.roofline import HARDWARE, MODELS, LoadSettings, break_even_batch, load_point
from specviz.core.theory import TheoryInputs, VerifyCost, analyse, compare_positional

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "calculator.py")


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def shows(at, result) -> None:
    m = metrics(at)
    assert m["Expected tokens per round"] == f"{result.expected_tokens:.3f}"
    assert m["Speedup (ideal verify)"] == f"{result.speedup_ideal:.2f}×"
    assert m["Speedup (with verify cost)"] == f"{result.speedup:.2f}×"
    assert m["Operations factor"] == f"{result.ops_factor:.2f}"
    assert m["Best K"] == str(result.best_k)
    be = result.break_even_alpha_at_k
    assert m[f"Break-even α at K = {result.inputs.k}"] == ("none" if be is None else f"{be:.3f}")


@pytest.fixture
def page():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert not at.error
    return at


def test_defaults_show_the_closed_forms(page):
    shows(page, analyse(TheoryInputs(alpha=0.8, k=4, c=0.05)))
    assert "E = (1 − 0.8^5) / (1 − 0.8) = 3.362" in page.code[0].value
    assert page.info[0].value.startswith("Speculation pays when")


def test_moving_alpha_k_and_c_updates_every_number(page):
    page.slider(key="alpha").set_value(0.6).run()
    shows(page, analyse(TheoryInputs(alpha=0.6, k=4, c=0.05)))
    page.slider(key="k").set_value(2).run()
    page.slider(key="c").set_value(0.2).run()
    shows(page, analyse(TheoryInputs(alpha=0.6, k=2, c=0.2)))
    assert metrics(page)["Best K"] == "2"
    assert metrics(page)["Speedup (ideal verify)"] == "1.40×"  # the closed form's best K at α 0.6, c 0.2
    page.slider(key="alpha").set_value(0.1).run()
    assert page.warning
    assert "slower than plain decoding" in page.warning[0].value


def test_linear_verify_cost(page):
    page.radio(key="verify_mode").set_value("linear model").run()
    page.slider(key="per_token").set_value(0.1).run()
    result = analyse(TheoryInputs(alpha=0.8, k=4, c=0.05, verify=VerifyCost.linear(0.1)))
    shows(page, result)
    assert result.speedup < result.speedup_ideal


def rounded(column, digits: int = 2) -> list[float]:
    """A table's column as shown: the page formats the numbers (two decimals), the frame keeps them whole."""
    return [round(float(x), digits) for x in column]


def test_reference_tables_are_shown(page):
    table1 = page.dataframe[0].value
    assert rounded(table1["ops"]) == [1.53, 1.58, 1.23, 1.63, 1.11, 1.60]
    assert rounded(table1["speedup"]) == [1.96, 2.53, 2.44, 3.69, 2.71, 6.86]
    best = page.dataframe[1].value
    assert list(best["best_k"]) == [8, 4, 2, 1]
    assert rounded(best["speedup"]) == [3.09, 1.98, 1.40, 1.00]
    assert rounded(page.dataframe[2].value["expected_tokens"], 3)[:5] == [1.938, 2.306, 2.773, 3.362, 4.095]
    costs = page.dataframe[3].value
    assert costs["speedup"].iloc[0] > 2
    assert round(costs["speedup"].iloc[1], 2) == 1.21


def test_per_position_rates(page):
    page.text_input(key="rates_text").set_value("0.95, 0.85, 0.6").run()
    cmp = compare_positional([0.95, 0.85, 0.6])
    m = metrics(page)
    assert m["E with per-position rates"] == f"{cmp.expected_tokens:.3f}"
    assert m["i.i.d. formula is off by"] == f"{cmp.relative_error:+.1%}"
    page.text_input(key="rates_text").set_value("0.9, lots").run()
    assert not page.exception
    assert "numbers separated by commas" in page.error[0].value


def test_load_model_section(page):
    page.selectbox(key="hardware").set_value("A100 80GB").run()
    s = LoadSettings(
        HARDWARE["A100 80GB"], MODELS["8B (Llama-3-8B shape)"], MODELS["1B (Llama-3.2-1B shape)"], 0.8, 4, 512
    )
    m = metrics(page)
    assert m["Modelled gain at batch 1"] == f"{load_point(s, 1).gain:.2f}×"
    assert m["Speculation stops paying at batch"] == str(break_even_batch(s))
    assert m["Gain at batch 256"] == f"{load_point(s, 256).gain:.2f}×"
    page.selectbox(key="draft_model").set_value("70B (Llama-3-70B shape)").run()
    assert not page.exception
    assert "draft model must be smaller" in page.error[0].value


def test_measured_costs_on_the_loaded_pair(tiny_default, page):
    page.radio(key="verify_mode").set_value("measured on this machine").run()
    assert "No measurement yet" in page.warning[0].value
    shows(page, analyse(TheoryInputs(alpha=0.8, k=4, c=0.05)))  # ideal until measured
    page.button(key="measure").click().run()
    assert not page.exception
    assert not page.error
    costs = page.session_state["measured_costs"]
    assert costs.target_name == tiny_default[0]
    assert len(costs.verify_s) == 16
    if costs.implausible:  # a busy machine's timings: refused, and the ideal cost stays (test_calculator_measured.py)
        shows(page, analyse(TheoryInputs(alpha=0.8, k=4, c=0.05)))
        return
    shows(page, analyse(TheoryInputs(alpha=0.8, k=4, c=costs.c, verify=costs.verify_cost())))
    assert metrics(page)["Measured c"] == f"{costs.c:.3f}"
    page.checkbox(key="use_measured_c").uncheck().run()
    shows(page, analyse(TheoryInputs(alpha=0.8, k=4, c=0.05, verify=costs.verify_cost())))


def test_rates_from_a_run_on_the_loaded_pair(tiny_default, page):
    page.button(key="rates_run").click().run()
    assert not page.exception
    assert not page.error
    text = page.text_input(key="rates_text").value
    rates = [float(x) for x in text.split(",")]
    assert 1 <= len(rates) <= 4
    assert all(0 <= r <= 1 for r in rates)
    assert metrics(page)["E with per-position rates"] == f"{compare_positional(rates).expected_tokens:.3f}"
    # the i.i.d. comparison uses the run's own alpha (accepted / judged), labelled as such
    assert any(label.startswith("E i.i.d. at α = accepted / judged") for label in metrics(page))


def test_a_missing_pair_is_a_message_not_a_traceback(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECVIZ_TARGET", str(tmp_path / "nothing-here"))
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    page.radio(key="verify_mode").set_value("measured on this machine").run()
    page.button(key="measure").click().run()
    assert not page.exception
    assert any("Could not load the model pair" in e.value for e in page.error)
    assert metrics(page)["Expected tokens per round"] == "3.362"  # the rest of the page still works


def formula_alpha(at, line_start: str) -> str:
    """The α a formula line ends on ("… → α = 0.721")."""
    line = next(line for line in at.code[0].value.splitlines() if line.startswith(line_start))
    return line.rsplit("α = ", 1)[1]


@pytest.mark.parametrize("mode", ["ideal (one target step)", "linear model"])
def test_the_break_even_metric_is_its_formula_lines_alpha_for_the_chosen_k(page, mode):
    """A past bug: the metric showed the break-even over every K under the chosen verify model (0.330) while
    its formula line gave the ideal one (→ 0.300); at α 0.6, K 8, c 0.3 it showed 0.300 (K = 1's) beside "slower than
    plain (0.73×)". Now the metric is the chosen K's, named in its label, and equals its formula line."""
    page.radio(key="verify_mode").set_value(mode).run()
    page.slider(key="alpha").set_value(0.6).run()
    page.slider(key="k").set_value(8).run()
    page.slider(key="c").set_value(0.3).run()
    shown = metrics(page)["Break-even α at K = 8"]
    assert shown == formula_alpha(page, "break-even α at K = 8:")
    assert float(shown) > 0.6  # α 0.6 is below K = 8's break-even: that is why it is slower than plain
    assert "slower than plain decoding (0.73×)" in page.warning[0].value or mode != "ideal (one target step)"
    if mode == "ideal (one target step)":
        assert shown == "0.721"  # 1 + α + … + α^8 = 8·0.3 + 1 = 3.4
        assert formula_alpha(page, "break-even α over K = 1..16:") == "0.300"  # at K = 1: α = c
    else:  # v(K) = 1 + 0.03·K: at K = 1, 1 + α = 0.3 + 1.03, the smallest over K
        assert formula_alpha(page, "break-even α over K = 1..16:") == "0.330"
    assert "the smallest is at K = 1" in page.code[0].value


def test_the_heatmap_caption_names_the_mark_it_draws_for_your_setting(page):
    """A past bug: the caption said "white circle" for a point mark Vega-Lite draws unfilled: a black ring."""
    import json

    (heatmap,) = [
        spec
        for spec in (json.loads(c.proto.spec) for c in page.get("vega_lite_chart"))
        if "layer" in spec and any(layer.get("mark", {}).get("type") == "rect" for layer in spec["layer"])
    ]
    (here,) = [layer["mark"] for layer in heatmap["layer"] if layer["mark"].get("shape") == "circle"]
    assert here["filled"] is False and here["stroke"] == "black"
    captions = " ".join(c.value for c in page.caption)
    assert "the black ring is your setting" in captions and "white circle" not in captions
