"""In Chromium, a small lecture (tests/e2e/lecture_load.py's, made small): four sessions open the round page at once,
each with a prompt of its own, so their runs queue in the lecture hall; each is told its place while it waits and is
drawn in the end; a session opening a bundled lecture trace while they wait is drawn and never queued; a session
whose tab closes while queued has its run dropped (the server's log says so); in public mode behind a proxy, a
visitor's second tab gets no second run while its first tab's run waits, and other visitors still queue."""

from __future__ import annotations

import re

import pytest
from browser_helpers import served_app
from lecture_load import BUNDLED, PROMPTS, open_session, result

LIVE = 4
TOKENS = "200"  # long runs (the bundled target reads 256 tokens at most), so the queue is busy for a while


@pytest.fixture(scope="module")
def hall_url(tmp_path_factory):
    """The app as users get it (private mode, the in-page player), on a server of its own: a fresh pool."""
    log_path = tmp_path_factory.mktemp("streamlit-hall") / "server.log"
    with served_app(log_path) as url:
        yield url, log_path


def waits_told(seen: list) -> list[list[int]]:
    """The places a session was told, in order, one list per wait ("2 runs ahead of yours" -> 2, "Your run is next"
    -> 0): a live run waits for its run, then for its player bundle; a running job's message ends a wait."""
    waits, current = [], []
    for _, line in seen:
        found = re.search(r"(\d+) runs? ahead of yours", line)
        if found or " is next" in line:
            current.append(int(found.group(1)) if found else 0)
        elif current:
            waits, current = [*waits, current], []
    return [*waits, current] if current else waits


@pytest.mark.slow
def test_queued_sessions_see_their_place_and_a_bundled_trace_does_not_wait(hall_url, browser):
    url, _ = hall_url
    warm, asked = open_session(browser, url, {"prompt": "def warm_up():", "n": "8"})  # loads the pair once
    assert result(warm, asked, 600)["wait_s"] is not None
    warm.context.close()
    live = [open_session(browser, url, {"prompt": PROMPTS[i], "n": TOKENS}) for i in range(LIVE)]
    last_tab = live[-1][0]
    last_tab.wait_for_function(  # the last session is queued behind the others before the bundled one opens
        "() => window.__load.seen.some(([t, line]) => / ahead of yours/.test(line))", timeout=300_000
    )
    bundled = open_session(browser, url, {"trace": BUNDLED})
    opened = result(*bundled, 300)
    waits = [result(t, a, 900) for t, a in live]
    try:
        assert opened["wait_s"] is not None and opened["error"] is None, opened
        assert opened["seen"] == [], f"the bundled trace was queued: {opened['seen']}"
        for i, wait in enumerate(waits):
            assert wait["wait_s"] is not None and wait["error"] is None, f"session {i}: {wait}"
        places = [waits_told(w["seen"]) for w in waits]
        assert places[-1] and max(places[-1][0]) >= 1, f"the last session was never told its place: {waits[-1]}"
        for i, told in enumerate(places):
            for one in told:  # within one wait the place only moves up
                assert one == sorted(one, reverse=True), f"session {i}'s place went back: {waits[i]['seen']}"
        told = [line for w in waits for _, line in w["seen"]]
        assert all("ahead of yours" in line or "is next" in line or " now" in line for line in told), told
    finally:
        for tab, _ in [*live, bundled]:
            tab.context.close()


@pytest.mark.slow
def test_a_session_closed_while_queued_has_its_run_dropped(hall_url, browser):
    url, log_path = hall_url
    before = log_path.read_text().count("dropped from the queue")
    first = [open_session(browser, url, {"prompt": PROMPTS[4 + i], "n": TOKENS}) for i in range(2)]
    closing, asked = open_session(browser, url, {"prompt": PROMPTS[6], "n": TOKENS})
    closing.wait_for_function(
        "() => window.__load.seen.some(([t, line]) => / ahead of yours/.test(line))", timeout=300_000
    )
    closing.context.close()  # the tab closes while its run is queued
    try:
        for tab, asked_at in first:
            assert result(tab, asked_at, 900)["wait_s"] is not None
    finally:
        for tab, _ in first:
            tab.context.close()
    log = log_path.read_text()
    assert log.count("dropped from the queue") == before + 1, log[-3000:]


@pytest.fixture(scope="module")
def proxied_url(tmp_path_factory):
    """The app in public mode behind a (pretend) proxy, on a server of its own: each browser context is a visitor by
    the X-Forwarded-For it sends, as the operator's proxy would set it."""
    log_path = tmp_path_factory.mktemp("streamlit-proxied") / "server.log"
    settings = {"SPECVIZ_PUBLIC": "1", "SPECVIZ_TRUSTED_PROXY": "1", "SPECVIZ_MAX_NEW_TOKENS": TOKENS}
    with served_app(log_path, settings) as url:
        yield url


def visitor(browser, address: str):
    """A browser context whose every request (the websocket's too) comes forwarded for `address`."""
    return browser.new_context(viewport={"width": 1280, "height": 800}, extra_http_headers={"X-Forwarded-For": address})


@pytest.mark.slow
def test_a_visitors_second_tab_gets_no_second_run_while_the_first_waits_and_other_visitors_still_queue(
    proxied_url, browser
):
    url = proxied_url
    warm = open_session(browser, url, {"prompt": "def warm_up():", "n": "8"}, visitor(browser, "192.0.2.1"))
    assert result(*warm, 600)["wait_s"] is not None  # loads the pair once
    warm[0].context.close()
    ahead = [
        open_session(browser, url, {"prompt": PROMPTS[i], "n": TOKENS}, visitor(browser, f"198.51.100.{i + 1}"))
        for i in range(2)
    ]
    mine = visitor(browser, "203.0.113.7")
    first_tab = open_session(browser, url, {"prompt": PROMPTS[2], "n": TOKENS}, mine)
    first_tab[0].wait_for_function(
        "() => window.__load.seen.some(([t, line]) => / ahead of yours/.test(line))", timeout=300_000
    )
    second_tab = open_session(browser, url, {"prompt": PROMPTS[3], "n": TOKENS}, mine)  # the same visitor, a new tab
    other = open_session(browser, url, {"prompt": PROMPTS[4], "n": TOKENS}, visitor(browser, "198.51.100.9"))
    try:
        second_tab[0].wait_for_function("() => window.__load.error !== null", timeout=300_000)
        refused = second_tab[0].evaluate("() => window.__load.error")
        assert refused.startswith("Your earlier run") and "1 run per visitor at a time, however many tabs" in refused
        for name, (tab, asked) in {
            "ahead 1": ahead[0],
            "ahead 2": ahead[1],
            "first tab": first_tab,
            "other": other,
        }.items():
            served = result(tab, asked, 900)
            assert served["wait_s"] is not None and served["error"] is None, f"{name}: {served}"
    finally:
        for context in {tab.context for tab, _ in [*ahead, first_tab, other]}:
            context.close()
