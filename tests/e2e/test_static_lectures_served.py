"""The app as served (`streamlit run`, static serving on) hands out the prebuilt lecture pages as plain files: the
bytes committed, gzipped, with an ETag, to 50 students at once, with no script run."""

from __future__ import annotations

import gzip
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from specviz.viz import lectures

STUDENTS = 50


def download(url: str, encoding: str = "gzip") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": encoding})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


def test_every_lecture_page_is_served_as_committed(app_url):
    for name in lectures.lecture_index():
        status, headers, body = download(app_url + lectures.lecture_url(name))
        assert status == 200
        assert headers["content-type"].startswith("text/html")
        assert headers.get("etag")  # a browser can keep it and ask again cheaply
        committed = (lectures.LECTURES_DIR / lectures.page_file(name)).read_bytes()
        assert (gzip.decompress(body) if headers.get("content-encoding") == "gzip" else body) == committed


def test_fifty_students_download_one_lecture_at_once(app_url):
    url = app_url + lectures.lecture_url("tree-sibling-accepted")  # the largest page
    start = time.perf_counter()
    with ThreadPoolExecutor(STUDENTS) as pool:
        results = list(pool.map(lambda _: download(url), range(STUDENTS)))
    took = time.perf_counter() - start
    assert all(status == 200 for status, _, _ in results)
    assert len({body for _, _, body in results}) == 1
    assert took < 30  # measured 2.1 s on a busy 2-core machine (0.37 MB gzipped each); generous for CI


def test_the_round_pages_link_opens_the_lecture_page_at_its_moment(app_url, page):
    from browser_helpers import open_app_page

    from specviz.ui.lectures import LINK_TEXT

    open_app_page(page, app_url, "rounds?trace=low-q-accepted&round=1&phase=judge&pos=2")
    link = page.get_by_role("link", name=LINK_TEXT)
    href = link.get_attribute("href")
    assert href == "/app/static/lectures/low-q-accepted.html#round=1&phase=judge&pos=2"
    page.goto(app_url + href)
    page.wait_for_selector("body[data-ready='1']", timeout=60_000)
    assert "Accept or reject (position 2 of 4)" in page.inner_text(".spz-where")  # the lecture's own moment
    assert page.evaluate("location.hash") == "#round=1&phase=judge&pos=2"
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    assert page.evaluate("location.hash") != "#round=1&phase=judge&pos=2"
    assert asked == []  # it steps in the browser: nothing goes to the server
