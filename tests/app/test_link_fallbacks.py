"""A link that asks for what the app does not have (a pair, a bundled trace, a round) still opens, and the page says
what was asked for and what is shown instead: nothing falls back without a word."""

from app_helpers import page, text

from specviz.engine.loading.catalogue import PAIR_NAMES
from specviz.ui.render import bundled_traces


def open_url(params: dict):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update(params)
    return at.switch_page(page("pages/rounds.py")).run()


def infos(at) -> list[str]:
    return [text(i) for i in at.info]


def where(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Round "))


def test_a_link_to_a_pair_that_does_not_exist_says_so_and_names_the_pairs(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")  # a bundled trace needs no model
    at = open_url({"trace": "low-q-accepted", "pair": "nosuchpair"})
    assert not at.exception
    said = [i for i in infos(at) if "'nosuchpair'" in i]
    assert said and "there is no pair of that name" in said[0] and ", ".join(PAIR_NAMES) in said[0]
    assert not any("load that pair in the sidebar" in i for i in infos(at))


def test_a_link_to_a_bundled_trace_that_does_not_exist_says_what_is_shown_instead(tiny_default):
    at = open_url({"trace": "nosuchtrace"})
    assert not at.exception and not at.error
    [said] = [i for i in infos(at) if "'nosuchtrace'" in i]
    assert all(name in said for name in bundled_traces())  # the traces there are
    assert "showing the live run of the sidebar's settings instead" in said
    assert at.session_state["rounds_source"] == "live"


def test_a_link_to_a_round_past_the_end_says_which_round_is_shown(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")
    at = open_url({"trace": "low-q-accepted", "round": "99", "phase": "verify"})
    assert not at.exception
    rounds = len(at.session_state["rounds_trace"].rounds)
    assert where(at).startswith(f"Round {rounds} of {rounds}")  # the nearest moment, as before
    assert f"The link asks for round 99, and this run has {rounds} rounds: showing round {rounds}'s verify phase" in (
        " ".join(infos(at))
    )


def test_a_link_to_a_moment_the_trace_has_says_nothing_of_it(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")
    at = open_url({"trace": "low-q-accepted", "round": "1", "phase": "judge", "pos": "2"})
    assert not at.exception
    assert not any("The link asks for" in i for i in infos(at))
