"""A line a page shows, with how loudly: the pure policies (measure/calculator.py, measure/race_lanes.py) decide the
words and the level, ui/notes.py draws them."""

from __future__ import annotations

from dataclasses import dataclass

WARNING, CAPTION, SUCCESS, ERROR, INFO = "warning", "caption", "success", "error", "info"  # st.warning, st.caption, …


@dataclass(frozen=True)
class Note:
    """One line for a page: `level` says how it is drawn (WARNING, CAPTION, SUCCESS, ERROR or INFO)."""

    level: str
    text: str
