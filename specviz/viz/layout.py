"""Chart titles that are never clipped or cut: wrapped into short lines, anchored left, with padding above.

Vega clips a title that does not fit its chart's width (or shortens it with an ellipsis); at 390 px (a phone) or in
a half-width column a one-line title rarely fits. Every chart the app draws goes through `fitted` (ui.render.draw).
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from specviz.core.lazy import lazy

if TYPE_CHECKING:
    import altair as alt
else:
    alt = lazy("altair")


TITLE_CHARS = 34  # a title line this long fits a half-width column at 1280 px and a phone's full width at 390 px
TITLE_SIZE = 15  # px: larger type would take the plot's height (Streamlit keeps a chart's total height)
PADDING = {"left": 5, "right": 12, "top": 12, "bottom": 5}  # room for the title's glyphs: never cut at the top


def chart_title(
    text: str | list[str], subtitle: str | list[str] = "", size: int = TITLE_SIZE, chars: int | None = None
) -> alt.TitleParams:
    """A title wrapped into short lines (never clipped or cut with an ellipsis), anchored left, with a subtitle;
    lines of `chars` characters (default: TITLE_CHARS' width at this size)."""
    return alt.TitleParams(**title_params(text, subtitle, size, chars))


def title_params(
    text: str | list[str], subtitle: str | list[str] = "", size: int = TITLE_SIZE, chars: int | None = None
) -> dict:
    """chart_title's Vega-Lite title as a plain dict (what the player's chart templates take, made without Altair)."""
    chars = chars or TITLE_CHARS * TITLE_SIZE // size  # larger type, shorter lines: the same width
    params = {"text": _wrap(text, chars), "anchor": "start", "limit": 0, "offset": 8, "fontSize": size}
    if subtitle:
        params |= {"subtitle": _wrap(subtitle, chars + 10), "subtitleFontSize": max(11, size - 4)}
    return params


BAND_ROW = 30  # px per category of a horizontal bar chart: less, and Vega hides every other label as overlapping
FRAME_ROOM = 110  # px of a chart's height that a three-line title and the x axis with its title take


def category_axis() -> alt.Axis:
    """The axis of many categories along x: upright, never thinned."""
    return alt.Axis(labelAngle=-90, labelOverlap=False)


UPRIGHT_ROOM = 120  # px more height for upright category labels below the plot


def band_height(rows: int) -> int:
    """A horizontal bar chart's height: Streamlit keeps a chart's total height, so the plot gets what the title and
    the axis leave; this leaves every category its row (and its label)."""
    return rows * BAND_ROW + FRAME_ROOM


def fitted(chart: alt.TopLevelMixin, size: int = TITLE_SIZE, chars: int | None = None) -> alt.TopLevelMixin:
    """The chart with its title (a string or TitleParams) re-set by `chart_title` at this size, and padding for it."""
    title = chart.title
    if isinstance(title, str):
        chart = chart.properties(title=chart_title(title, size=size, chars=chars))
    elif isinstance(title, alt.TitleParams):
        subtitle = title.subtitle if isinstance(title.subtitle, str | list) else ""
        chart = chart.properties(title=chart_title(title.text, subtitle, size, chars))
    top = PADDING["top"] + 3 * (size - TITLE_SIZE)  # larger type rises further above the chart: more room for it
    return chart.properties(padding=PADDING | {"top": top})


LABEL_LIMIT = 260  # px an axis or legend label may take before Vega cuts it with "…" (Streamlit's theme: 100 px)


def readable(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The chart as every page draws it outside lecture mode: its title fitted, and labels up to LABEL_LIMIT px shown
    whole ("copied from prompt", "measured P(accept | reached)"); a limit a chart sets itself is kept."""
    return fitted(chart).configure_axis(labelLimit=LABEL_LIMIT).configure_legend(labelLimit=LABEL_LIMIT)


def _wrap(text: str | list[str], width: int) -> list[str]:
    """Lines of at most `width` characters; a title already wrapped (a list of lines) is joined and wrapped anew."""
    return textwrap.wrap(text if isinstance(text, str) else " ".join(text), width)


# Projector sizes (px at 1920 wide): the one place lecture mode styles a chart. Each is a floor: a size a chart sets
# itself (an axis's labelFontSize, a text mark's fontSize) is raised to it, a larger one is kept.
LECTURE_TITLE_SIZE = 22
LECTURE_TITLE_CHARS = 40  # a line of the title at 22 px fits a half-width column at 1920 px (and at 1280, narrowly)
LECTURE_FONT_FLOORS = {
    "titleFontSize": 20,  # axis and legend titles
    "labelFontSize": 18,  # axis ticks and legend labels
    "subtitleFontSize": 18,  # a chart's subtitle: the u formula, the KV-cache key
    "fontSize": 18,  # text marks: the u label, the KV-cache slot labels, the marks above bars
}
LECTURE_INK = "#111"  # every text of a chart in lecture mode: Streamlit's theme greys axes and legends (#808495),
# which a projector washes out
LECTURE_HEIGHT = 1.6  # charts this much taller in lecture mode, so a projector shows the bars, not just the labels
LECTURE_ROW = 30  # px at least per band of a chart sized by its rows (a step): a 16 px label needs its row
LECTURE_LIMIT = 400  # px a label may take before Vega cuts it with "…" (Streamlit's theme: 100 px for an axis label)


def lectured(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The chart at projector sizes: its title (re-set by `fitted` at LECTURE_TITLE_SIZE), axis titles, ticks, legends
    and text marks at least LECTURE_FONT_FLOORS, whatever the chart builder set. A copy: the chart is left as it is."""
    chart = fitted(_taller(chart.copy(deep=True)), LECTURE_TITLE_SIZE, LECTURE_TITLE_CHARS)
    _raise_sizes(chart)
    floors, ink = LECTURE_FONT_FLOORS, {"labelColor": LECTURE_INK, "titleColor": LECTURE_INK}
    return (
        chart.configure_axis(
            labelFontSize=floors["labelFontSize"],
            titleFontSize=floors["titleFontSize"],
            labelLimit=LECTURE_LIMIT,
            **ink,
        )
        .configure_legend(
            labelFontSize=floors["labelFontSize"],
            titleFontSize=floors["titleFontSize"],
            labelLimit=LECTURE_LIMIT,
            **ink,
        )
        .configure_header(labelFontSize=floors["labelFontSize"], titleFontSize=floors["titleFontSize"], **ink)
        .configure_text(fontSize=floors["fontSize"])
        .configure_title(  # layers' titles too
            fontSize=LECTURE_TITLE_SIZE,
            subtitleFontSize=floors["subtitleFontSize"],
            color=LECTURE_INK,
            subtitleColor=LECTURE_INK,
        )
    )


def _taller(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The chart with room for larger labels: a fixed height LECTURE_HEIGHT times taller (Streamlit keeps a chart's
    total height, and larger labels take it from the plot), a height per row (a step) at least LECTURE_ROW."""
    height = chart.height
    if isinstance(height, int):
        return chart.properties(height=int(height * LECTURE_HEIGHT))
    step = height.step if isinstance(height, alt.Step) else height.get("step") if isinstance(height, dict) else None
    if isinstance(step, int | float) and step < LECTURE_ROW:
        return chart.properties(height=alt.Step(LECTURE_ROW))
    return chart


def _raise_sizes(node) -> None:
    """Every font size set anywhere in a chart's spec (marks, axes, legends, titles), raised to its floor in place."""
    if isinstance(node, alt.SchemaBase):
        for key, value in node._kwds.items():
            floor = LECTURE_FONT_FLOORS.get(key)
            if floor is not None and isinstance(value, int | float) and value < floor:
                node._kwds[key] = floor
            else:
                _raise_sizes(value)
    elif isinstance(node, list | tuple):
        for item in node:
            _raise_sizes(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            floor = LECTURE_FONT_FLOORS.get(key)
            if floor is not None and isinstance(value, int | float) and value < floor:
                node[key] = floor
            else:
                _raise_sizes(value)
