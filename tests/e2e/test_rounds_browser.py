"""In a real browser: the round-by-round page loads, a round is clicked through, and its last panels appear."""

from browser_helpers import main_text, open_app_page, screenshot, settle


def test_click_through_a_round_to_the_residual_or_bonus_panel(app_url, page):
    open_app_page(page, app_url, "rounds")
    page.get_by_text("Round 1 of").wait_for()
    for _ in range(20):
        if "4 · Correction or bonus" in main_text(page):
            break
        caption = page.get_by_text("Round 1 of").inner_text()
        page.get_by_role("button", name="Next phase").click()
        page.wait_for_function("old => !document.body.innerText.includes(old)", arg=caption)
        settle(page)
    text = main_text(page)
    assert "4 · Correction or bonus" in text
    assert "is drawn from the residual" in text or "bonus token" in text
    screenshot(page, "rounds-desktop")
