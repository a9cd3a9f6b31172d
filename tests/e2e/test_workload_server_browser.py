"""In a real browser: the workload page measures three sample prompts through a real vLLM server (the draft-model
server shared with tests/remote and tests/app), after checking the connection; no speedup is shown."""

import pytest
from browser_helpers import main_text, open_app_page, screenshot, settle


@pytest.mark.slow
def test_measure_three_prompts_through_vllm(app_url, page, vllm_draft_server):
    url = vllm_draft_server().url
    open_app_page(page, app_url, "workload")
    page.get_by_text("a vLLM server", exact=True).click()
    settle(page)
    first_n = page.get_by_label("Prompts to run (the first N of 20)")
    first_n.fill("3")
    first_n.press("Enter")
    settle(page)
    server_url = page.get_by_label("Server URL")
    server_url.fill(url)
    server_url.press("Enter")
    settle(page)
    page.get_by_role("button", name="Check connection").click()
    page.get_by_text("per-request metrics", exact=False).first.wait_for(timeout=60_000)
    settle(page)
    page.get_by_role("button", name="▶ Measure").click()
    page.get_by_text("Per tag and overall", exact=True).wait_for(timeout=120_000)
    settle(page)
    page.locator(".vega-embed").nth(2).wait_for(timeout=60_000)  # charts draw after the text on a busy machine
    text = main_text(page)
    assert "3 of 3 runs measured through " + url in text
    assert "K = 4" in text
    assert "speedup is not measured through a server" in text
    assert "GO:" not in text
    assert page.locator(".vega-embed").count() >= 3
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0
    screenshot(page, "workload-server-desktop")
