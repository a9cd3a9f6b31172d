"""Real-browser tests: the app served by `streamlit run` on a free port, driven by Playwright in Debian's Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_helpers import CHROMIUM, CHROMIUM_FLAGS, main_text, served_app

SERVER_LOGS: list[Path] = []  # the app server's log, attached to the report of a failing browser test


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing browser test's report ends with the app server's log and the page's text: CI shows only the report."""
    report = (yield).get_result()
    if report.when != "call" or not report.failed:
        return
    for path in SERVER_LOGS:
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        report.sections.append(("streamlit server log (last 80 lines)", "\n".join(lines[-80:])))
    tab = item.funcargs.get("page")
    if tab is not None:
        try:
            report.sections.append(("page text", main_text(tab)[:4000]))
        except Exception as exc:  # noqa: BLE001 - the report must not fail on a dead page
            report.sections.append(("page text", f"(could not read the page: {exc})"))


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """Serve the app as users get it (the bundled pair) on a free loopback port; stopped after the session. The round
    page steps on the server here (its tests press Streamlit's buttons); `player_url` serves the in-page player."""
    log_path = tmp_path_factory.mktemp("streamlit") / "server.log"
    SERVER_LOGS.append(log_path)
    with served_app(log_path, {"SPECVIZ_STEPPING": "server"}) as url:
        yield url


@pytest.fixture(scope="session")
def player_url(tmp_path_factory):
    """The app in public mode (bundled traces, no model run) with the round page's default: the in-page player."""
    log_path = tmp_path_factory.mktemp("streamlit-player") / "server.log"
    SERVER_LOGS.append(log_path)
    with served_app(log_path, {"SPECVIZ_PUBLIC": "1"}) as url:
        yield url


@pytest.fixture(scope="session")
def live_player_url(tmp_path_factory):
    """The app exactly as users get it (the bundled pair, live runs, the in-page player): the round page's path that
    mixes a live run with the bundled traces' picker."""
    log_path = tmp_path_factory.mktemp("streamlit-live") / "server.log"
    SERVER_LOGS.append(log_path)
    with served_app(log_path) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run tests/install.sh (it installs Debian's chromium).")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    yield tab
    context.close()
