"""Five browser sessions at once against the same cached models: no errors, and each gets the trace it would alone."""

import json
from dataclasses import replace

import pytest
from browser_helpers import settle, wait_shown

from specviz.core.trace import Trace
from specviz.core.trace_json import trace_from_json, trace_to_json
from specviz.engine.decode import generate
from specviz.engine.loading.catalogue import BUNDLED_PRESETS
from specviz.engine.loading.models import load_pair
from specviz.ui.controls import first_run_settings

SESSIONS = 5


def assert_same_rounds(shown: Trace, alone: Trace, where: str) -> None:
    """Same tokens, uniforms and decisions; probabilities to float tolerance (the server and this process may run
    torch on different thread counts, which sums in a different order)."""
    assert [r.committed for r in shown.rounds] == [r.committed for r in alone.rounds], where
    for a, b in zip(shown.rounds, alone.rounds):
        decisions = [[(p.token_id, p.verdict, p.u) for p in r.positions] for r in (a, b)]
        assert decisions[0] == decisions[1], where
        probs = [[x for p in r.positions for x in (p.q, p.p)] for r in (a, b)]
        assert probs[0] == pytest.approx(probs[1], rel=1e-4, abs=1e-6), where


def set_seed(tab, seed):
    box = tab.get_by_label("Seed")
    box.fill(str(seed))
    box.press("Enter")


@pytest.mark.slow
def test_five_sessions_run_and_step_at_once(app_url, browser):
    contexts = [browser.new_context(viewport={"width": 1280, "height": 800}) for _ in range(SESSIONS)]
    tabs = [c.new_page() for c in contexts]
    try:
        for tab in tabs:  # all load at once
            tab.goto(f"{app_url}/rounds", wait_until="domcontentloaded")
        for seed, tab in enumerate(tabs):
            settle(tab)
            set_seed(tab, seed)
        for tab in tabs:
            settle(tab)
        for tab in tabs:
            tab.get_by_role("button", name="▶ New run with these settings").click()  # five runs in flight together
        for tab in tabs:
            wait_shown(tab, "Round 1 of")
            settle(tab)
        for round_number in (2, 3, 4):
            for tab in tabs:  # five clicks in flight together
                tab.get_by_role("button", name="Next round").click()
            for tab in tabs:
                wait_shown(tab, f"Round {round_number} of")
                settle(tab)
        pair = load_pair(device="cpu")  # the bundled pair, as the server uses
        for seed, tab in enumerate(tabs):
            settle(tab)
            assert tab.locator('[data-testid="stException"]').count() == 0
            wait_shown(tab, "Round 4 of")
            with tab.expect_download() as download:
                tab.get_by_role("button", name="Download this trace (JSON)").click()
            shown = trace_from_json(open(download.value.path(), encoding="utf-8").read())
            alone = generate(
                pair,
                BUNDLED_PRESETS["code"],
                replace(first_run_settings(pair.recommended_draft_vocab), seed=seed),  # the page's first run, reseeded
            )
            assert_same_rounds(shown, alone, f"session {seed}")
            assert json.loads(trace_to_json(shown))["settings"]["seed"] == seed
    finally:
        for context in contexts:
            context.close()
