"""python -m specviz export-html: every bundled trace as one offline HTML file of at most 2 MB that fetches nothing,
and bad input as one message with exit code 2."""

import re
from pathlib import Path

import pytest

from specviz.cli.main import main
from specviz.viz import export_html

ROOT = Path(__file__).resolve().parents[1]
TRACE_FILES = sorted(p.name for p in (ROOT / "assets" / "traces").glob("*.json") if p.name != "index.json")
MAX_BYTES = 2_000_000
FETCHES = [  # what would make a browser load something from elsewhere
    re.compile(r"<script[^>]*\bsrc\s*=", re.I),
    re.compile(r"<link[^>]*\bhref\s*=", re.I),
    re.compile(r"<(img|iframe|audio|video|source|embed)[^>]*\bsrc\s*=\s*[\"']?https?:", re.I),
    re.compile(r"url\(\s*[\"']?https?:", re.I),
    re.compile(r"@import", re.I),
]


@pytest.mark.slow
@pytest.mark.parametrize("name", TRACE_FILES)
def test_each_bundled_trace_exports_to_one_offline_file_under_2_mb(name, tmp_path, capsys):
    out = tmp_path / "run.html"
    assert main(["export-html", str(ROOT / "assets" / "traces" / name), "-o", str(out)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]  # one file, nothing beside it
    size = out.stat().st_size
    assert size <= MAX_BYTES, f"{name}: {size / 1e6:.2f} MB"
    page = out.read_text(encoding="utf-8")
    assert not [p.pattern for p in FETCHES if p.search(page)]
    player = export_html.player_js()
    assert "fetch(" not in player and "XMLHttpRequest" not in player
    assert player in page  # the page's own player, inlined whole: one copy of the logic
    assert f"({size / 1e6:.2f} MB)" in capsys.readouterr().out


def test_the_page_inlines_its_parts_once_and_refuses_script_that_would_end_early():
    bundle = {"title": "A <b>run</b> %CSS%", "about": "**Bold** & 1 < 2", "steps": []}
    page = export_html.export_html(bundle, libraries="/* libs */")
    assert "<title>A &lt;b&gt;run&lt;/b&gt; %CSS% · specviz</title>" in page  # escaped, and not substituted again
    assert "<b>Bold</b> &amp; 1 &lt; 2" in page
    assert page.count("/* libs */") == 1
    with pytest.raises(ValueError, match="</script"):
        export_html.export_html(bundle, libraries="x = '</script>'")


@pytest.mark.parametrize(
    "args, said",
    [
        (["missing.json"], "no such trace file: 'missing.json'"),
        (["README.md"], "README.md: This file is not JSON"),
        (["assets"], "is a directory: give a trace JSON file"),
    ],
)
def test_bad_input_is_one_message_and_exit_code_2(args, said, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["export-html", *args, "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert main(["export-html", "assets/traces/ngram-burst.json", "-o", "/nonexistent/x.html"]) == 2
    assert "does not exist" in capsys.readouterr().err
