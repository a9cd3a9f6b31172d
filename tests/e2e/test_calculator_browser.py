"""In a real browser: moving α on the calculator changes the speedup shown."""

from browser_helpers import open_app_page, screenshot, settle


def metric(page, label):
    return (
        page.locator('[data-testid="stMetric"]')
        .filter(has_text=label)
        .locator('[data-testid="stMetricValue"]')
        .inner_text()
    )


def test_changing_alpha_changes_the_speedup(app_url, page):
    open_app_page(page, app_url, "calculator")
    assert metric(page, "Speedup (ideal verify)") == "2.80×"  # α 0.8, K 4, c 0.05
    sliders = page.locator('[data-testid="stSlider"]')
    thumb = sliders.filter(has_text="α (per-token acceptance probability)").get_by_role("slider")
    thumb.focus()
    for _ in range(20):
        thumb.press("ArrowLeft")  # 0.80 -> 0.60 in steps of 0.01
    page.wait_for_function(  # each key press reruns the page; wait for the last one
        "() => [...document.querySelectorAll('[data-testid=\"stMetric\"]')]"
        ".some(m => m.innerText.includes('Speedup (ideal verify)') && m.innerText.includes('1.92'))",
        timeout=60_000,
    )
    settle(page)
    assert metric(page, "Speedup (ideal verify)") == "1.92×"
    assert metric(page, "Expected tokens per round") == "2.306"
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "calculator-desktop")
