"""What every page draws first: its title, teaching point and lecture styling, with nothing heavy imported.

Pages import this before the models and charts so that a visitor sees the page's title at once while the rest loads.
"""

from __future__ import annotations

import streamlit as st

# Projector styling: large type (a metric's value twice its label's size, as Streamlit draws it outside lecture
# mode), dark text on white (projectors wash out dark backgrounds), the palette's own colours with thicker underlines,
# and the focus view's current phase larger still. The main area's widget values (a picker's choice, a typed number)
# and static tables' cells as large as the text; the sidebar's values keep their size (its column would cut them).
LECTURE_CSS = """<style>
.stMarkdown p, .stMarkdown li, .stCaption p, [data-testid="stMetricLabel"] p, [data-testid="stMarkdownContainer"] p,
[data-testid="stMarkdownContainer"] li, .stButton p, [data-testid="stWidgetLabel"] p, [data-baseweb="select"] div,
[data-testid="stSliderThumbValue"], [data-testid="stTab"] p {font-size: 1.3rem !important;}
[data-testid="stMain"] [data-testid="stSelectbox"] input, [data-testid="stMain"] [data-testid="stMultiSelect"] input,
[data-testid="stMain"] [data-testid="stNumberInput"] input, [data-testid="stMain"] [data-testid="stTextInput"] input,
[data-testid="stMain"] [data-testid="stTextArea"] textarea, [role="listbox"] [role="option"],
[data-testid="stTable"] th, [data-testid="stTable"] td {font-size: 1.3rem !important; color: #111 !important;}
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p {font-size: 1.2rem !important;
  color: #222 !important;}
.stCode code {font-size: 1.15rem !important;}
[data-testid="stMetricValue"], [data-testid="stMetricValue"] p {font-size: 2.6rem !important; line-height: 1.2;}
h1 {font-size: 2.6rem !important;} h2, h3 {font-size: 2rem !important;}
.specviz-text {font-size: 1.6rem !important; background: #fff; color: #111; padding: .6rem .8rem;
  border: 2px solid #333; border-radius: .4rem;}
.specviz-text .tok {text-decoration-thickness: 4px !important; text-underline-offset: 6px !important;
  font-weight: 600;}
.chip {font-size: 1.6rem !important; border-width: 3px !important;}
.flow-step {font-size: 1.4rem !important;} .flow-key {font-size: 1.15rem !important;}
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


def lecture_on() -> bool:
    """Whether the session's lecture mode is on (the sidebar's toggle, kept across pages, even those without it)."""
    state = st.session_state
    return bool(state["lecture"] if "lecture" in state else state.get("_kept_lecture", False))


def show_html(markup: str, where=st) -> None:
    """Show specviz's own HTML (user text inside it made inert by viz.text.literal) as one line: Markdown ends an
    HTML block at a blank line and would read whatever followed as Markdown."""
    where.markdown(markup.replace("\r", " ").replace("\n", " "), unsafe_allow_html=True)
