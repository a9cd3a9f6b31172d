"""In a real browser: the round-by-round page loads, a round is clicked through, and its last panels appear."""

import re

from browser_helpers import main_text, open_app_page, screenshot, settle

from specviz.core.trace_json import trace_to_json


def test_click_through_a_round_to_the_residual_or_bonus_panel(app_url, page):
    open_app_page(page, app_url, "rounds")
    page.get_by_text("Round 1 of").wait_for()
    for _ in range(20):
        if "4 · Correction or bonus" in main_text(page):
            break
        caption = page.get_by_text("Round 1 of").inner_text()
        page.get_by_role("button", name=re.compile(r"^Next phase(?! \()")).click()
        page.wait_for_function("old => !document.body.innerText.includes(old)", arg=caption)
        settle(page)
    assert "4 · Correction or bonus" in main_text(page)
    page.get_by_text(re.compile("is drawn from the residual|the bonus token")).first.wait_for()
    screenshot(page, "rounds-desktop")


def test_replay_a_trace_file_and_refuse_a_damaged_one(app_url, page, model_dirs, tmp_path):
    from specviz.core.settings import RunSettings
    from specviz.engine.decode import generate
    from specviz.engine.loading.models import load_pair

    pair = load_pair(str(model_dirs["gpt2-target"]), str(model_dirs["gpt2-truncated"]), device="cpu")
    trace = generate(pair, "while True:", RunSettings(k=3, max_new_tokens=12))
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(trace_to_json(trace))
    bad.write_text(trace_to_json(trace).replace('"version": 1', '"version": 7'))
    open_app_page(page, app_url, "rounds")
    page.get_by_text("Edit the prompt · replay a saved trace").click()
    page.locator('input[type="file"]').set_input_files(str(good))
    page.get_by_text(f"Replaying a trace of {len(trace.rounds)} rounds from good.json").wait_for()
    page.get_by_text(f"Round 1 of {len(trace.rounds)}").wait_for()
    page.locator('input[type="file"]').set_input_files(str(bad))
    page.get_by_text("bad.json: This trace is format version 7").wait_for()
