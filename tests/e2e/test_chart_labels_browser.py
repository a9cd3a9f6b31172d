"""In a real browser: every category of the charts that compare samplers, sequences or plans keeps its label (Vega
hides labels it finds overlapping: the TV chart once labelled every other bar, so "exact" stood beside a biased bar),
on a laptop and in lecture mode on a projector."""

import pytest
from browser_helpers import open_app_page

CATEGORY_CHARTS = {  # page -> title starts of its charts with one labelled category per bar or group
    "exactness": ("How far each sampler", "Tree samplers", "The 16 most likely", "Exact output of"),
    "calculator": ("Tree vs chains",),
}
LABELS = """() => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')].map(chart => ({
  title: [...chart.querySelectorAll('.role-title-text text')].map(t => t.textContent).join(' '),
  labels: [...chart.querySelectorAll('.role-axis-label text')].map(t => [t.textContent, getComputedStyle(t).opacity]),
}))"""


def hidden_labels(tab, starts: tuple[str, ...]) -> dict[str, list[str]]:
    """Per chart whose title starts with one of `starts`: the axis labels drawn at opacity 0 (Vega's overlap rule)."""
    charts = [c for c in tab.evaluate(LABELS) if c["title"].startswith(starts)]
    assert len(charts) >= len(starts)
    return {c["title"]: [text for text, opacity in c["labels"] if float(opacity) == 0] for c in charts}


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)], ids=["1280x800", "1920x1080"])
@pytest.mark.parametrize("path", list(CATEGORY_CHARTS))
def test_every_category_keeps_its_label(app_url, browser, size, path):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    try:
        open_app_page(tab, app_url, path)
        tab.wait_for_function(  # every chart asked about is drawn, with its title
            f"starts => starts.every(s => ({LABELS})().some(c => c.title.startsWith(s) && c.labels.length))",
            arg=list(CATEGORY_CHARTS[path]),
            timeout=120_000,
        )
        found = hidden_labels(tab, CATEGORY_CHARTS[path])
        assert all(not hidden for hidden in found.values()), found
    finally:
        context.close()
