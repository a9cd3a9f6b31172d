"""Draws the pure policies' notes (viz/notes.py) as Streamlit warnings, captions, successes or errors."""

from __future__ import annotations

import streamlit as st

from specviz.viz.notes import CAPTION, ERROR, SUCCESS, WARNING, Note


def show_note(note: Note | None, where=st) -> None:
    """A note as a warning, a caption, a success or an error (nothing for None)."""
    if note is not None:
        draw = {WARNING: where.warning, CAPTION: where.caption, SUCCESS: where.success, ERROR: where.error}
        draw[note.level](note.text)
