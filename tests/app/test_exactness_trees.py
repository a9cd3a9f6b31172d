"""The exactness lab's tree section: exact samplers pass, and flipping a negative-control switch fails visibly."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.core import lab
from specviz.viz.tables import format_p

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "exactness.py")


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


@pytest.fixture
def page():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert not at.error
    return at


def test_exact_tree_samplers_pass_and_the_numbers_are_computed(page):
    p, q = lab.shop_models(lab.POOR_DRAFT)
    _, checks = lab.tree_checks(p, q, (2, 2), samples=1000, seed=0)
    shown = checks[0]  # sampled with replacement, the default
    m = metrics(page)
    assert m["Tree verdict"] == "pass: exact"
    assert m["Tree: max |output − p| (exact)"] == f"{shown.max_abs_diff:.1e}"
    assert shown.max_abs_diff < 1e-9
    assert m["Tree: χ² (1,000 samples)"] == format_p(shown.chi2.p_value)
    assert any(s.value.startswith("Exact to 1e-9") for s in page.success)
    for label in ("sampled without replacement (Sequoia)", "top-b children, one-hot q (greedy draft)"):
        page.radio(key="tree_how").set_value(label).run()
        assert metrics(page)["Tree verdict"] == "pass: exact", label
    table = next(d.value for d in page.dataframe if "max_abs_diff" in d.value.columns)
    assert list(table["verdict"]) == [c.verdict for c in checks]
    assert list(table["verdict"]).count("exact") == 3


def test_flipping_a_control_switch_fails_the_sampler(page):
    page.toggle(key="tree_no_residual").set_value(True).run()
    m = metrics(page)
    assert m["Tree verdict"] == "fail: bias detected"
    assert float(m["Tree: TV from p (exact)"]) > 0.1
    assert any("no residual update" in w.value and "unchanged p" in w.value for w in page.warning)
    page.toggle(key="tree_no_residual").set_value(False).run()
    page.radio(key="tree_how").set_value("top-b children, one-hot q (greedy draft)").run()
    assert metrics(page)["Tree verdict"] == "pass: exact"
    page.toggle(key="tree_soft_q").set_value(True).run()
    m = metrics(page)
    assert m["Tree verdict"] == "fail: bias detected"
    assert m["Tree: χ² (1,000 samples)"] == "p < 0.001"
    assert not page.exception
