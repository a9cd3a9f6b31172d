"""In a real browser at a projector's 1920x1080: the focus view keeps the phase and its accept / reject
test on the first screen with the sidebar open; turning it on mid-session folds the trace controls under the phase
with no reload; "Copy link to this moment" puts this moment's address on the clipboard, and the presenter's link
opens it full screen (lecture mode, focus view, sidebar closed)."""

from __future__ import annotations

import re

import pytest
from browser_helpers import main_text, open_app_page, query, settle, where

SCREEN = {"width": 1920, "height": 1080}
TEST_CHART = '[data-testid="stVegaLiteChart"]'


def bottom(box: dict) -> float:
    return box["y"] + box["height"]


@pytest.mark.parametrize(
    "moment",
    [
        "trace=full-accept-bonus&round=13&phase=judge&pos=1",  # the longest committed text of the bundled traces
        "trace=early-rejection-residual&round=3&phase=judge&pos=1",
        "trace=tree-sibling-accepted&round=2&phase=judge&pos=3",  # a tree: the tree and the test side by side
    ],
    ids=["chain-late", "chain-rejection", "tree"],
)
def test_the_focus_view_keeps_the_phase_and_its_test_above_the_fold_with_the_sidebar_open(app_url, browser, moment):
    context = browser.new_context(viewport=SCREEN)
    tab = context.new_page()
    try:
        open_app_page(tab, app_url, f"rounds?{moment}&view=focus&lecture=1")
        assert "3 · Accept or reject" in where(tab)
        sidebar = tab.locator('[data-testid="stSidebar"]').bounding_box()
        assert sidebar is not None and sidebar["x"] >= 0 and sidebar["width"] > 200  # the sidebar is open
        test = tab.locator(TEST_CHART).filter(has_text=re.compile("ACCEPTED|REJECTED"))
        test.first.wait_for()
        tab.wait_for_function(f"() => document.querySelector('{TEST_CHART} svg')")
        tab.wait_for_timeout(400)
        assert test.count() == 1
        box = test.bounding_box()
        assert box is not None and box["y"] >= 0
        assert bottom(box) <= SCREEN["height"], f"the accept / reject chart ends at {bottom(box):.0f} px"
        strip = tab.locator(".phase-strip").bounding_box()
        assert strip is not None and strip["y"] >= 0 and bottom(strip) <= box["y"]
    finally:
        context.close()


def test_turning_the_focus_view_on_folds_the_trace_controls_under_the_phase_without_a_reload(app_url, browser):
    context = browser.new_context(viewport=SCREEN)
    tab = context.new_page()
    try:
        open_app_page(tab, app_url, "rounds?trace=low-q-accepted&round=1&phase=judge&pos=2")
        picker = tab.get_by_text("Bundled lecture trace (replays with no model)")
        picker.wait_for(timeout=60_000)  # drawn by the page's run, which may still be going on a busy machine
        assert picker.is_visible()
        tab.evaluate("window.__sameDocument = true")  # gone if the page reloads
        tab.get_by_text("Focus view (one phase, large)").click()
        settle(tab)
        tab.locator(".phase-strip").wait_for()
        assert tab.evaluate("window.__sameDocument === true")
        assert query(tab)["view"] == "focus"
        assert not picker.is_visible()  # folded into the expander
        folded = tab.locator('[data-testid="stExpander"]').filter(has_text="Trace picker · new run · download")
        assert folded.count() == 1
        strip, controls = tab.locator(".phase-strip").bounding_box(), folded.bounding_box()
        assert bottom(strip) < controls["y"]  # the controls come after the phase, not above it
        new_run = tab.get_by_role("button", name="▶ New run with these settings")
        new_run.wait_for(state="hidden", timeout=10_000)  # the expander may still be closing on a busy machine
        assert not new_run.is_visible()
        folded.locator("summary").first.click()
        tab.get_by_role("button", name="▶ New run with these settings").wait_for()
        assert tab.get_by_role("button", name="Download this trace (JSON)").is_visible()
    finally:
        context.close()


def test_copy_link_copies_this_moment_and_the_presenters_link_opens_full_screen(app_url, browser):
    context = browser.new_context(viewport=SCREEN)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url)
    tab = context.new_page()
    try:
        open_app_page(tab, app_url, "rounds?trace=low-q-accepted&round=1&phase=judge&pos=2")
        tab.get_by_role("button", name=re.compile(r"^Next phase(?! \()")).click()
        settle(tab)
        moment = query(tab)
        tab.get_by_role("button", name="Copy link to this moment").click()
        tab.get_by_text("Copied a link to this moment.").wait_for()
        copied = tab.evaluate("navigator.clipboard.readText()")
        assert copied == tab.url  # the address of the moment shown, as the address bar has it
        assert "trace=low-q-accepted" in copied and f"phase={moment['phase']}" in copied
        tab.get_by_role("button", name="Copy presenter link").click()
        tab.get_by_text("Copied a presenter's link to this moment.").wait_for()
        presenter = tab.evaluate("navigator.clipboard.readText()")
        assert presenter == copied + "&present=1"

        shown = context.new_page()
        shown.goto(presenter, wait_until="domcontentloaded")
        settle(shown)
        shown.locator(".phase-strip").wait_for()
        assert where(shown) == where(tab)  # the same moment
        sidebar = shown.locator('[data-testid="stSidebar"]').bounding_box()
        assert sidebar is None or sidebar["width"] < 10 or sidebar["x"] + sidebar["width"] <= 0  # collapsed
        assert query(shown)["view"] == "focus"
        assert query(shown)["lecture"] == "1"
        assert "Teaching point" in main_text(shown)
    finally:
        context.close()
