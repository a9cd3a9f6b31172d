"""A link made from settings opens the round page on a run with exactly those settings, and the page's own URL names
them again (settings -> URL -> sidebar -> run -> URL -> settings), for a chain and a tree run."""

import pytest
from app_helpers import page

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.ui import url

CHAIN = RunSettings(method="draft", k=3, sampling=SamplingSettings(0.0), max_new_tokens=8, seed=3)
TREE = RunSettings(method="tree", k=2, tree=(2, 1), sampling=SamplingSettings(1.0, 0, 0.9), max_new_tokens=8, seed=1)


@pytest.mark.parametrize("settings", [CHAIN, TREE], ids=["chain", "tree"])
def test_a_link_from_settings_opens_a_run_with_those_settings(tiny_default, settings):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update({**url.settings_params(settings, "def f(x):"), "round": "1", "phase": "verify"})
    at = at.switch_page(page("pages/rounds.py")).run()
    assert not at.exception
    assert not at.error
    assert at.session_state["rounds_trace"].settings == settings
    written = {k: at.query_params[k] for k in at.query_params}
    assert url.read_url(written).run_settings(RunSettings()) == settings
    assert written["prompt"] == "def f(x):"
    assert written["phase"] == "verify"
