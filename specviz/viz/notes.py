"""A line a page shows, with how loudly: the pure policies (measure/calculator.py, measure/race_lanes.py) decide the
words and the level, ui/notes.py draws them."""

from __future__ import annotations

from dataclasses import dataclass

WARNING, CAPTION = "warning", "caption"


@dataclass(frozen=True)
class Note:
    """One line for a page: `level` is WARNING (st.warning) or CAPTION (st.caption)."""

    level: str
    text: str
