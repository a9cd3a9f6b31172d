"""In a real browser, the round page as a lecturer uses it: a clicker's keys from a fresh load, URLs of moments,
bundled traces, titles that fit at four viewports, and the focus view's phase strip in lecture mode (its screenshots
for the README are taken by tests/e2e/screenshots.py, not by the suite)."""

from __future__ import annotations

import pytest
from browser_helpers import assert_titles_fit, click, main_text, open_app_page, press, query, settle, where
from playwright.sync_api import expect


def test_keys_step_forward_and_back_from_a_fresh_load_and_the_url_follows(app_url, page):
    open_app_page(page, app_url, "rounds")  # a live run with the bundled pair; no widget clicked, nothing focused
    assert where(page).startswith("Round 1 of")
    assert "1 · Draft" in where(page)
    assert "2 · Verify" in press(page, "ArrowRight")
    assert query(page)["phase"] == "verify"
    assert query(page)["round"] == "1"
    assert "3 · Accept or reject (position 1 of" in press(page, "PageDown")  # a presenter's clicker
    assert query(page)["phase"] == "judge"
    assert query(page)["pos"] == "1"
    after_space = press(page, "Space")
    assert "position 2 of" in after_space or "4 · Correction" in after_space
    assert "3 · Accept or reject (position 1 of" in press(page, "PageUp")
    assert "2 · Verify" in press(page, "ArrowLeft")
    assert query(page)["phase"] == "verify"
    assert press(page, "n").startswith("Round 2 of")
    assert query(page)["round"] == "2"


def test_keys_are_ignored_while_typing_in_the_prompt(app_url, page):
    open_app_page(page, app_url, "rounds")
    before = where(page)
    assert before.startswith("Round 1 of")
    assert "1 · Draft" in before
    page.get_by_text("Edit the prompt · replay a saved trace").click()
    box = page.get_by_role("textbox", name="Prompt")
    expect(box).not_to_have_value("")  # the expander's box is filled when it opens: under load, a moment later
    prompt = box.input_value()
    box.click()
    for key in ("ArrowLeft", "PageDown", "ArrowRight", "PageUp"):  # the clicker's keys only move the caret
        box.press(key)
    box.press("Control+End")
    box.press_sequentially(" njp")  # Space, N, J and P: next phase, next round, next rejection, play
    typed = box.input_value()
    assert typed == prompt + " njp"  # they went into the box
    for _ in range(4):
        box.press("Backspace")
    assert box.input_value() == prompt  # the prompt is as it was: leaving the box starts no new run
    box.evaluate("el => el.blur()")
    # Now a key with nothing focused does step; had any key typed above stepped too, its rerun would have come first
    # and this step would not land on the first round's verify phase.
    after = press(page, "ArrowRight")
    assert after.startswith("Round 1 of")
    assert "2 · Verify" in after
    assert query(page)["phase"] == "verify"
    assert query(page)["round"] == "1"


def test_a_url_opens_the_moment_it_names(app_url, page):
    open_app_page(page, app_url, "rounds?trace=low-q-accepted&round=1&phase=judge&pos=2")
    assert where(page).startswith("Round 1 of")
    assert "3 · Accept or reject (position 2 of 4)" in where(page)
    assert "✓ ACCEPTED" in main_text(page) or "Accepted" in main_text(page)
    prompt = "def add(a, b):\n    return"
    open_app_page(
        page,
        app_url,
        f"rounds?t=0&k=3&seed=1&n=12&method=draft&prompt={prompt.replace(chr(10), '%0A')}&round=2&phase=verify",
    )
    assert where(page).startswith("Round 2 of")
    assert "2 · Verify" in where(page)
    page.locator(".specviz-text").first.wait_for()
    assert "def add(a, b):" in page.locator(".specviz-text").first.inner_text()
    assert query(page)["t"] == "0"
    assert query(page)["k"] == "3"
    assert query(page)["prompt"] == prompt


def test_a_bundled_trace_replays_and_jumps_to_its_rejections(app_url, page):
    open_app_page(page, app_url, "rounds?trace=early-rejection-residual&round=1&phase=draft")
    page.get_by_text("the first draft is rejected, every later draft is discarded").wait_for()
    settle(page)
    assert "3 · Accept or reject" in click(page, "Next rejection")
    assert "REJECTED" in main_text(page).upper()
    assert query(page)["trace"] == "early-rejection-residual"
    assert "3 · Accept or reject" in press(page, "j")  # the same jump from the keyboard: the next rejection
    assert "4 · Correction or bonus" in click(page, "Next bonus")
    assert query(page)["phase"] == "resolve"
    assert "bonus token" in main_text(page)


MOMENTS = [
    "trace=low-q-accepted&round=1&phase=judge&pos=2",
    "trace=early-rejection-residual&round=3&phase=resolve",
    "trace=full-accept-bonus&round=13&phase=resolve",
    "trace=early-rejection-residual&round=3&phase=commit",
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "size,lecture",
    [((1280, 800), False), ((1920, 1080), False), ((1920, 1080), True), ((390, 844), False)],
    ids=["1280x800", "1920x1080", "1920x1080-lecture", "390x844"],
)
def test_no_chart_title_is_clipped(app_url, browser, size, lecture):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    try:
        for moment in MOMENTS:
            for view in ("full", "focus"):
                url = f"rounds?{moment}&view={view}" + ("&lecture=1" if lecture else "")
                open_app_page(tab, app_url, url)
                assert assert_titles_fit(tab, f"{size} {url}") >= 1
    finally:
        context.close()


PHASES = ["1 · Draft", "2 · Verify", "3 · Accept or reject", "4 · Correction or bonus", "5 · Commit and roll back"]


@pytest.mark.parametrize(
    "moment, phase",
    [(MOMENTS[0], PHASES[2]), (MOMENTS[1], PHASES[3]), (MOMENTS[3], PHASES[4])],
    ids=["judge", "resolve", "commit"],
)
def test_the_focus_view_in_lecture_mode_marks_the_current_phase_on_screen(app_url, browser, moment, phase):
    """The moments of the README's lecture screenshots, on a projector: the phase strip, at the top of the first
    screen, names the five phases and fills the one the caption is at."""
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    tab = context.new_page()
    try:
        open_app_page(tab, app_url, f"rounds?{moment}&view=focus&lecture=1")
        assert phase in where(tab)
        cells = tab.locator(".phase-strip .phase")
        cells.first.wait_for()
        assert [text.strip().removeprefix("▶ ") for text in cells.all_inner_texts()] == PHASES
        current = tab.locator(".phase-strip .phase-on")
        assert current.count() == 1
        assert current.inner_text().strip() == f"▶ {phase}"
        box = tab.locator(".phase-strip").bounding_box()
        assert box is not None
        assert box["y"] >= 0
        assert box["y"] + box["height"] <= 1080  # on the first screen, no scrolling
    finally:
        context.close()
