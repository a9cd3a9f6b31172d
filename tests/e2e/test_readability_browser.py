"""In a real browser, every page reads whole (the round page's focus layout: test_rounds_focus_browser.py): no
widget, metric, tab or button label cut with an ellipsis, no chart text shortened by Vega, at 1280×800 and in lecture
mode at 1920×1080; in lecture mode the charts' text reaches projector sizes and a metric's value is larger than its
label."""

import pytest
from browser_helpers import LECTURE_TOGGLE, enter, open_app_page, open_in_lecture_mode, settle, wait_shown

PAGES = {  # path -> text shown once the page is ready
    "": "Measured speedup vs plain",
    "calculator": "Expected tokens per round",
    "exactness": "5. On the loaded model pair",
    "workload": "Prompts from",
    "race": "Measured with the bench",
    "rounds": "Next phase",  # its stepping buttons: "Run to the …" was cut at 1280
}
SIZES = {"1280x800": ((1280, 800), False), "1920x1080-lecture": ((1920, 1080), True)}

CUT = """() => {
  const selectors = [
    '[data-testid="stWidgetLabel"] p', '[data-testid="stMetricLabel"] p', '[data-testid="stMetricValue"] p',
    '[data-testid="stTab"] p', '[data-testid="stButton"] p', '[data-testid="stDownloadButton"] p',
    '[data-baseweb="tag"] span', '[data-testid="stSidebarNavLink"] span', 'summary p', '.stMarkdownEllipsis',
  ];
  const cut = [];
  for (const el of document.querySelectorAll(selectors.join(', '))) {
    const box = el.getBoundingClientRect();
    if (!el.offsetParent || box.width < 2) continue;  // not shown
    if (el.scrollWidth > el.clientWidth + 1) cut.push(el.innerText.trim().slice(0, 80));
  }
  for (const t of document.querySelectorAll('[data-testid="stVegaLiteChart"] svg text')) {
    if (t.textContent.trim().endsWith('…')) cut.push('chart text: ' + t.textContent);
  }
  return cut;
}"""

SIZES_JS = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg')].map(svg => {
  const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;  // CSS scaling of the drawing, if any
  const px = t => parseFloat(getComputedStyle(t).fontSize) * scale;
  const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim());
  const of = role => texts.filter(t => t.closest('.' + role)).map(px);
  return {
    title: [...svg.querySelectorAll('.role-title-text text')].map(t => t.textContent).join(' '),
    titles: of('role-title-text'),
    ticks: of('role-axis-label'),
    axisTitles: of('role-axis-title'),
    legend: of('role-legend-label'),
    marks: of('role-mark'),
  };
})"""

METRIC_JS = """() => [...document.querySelectorAll('[data-testid="stMetric"]')].map(m => ({
  label: parseFloat(getComputedStyle(m.querySelector('[data-testid="stMetricLabel"] p')).fontSize),
  value: parseFloat(getComputedStyle(m.querySelector('[data-testid="stMetricValue"] p')).fontSize),
}))"""


def charts_drawn(tab) -> None:
    tab.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')].every(e => e.querySelector('svg text'))",
        timeout=120_000,
    )
    tab.wait_for_timeout(500)


def open_page(tab, url: str, path: str, lecture: bool) -> None:
    if lecture:
        open_in_lecture_mode(tab, url, path)
    else:  # the home page's first visit loads the models and times a run: minutes on a busy machine
        tab.goto(f"{url}/{path}", wait_until="domcontentloaded")
        settle(tab, timeout_ms=300_000)
    wait_shown(tab, PAGES[path], timeout_ms=300_000)
    settle(tab)
    charts_drawn(tab)


@pytest.mark.slow
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("path", list(PAGES), ids=[p or "home" for p in PAGES])
def test_no_label_is_cut(app_url, browser, path, size):
    (width, height), lecture = SIZES[size]
    context = browser.new_context(viewport={"width": width, "height": height})
    tab = context.new_page()
    try:
        open_page(tab, app_url, path, lecture)
        assert tab.evaluate(CUT) == []
    finally:
        context.close()


def measured_workload(tab, url: str) -> None:
    """Two prompts of the code sample measured with two methods, so every table, chart and legend has rows."""
    open_app_page(tab, url, "workload")
    enter(tab, "Prompts to run (the first N of 20)", "2")
    tab.locator('input[role="combobox"][aria-label="Methods"]').click()
    tab.get_by_role("option", name="n-gram lookup (prompt lookup)").click()
    tab.keyboard.press("Escape")
    settle(tab)
    repeats = tab.get_by_role("spinbutton", name="Timing repeats per prompt")
    repeats.fill("1")
    repeats.press("Enter")
    settle(tab)
    tab.get_by_role("button", name="▶ Measure").click()
    wait_shown(tab, "Per tag and overall", timeout_ms=600_000)
    settle(tab, timeout_ms=300_000)
    charts_drawn(tab)


@pytest.mark.slow
def test_a_measured_workload_reads_whole_on_a_laptop_and_on_a_projector(app_url, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    try:
        measured_workload(tab, app_url)
        assert tab.evaluate(CUT) == []
        strips = [c for c in tab.evaluate(SIZES_JS) if c["title"].startswith("Accepted drafts at each verify")]
        assert strips
        labels = tab.locator('[data-testid="stVegaLiteChart"] .role-axis-label text').evaluate_all(
            "els => els.map(e => e.textContent)"
        )
        named = [t for t in labels if " · draft model, K = " in t or " · n-gram lookup (prompt lookup), K = " in t]
        assert len(named) == 4  # 2 prompts × 2 methods: one strip each, the method named
        tab.get_by_text(LECTURE_TOGGLE).click()  # the same results on a projector
        tab.set_viewport_size({"width": 1920, "height": 1080})
        settle(tab)
        charts_drawn(tab)
        assert tab.evaluate(CUT) == []
        assert_projector_sizes(tab.evaluate(SIZES_JS))
    finally:
        context.close()


def assert_projector_sizes(charts: list[dict]) -> None:
    assert charts
    for chart in charts:
        assert min(chart["titles"]) >= 20, chart
        assert not chart["ticks"] or min(chart["ticks"]) >= 15.5, chart
        assert not chart["axisTitles"] or min(chart["axisTitles"]) >= 17.5, chart
        assert not chart["legend"] or min(chart["legend"]) >= 15.5, chart
        assert not chart["marks"] or min(chart["marks"]) >= 16.5, chart


@pytest.mark.slow
@pytest.mark.parametrize("path", ["calculator", "exactness"])
def test_lecture_mode_draws_chart_text_and_metrics_at_projector_sizes(app_url, browser, path):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    tab = context.new_page()
    try:
        open_page(tab, app_url, path, lecture=True)
        assert_projector_sizes(tab.evaluate(SIZES_JS))
        metrics = tab.evaluate(METRIC_JS)
        assert metrics
        assert all(m["value"] > 1.5 * m["label"] for m in metrics), metrics  # a value reads before its label
        assert min(m["label"] for m in metrics) >= 20  # 1.3rem: a label is projector-sized too
    finally:
        context.close()
