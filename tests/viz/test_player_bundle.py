"""The player bundle (viz.player_bundle): a trace's steps, de-duplicated, read back losslessly, navigating as the round
page's cursor moves do, for a chain trace and a tree trace."""

import json
from pathlib import Path

import pytest

from specviz.core.trace import Trace
from specviz.errors import PlayerFormatError
from specviz.viz import player_bundle as pb
from specviz.viz import step_view as sv
from specviz.viz import steps

TRACES = Path(__file__).resolve().parents[2] / "assets" / "traces"
NAMES = ["early-rejection-residual.json", "tree-sibling-accepted.json"]  # a chain with rejections; a tree


@pytest.fixture(scope="module", params=NAMES)
def built(request):
    trace = Trace.from_json((TRACES / request.param).read_text())
    return trace, pb.player_bundle(trace)


@pytest.mark.slow  # a bundle builds every step of a trace in four views: 20-40 s here
def test_the_bundle_reads_back_losslessly_and_expands_to_the_step_views(built):
    trace, bundle = built
    text = pb.bundle_json(bundle)
    loaded = pb.load_bundle(text)
    assert loaded.doc == json.loads(json.dumps(bundle))  # JSON all the way down, nothing lost
    memo = {}
    for i, cursor in enumerate(steps.moments(trace)):
        if i % 7:  # every 7th step (each view of it) against a fresh step view: the tables index right
            continue
        for name, options in pb.VIEWS.items():
            view = sv.step_view(trace, cursor, options, memo)
            laid = [b for row in sv.rows(view.blocks) for column in row.columns for b in column.blocks]
            expected = [
                (b.kind, b.place, b.content.to_dict(validate=False) if b.kind == sv.CHART else pb.block_html(b))
                for b in laid  # in layout order: a row's left column, then its right one
            ]
            assert loaded.blocks(i, name) == expected
            assert loaded.doc["steps"][i]["title"] == view.title


@pytest.mark.slow  # a bundle builds every step of a trace in four views: 20-40 s here
def test_de_duplication_shrinks_the_bundle_several_times(built):
    trace, bundle = built
    loaded = pb.load_bundle(bundle)
    inline = sum(
        len(json.dumps(loaded.blocks(i, view))) for i in range(len(bundle["steps"])) for view in bundle["views"]
    )
    assert len(pb.bundle_json(bundle)) * 4 < inline
    assert len(set(bundle["html"])) == len(bundle["html"])
    assert len({json.dumps(c, sort_keys=True) for c in bundle["charts"]}) == len(bundle["charts"])


@pytest.mark.slow  # a bundle builds every step of a trace in four views: 20-40 s here
def test_navigation_agrees_with_the_round_pages_cursor_moves(built):
    trace, bundle = built
    moments = list(steps.moments(trace))
    at = {(s["round"], s["step"]): i for i, s in enumerate(bundle["steps"])}
    for i, cursor in enumerate(moments):
        nav = bundle["steps"][i]["nav"]
        assert moments[nav["next"]] == steps.next_step(trace, cursor)
        assert moments[nav["previous"]] == steps.previous_step(trace, cursor)
        assert moments[nav["next_round"]] == steps.next_round(trace, cursor)
        for kind in ("rejection", "bonus"):
            found = steps.next_event(trace, cursor, kind)
            assert nav[f"next_{kind}"] == (None if found is None else at[found.round, found.step])
        assert (nav["first"], moments[nav["last"]]) == (0, steps.last_cursor(trace))
        query = bundle["steps"][i]["query"]
        assert steps.cursor_from_params(trace, dict(p.split("=") for p in query.split("&"))) == cursor
    assert any(s["nav"]["next_rejection"] is not None for s in bundle["steps"])


def test_a_document_that_is_not_a_bundle_of_this_version_is_refused_clearly():
    with pytest.raises(PlayerFormatError, match="not JSON"):
        pb.load_bundle("{not json")
    with pytest.raises(PlayerFormatError, match="format is 'specviz.trace'"):
        pb.load_bundle({"format": "specviz.trace"})
    with pytest.raises(PlayerFormatError, match="version 2: this specviz reads version 1"):
        pb.load_bundle({"format": pb.FORMAT, "version": 2})
    with pytest.raises(PlayerFormatError, match="without its"):
        pb.load_bundle({"format": pb.FORMAT, "version": pb.VERSION, "steps": []})


def test_markdown_sentences_become_html_with_user_text_still_inert():
    assert pb.markdown_html("**Accepted** &#39;x&#39;: 0.42 < 0.5 & more") == (
        "<b>Accepted</b> &#39;x&#39;: 0.42 &lt; 0.5 &amp; more"
    )


def test_a_live_runs_bundle_calls_its_times_this_machines():
    """The round page's own run steps in the browser with its times called this machine's (its first round holds
    the warm-up); a trace handed out or recorded elsewhere keeps "recorded on another machine". One view of a short
    trace keeps this fast."""
    trace = Trace.from_json((TRACES / NAMES[0]).read_text())
    trace = Trace.from_dict({**trace.to_dict(), "rounds": trace.to_dict()["rounds"][:2]})
    live, recorded = (json.dumps(pb.player_bundle(trace, views=("full",), live=flag)) for flag in (True, False))
    assert "another machine" not in live and "first-call warm-up" in live
    assert "another machine" in recorded and "first-call warm-up" not in recorded
