"""The round page hands out the run shown as the offline HTML file, the same file `export-html` writes."""

import pytest
from app_helpers import page

from specviz.cli.main import main
from specviz.core.trace_json import trace_to_json
from specviz.ui.render import TRACES_DIR, bundled_traces, cached_export_html

NAME = "tree-sibling-accepted"


@pytest.mark.slow
def test_the_download_button_gives_the_file_export_html_writes(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")  # a bundled trace needs no model at all
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update({"trace": NAME, "round": "2", "phase": "draft"})
    at = at.switch_page(page("pages/rounds.py")).run()
    assert not at.exception
    labels = [button.proto.label for button in at.get("download_button")]
    assert "Download as an offline HTML file" in labels
    info = bundled_traces()[NAME]
    shown = trace_to_json(at.session_state["rounds_trace"], indent=2)  # what the page hands the button (no paths here)
    out = tmp_path / "run.html"
    assert main(["export-html", str(TRACES_DIR / info["file"]), "-o", str(out)]) == 0
    assert cached_export_html(shown, info["title"], info["what"]) == out.read_bytes()
