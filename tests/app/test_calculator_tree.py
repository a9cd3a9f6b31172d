"""The calculator's tree section: the numbers shown are core/tree_theory.py's, and the verdict follows the costs."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.core.theory import VerifyCost
from specviz.core.tree_theory import CPU_TREE_TAU, compare_tree, decayed_rates

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "calculator.py")


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


@pytest.fixture
def page():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert not at.error
    return at


def shows(at, cmp) -> None:
    m = metrics(at)
    assert m["E tokens/pass: tree"] == f"{cmp.tree.expected_tokens:.3f}"
    assert m[f"E: chain K = {cmp.same_nodes.nodes} (same nodes)"] == f"{cmp.same_nodes.expected_tokens:.3f}"
    assert m[f"E: chain K = {cmp.same_depth.nodes} (same depth)"] == f"{cmp.same_depth.expected_tokens:.3f}"
    assert m["Speedup: tree"] == f"{cmp.tree.speedup:.2f}×"
    assert m["Speedup: chain, same depth"] == f"{cmp.same_depth.speedup:.2f}×"
    assert m[f"Speedup: best chain (K = {cmp.best_chain.nodes})"] == f"{cmp.best_chain.speedup:.2f}×"


def test_tree_defaults_pay_with_a_flat_verify_cost(page):
    cmp = compare_tree((3, 2, 1, 1), decayed_rates(0.7, 0.5, 3), 0.05, VerifyCost.ideal())
    shows(page, cmp)
    assert cmp.pays
    assert any(s.value == cmp.verdict() for s in page.success)
    text = " ".join(m.value for m in page.markdown)
    assert all(f"{name} {tau:.2f}" in text for name, tau in CPU_TREE_TAU)
    assert "no wall-clock gain" in text


def test_a_growing_verify_cost_turns_the_verdict(page):
    page.radio(key="tree_verify").set_value("grows with the nodes (linear)").run()
    page.slider(key="tree_per_token").set_value(0.1).run()
    cmp = compare_tree((3, 2, 1, 1), decayed_rates(0.7, 0.5, 3), 0.05, VerifyCost.linear(0.1))
    shows(page, cmp)
    assert not cmp.pays
    assert any(w.value == cmp.verdict() for w in page.warning)


def test_per_sibling_rates_and_shape_inputs(page):
    page.text_input(key="tree_shape").set_value("1,1,1,1").run()
    page.radio(key="tree_rates_mode").set_value("per-sibling rates").run()
    page.text_input(key="tree_rates").set_value("0.8").run()
    cmp = compare_tree((1, 1, 1, 1), (0.8,), 0.05, VerifyCost.ideal())
    shows(page, cmp)
    assert metrics(page)["E tokens/pass: tree"] == "3.362"  # the chain's (1 − 0.8^5) / (1 − 0.8)
    page.text_input(key="tree_shape").set_value("3,0").run()
    assert not page.exception
    assert any("children per node" in e.value for e in page.error)
