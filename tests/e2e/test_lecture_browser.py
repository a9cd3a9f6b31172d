"""In a real browser, the round page as a lecturer uses it: a clicker's keys from a fresh load, URLs of moments,
bundled traces, titles that fit at four viewports, and the focus view's screenshots for the README."""

from __future__ import annotations

import re
import shutil
from urllib.parse import parse_qs, urlparse

import pytest
from browser_helpers import ROOT, SCREENSHOTS, assert_titles_fit, main_text, open_app_page, settle

CAPTION = re.compile(r"Round \d+ of \d+ · \d · [^\n]+")
VIEWPORTS = {"desktop": (1280, 800), "projector": (1920, 1080), "phone": (390, 844)}


def where(tab) -> str:
    """The caption line that says where the lecture is."""
    try:
        tab.get_by_text(CAPTION).first.wait_for(timeout=180_000)
    except Exception:  # noqa: BLE001 - the assertion below shows the page
        pass
    text = main_text(tab)
    found = CAPTION.search(text)
    assert found, f"no 'Round N of M' caption on the page:\n{text[:3000]}"
    return found.group(0)


def press(tab, key: str) -> str:
    """Press a key with nothing focused (as a clicker does) and wait for the caption to change; returns it."""
    return changed(tab, lambda: tab.keyboard.press(key))


def click(tab, button: str) -> str:
    """Click a button and wait for the caption to change (a busy machine may take seconds); returns it."""
    return changed(tab, lambda: tab.get_by_role("button", name=button).click())


def changed(tab, act) -> str:
    before = where(tab)
    act()
    tab.wait_for_function(
        "old => { const m = document.body.innerText.match(/Round \\d+ of \\d+ · \\d · [^\\n]+/);"
        " return m && m[0] !== old; }",
        arg=before,
        timeout=120_000,
    )
    settle(tab)
    return where(tab)


def query(tab) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(tab.url).query).items()}


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
    page.get_by_text("Edit the prompt · replay a saved trace").click()
    box = page.get_by_role("textbox", name="Prompt")
    box.click()
    box.press("End")
    box.press("ArrowLeft")
    box.press("PageDown")
    page.keyboard.type(" n")
    page.wait_for_timeout(800)
    assert where(page) == before


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


def test_focus_view_in_lecture_mode_screenshots(app_url, browser):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    tab = context.new_page()
    docs = ROOT / "docs" / "screenshots"
    try:
        for name, moment in [
            ("lecture-judge", MOMENTS[0]),
            ("lecture-residual", MOMENTS[1]),
            ("lecture-kv-cache", MOMENTS[3]),
        ]:
            open_app_page(tab, app_url, f"rounds?{moment}&view=focus&lecture=1")
            tab.locator(".phase-strip .phase-on").wait_for()  # the phase strip marks the current phase
            tab.wait_for_timeout(800)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(SCREENSHOTS / f"{name}-1920.png"))
            shutil.copy(SCREENSHOTS / f"{name}-1920.png", docs / f"{name}-1920.png")
    finally:
        context.close()
