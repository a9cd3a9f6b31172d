"""A bundled lecture picked on the round page links its prebuilt static page."""

from __future__ import annotations

from app_helpers import open_page, page

from specviz.ui.lectures import LINK_TEXT
from specviz.viz import lectures


def links(at) -> list[str]:
    return [m.value for m in at.markdown if LINK_TEXT in m.value]


def test_a_bundled_trace_picked_on_the_page_links_its_static_page_at_its_moment(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")  # a bundled trace needs no model at all
    at = open_page("pages/rounds.py")
    assert links(at) == []  # a live run (here: none, the pair cannot load) has no static page
    at.selectbox(key="bundled_pick").set_value("ngram-burst").run()
    assert not at.exception
    [link] = links(at)
    url = "/app/static/lectures/ngram-burst.html#round=3&phase=draft"
    assert f"[{LINK_TEXT}]({url})" in link
    assert (lectures.LECTURES_DIR / "ngram-burst.html").is_file()


def test_a_shared_lecture_link_shows_the_static_page_below_the_base_url_path(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update({"trace": "low-q-accepted", "round": "1", "phase": "judge", "pos": "2"})
    at = at.run()
    monkeypatch.setattr("streamlit.get_option", _options({"server.baseUrlPath": "course/specviz"}))
    at = at.switch_page(page("pages/rounds.py")).run()
    assert not at.exception
    [link] = links(at)
    assert "(/course/specviz/app/static/lectures/low-q-accepted.html#round=1&phase=judge&pos=2)" in link


def test_a_server_without_static_serving_says_so_instead_of_a_dead_link(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")
    monkeypatch.setattr("streamlit.get_option", _options({"server.enableStaticServing": False}))
    at = open_page("pages/rounds.py")
    at.selectbox(key="bundled_pick").set_value("ngram-burst").run()
    assert not at.exception
    assert links(at) == []
    assert any("does not serve the prebuilt static pages" in m.value for m in at.markdown)


def _options(overrides: dict):
    """st.get_option with some options set as a deployment's config would set them."""
    import streamlit as st

    real = st.get_option
    return lambda key: overrides[key] if key in overrides else real(key)
