"""Block verification on the round page: the sidebar offers it for chains (not trees, not on the race), a link
carries it (vf=block) and refuses a verifier that is none, and its run's steps show the block's stop tests."""

import html

from app_helpers import click, open_page, page
from streamlit.testing.v1 import AppTest

from specviz import methods
from specviz.ui.url import settings_params
from specviz.viz.run_notes import NEW_RUN


def test_the_sidebar_verifies_a_chain_as_a_block_and_the_steps_say_so(tiny_default):
    at = open_page("pages/rounds.py")
    at.sidebar.radio(key="verifier").set_value("block").run()
    at.sidebar.slider(key="max_new_tokens").set_value(12).run()
    at = click(at, NEW_RUN)
    assert not at.exception and not at.error
    trace = at.session_state["rounds_trace"]
    assert trace.settings.verifier == "block"
    assert settings_params(trace.settings, trace.prompt)["vf"] == "block"  # its link carries it
    at.sidebar.radio(key="method").set_value(methods.TREE).run()  # a tree is judged along its walk: no choice
    assert not [r for r in at.sidebar.radio if r.key == "verifier"]


def test_a_link_asks_for_block_verification_and_a_verifier_that_is_none_is_said(tiny_default):
    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update({"vf": "block", "n": "8", "t": "1"})
    at = at.switch_page(page("pages/rounds.py")).run()
    assert not at.exception and at.session_state["rounds_trace"].settings.verifier == "block"
    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update({"vf": "blocky", "n": "8"})
    at = at.switch_page(page("pages/rounds.py")).run()
    assert not at.exception
    said = html.unescape(" ".join(i.value for i in at.info))
    assert "vf = 'blocky' is none of token, block" in said
    assert at.session_state["rounds_trace"].settings.verifier == "token"


def test_the_race_offers_no_verifier(tiny_default):
    at = open_page("pages/race.py")
    assert not [r for r in at.sidebar.radio if r.key == "verifier"]
