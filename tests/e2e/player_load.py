"""Twenty sessions stepping the round page's in-page player at once, in real Chromium (public mode: bundled traces,
no model run). Stepping asks nothing of the server, so what could slow a session is only the machine its browser runs
on: one fresh page steps alone through the first moments, then 20 fresh pages, all connected to the server, step
through the same moments during the same seconds, pressed in turn and at the same instant. Writes the median step
times (to the DOM and charts drawn, dom_ms, and to the next frame, ms) and the machine to JSON.

    python tests/e2e/player_load.py --out /tmp/player-load.json [--sessions 20] [--presses 8]

Here all twenty browsers share one machine: pressed in turn, a session should step within about 1.5x of one alone
(measured on the 2-core EPYC: 4.0-4.4 ms alone, 5.2-6.45 ms in turn, dom_ms); pressed at the same instant, twenty
renders share the cores, which twenty students' laptops do not, and twenty visible headless pages with software
compositing wait long for their frames (11 ms alone, 514 ms with 20). Not part of the test suite: a timing on a
machine that other work shares is a measurement, not a check (tests/e2e/test_player_browser.py checks one session's
keys send nothing to the server).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from browser_helpers import CHROMIUM, CHROMIUM_FLAGS, served_app, settle  # noqa: E402
from test_player_browser import CHAIN, ROOT, open_player, timings, wait_prepared  # noqa: E402


def median_step(tabs, presses: int, in_turn: bool = False) -> tuple[float, float]:
    """Press → on every tab, `presses` times, each time until all have drawn -> the median step time to the next
    frame, and to the DOM and charts drawn. At once: every tab is pressed, then all are waited for; in turn: each tab
    is pressed and waited for before the next, so the sessions step during the same seconds without sharing the
    test machine's two cores between twenty renders of the same instant."""
    since = [t.evaluate("window.__specvizTimings.length") for t in tabs]
    for _ in range(presses):
        rendered = [t.evaluate("document.querySelector('.spz-mount').dataset.rendered") for t in tabs]
        for t, r in zip(tabs, rendered, strict=True):
            t.keyboard.press("ArrowRight")
            if in_turn:
                t.wait_for_function("r => (document.querySelector('.spz-mount')?.dataset.rendered ?? r) !== r", arg=r)
        for t, r in zip(tabs, rendered, strict=True):
            t.wait_for_function("r => (document.querySelector('.spz-mount')?.dataset.rendered ?? r) !== r", arg=r)
        for t in tabs:
            wait_prepared(t, 120_000)
    pairs = list(zip(tabs, since, strict=True))
    return tuple(statistics.median(ms for t, n in pairs for ms in timings(t, n, what)) for what in ("ms", "dom_ms"))


def measure(url: str, browser, sessions: int, presses: int) -> dict:
    """One session alone, then `sessions` at once (two browser contexts), in turn and at the same instant."""
    contexts = [browser.new_context(viewport={"width": 1280, "height": 800}) for _ in range(2)]
    query = f"trace={CHAIN}&round=1&phase=draft&view=full"
    try:
        first = contexts[0].new_page()
        open_player(first, url, query)
        alone, alone_dom = median_step([first], presses)
        first.close()
        tabs = [contexts[i % 2].new_page() for i in range(sessions)]
        for tab in tabs:  # the pages load at once, then each is waited for
            tab.goto(f"{url}/rounds?{query}", wait_until="commit")
        for tab in tabs:
            settle(tab, 300_000)
            tab.wait_for_selector(f"{ROOT}[data-ready='1']", timeout=120_000)
            wait_prepared(tab)
        visible = sum(t.evaluate("document.visibilityState === 'visible'") for t in tabs)
        in_turn, in_turn_dom = median_step(tabs, presses, in_turn=True)
        at_once, at_once_dom = median_step(tabs, presses)
    finally:
        for context in contexts:
            context.close()
    return {
        "sessions": sessions,
        "presses": presses,
        "visible": visible,  # hidden pages are throttled: all should be visible
        "one_session_median_ms": alone,
        "one_session_median_dom_ms": alone_dom,
        "in_turn_median_ms": in_turn,
        "in_turn_median_dom_ms": in_turn_dom,
        "at_once_median_ms": at_once,
        "at_once_median_dom_ms": at_once_dom,
        "in_turn_over_alone_dom": in_turn_dom / alone_dom,
    }


def machine() -> dict:
    import torch

    from specviz.measure.bench import cpu_model

    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "capability": torch.backends.cpu.get_cpu_capability(),
        "load_average": os.getloadavg()[0],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--presses", type=int, default=8)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "server.log"
        with served_app(log, {"SPECVIZ_PUBLIC": "1"}) as url, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            report = {"machine": machine(), **measure(url, browser, args.sessions, args.presses)}
            browser.close()
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
