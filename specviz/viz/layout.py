"""Chart titles that are never clipped or cut: wrapped into short lines, anchored left, with padding above.

Vega clips a title that does not fit its chart's width (or shortens it with an ellipsis); at 390 px (a phone) or in
a half-width column a one-line title rarely fits. Every chart the app draws goes through `fitted` (ui.render.draw).
"""

from __future__ import annotations

import textwrap

import altair as alt

TITLE_CHARS = 34  # a title line this long fits a half-width column at 1280 px and a phone's full width at 390 px
TITLE_SIZE = 15  # px: larger type would take the plot's height (Streamlit keeps a chart's total height)
PADDING = {"left": 5, "right": 12, "top": 12, "bottom": 5}  # room for the title's glyphs: never cut at the top


def chart_title(text: str | list[str], subtitle: str | list[str] = "", size: int = TITLE_SIZE) -> alt.TitleParams:
    """A title wrapped into short lines (never clipped or cut with an ellipsis), anchored left, with a subtitle."""
    chars = TITLE_CHARS * TITLE_SIZE // size  # larger type, shorter lines: the same width
    params = {"text": _wrap(text, chars), "anchor": "start", "limit": 0, "offset": 8, "fontSize": size}
    if subtitle:
        params |= {"subtitle": _wrap(subtitle, chars + 10), "subtitleFontSize": max(11, size - 4)}
    return alt.TitleParams(**params)


BAND_ROW = 30  # px per category of a horizontal bar chart: less, and Vega hides every other label as overlapping
FRAME_ROOM = 110  # px of a chart's height that a three-line title and the x axis with its title take
CATEGORY_AXIS = alt.Axis(labelAngle=-90, labelOverlap=False)  # many categories along x: upright, never thinned
UPRIGHT_ROOM = 120  # px more height for upright category labels below the plot


def band_height(rows: int) -> int:
    """A horizontal bar chart's height: Streamlit keeps a chart's total height, so the plot gets what the title and
    the axis leave; this leaves every category its row (and its label)."""
    return rows * BAND_ROW + FRAME_ROOM


def fitted(chart: alt.TopLevelMixin, size: int = TITLE_SIZE) -> alt.TopLevelMixin:
    """The chart with its title (a string or TitleParams) re-set by `chart_title` at this size, and padding for it."""
    title = chart.title
    if isinstance(title, str):
        chart = chart.properties(title=chart_title(title, size=size))
    elif isinstance(title, alt.TitleParams):
        subtitle = title.subtitle if isinstance(title.subtitle, str | list) else ""
        chart = chart.properties(title=chart_title(title.text, subtitle, size))
    top = PADDING["top"] + 3 * (size - TITLE_SIZE)  # larger type rises further above the chart: more room for it
    return chart.properties(padding=PADDING | {"top": top})


def _wrap(text: str | list[str], width: int) -> list[str]:
    """Lines of at most `width` characters; a title already wrapped (a list of lines) is joined and wrapped anew."""
    return textwrap.wrap(text if isinstance(text, str) else " ".join(text), width)
