"""Draws the pure policies' notes (viz/notes.py) as Streamlit warnings, captions, successes or errors."""

from __future__ import annotations

import streamlit as st

from specviz.viz.notes import CAPTION, ERROR, INFO, SUCCESS, WARNING, Note


def show_note(note: Note | None, where=st) -> None:
    """A note as a warning, a caption, a success, an error or an info box (nothing for None)."""
    if note is not None:
        draw = {
            WARNING: where.warning,
            CAPTION: where.caption,
            SUCCESS: where.success,
            ERROR: where.error,
            INFO: where.info,
        }
        draw[note.level](note.text)
