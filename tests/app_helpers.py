"""Helpers for AppTests: absolute page paths and clicking a button by its label."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def page(name: str) -> str:
    return str(ROOT / name)


def click(at, label: str):
    return next(b for b in at.button if b.label == label).click().run()


def open_page(name: str, timeout: float = 60):
    """Start the app from its entry point on a page under pages/, as a browser opening that page's address does (the
    home page and its live run are not visited on the way)."""
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(page("app.py"), default_timeout=timeout).switch_page(name).run()


def text(element) -> str:
    """What an element shows a reader: the app writes user and server text as character references (viz.text.literal),
    which the browser decodes; AppTest gives the source."""
    import html

    return html.unescape(element.value)


def step_phases(at, phases: int = 8):
    """Press Next phase `phases` times, each run free of exceptions and errors -> (at, the text of every markdown
    shown along the way)."""
    said = []
    for _ in range(phases):
        at = click(at, "Next phase")
        assert not at.exception
        assert not at.error
        said += [text(m) for m in at.markdown]
    return at, said
