"""In Chromium, the round page as a newcomer walks it (the in-page player, the default): the first bundled trace
picked after a live run is the one shown, named by the picker and alone in the address; the player's own "Focus view
(F)" puts the phase, its charts and its sentence on a 1920×1080 screen at once, as a presenter's link does; lecture
mode draws the keys line, the moment line, the picker's value, the bug table's sentences and the charts' ticks at
projector sizes in dark ink."""

from __future__ import annotations

import pytest
from browser_helpers import open_in_lecture_mode, query, settle, wait_shown

SCREEN = {"width": 1920, "height": 1080}
PICKER = 'input[role="combobox"][aria-label^="Bundled lecture trace"]'
LIVE = "(a live run with the sidebar's settings)"
TRACES = {  # name -> the picker's title for it
    "early-rejection-residual": "An early rejection and its residual (sampling, T = 1)",
    "full-accept-bonus": "A full accept with a bonus token (greedy, code)",
}


def player_ready(tab, timeout_ms: int = 300_000) -> None:
    """Until the page is idle and its player has drawn the step it shows."""
    settle(tab, timeout_ms)
    tab.wait_for_selector(".spz-mount[data-ready='1']", timeout=timeout_ms)
    tab.wait_for_function("() => document.querySelector('.spz-mount')?.dataset.rendered", timeout=60_000)


def pick(tab, title: str) -> None:
    tab.locator(PICKER).click()
    tab.get_by_role("option", name=title).click()
    player_ready(tab)


def test_the_first_trace_picked_after_a_live_run_is_shown_named_and_alone_in_the_address(live_player_url, browser):
    tab = browser.new_context(viewport=SCREEN).new_page()
    try:
        tab.goto(f"{live_player_url}/rounds", wait_until="domcontentloaded")  # a fresh visit: a live run
        player_ready(tab)
        assert tab.locator(PICKER).input_value() == LIVE
        assert "method" in query(tab)  # the player wrote the live run's settings and its moment
        tab.keyboard.press("ArrowRight")  # a step in the browser: the address moves, the server is not told
        tab.wait_for_function("() => new URLSearchParams(location.search).get('phase') === 'verify'")
        for name, title in TRACES.items():
            pick(tab, title)
            tab.wait_for_function(
                "() => /^Round \\d+ of (15|13) /.test((document.querySelector('.spz-where')?.innerText ?? ''))"
            )
            assert tab.locator(PICKER).input_value() == title
            tab.wait_for_function(  # the player writes the address once it draws the new trace (late under load)
                f"() => new URLSearchParams(location.search).get('trace') === '{name}'", timeout=60_000
            )
            address = query(tab)
            assert not {"method", "k", "t", "prompt", "seed", "n"} & set(address), address
        pick(tab, LIVE)  # back to the live run: its settings again, no trace
        tab.wait_for_function("() => new URLSearchParams(location.search).has('method')")
        assert "trace" not in query(tab)
        assert tab.locator(PICKER).input_value() == LIVE
    finally:
        tab.context.close()


REJECTION = "trace=early-rejection-residual&round=3&phase=judge&pos=1"  # the walk's "Rejected …" judge phase


def first_screen(tab) -> dict:
    """Where the phase strip, the judge phase's two charts, its sentence and the trace picker are."""
    return tab.evaluate(
        """() => {
          const box = e => { const b = e.getBoundingClientRect(); return {top: b.top, bottom: b.bottom}; };
          const stage = document.querySelector('.spz-stage');
          const sentence = [...stage.querySelectorAll('.spz-block-markdown')].find(e => /Rejected/.test(e.innerText));
          return {strip: box(stage.querySelector('.phase-strip')), charts: [...stage.querySelectorAll('.spz-chart')]
                    .map(box), sentence: sentence && box(sentence),
                  picker: box(document.querySelector('[data-testid="stSelectbox"]:has(input[aria-label^="Bundled"])')),
                  focus: document.querySelector('.spz-mount').classList.contains('spz-focus')};
        }"""
    )


LAPTOP = {"width": 1280, "height": 800}


@pytest.mark.parametrize(
    "opened, toggled, screen",
    [
        (f"{REJECTION}&present=1", False, SCREEN),
        (f"{REJECTION}&view=full", True, SCREEN),
        (f"{REJECTION}&lecture=1&view=full", True, SCREEN),
        (f"{REJECTION}&view=full", True, LAPTOP),  # the player starts below the fold: the click scrolls down to it
    ],
    ids=["presenter-link", "toggled", "toggled-in-lecture-mode", "toggled-1280x800"],
)
def test_the_players_focus_view_puts_the_phase_its_charts_and_its_sentence_on_the_first_screen(
    player_url, browser, opened, toggled, screen
):
    tab = browser.new_context(viewport=screen).new_page()
    try:
        tab.goto(f"{player_url}/rounds?{opened}", wait_until="domcontentloaded")
        player_ready(tab)
        if toggled:  # mid-session, with the sidebar open: no rerun, the layout must follow at once
            tab.evaluate("window.__sameDocument = true")
            tab.get_by_text("Focus view (F)").click()
            tab.wait_for_function("() => document.querySelector('.spz-mount.spz-focus .phase-strip')")
        tab.wait_for_function(
            "() => [...document.querySelectorAll('.spz-stage .spz-chart')].every(c => c.querySelector('svg'))"
        )
        tab.wait_for_timeout(300)  # the layout after the charts' SVG is in
        shown = first_screen(tab)
        assert shown["focus"]
        assert shown["sentence"] is not None, "no 'Rejected …' sentence at this judge phase"
        assert 0 <= shown["strip"]["top"] and len(shown["charts"]) == 2
        ends = [shown["strip"]["bottom"], shown["sentence"]["bottom"], *(c["bottom"] for c in shown["charts"])]
        assert max(ends) <= screen["height"], f"the phase ends at {max(ends):.0f} px: {shown}"
        assert shown["picker"]["top"] >= max(ends), f"the trace picker sits above the phase: {shown}"
        if toggled:
            assert tab.evaluate("window.__sameDocument === true")
            tab.get_by_text("Focus view (F)").click()  # and back: the picker above the phase again
            tab.wait_for_function("() => !document.querySelector('.spz-mount.spz-focus')")
            above = tab.evaluate(
                """() => document.querySelector('[data-testid="stSelectbox"]:has(input[aria-label^="Bundled"])')
                    .getBoundingClientRect().bottom
                  < document.querySelector('.spz-stage').getBoundingClientRect().top"""
            )
            assert above, "the full view's trace picker did not come back above the phase"
    finally:
        tab.context.close()


SIZES = """() => {
  const px = e => parseFloat(getComputedStyle(e).fontSize);
  const dark = e => { const [r, g, b] = getComputedStyle(e).color.match(/\\d+/g).map(Number);
                      return r + g + b < 3 * 60; };
  const one = sel => { const e = document.querySelector(sel); return e && {px: px(e), dark: dark(e)}; };
  return {keys: one('.spz-keys'), moment: one('.spz-where'), picker: one('input[aria-label^="Bundled lecture trace"]'),
};
}"""

TICKS = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg .role-axis-label text')].map(t => ({
  px: parseFloat(getComputedStyle(t).fontSize), fill: t.getAttribute('fill')}))"""

CELLS = """() => [...document.querySelectorAll('[data-testid="stTable"] td')].filter(td => td.offsetParent).map(td => {
  const cell = td.getBoundingClientRect(), range = document.createRange();
  range.selectNodeContents(td);
  const text = range.getBoundingClientRect();  // the text's own box, also where a child clips it
  return {text: td.innerText, cut: text.right > cell.right + 1 || text.bottom > cell.bottom + 1,
          px: parseFloat(getComputedStyle(td).fontSize)};
})"""


def test_lecture_mode_draws_the_round_pages_lines_and_the_exactness_labs_table_at_projector_sizes(player_url, browser):
    from specviz.core import lab

    tab = browser.new_context(viewport=SCREEN).new_page()
    try:
        tab.goto(f"{player_url}/rounds?{REJECTION}&lecture=1&view=full", wait_until="domcontentloaded")
        player_ready(tab)
        sizes = tab.evaluate(SIZES)
        assert sizes["keys"]["px"] >= 18 and sizes["keys"]["dark"], sizes  # was 14.4 px, grey
        assert sizes["moment"]["px"] >= 24 and sizes["moment"]["dark"], sizes  # was 20.8 px, grey
        assert sizes["picker"]["px"] >= 20, sizes  # its label is 20.8 px; the value was 14 px

        open_in_lecture_mode(tab, player_url, "exactness")
        wait_shown(tab, "5. On the loaded model pair")
        tab.wait_for_function("() => document.querySelector('[data-testid=\"stTable\"] td')")
        cells = tab.evaluate(CELLS)
        texts = {c["text"] for c in cells}
        for variant in lab.VARIANTS:  # every sentence whole, in a cell that wraps it
            assert variant.explanation in texts, variant.key
            assert variant.key == "exact" or variant.seen_in in texts, variant.key
        assert not [c["text"][:40] for c in cells if c["cut"]]
        assert min(c["px"] for c in cells) >= 20
        tab.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')].every(e => e.querySelector('svg'))"
        )
        ticks = tab.evaluate(TICKS)
        assert ticks and min(t["px"] for t in ticks) >= 17.5, ticks[:5]
        assert {t["fill"] for t in ticks} == {"#111"}, {t["fill"] for t in ticks}  # Streamlit's theme drew them grey
    finally:
        tab.context.close()
