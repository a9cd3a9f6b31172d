"""Helpers for real-browser tests: a free port, waiting for Streamlit, reading the page, the round page's caption
(where a run is), screenshots."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlparse

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("SPECVIZ_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = ROOT / "tests" / "e2e" / "screenshots"
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, process: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"streamlit did not become healthy within {timeout_s} s")


@contextmanager
def served_app(log_path: Path, extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """Serve the app as users get it (the bundled pair) on a free loopback port; yields its URL, stops it after.
    extra_env: settings for this server (SPECVIZ_PUBLIC=1, SPECVIZ_STEPPING=server)."""
    port = free_port()
    dropped = ("SPECVIZ_TARGET", "SPECVIZ_DRAFT", "SPECVIZ_PUBLIC", "SPECVIZ_STEPPING")
    env = {k: v for k, v in os.environ.items() if k not in dropped} | (extra_env or {})
    command = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port)]
    command += ["--server.address", "127.0.0.1", "--server.headless", "true", "--server.fileWatcherType", "none"]
    command += ["--browser.gatherUsageStats", "false"]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, process)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=20)


def open_app_page(tab, url: str, path: str = "", timeout_ms: int = 60_000) -> None:
    """Go to a page of the app and wait until Streamlit has finished running the script."""
    tab.goto(f"{url}/{path}", wait_until="domcontentloaded")
    settle(tab, timeout_ms)


def settle(tab, timeout_ms: int = 60_000) -> None:
    """Wait until the app shows content and no script run (full or fragment) has been in progress for a moment.

    Streamlit's own run state (`data-test-script-state` on the app root, which its e2e tests read) says when a run is
    in progress; the status widget appears only after a delay, so on a busy machine it misses runs in their first
    half second, and a page read then is cut off where the run had got to. A session whose websocket is reconnecting
    also reads 'notRunning' (its widgets are disabled then), so the connection must say CONNECTED too."""
    tab.wait_for_selector('[data-testid="stMain"]', timeout=timeout_ms)
    tab.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            const idle = app && app.getAttribute('data-test-script-state') === 'notRunning'
                && app.getAttribute('data-test-connection-state') === 'CONNECTED';
            const running = [...document.querySelectorAll('[data-testid="stStatusWidget"]')]
                .some(s => /Running|Stop/.test(s.innerText));
            const stale = document.querySelector('[data-stale="true"]');
            const main = document.querySelector('[data-testid="stMain"]');
            const now = Date.now();
            if (!idle || running || stale || !main || !main.innerText.trim()) {
                window.__busySince = now;
                return false;
            }
            return now - (window.__busySince || 0) > 700;
        }""",
        timeout=timeout_ms,
        polling=100,
    )


def main_text(tab) -> str:
    return tab.locator('[data-testid="stMain"]').inner_text(timeout=10_000)


def wait_shown(tab, text: str, timeout_ms: int = 180_000) -> None:
    """Wait for `text` on the page; on a timeout, fail with what the page shows instead (CI shows only the report).

    The generous default is for a 2-core CI machine running several sessions' model runs at once."""
    try:
        tab.get_by_text(text).first.wait_for(timeout=timeout_ms)
    except Exception as exc:  # noqa: BLE001 - Playwright's TimeoutError; re-raised with the page's text
        shown = main_text(tab)[:3000]
        raise AssertionError(f"{text!r} not shown after {timeout_ms / 1000:.0f} s; the page shows:\n{shown}") from exc


CAPTION = re.compile(r"Round \d+ of \d+ · \d · [^\n]+")  # the round page's caption: where the run is


def where(tab) -> str:
    """The round page's caption line that says where the run is."""
    try:
        tab.get_by_text(CAPTION).first.wait_for(timeout=180_000)
    except Exception:  # noqa: BLE001 - the assertion below shows the page
        pass
    text = main_text(tab)
    found = CAPTION.search(text)
    assert found, f"no 'Round N of M' caption on the page:\n{text[:3000]}"
    return found.group(0)


def wait_caption_change(tab, old: str, timeout_ms: int = 120_000) -> None:
    """Wait until the caption says something other than `old` (a busy machine may take seconds)."""
    tab.wait_for_function(
        "old => { const m = document.body.innerText.match(/Round \\d+ of \\d+ · \\d · [^\\n]+/);"
        " return m && m[0] !== old; }",
        arg=old,
        timeout=timeout_ms,
    )


def changed(tab, act) -> str:
    """Do `act`, wait for the caption to change and the app to settle; returns the new caption."""
    before = where(tab)
    act()
    wait_caption_change(tab, before)
    settle(tab)
    return where(tab)


def press(tab, key: str) -> str:
    """Press a key with nothing focused (as a clicker does) and wait for the caption to change; returns it.

    If nothing has changed after 30 s and the app is idle, the key is pressed once more, as a lecturer would: in
    .ci/run on a 2-core machine under full load one press in about a thousand started no run at all. A key that
    never steps still fails the test."""
    before = where(tab)
    tab.keyboard.press(key)
    try:
        wait_caption_change(tab, before, timeout_ms=30_000)
    except Exception:  # noqa: BLE001 - Playwright's TimeoutError: press again once the app is idle
        settle(tab)
        if where(tab) == before:
            tab.keyboard.press(key)
        wait_caption_change(tab, before)
    settle(tab)
    return where(tab)


def click(tab, button: str | re.Pattern) -> str:
    """Click a button and wait for the caption to change; returns it. A button with a key shows the key in its name,
    and the hidden clicker buttons share words with the visible ones: NEXT_PHASE and PREVIOUS_PHASE name those."""
    return changed(tab, lambda: tab.get_by_role("button", name=button).click())


NEXT_PHASE = re.compile(r"^Next phase(?! \()")  # not "Next phase (PageDown)" nor "Next phase (Space)"
PREVIOUS_PHASE = re.compile(r"^Previous phase(?! \()")


def query(tab) -> dict[str, str]:
    """The page's URL query, one value per key."""
    return {k: v[0] for k, v in parse_qs(urlparse(tab.url).query).items()}


def screenshot(tab, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


TITLE_BOXES = """els => els.map(el => {
    const svg = el.querySelector('svg');
    if (!svg) return {missing: true};
    const chart = el.getBoundingClientRect(), drawing = svg.getBoundingClientRect();
    const titles = [...svg.querySelectorAll('.role-title, .role-title-text')].map(t => {
        const r = t.getBoundingClientRect();
        return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
    });
    return {titles, chart: {left: chart.left, right: chart.right, top: chart.top, bottom: chart.bottom},
            svg: {left: drawing.left, right: drawing.right, top: drawing.top}, viewport: window.innerWidth};
})"""


def assert_titles_fit(tab, label: str, at_least: int = 1) -> int:
    """Each chart's title box lies inside its chart's box (and the chart inside the page): nothing clipped or cut.

    Streamlit draws Altair charts as SVG, so the title's own box is known; Vega never shortens a title whose
    limit is 0 (every chart here sets it), so a title that fits its box is shown whole."""
    charts = tab.locator('[data-testid="stVegaLiteChart"]')
    tab.wait_for_function(  # a page that draws its charts one after another has at_least of them once it is done
        """n => { const all = [...document.querySelectorAll('[data-testid=stVegaLiteChart]')];
                  return all.length >= n && all.every(e => e.querySelector('svg')); }""",
        arg=at_least,
        timeout=120_000,
    )
    tab.wait_for_timeout(400)
    boxes = charts.evaluate_all(TITLE_BOXES)
    for b in boxes:
        assert b["titles"], f"{label}: a chart without a title: {b}"
        for t in b["titles"]:
            box, chart = t, b["chart"]
            assert box["top"] >= chart["top"] - 0.5, f"{label}: title clipped at the top: {t['text']!r} {b}"
            assert box["right"] <= chart["right"] + 0.5, f"{label}: title runs past the chart: {t['text']!r} {b}"
            assert box["left"] >= chart["left"] - 0.5, f"{label}: title starts outside the chart: {t['text']!r}"
            assert box["right"] <= b["viewport"] + 0.5, f"{label}: title runs off the page: {t['text']!r}"
        assert b["chart"]["right"] <= b["viewport"] + 0.5, f"{label}: a chart runs off the page: {b}"
    return len(boxes)


PAGE_TITLES = {  # path -> the page's title in the sidebar's navigation
    "": "Home",
    "rounds": "Round by round",
    "calculator": "Speedup calculator",
    "exactness": "Exactness lab",
    "workload": "Your workload",
    "race": "The race",
}
LECTURE_TOGGLE = "Lecture mode (large, high contrast)"


def open_in_lecture_mode(tab, url: str, path: str, timeout_ms: int = 300_000) -> None:
    """A page in lecture mode, as a lecturer gets there: the toggle turned on (on the calculator page, which loads no
    model) and then the page picked in the sidebar's navigation, in the same session (the home page has no toggle)."""
    open_app_page(tab, url, "calculator")
    tab.get_by_text(LECTURE_TOGGLE).click()
    settle(tab)
    if path != "calculator":
        tab.locator('[data-testid="stSidebarNavLink"]').filter(has_text=PAGE_TITLES[path]).first.click()
        tab.wait_for_function("path => location.pathname.replace(/^\\//, '') === path", arg=path, timeout=30_000)
        settle(tab, timeout_ms)


def enter(tab, label: str, value: str, tries: int = 3) -> None:
    """Type `value` into the text box labelled `label` and press Enter, until the box still reads it once the app has
    settled (a rerun still in flight when the box was typed into can draw it again with its old value)."""
    box = tab.get_by_label(label, exact=True)
    for _ in range(tries):
        box.fill(value)
        box.press("Enter")
        settle(tab)
        if box.input_value() == value:
            return
    raise AssertionError(f"{label!r} reads {box.input_value()!r} after {tries} tries to enter {value!r}")


def workload_through_server(tab, url: str, server_url: str, prompts: int = 3) -> None:
    """The workload page pointed at a vLLM server with the code sample's first prompts, its connection checked."""
    open_app_page(tab, url, "workload")
    tab.get_by_text("a vLLM server", exact=True).click()
    settle(tab)
    enter(tab, "Prompts to run (the first N of 20)", str(prompts))
    enter(tab, "Server URL", server_url)
    tab.get_by_role("button", name="Check connection").click()
    wait_shown(tab, "per-request metrics", timeout_ms=60_000)
