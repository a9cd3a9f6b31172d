"""Draws the pure policies' notes (viz/notes.py) as Streamlit warnings or captions."""

from __future__ import annotations

import streamlit as st

from specviz.viz.notes import WARNING, Note


def show_note(note: Note | None, where=st) -> None:
    """A note as a warning or a caption (nothing for None)."""
    if note is not None:
        (where.warning if note.level == WARNING else where.caption)(note.text)
