"""The rounds page runs a feature head's tree: the sidebar's toggle gives EAGLE-1, EAGLE-3, MTP and Medusa a tree shape,
the run drafts the head's tree (the URL names method and shape), and its rounds step through every phase with the
head's words (who drafted each depth, judged one-hot), not the draft model's; a shared link reopens it as a tree."""

import pytest
from app_helpers import click, open_page, page, step_phases

from specviz import methods
from specviz.ui.controls import HEAD_TREE

SAYS = {
    methods.EAGLE: "drafts a tree of shape 2,2,1,1 (14 nodes), as EAGLE-2 grows one",
    methods.EAGLE3: "drafts a tree of shape 2,2,1,1 (14 nodes), as EAGLE-2 grows one",
    methods.MTP: "drafts a tree of shape 2,2,1,1 (14 nodes), as EAGLE-2 grows one",
    methods.MEDUSA: "draft their Cartesian tree of shape 2,2,1,1 (14 nodes) in one pass over one feature",
}


@pytest.mark.slow
@pytest.mark.parametrize("method", methods.BRANCHING)
def test_a_head_tree_runs_on_the_rounds_page_and_steps_through_its_phases(tiny_default, method):
    at = open_page("pages/rounds.py")
    at.sidebar.radio(key="method").set_value(method).run()
    assert not at.sidebar.toggle(key=HEAD_TREE).value  # a chain unless asked
    at.sidebar.toggle(key=HEAD_TREE).set_value(True).run()
    assert at.sidebar.selectbox(key="tree_shape").value == "2,2,1,1"
    assert at.sidebar.slider(key="k").disabled  # a tree's K is its depth
    at = click(at, "▶ New run with these settings")
    assert not at.exception
    assert not at.error
    assert at.query_params["method"] == method
    assert at.query_params["tree"] == "2,2,1,1"
    at, said = step_phases(at, 10)
    assert any(SAYS[method] in s for s in said)
    assert any("judged as a one-hot proposal" in s for s in said)
    assert not any("The draft model drafts a tree" in s for s in said)
    assert any("ONE target forward pass over all" in s for s in said)


def test_a_link_to_a_head_tree_reopens_it_as_a_tree_and_a_chain_link_as_a_chain(tiny_default):
    from streamlit.testing.v1 import AppTest

    def opened(params: dict):
        at = AppTest.from_file(page("app.py"), default_timeout=60)
        at.query_params.update(params)
        return at.switch_page(page("pages/rounds.py")).run()

    at = opened({"method": methods.EAGLE, "tree": "2,2,1,1", "prompt": "def add", "n": "8"})
    assert not at.exception
    assert at.sidebar.toggle(key=HEAD_TREE).value
    assert at.sidebar.selectbox(key="tree_shape").value == "2,2,1,1"
    at = opened({"method": methods.EAGLE, "k": "3", "prompt": "def add", "n": "8"})
    assert not at.exception
    assert not at.sidebar.toggle(key=HEAD_TREE).value
