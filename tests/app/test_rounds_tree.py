"""The round page plays a tree round from drafting to commit: the tree, the mask, each child's test, the residual
after each rejected sibling, the bonus or correction, and the commit; the sidebar offers tree shapes."""

import pytest
from app_helpers import click, page

from specviz.core.trace import Trace
from specviz.core.trace_json import trace_from_json
from specviz.ui.render import TRACES_DIR
from specviz.viz import steps
from specviz.viz.explain import tree_judge_sentence

TREE_TRACE = "tree-sibling-accepted"


def where(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Round "))


def open_url(params: dict):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update(params)
    return at.switch_page(page("pages/rounds.py")).run()


def bundled() -> Trace:
    return trace_from_json((TRACES_DIR / f"{TREE_TRACE}.json").read_text())


@pytest.mark.slow  # every phase of every round, one rerun each
def test_the_bundled_tree_round_steps_through_every_phase_with_tree_words(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")  # a bundled trace needs no model
    trace = bundled()
    at = open_url({"trace": TREE_TRACE, "round": "2", "phase": "draft"})
    assert not at.exception
    assert not at.error
    r = trace.rounds[1]
    assert "1 · Draft" in where(at)
    assert at.query_params["trace"] == TREE_TRACE
    assert any("drafts a tree of shape 2,2,1,1 (14 nodes)" in m.value for m in at.markdown)
    cursor = steps.cursor_from_params(trace, {"round": "2", "phase": "draft"})
    seen = set()
    for _ in steps.round_steps(r)[1:]:
        at = click(at, "Next phase")
        assert not at.exception
        assert not at.error
        cursor = steps.next_step(trace, cursor)
        step = steps.current_step(trace, cursor)
        seen.add(step.phase)
        text = " ".join(m.value for m in at.markdown)
        if step.phase == steps.VERIFY:
            assert "ONE target forward pass over all 14 tree nodes" in text
            assert "ancestors" in text
        if step.phase == steps.JUDGE:
            node = r.nodes[step.position]
            assert f"(node {node.id + 1} of 14, depth {node.depth})" in where(at)
            assert at.query_params["pos"] == str(node.id + 1)
            sentence = tree_judge_sentence(r, node)
            assert sentence in [m.value for m in at.markdown]
            assert f"u = {node.u:.3f}" in sentence
            assert "**Accepted**" in sentence or "**Rejected**" in sentence
            elders = [c for c in r.children(node.parent) if c.id < node.id]
            assert ("judged against the residual left after rejecting" in sentence) == bool(elders)
        if step.phase == steps.RESOLVE:
            assert ("bonus token" in text) if r.extra.kind == "bonus" else ("Every child tried under" in text)
        if step.phase == steps.COMMIT:
            assert "the rollback crops every tree node" in text
    assert seen == {steps.VERIFY, steps.JUDGE, steps.RESOLVE, steps.COMMIT}
    assert cursor.round == 1
    assert steps.current_step(trace, cursor).phase == steps.COMMIT


def test_the_focus_view_draws_the_tree_at_every_phase(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")
    at = open_url({"trace": TREE_TRACE, "round": "2", "phase": "judge", "pos": "3", "view": "focus"})
    assert not at.exception
    assert not at.error
    assert "(node 3 of 14, depth 2)" in where(at)
    assert any("chart-key" in m.value for m in at.markdown)  # the tree's key sits under the tree


def test_a_live_tree_run_from_the_url_and_the_url_keeps_the_shape(tiny_default):
    at = open_url({"method": "tree", "tree": "2,1", "t": "1", "n": "8", "round": "1", "phase": "draft"})
    assert not at.exception
    assert not at.error
    assert at.sidebar.radio(key="method").value == "tree"
    assert at.sidebar.selectbox(key="tree_shape").value == "Custom shape…"
    assert at.sidebar.text_input(key="tree_custom").value == "2,1"
    assert at.query_params["tree"] == "2,1"
    assert at.query_params["method"] == "tree"
    for _ in range(8):
        at = click(at, "Next phase")
        assert not at.exception
        assert not at.error
    assert any("tree of shape 2,1 (" in m.value for m in at.markdown) or "Round 2" in where(at)


def test_the_sidebar_offers_tree_presets_and_reports_a_bad_shape(tiny_default):
    from app_helpers import open_page

    at = open_page("pages/rounds.py")
    at.sidebar.radio(key="method").set_value("tree").run()
    assert not at.exception
    assert list(at.sidebar.selectbox(key="tree_shape").options)[:3] == ["2,2,1,1", "3,2,1,1", "4,2,2,1"]
    at.sidebar.selectbox(key="tree_shape").set_value("Custom shape…").run()
    for bad, words in [("2,x", "whole numbers separated by commas"), ("2,0", "1 to 16 children"), ("", "needs a tree")]:
        at.sidebar.text_input(key="tree_custom").set_value(bad).run()
        assert not at.exception
        assert any(words in e.value for e in at.sidebar.error), [e.value for e in at.sidebar.error]
    at.sidebar.text_input(key="tree_custom").set_value("3,1").run()
    assert not at.sidebar.error
    at = click(at, "▶ New run with these settings")
    assert not at.exception
    assert not at.error
    assert at.query_params["tree"] == "3,1"


def test_a_tree_chosen_on_the_rounds_page_leaves_the_race_on_chains(tiny_default):
    from app_helpers import open_page

    at = open_page("pages/rounds.py")
    at.sidebar.radio(key="method").set_value("tree").run()
    at = at.switch_page(page("pages/race.py")).run()
    assert not at.exception
    assert not at.sidebar.error
    assert "tree" not in at.sidebar.radio(key="method").options
    assert at.sidebar.radio(key="method").value == "draft"
