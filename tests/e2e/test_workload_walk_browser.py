"""The workload page in a real browser at 1280×800: with two methods chosen every chip stays
in its box (the first one scrolled out of it), and the family's ranking gives each setting its own row with a label
that prints over no other (a 120 px strip: the bars overlapped on one row, the labels over each other)."""

from __future__ import annotations

from browser_helpers import enter, open_app_page, settle, wait_shown

from specviz.viz.layout import BAND_ROW

CHIPS = """label => {
  const box = [...document.querySelectorAll('[data-testid=stMultiSelect]')].find(b => b.innerText.startsWith(label));
  const tags = box.querySelector('.react-aria-ComboBox [data-testid=stMultiSelectTagsContainer]');
  const r = tags.getBoundingClientRect();
  return {box: [r.left, r.right, r.top, r.bottom], chips: [...tags.querySelectorAll('[data-tag]')].map(t => {
    const c = t.getBoundingClientRect(); return [t.innerText, c.left, c.right, c.top, c.bottom]; })};
}"""
RANKING = """() => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')].map(chart => ({
  title: [...chart.querySelectorAll('.role-title-text text')].map(t => t.textContent).join(' '),
  labels: [...chart.querySelectorAll('.role-axis-label text')].map(t => {
    const b = t.getBoundingClientRect(); return [t.textContent, b.top, b.bottom]; }),
})).filter(c => c.title.startsWith('The family ranked on all prompts'))"""


def choose(tab, label: str, option: str) -> None:
    box = tab.locator("[data-testid=stMultiSelect]").filter(has_text=label)
    box.locator("input").click()
    tab.get_by_role("option", name=option, exact=True).click()
    tab.keyboard.press("Escape")
    settle(tab)


def test_two_methods_chips_fit_and_the_ranking_gives_each_setting_its_row(app_url, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    try:
        open_app_page(tab, app_url, "workload")
        wait_shown(tab, "Prompts from")
        choose(tab, "Methods", "n-gram lookup (prompt lookup)")
        chips = tab.evaluate(CHIPS, "Methods")
        left, right = chips["box"][:2]
        assert [c[0] for c in chips["chips"]] == ["draft model", "n-gram lookup (prompt lookup)"]
        assert all(left - 1 <= c[1] and c[2] <= right + 1 for c in chips["chips"]), chips  # each chip in its box
        choose(tab, "K values", "2")
        enter(tab, "Prompts to run (the first N of 20)", "1")
        tab.get_by_role("button", name="▶ Measure").click()
        wait_shown(tab, "The family ranked", timeout_ms=600_000)
        settle(tab, 300_000)
        tab.wait_for_function(f"() => ({RANKING})().some(c => c.labels.length)", timeout=120_000)
        (chart,) = tab.evaluate(RANKING)
        rows = sorted((top, bottom, name) for name, top, bottom in chart["labels"] if "K = " in name)
        assert len(rows) == 4, chart  # draft model and n-gram lookup, each at K = 2 and K = 4
        for (top, bottom, name), (next_top, _, next_name) in zip(rows, rows[1:]):
            assert bottom <= next_top, (name, next_name)  # one label a row, none printed over the next
            assert next_top - top >= BAND_ROW - 2, (name, next_name)  # each setting its own row
    finally:
        context.close()
