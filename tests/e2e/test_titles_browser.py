"""In a real browser: no chart title on the calculator or the exactness lab is clipped or cut, on a laptop, a
projector and a phone (the round page's charts are checked in test_lecture_browser.py, race and workload after their
runs in test_pages_browser.py)."""

import pytest
from browser_helpers import assert_titles_fit, open_app_page

VIEWPORTS = {"1280x800": (1280, 800), "1920x1080": (1920, 1080), "390x844": (390, 844)}


@pytest.mark.parametrize("size", VIEWPORTS.values(), ids=VIEWPORTS.keys())
@pytest.mark.parametrize("path, at_least", [("calculator", 4), ("exactness", 4)])
def test_no_chart_title_is_clipped_on_the_theory_pages(app_url, browser, size, path, at_least):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    try:
        open_app_page(tab, app_url, path)
        assert assert_titles_fit(tab, f"{path} at {size}", at_least) >= at_least
    finally:
        context.close()
