"""In a real browser: the workload page's load view sweeps a real plain vLLM server and the shared draft-model one
at concurrency 1 and 2 on the code sample's first three prompts, and draws the measured speedups beside the
roofline for the served pair (found by Check connection), every level's figures in its table."""

import pytest
from browser_helpers import enter, main_text, screenshot, settle, wait_shown, workload_through_server


@pytest.fixture
def plain_server(vllm_plain_server):
    return vllm_plain_server()  # the session's shared plain server (tests/conftest.py)


@pytest.mark.slow
def test_the_load_view_sweeps_two_real_servers_beside_the_roofline(app_url, page, vllm_draft_server, plain_server):
    workload_through_server(page, app_url, vllm_draft_server().url)
    enter(page, "Plain server URL (the baseline)", plain_server.url)
    enter(page, "Concurrency levels (requests in flight, at most 64)", "1,2")
    page.get_by_role("button", name="▶ Run the load sweep").click()
    wait_shown(page, "Measured on", timeout_ms=300_000)
    settle(page, 120_000)
    text = main_text(page)
    assert "Recorded with" not in text  # this sweep, not the recorded one
    assert "at 1 measured" in text and "at 2 measured" in text and "against the roofline" in text
    assert "draft model, K = 4" in text
    chart = page.locator(".vega-embed").filter(has_text="requests in flight (concurrency)")
    chart.first.wait_for(timeout=60_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0
    chart.first.scroll_into_view_if_needed()
    screenshot(page, "workload-load-desktop")
