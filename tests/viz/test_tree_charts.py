"""Tree charts on the calculator and the exactness lab: encodings, tooltips and the numbers in their data."""

import pytest

from specviz.core import lab
from specviz.core.theory import VerifyCost
from specviz.core.tree_theory import compare_tree
from specviz.viz import lab_charts, theory_charts


def test_tree_chart_draws_the_tree_and_its_chains():
    cmp = compare_tree((3, 2, 1, 1), (0.7, 0.35, 0.2), 0.05, VerifyCost.linear(0.03))
    spec = theory_charts.tree_chart(cmp).to_dict()
    bars = spec["layer"][0]
    assert bars["mark"]["type"] == "bar"
    assert bars["encoding"]["x"]["field"] == "speedup"
    assert bars["encoding"]["tooltip"]
    data = {r["plan"]: r for r in spec["datasets"][bars["data"]["name"]]}
    assert data["tree 3,2,1,1"]["speedup"] == pytest.approx(cmp.tree.speedup)
    assert data["tree 3,2,1,1"]["round_cost"] == pytest.approx(4 * 0.05 + 1 + 0.03 * 21)
    assert data[cmp.same_depth.label]["expected_tokens"] == pytest.approx(cmp.same_depth.expected_tokens)
    assert "title" in spec


def test_tree_check_frame_and_chart():
    _, checks = lab.tree_checks(*lab.shop_models(lab.POOR_DRAFT), (2,), samples=500, seed=0)
    frame = lab_charts.tree_check_frame(checks)
    assert list(frame["verdict"]) == [c.verdict for c in checks]
    assert list(frame["verdict"])[:3] == [lab.EXACT_VERDICT] * 3
    assert lab.EXACT_VERDICT not in list(frame["verdict"])[3:]
    spec = lab_charts.tree_check_chart(frame).to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["x"]["field"] == "tv"
    assert spec["encoding"]["tooltip"]
