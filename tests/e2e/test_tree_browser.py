"""In a real browser: the bundled tree trace opens from its URL, the keyboard steps through its round from the tree
to the commit, the tree is drawn, and no chart title is clipped at 1280 x 800 (full and focus view)."""

from __future__ import annotations

import pytest
from browser_helpers import assert_titles_fit, main_text, open_app_page, press, query, screenshot, where

URL = "rounds?trace=tree-sibling-accepted&round=2&phase=draft"


def tree_titles(tab) -> list[str]:
    """The charts' title lines (SVG text, read as textContent)."""
    return tab.locator('[data-testid="stVegaLiteChart"] .role-title-text').evaluate_all(
        "els => els.map(e => e.textContent)"
    )


def shot(tab, title: str, name: str) -> None:
    """A viewport screenshot with the chart of this title scrolled into view (the page scrolls inside Streamlit)."""
    tab.locator('[data-testid="stVegaLiteChart"]').filter(has_text=title).last.scroll_into_view_if_needed()
    tab.wait_for_timeout(300)
    screenshot(tab, name)


@pytest.mark.slow
def test_the_bundled_tree_round_steps_by_keyboard_and_draws_its_tree(app_url, page):
    open_app_page(page, app_url, URL)
    assert where(page).startswith("Round 2 of")
    assert "1 · Draft" in where(page)
    page.locator('[data-testid="stVegaLiteChart"] svg').first.wait_for()
    assert any("The draft tree" in t for t in tree_titles(page))
    assert "drafts a tree of shape 2,2,1,1 (14 nodes)" in main_text(page)
    assert_titles_fit(page, "tree draft")
    shot(page, "The draft tree", "tree-draft-1280")
    assert "2 · Verify" in press(page, "ArrowRight")
    assert "ONE target forward pass over all 14 tree nodes" in main_text(page)
    assert any("Tree attention mask" in t for t in tree_titles(page))
    assert_titles_fit(page, "tree verify")
    phases = []
    for _ in range(12):
        now = press(page, "PageDown")
        phases.append(now)
        if "3 · Accept or reject (node 3 of 14" in now:  # the first child rejected: its residual is drawn
            assert "REJECTED" in main_text(page).upper()
            assert any("Residual after rejecting" in t for t in tree_titles(page))
            assert_titles_fit(page, "tree judge")
            shot(page, "Residual after rejecting", "tree-judge-1280")
        if "5 · Commit" in now:
            break
    assert any("(node 4 of 14, depth 2)" in p for p in phases)  # the sibling judged against the residual
    assert "5 · Commit" in phases[-1]
    assert query(page)["phase"] == "commit"
    assert query(page)["round"] == "2"
    assert "the rollback crops every tree node" in main_text(page)
    assert_titles_fit(page, "tree commit")
    shot(page, "KV caches", "tree-commit-1280")


def test_the_focus_view_draws_the_tree_at_a_judged_child(app_url, page):
    open_app_page(page, app_url, "rounds?trace=tree-sibling-accepted&round=2&phase=judge&pos=4&view=focus")
    assert "(node 4 of 14, depth 2)" in where(page)
    page.locator('[data-testid="stVegaLiteChart"] svg').first.wait_for()
    assert any("The draft tree" in t for t in tree_titles(page))
    assert assert_titles_fit(page, "tree focus judge", at_least=3) >= 3
    shot(page, "The draft tree", "tree-focus-judge-1280")


@pytest.mark.slow
@pytest.mark.parametrize(
    "size,lecture", [((390, 844), False), ((1920, 1080), True)], ids=["390x844", "1920x1080-lecture"]
)
def test_tree_titles_fit_on_a_phone_and_a_projector(app_url, browser, size, lecture):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    try:
        for moment in ("round=2&phase=verify", "round=2&phase=judge&pos=3", "round=2&phase=commit"):
            for view in ("full", "focus"):
                url = f"rounds?trace=tree-sibling-accepted&{moment}&view={view}" + ("&lecture=1" if lecture else "")
                open_app_page(tab, app_url, url)
                assert assert_titles_fit(tab, f"{size} {url}") >= 1
    finally:
        context.close()
