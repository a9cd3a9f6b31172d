"""The bundled lecture traces prebuilt as static pages: the committed files are what the
exporter gives today, `export-html --lectures` rebuilds them and `--check` finds stale ones, each opens at its
lecture's moment, and Streamlit serves them (static serving on, files under its size limit)."""

from __future__ import annotations

import base64
import gzip
import tomllib
from pathlib import Path

import pytest
from streamlit.web.server.starlette.starlette_server_config import MAX_APP_STATIC_FILE_SIZE

from specviz.cli.export import REBUILD
from specviz.cli.main import main
from specviz.errors import SpecvizError
from specviz.viz import lectures

ROOT = Path(__file__).resolve().parents[1]


def fake_page(name: str, info: dict) -> str:
    return f"<html>{name}: {info['title']}</html>"


@pytest.mark.slow  # exports every bundled trace (about 40 s on 2 cores)
def test_the_committed_lecture_pages_are_what_the_exporter_gives_today():
    pages = lectures.lecture_pages(lectures.lecture_index())
    stale = lectures.stale_pages(lectures.LECTURES_DIR, pages)
    assert stale == [], f"static/lectures/ is stale ({'; '.join(stale)}): run `{REBUILD}` and commit the files."


def test_every_lecture_in_the_index_has_a_committed_page_and_nothing_else_is_there():
    index = lectures.lecture_index()
    assert len(index) >= 5
    files = sorted(p.name for p in lectures.LECTURES_DIR.glob("*.html"))
    assert files == sorted(lectures.page_file(name) for name in index)


def test_each_page_is_a_real_file_streamlit_will_serve_and_small_enough_to_hand_out():
    for path in lectures.LECTURES_DIR.glob("*.html"):
        assert not path.is_symlink()  # Streamlit refuses links that leave static/
        assert path.stat().st_size < MAX_APP_STATIC_FILE_SIZE
        assert path.stat().st_size <= 2_000_000  # one self-contained file, small enough to hand out
        assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_app_config_turns_static_serving_on():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["enableStaticServing"] is True


def test_stale_pages_names_each_missing_changed_and_left_over_file(tmp_path):
    index = {"one": {"title": "One"}, "two": {"title": "Two"}}
    pages = lectures.lecture_pages(index, fake_page)
    assert lectures.stale_pages(tmp_path, pages) == ["one.html is missing", "two.html is missing"]
    assert lectures.write_pages(tmp_path, pages) == (["one.html", "two.html"], [])
    assert lectures.stale_pages(tmp_path, pages) == []
    (tmp_path / "two.html").write_text("<html>an older exporter's</html>")
    (tmp_path / "gone.html").write_text("<html>a lecture removed from the index</html>")
    assert lectures.stale_pages(tmp_path, pages) == [
        "two.html is not what the exporter gives today",
        "gone.html belongs to no lecture in index.json",
    ]
    assert lectures.write_pages(tmp_path, pages) == (["two.html"], ["gone.html"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.html", "two.html"]
    assert lectures.stale_pages(tmp_path, pages) == []


def test_the_cli_rebuilds_the_lecture_pages_and_check_fails_on_a_stale_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(lectures, "lecture_html", fake_page)  # the real exporter is the slow test's
    folder = tmp_path / "lectures"
    assert main(["export-html", "--lectures", "-o", str(folder)]) == 0
    names = sorted(p.stem for p in folder.glob("*.html"))
    assert names == sorted(lectures.lecture_index())
    assert main(["export-html", "--lectures", "--check", "-o", str(folder)]) == 0
    assert f"0 of {len(names)} lecture pages stale." in capsys.readouterr().out
    (folder / f"{names[0]}.html").write_text("old")
    assert main(["export-html", "--lectures", "--check", "-o", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"{names[0]}.html is not what the exporter gives today" in out
    assert REBUILD in out
    assert (folder / f"{names[0]}.html").read_text() == "old"  # --check writes nothing


@pytest.mark.parametrize(
    "args, words",
    [
        (["--check"], "--check goes with --lectures"),
        (["--lectures", "assets/traces/ngram-burst.json"], "leave out 'assets/traces/ngram-burst.json'"),
        (["assets/traces/ngram-burst.json"], "give a trace and where to write it"),
        ([], "give a trace and where to write it"),
    ],
)
def test_a_wrong_combination_of_arguments_is_refused_with_what_to_do(args, words, capsys):
    assert main(["export-html", *args]) == 2
    err = capsys.readouterr().err
    assert words in err
    assert "Traceback" not in err


def test_lectures_into_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "x.html").write_text("")
    assert main(["export-html", "--lectures", "-o", str(tmp_path / "x.html")]) == 2
    assert "give a folder" in capsys.readouterr().err


def test_a_lecture_page_opens_at_its_lectures_moment():
    index = lectures.lecture_index()
    low_q = index["low-q-accepted"]
    trace = lectures.lecture_trace(low_q)
    assert lectures.opening_fragment(trace, low_q) == "#round=1&phase=judge&pos=2"  # the index's moment, exactly
    bonus = index["full-accept-bonus"]
    assert lectures.opening_fragment(lectures.lecture_trace(bonus), bonus) == "#round=13&phase=resolve"


@pytest.mark.parametrize(
    "base, url",
    [
        ("", "/app/static/lectures/ngram-burst.html#round=3&phase=draft"),
        ("specviz", "/specviz/app/static/lectures/ngram-burst.html#round=3&phase=draft"),
        ("/course/specviz/", "/course/specviz/app/static/lectures/ngram-burst.html#round=3&phase=draft"),
    ],
)
def test_a_lecture_url_sits_below_the_apps_base_url_path(base, url):
    assert lectures.lecture_url("ngram-burst", "#round=3&phase=draft", base) == url


def test_an_index_name_that_cannot_be_a_file_name_in_a_url_is_refused(tmp_path):
    (tmp_path / "index.json").write_text('{"../escape": {"file": "x.json"}, "ok-1": {"file": "y.json"}}')
    with pytest.raises(SpecvizError, match="'../escape' cannot be file names in a URL"):
        lectures.lecture_index(tmp_path)


def test_the_round_page_reads_a_lectures_bundle_from_its_prebuilt_page():
    """The packed bundle inside a committed page (what the exporter gives today: the test above) is used for that
    very trace, title and description, and for nothing else."""
    from dataclasses import replace

    from specviz.viz.player_bundle import load_bundle

    name, info = next(iter(lectures.lecture_index().items()))
    trace = lectures.lecture_trace(info)
    found = lectures.prebuilt_packed(trace, info["title"], info["what"])
    page = (lectures.LECTURES_DIR / f"{name}.html").read_text(encoding="utf-8")
    assert found and f">{found}</script>" in page
    assert load_bundle(gzip.decompress(base64.b64decode(found)).decode("utf-8")).doc["title"] == info["title"]
    assert lectures.prebuilt_packed(trace, info["title"], "other words") is None
    assert lectures.prebuilt_packed(replace(trace, prompt=trace.prompt + " "), info["title"], info["what"]) is None
