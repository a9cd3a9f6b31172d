"""Public mode bounds what a run or a replay costs before it is queued: an upload under the size cap that holds more
drafts, tree nodes or rounds than a run here may make is refused with what it holds and what is allowed, and the
visitor's run shown is kept."""

from __future__ import annotations

import html
import json

import pytest
from app_helpers import open_page
from hostile_traces import chain_doc, tree_doc


@pytest.mark.parametrize(
    "doc, said",
    [
        (chain_doc(k=4, positions=1300), "1300 drafted positions; its settings allow at most 4 drafts a round"),
        (tree_doc((2, 2), widths=(1200,)), "1200 tree nodes; its settings allow at most 6 tree nodes a round"),
        (chain_doc(k=12, positions=12), "this deployment replays at most 8 drafts a round"),
        (chain_doc(k=4, rounds=80, max_new_tokens=200), "this deployment replays at most 64 new tokens"),
    ],
    ids=["chain-past-its-k", "tree-past-its-nodes", "k-past-the-cap", "rounds-past-the-cap"],
)
def test_an_upload_past_a_bound_is_refused_before_its_bundle_is_built(tiny_default, monkeypatch, doc, said):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_page("pages/rounds.py")
    before = at.session_state["rounds_trace"]
    upload = json.dumps(doc, separators=(",", ":")).encode()
    assert len(upload) < 200_000  # under the upload cap: only the bound refuses it
    at.file_uploader(key="trace_upload").set_value(("big.json", upload, "application/json")).run()
    assert not at.exception
    assert any(said in html.unescape(e.value) for e in at.error), [e.value for e in at.error]
    assert at.session_state["rounds_trace"] is before  # what the visitor had is kept
