"""Streamlit renderers shared by pages: coloured text, lecture-mode styling, cached runs."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from specviz.core.settings import RunSettings
from specviz.core.trace import Trace
from specviz.engine.decode import generate
from specviz.measure.race import VersusPlain, versus_plain
from specviz.ui.loaders import cached_pair
from specviz.viz.text import legend_html, trace_html

LECTURE_CSS = """<style>
html, body, [class*="st-"], .stMarkdown, .stMetric {font-size: 1.35rem !important;}
h1 {font-size: 3rem !important;} h2, h3 {font-size: 2.2rem !important;}
.specviz-text {font-size: 1.6rem !important; background: #000; color: #fff; padding: .6rem; border-radius: .4rem;}
.specviz-text .tok-prompt {color: #e0e0e0 !important;}
.specviz-text .tok-accepted {color: #69f0ae !important; border-color: #69f0ae !important;}
.specviz-text .tok-correction {color: #ff5252 !important; border-color: #ff5252 !important;}
.specviz-text .tok-bonus {color: #40c4ff !important; border-color: #40c4ff !important;}
.chip {font-size: 1.5rem !important; border-width: 3px !important;}
</style>"""


def page_header(title: str, teaching_point: str) -> None:
    """Title and the page's one-sentence teaching point; also makes sure app.py's navigation is in charge.

    A fresh server whose first visitor opens a page URL directly runs that file alone (Streamlit's legacy pages/
    mode, which ignores app.py until it has run once); switching the mode off and rerunning fixes it for everyone.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        if not st.session_state.get("_navigation_fixed"):  # once per session: a rerun would swallow a button click
            st.session_state["_navigation_fixed"] = True
            st.rerun()
    st.title(title)
    st.info(teaching_point)


def apply_lecture_mode(on: bool) -> None:
    if on:
        st.markdown(LECTURE_CSS, unsafe_allow_html=True)


def show_text(trace: Trace, n_rounds: int | None = None) -> None:
    st.markdown(trace_html(trace, n_rounds), unsafe_allow_html=True)
    st.markdown(legend_html(), unsafe_allow_html=True)


@st.cache_data(show_spinner="Warming up, then timing plain and speculative decoding in turn…", max_entries=8)
def cached_versus_plain(
    sources: tuple[str, str, str, str], prompt: str, settings: RunSettings
) -> tuple[VersusPlain, str]:
    """The home page's measurement and the time it was taken ("HH:MM UTC"): cached for the whole server, so every
    session sees the same run and the page says when it was measured."""
    measured_at = datetime.now(UTC).strftime("%H:%M UTC on %d %b")
    return versus_plain(cached_pair(*sources), prompt, settings), measured_at


@st.cache_data(show_spinner="Running the models…", max_entries=64)
def cached_run(sources: tuple[str, str, str, str], prompt: str, settings: RunSettings) -> Trace:
    """A finished run, cached per (pair, prompt, settings): same seed, same trace, so caching changes nothing shown.

    sources = (target, draft, device, dtype), as `active_sources()` gives them."""
    return generate(cached_pair(*sources), prompt, settings)
