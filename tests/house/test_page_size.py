"""Pages are layout: each file in pages/ is at most MAX_LINES lines, its decisions in pure, tested functions
(measure/, viz/) and its prose in assets/lessons/. The pages still above it are named here, and the list can only
shrink: a named page already within the limit fails the test until it is struck off."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 150
STILL_ABOVE: set[str] = set()  # known exceptions, still to be split into ui/ sections and pure policy: none left


def lines(page: Path) -> int:
    return len(page.read_text(encoding="utf-8").splitlines())


PAGES = sorted((ROOT / "pages").glob("*.py"))


@pytest.mark.parametrize("page", [p for p in PAGES if p.name not in STILL_ABOVE], ids=lambda p: p.name)
def test_the_page_is_layout_of_at_most_150_lines(page):
    assert lines(page) <= MAX_LINES, (
        f"pages/{page.name} has {lines(page)} lines (at most {MAX_LINES}): move its decisions to pure functions in "
        "measure/ or viz/, its drawing to ui/, its prose to assets/lessons/"
    )


def test_each_known_exception_is_still_above_the_limit():
    for name in sorted(STILL_ABOVE):  # a loop, not a parameter: an empty set is a pass, not a skip
        page = ROOT / "pages" / name
        assert page.is_file(), f"pages/{name} is gone: strike it off STILL_ABOVE"
        assert lines(page) > MAX_LINES, f"pages/{name} is {lines(page)} lines now: strike it off STILL_ABOVE"


def test_the_exceptions_are_reported():
    above = {p.name: lines(p) for p in PAGES if lines(p) > MAX_LINES}
    assert set(above) == STILL_ABOVE, f"pages above {MAX_LINES} lines: {above}; named exceptions: {STILL_ABOVE}"
