"""Pasted prompts tagged with `### tag: NAME` lines, in a real browser: the paste box shows the
syntax as written (not as a Markdown heading), the tags found read as plain text before anything is measured, and a
tag line written wrong is one message naming its line."""

from __future__ import annotations

from browser_helpers import main_text, open_app_page, settle


def paste(tab, text: str) -> None:
    box = tab.locator("textarea").first
    box.fill(text)
    box.press("Control+Enter")
    settle(tab)


def test_tags_found_show_before_measuring_and_a_bad_tag_line_names_its_line(app_url, page):
    open_app_page(page, app_url, "workload")
    page.get_by_text("pasted text").click()
    page.locator("textarea").first.wait_for(timeout=60_000)  # the rerun that draws the paste box may start late
    settle(page)
    assert "a line ### tag: NAME tags the prompts after it." in main_text(page)
    paste(page, "### tag: code_*x*\ndef add(a, b):\n---\nclass A:\n### tag: prose\nThe quick brown fox")
    found = "3 prompt(s) by tag: code_*x* (2), prose (1); each tag is judged on its own as well as all together."
    page.get_by_text(found, exact=True).wait_for(timeout=60_000)  # the tag as typed: no emphasis made of its stars
    assert page.locator('[data-testid="stException"]').count() == 0
    paste(page, "def add(a, b):\n### tag code\nclass A:")
    error = page.locator('[data-testid="stAlertContentError"]')
    error.wait_for(timeout=60_000)
    assert error.inner_text() == (
        "line 2: '### tag code' is not a tag line: write '### tag: NAME' (a colon, then the tag)."
    )
