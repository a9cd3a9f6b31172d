"""The registry feeds the sidebar: the EAGLE-1 and EAGLE-3 heads are methods of the rounds page, their runs draft from
the heads beside the target, and their rounds step through every phase like any chain's, the draft phase showing
which feature each draft read."""

import pytest
from app_helpers import click, open_page, step_phases

from specviz import methods

SAYS = {
    methods.EAGLE: ("EAGLE-1 head proposes", "the feature the head itself predicted"),
    methods.EAGLE3: ("EAGLE-3 head proposes", "hidden states at three depths, fused by the head's fc"),
}


@pytest.mark.parametrize("method", [methods.EAGLE, methods.EAGLE3])
def test_the_eagle_methods_run_on_the_rounds_page_and_step_through_their_phases(tiny_default, method):
    at = open_page("pages/rounds.py")
    assert methods.label(method) in at.sidebar.radio(key="method").options
    at.sidebar.radio(key="method").set_value(method).run()
    at = click(at, "▶ New run with these settings")
    assert not at.exception
    assert not at.error
    assert at.query_params["method"] == method
    at, said = step_phases(at)
    drafting = [s for s in said if "proposes" in s]
    flows = [s for s in said if 'class="flow-step"' in s]  # which feature each draft read, one line per draft
    assert flows and all('title="target"' in s for s in flows)
    assert any('title="head"' in s for s in flows)  # a later draft read the head's own output
    who, how = SAYS[method]
    assert drafting and all(who in s for s in drafting)  # not "the draft model proposes"
    assert how in drafting[0]
