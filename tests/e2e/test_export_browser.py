"""In a real browser with the network blocked: an exported run (python -m specviz export-html) opens from file://,
steps with the round page's keys, keeps the moment in the address's fragment, and opens at a fragment's moment."""

from pathlib import Path

import pytest

from specviz.core.trace_json import trace_from_json
from specviz.viz.export_html import trace_html_file

TRACE = Path(__file__).resolve().parents[2] / "assets" / "traces" / "tree-sibling-accepted.json"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("export") / "run.html"
    path.write_text(trace_html_file(trace_from_json(TRACE.read_text())), encoding="utf-8")
    return path


@pytest.fixture
def offline(browser):
    """A tab that can load nothing but files: every other request is refused and recorded."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    asked, errors = [], []

    def route(request_route):
        url = request_route.request.url
        if url.startswith("file:"):
            request_route.continue_()
        else:
            asked.append(url)
            request_route.abort()

    context.route("**/*", route)
    tab = context.new_page()
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab, asked, errors
    context.close()


def where(tab) -> tuple[str, str]:
    return tab.inner_text(".spz-where"), tab.evaluate("location.hash")


def test_the_export_steps_offline_with_the_keys_and_names_the_moment(exported, offline):
    tab, asked, errors = offline
    tab.goto(exported.as_uri())
    tab.wait_for_selector("body[data-ready='1']", timeout=60_000)
    start = where(tab)
    assert start == ("Round 1 of 10 · 1 · Draft", "#round=1&phase=draft")
    tab.locator(".spz-stage svg").first.wait_for(timeout=30_000)  # the tree chart is drawn, with no network
    for _ in range(3):
        tab.keyboard.press("ArrowRight")
    title, fragment = where(tab)
    assert title != start[0] and "Accept or reject" in title
    assert fragment.startswith("#round=1&phase=judge&pos=")
    tab.keyboard.press("n")
    assert where(tab) == ("Round 2 of 10 · 1 · Draft", "#round=2&phase=draft")
    tab.keyboard.press("l")  # lecture mode: the same moment, larger
    assert tab.evaluate("document.body.classList.contains('spz-lecture')")
    assert where(tab)[1] == "#round=2&phase=draft"
    tab.keyboard.press("Home")
    assert where(tab) == start
    tab.keyboard.press("End")
    assert where(tab)[0].startswith("Round 10 of 10 · 5 · Commit")
    assert not asked and not errors


def test_a_fragment_opens_its_moment(exported, offline):
    tab, asked, errors = offline
    tab.goto(exported.as_uri() + "#round=2&phase=verify")
    tab.wait_for_selector("body[data-ready='1']", timeout=60_000)
    assert where(tab) == ("Round 2 of 10 · 2 · Verify (one target pass)", "#round=2&phase=verify")
    tab.evaluate("location.hash = '#round=3&phase=commit'")
    tab.wait_for_function("(document.querySelector('.spz-where')?.innerText ?? '').startsWith('Round 3 of 10 · 5')")
    assert not asked and not errors


def test_the_players_binding_gives_the_same_vega_lite_as_pythons(exported, offline):
    """Every chart the player binds in the browser (SpecvizPlayer.chartSpec) is the spec viz.chart_templates.bind
    gives in Python, which the bundle tests compare with the page's own chart builders."""
    from specviz.viz.player_bundle import load_bundle, player_bundle

    tab, asked, errors = offline
    tab.goto(exported.as_uri())
    tab.wait_for_selector("body[data-ready='1']", timeout=60_000)
    specs = tab.evaluate(
        """async () => {
            const doc = await SpecvizPlayer.unpack(document.getElementById("bundle").textContent);
            return doc.charts.map((_, i) => SpecvizPlayer.chartSpec(doc, i));
        }"""
    )
    loaded = load_bundle(player_bundle(trace_from_json(TRACE.read_text())))
    assert len(specs) == len(loaded.doc["charts"]) > 100
    for i, spec in enumerate(specs):
        if spec.get("width") == "container" and "width" not in loaded.chart(i):  # the player fits it to its column
            del spec["width"], spec["autosize"]
        assert spec == loaded.chart(i), i
    assert not asked and not errors


def in_view(tab, selector: str) -> bool:
    """Whether the last element matching selector lies wholly inside the viewport."""
    return tab.evaluate(
        """(sel) => { const all = document.querySelectorAll(sel), e = all[all.length - 1];
            const r = e.getBoundingClientRect(); return r.top >= -1 && r.bottom <= window.innerHeight + 1; }""",
        selector,
    )


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 800)])
def test_a_lecture_page_shows_the_rejection_and_its_residual_on_the_first_screen(browser, size):
    """A projector's screen in lecture mode and focus view, and a laptop's in the full view: the page's title goes
    below the player in the focus view, and the full view brings the step's own phase into view."""
    from specviz.viz import lectures

    width, height = size
    tab = browser.new_page(viewport={"width": width, "height": height})
    tab.goto((lectures.LECTURES_DIR / "early-rejection-residual.html").as_uri())
    tab.wait_for_selector("body[data-ready='1']", timeout=60_000)
    if width == 1920:
        tab.keyboard.press("l")
        tab.keyboard.press("f")
    tab.keyboard.press("j")  # the first rejection
    tab.wait_for_function("document.querySelector('.spz-where').innerText.includes('Accept or reject')")
    tab.locator(".spz-stage svg").last.wait_for(timeout=30_000)
    tab.wait_for_timeout(300)
    rejected = tab.get_by_text("Every later draft is discarded").last
    assert rejected.is_visible() and in_view(tab, ".spz-row.spz-panel")
    tab.keyboard.press("ArrowRight")  # the correction, drawn from the residual
    tab.wait_for_function("document.querySelector('.spz-where').innerText.includes('Correction')")
    tab.wait_for_timeout(300)
    axis = tab.locator(".spz-row.spz-panel svg").last.bounding_box()
    assert axis["y"] + axis["height"] <= height + 1  # the residual chart, its token axis included
    tab.close()
