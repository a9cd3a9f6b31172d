"""In a real browser: the workload page measures three sample prompts through a real vLLM server (the draft-model
server shared with tests/remote and tests/app), after checking the connection; no speedup is shown."""

import pytest
from browser_helpers import main_text, screenshot, settle, workload_through_server


@pytest.mark.slow
def test_measure_three_prompts_through_vllm(app_url, page, vllm_draft_server):
    url = vllm_draft_server().url
    workload_through_server(page, app_url, url)
    settle(page)
    page.get_by_role("button", name="▶ Measure").click()
    page.get_by_text("Per tag and overall", exact=True).wait_for(timeout=120_000)
    settle(page)
    page.locator(".vega-embed").nth(2).wait_for(timeout=60_000)  # charts draw after the text on a busy machine
    text = main_text(page)
    assert "3 of 3 prompts measured through " + url in text
    assert "K = 4" in text
    assert "speedup is not measured through a server" in text
    assert "GO:" not in text
    assert page.locator(".vega-embed").count() >= 3
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0
    screenshot(page, "workload-server-desktop")
