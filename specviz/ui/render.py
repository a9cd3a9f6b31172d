"""Streamlit renderers shared by pages: coloured text, lecture-mode styling, cached runs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import streamlit as st

from specviz.core.settings import RunSettings
from specviz.core.trace import Trace
from specviz.engine.decode import generate
from specviz.measure.race import VersusPlain, versus_plain
from specviz.ui.loaders import cached_pair
from specviz.viz.layout import fitted
from specviz.viz.text import legend_html, trace_html

TRACES_DIR = Path(__file__).resolve().parents[2] / "assets" / "traces"

# Projector styling: large type, dark text on white (projectors wash out dark backgrounds), the palette's own
# colours with thicker underlines, and the focus view's current phase larger still.
LECTURE_CSS = """<style>
.stMarkdown p, .stMarkdown li, .stCaption p, [data-testid="stMetricValue"], [data-testid="stMetricLabel"] p,
.stButton p, [data-testid="stWidgetLabel"] p {font-size: 1.3rem !important;}
h1 {font-size: 2.6rem !important;} h2, h3 {font-size: 2rem !important;}
.specviz-text {font-size: 1.6rem !important; background: #fff; color: #111; padding: .6rem .8rem;
  border: 2px solid #333; border-radius: .4rem;}
.specviz-text .tok {text-decoration-thickness: 4px !important; text-underline-offset: 6px !important;
  font-weight: 600;}
.chip {font-size: 1.6rem !important; border-width: 3px !important;}
.phase-strip .phase {font-size: 1.3rem !important;}
.st-key-focus_panel p, .st-key-focus_panel li {font-size: 1.5rem !important; line-height: 1.5 !important;}
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
        show_html(LECTURE_CSS)


LECTURE_HEIGHT = 1.6  # charts this much taller in lecture mode, so a projector shows the bars, not just the labels


def draw(where, chart, lecture: bool = False) -> None:
    """Every chart of the app: titles wrapped to fit (never clipped), full width, projector-sized text in lecture mode
    (set here, so the chart builders stay composable)."""
    chart = fitted(chart)
    if lecture:
        if isinstance(chart.height, int):  # the 16 px labels take room from the plot: give it back, and more
            chart = chart.properties(height=int(chart.height * LECTURE_HEIGHT))
        chart = chart.configure_axis(labelFontSize=16, titleFontSize=16).configure_legend(labelFontSize=16)
    where.altair_chart(chart, width="stretch")


def show_html(markup: str, where=st) -> None:
    """Show specviz's own HTML (user text inside it made inert by viz.text.literal) as one line: Markdown ends an
    HTML block at a blank line and would read whatever followed as Markdown."""
    where.markdown(markup.replace("\r", " ").replace("\n", " "), unsafe_allow_html=True)


def show_text(trace: Trace, n_rounds: int | None = None) -> None:
    show_html(trace_html(trace, n_rounds))
    show_html(legend_html())


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


@st.cache_data
def bundled_traces() -> dict[str, dict]:
    """The recorded lecture traces (assets/traces/index.json): name -> title, what it shows and its moment."""
    path = TRACES_DIR / "index.json"
    return json.loads(path.read_text()) if path.exists() else {}


@st.cache_data(max_entries=16)
def load_bundled_trace(name: str) -> Trace:
    """A bundled trace by name, replayed with no model."""
    return Trace.from_json((TRACES_DIR / bundled_traces()[name]["file"]).read_text())
