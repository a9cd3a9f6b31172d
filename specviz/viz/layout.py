"""Chart titles that are never clipped or cut: wrapped into short lines, anchored left, with padding above.

Vega clips a title that does not fit its chart's width (or shortens it with an ellipsis); at 390 px (a phone) or in
a half-width column a one-line title rarely fits. Every chart the app draws goes through `fitted` (ui.render.draw).
"""

from __future__ import annotations

import textwrap

import altair as alt

TITLE_CHARS = 34  # a title line this long fits a half-width column at 1280 px and a phone's full width at 390 px
PADDING = {"left": 5, "right": 12, "top": 12, "bottom": 5}  # room for the title's glyphs: never cut at the top


def chart_title(text: str | list[str], subtitle: str | list[str] = "") -> alt.TitleParams:
    """A title wrapped into short lines (never clipped or cut with an ellipsis), anchored left, with a subtitle."""
    params = {"text": _wrap(text, TITLE_CHARS), "anchor": "start", "limit": 0, "offset": 8, "fontSize": 15}
    if subtitle:
        params |= {"subtitle": _wrap(subtitle, TITLE_CHARS + 10)}
    return alt.TitleParams(**params)


def fitted(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The chart with its title (a string or TitleParams) re-set by `chart_title`, and padding for the title."""
    title = chart.title
    if isinstance(title, str):
        chart = chart.properties(title=chart_title(title))
    elif isinstance(title, alt.TitleParams):
        subtitle = title.subtitle if isinstance(title.subtitle, str | list) else ""
        chart = chart.properties(title=chart_title(title.text, subtitle))
    return chart.properties(padding=PADDING)


def _wrap(text: str | list[str], width: int) -> list[str]:
    lines = [text] if isinstance(text, str) else list(text)
    return [short for line in lines for short in textwrap.wrap(line, width)]
