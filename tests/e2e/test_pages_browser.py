"""In a real browser, what a user does on each page: step rounds, run a workload and download its CSV, race."""

import csv
import io
import re

import pytest
from browser_helpers import (
    NEXT_PHASE,
    PREVIOUS_PHASE,
    assert_titles_fit,
    click,
    main_text,
    open_app_page,
    screenshot,
    settle,
    wait_caption_change,
    where,
)

PAGES = {  # path -> text that appears once the page has finished rendering
    "": "Measured speedup vs plain",
    "rounds": "Rounds committed",
    "calculator": "Expected tokens per round",
    "exactness": "5. On the loaded model pair",
    "workload": "Prompts from",
    "race": "K sweep",
}


def click_and_settle(page, name, timeout_ms: int = 60_000):
    page.get_by_role("button", name=name).click()
    settle(page, timeout_ms)


@pytest.mark.prepush  # the pre-push loop's one real-browser check
def test_step_three_rounds(app_url, page):
    open_app_page(page, app_url, "rounds")
    for expected in ("Round 2 of", "Round 3 of", "Round 4 of"):
        click_and_settle(page, "Next round")
        page.get_by_text(expected).wait_for()
    click_and_settle(page, "To the end")
    page.get_by_text("5 · Commit and roll back", exact=True).wait_for()
    page.get_by_text("Rounds committed", exact=True).wait_for()


def test_three_prompt_workload_upload_and_csv_download(app_url, page, tmp_path):
    upload = tmp_path / "mine.jsonl"
    upload.write_text(
        '{"prompt": "def add(a, b):", "tag": "code"}\n{"prompt": "class Counter:", "tag": "code"}\n'
        'not json\n{"prompt": "for item in items:", "tag": "loop"}\n'
    )
    open_app_page(page, app_url, "workload")
    page.get_by_text("an uploaded file").click()
    settle(page)
    page.locator('input[type="file"]').set_input_files(str(upload))
    page.get_by_text("line 3: not valid JSON").wait_for()
    settle(page)
    click_and_settle(page, "▶ Measure", 300_000)  # step costs, then 6 timed runs: minutes on a busy machine
    page.get_by_text("Per prompt", exact=True).wait_for(timeout=120_000)
    settle(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download CSV").click()
    rows = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
    assert [r["prompt"] for r in rows] == ["def add(a, b):", "class Counter:", "for item in items:"]
    assert all(0 <= float(r["alpha"]) <= 1 for r in rows)
    assert all(float(r["speedup_low"]) <= float(r["speedup"]) <= float(r["speedup_high"]) for r in rows)  # repeats
    assert "each timed 2 times in alternating order" in main_text(page)  # the verdict's speedup says how it was timed
    assert assert_titles_fit(page, "workload at 1280x800", at_least=3) >= 3
    screenshot(page, "workload-desktop")


def test_short_race(app_url, page):
    open_app_page(page, app_url, "race")
    page.get_by_role("button", name="Start the race").click()
    settle(page, 300_000)  # every lane is timed 3 times (measure/timing.py): a busy machine takes minutes
    page.get_by_text("Tokens delivered over time").wait_for(timeout=300_000)  # every lane timed 3 times
    text = main_text(page)
    for label in ("plain decoding (specviz)", "specviz · draft model", "HF generate · assistant_model"):
        assert label in text
    assert "each timed 3 times in alternating order, every speedup against the plain run of its repeat" in text
    assert page.locator('[data-testid="stException"]').count() == 0
    assert assert_titles_fit(page, "race at 1280x800", at_least=2) >= 2
    screenshot(page, "race-desktop")


@pytest.mark.slow
@pytest.mark.parametrize("width, height, suffix", [(1280, 800, "desktop"), (390, 844, "phone")])
def test_every_page_renders_without_errors_and_is_screenshotted(app_url, browser, width, height, suffix):
    context = browser.new_context(viewport={"width": width, "height": height})
    tab = context.new_page()
    try:
        for path, ready in PAGES.items():
            open_app_page(tab, app_url, path, 180_000)  # the home page runs both models: slow on a busy machine
            tab.get_by_text(ready, exact=True).first.wait_for(timeout=60_000)
            settle(tab)
            assert tab.locator('[data-testid="stException"]').count() == 0, path
            screenshot(tab, f"{path or 'home'}-{suffix}")
    finally:
        context.close()


def start_long_workload(page, app_url, prompts):
    """Paste the prompts on the workload page and start measuring; returns once the progress bar shows an ETA."""
    open_app_page(page, app_url, "workload")
    page.get_by_text("pasted text").click()
    settle(page)
    box = page.locator("textarea").first
    box.fill("\n---\n".join(prompts))
    box.press("Control+Enter")
    settle(page)
    page.get_by_role("button", name="▶ Measure").click()
    page.get_by_text(re.compile(r"timed runs.* · about")).wait_for(timeout=120_000)  # the bar shows a time estimate


@pytest.mark.slow
def test_stopping_a_long_workload_keeps_what_was_measured(app_url, page):
    start_long_workload(page, app_url, [f"def function_{i}(x):" for i in range(40)])
    # stop once the first prompt's timing repeats are done (after the step costs and the warm-up), so some are kept
    page.get_by_text(re.compile(r"^([3-9]|\d\d+) of \d+ timed runs")).wait_for(timeout=120_000)
    page.get_by_role("button", name="■ Stop (keeps what was measured)").click()
    page.get_by_text("Per prompt", exact=True).wait_for(timeout=60_000)
    settle(page)
    caption = page.get_by_text("(stopped early: the finished ones are kept)").inner_text()
    kept, planned = int(caption.split()[0]), int(caption.split()[2])
    assert 0 < kept < planned == 40
    page.get_by_role("link", name="Speedup calculator").click()  # switch page and come back: still there
    settle(page)
    page.get_by_role("link", name="Your workload").click()
    page.get_by_text("Per prompt", exact=True).wait_for(timeout=60_000)
    assert page.locator('[data-testid="stException"]').count() == 0


@pytest.mark.slow
def test_closing_a_tab_mid_run_leaves_the_app_responsive(app_url, browser):
    busy = browser.new_context().new_page()
    start_long_workload(busy, app_url, [f"class Thing{i}:" for i in range(40)])
    busy.context.close()  # the tab goes away in the middle of the run
    other = browser.new_context().new_page()
    try:
        open_app_page(other, app_url, "rounds")
        other.get_by_role("button", name=re.compile(r"^Next phase(?! \()")).click()
        other.get_by_text("2 · Verify (one target pass)", exact=True).wait_for(timeout=60_000)
        assert other.locator('[data-testid="stException"]').count() == 0
    finally:
        other.context.close()


def test_play_advances_on_its_own_and_pause_stops_it(app_url, page):
    open_app_page(page, app_url, "rounds")
    start = where(page)
    page.get_by_role("button", name="▶ Play").click()
    wait_caption_change(page, start)  # nothing pressed: it stepped on its own
    moved = where(page)
    wait_caption_change(page, moved)  # and again: it keeps going
    page.get_by_role("button", name="⏸ Pause").click()
    # The Play button is back once the full rerun has run, the one that drops the playback fragment's timer.
    page.get_by_role("button", name="▶ Play").wait_for(timeout=120_000)
    settle(page)
    paused = where(page)
    assert paused != start
    # A step forward and back again lands where it paused: had it still been playing (a phase a second), it would
    # have moved on by itself in between.
    assert click(page, NEXT_PHASE) != paused
    assert click(page, PREVIOUS_PHASE) == paused
    assert page.get_by_role("button", name="▶ Play").is_visible()
