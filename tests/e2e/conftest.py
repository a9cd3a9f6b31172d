"""Real-browser tests: the app served by `streamlit run` on a free port, driven by Playwright in Debian's Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from browser_helpers import CHROMIUM, CHROMIUM_FLAGS, ROOT, free_port, main_text, wait_healthy

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
    """Serve the app as users get it (the bundled pair) on a free loopback port; stopped after the session."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("SPECVIZ_TARGET", "SPECVIZ_DRAFT", "SPECVIZ_PUBLIC")}
    log_path = tmp_path_factory.mktemp("streamlit") / "server.log"
    SERVER_LOGS.append(log_path)
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                str(ROOT / "app.py"),
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--server.headless",
                "true",
                "--server.fileWatcherType",
                "none",
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, process)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=20)


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
