"""The rounds page runs a dynamic (EAGLE-2) tree: the sidebar's dynamic preset, the URL names it, and its rounds
step through every phase with the dynamic tree's words (scored, expanded, kept, judged one-hot); a link reopens it."""

import pytest
from app_helpers import click, open_page, page, step_phases

from specviz import methods


@pytest.mark.slow
def test_a_dynamic_tree_runs_on_the_rounds_page_and_steps_through_its_phases(tiny_default):
    at = open_page("pages/rounds.py")
    at.sidebar.radio(key="method").set_value(methods.TREE).run()
    at.sidebar.selectbox(key="tree_shape").set_value("dynamic:16,5,4").run()
    assert any("Dynamic tree: 68 nodes scored per round, 16 kept, depth 5." in c.value for c in at.sidebar.caption)
    assert at.sidebar.slider(key="k").disabled  # a tree's K is its depth
    at = click(at, "▶ New run with these settings")
    assert not at.exception
    assert not at.error
    assert at.query_params["tree"] == "dynamic:16,5,4"
    at, said = step_phases(at, 10)
    assert any("grows a dynamic tree (dynamic:16,5,4" in s and "kept the 16 best" in s for s in said)
    assert any("ONE target forward pass over all" in s for s in said)


def test_a_link_to_a_dynamic_tree_reopens_it_and_a_bad_one_says_why(tiny_default):
    from streamlit.testing.v1 import AppTest

    def opened(params: dict):
        at = AppTest.from_file(page("app.py"), default_timeout=60)
        at.query_params.update(params)
        return at.switch_page(page("pages/rounds.py")).run()

    at = opened({"method": methods.TREE, "tree": "dynamic:8,3,2", "prompt": "def add", "n": "8"})
    assert not at.exception
    assert at.sidebar.text_input(key="tree_custom").value == "dynamic:8,3,2"
    assert any("Dynamic tree: 10 nodes scored per round, 8 kept, depth 3." in c.value for c in at.sidebar.caption)
    at = opened({"method": methods.TREE, "tree": "dynamic:8,3", "prompt": "def add", "n": "8"})
    assert not at.exception
    assert any("dynamic:BUDGET,DEPTH,TOPK" in e.value for e in at.sidebar.error)
