"""The player bundle (viz.player_bundle): a trace's steps, de-duplicated, read back losslessly, each chart its kind's
template bound to its numbers giving the builder's own Vega-Lite, navigating as the round page's cursor moves do, for a
chain trace and a tree trace; its size per step bounded."""

import json
from pathlib import Path

import pytest

from specviz.core.trace_json import trace_from_dict, trace_from_json, trace_to_dict
from specviz.errors import PlayerFormatError
from specviz.viz import player_bundle as pb
from specviz.viz import player_wire as pw
from specviz.viz import step_view as sv
from specviz.viz import steps

TRACES = Path(__file__).resolve().parents[2] / "assets" / "traces"
REGRESSION = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "regression"
NAMES = ["early-rejection-residual.json", "tree-sibling-accepted.json"]  # a chain with rejections; a tree


@pytest.fixture(scope="module", params=NAMES)
def built(request):
    trace = trace_from_json((TRACES / request.param).read_text())
    wire = pb.player_bundle(trace)
    return trace, wire, pb.load_bundle(wire).doc  # the bundle as sent, and its document decoded


def canonical(spec: dict) -> dict:
    """A Vega-Lite spec with its datasets named d0, d1, ... in the order the spec first uses them (Altair names them
    by a hash of their rows, the bundle by their place in the template) and their numbers rounded as the bundle sends
    them (pw.rounded: what the charts show): the same chart, whatever its names."""
    spec = json.loads(json.dumps(spec))
    datasets, names = spec.pop("datasets", {}), {}

    def walk(node):
        if isinstance(node, dict):
            if set(node) == {"name"} and node["name"] in datasets:
                return {"name": names.setdefault(node["name"], f"d{len(names)}")}
            return {k: walk(v) for k, v in node.items()}
        return [walk(v) for v in node] if isinstance(node, list) else node

    spec = walk(spec)
    datasets = {k: [{c: pw.rounded(v) for c, v in row.items()} for row in rows] for k, rows in datasets.items()}
    return spec | {"datasets": {names[k]: rows for k, rows in datasets.items() if k in names}}


def expected_blocks(trace, cursor, options, memo) -> tuple[str, list]:
    """What the round page draws at this step in this view, in layout order: (kind, place, the chart's Vega-Lite or
    the block's HTML); and the step's title."""
    view = sv.step_view(trace, cursor, options, memo)
    laid = [b for row in sv.rows(view.blocks) for column in row.columns for b in column.blocks]
    return view.title, [
        (b.kind, b.place, canonical(b.content.to_dict(validate=False)) if b.kind == sv.CHART else pb.block_html(b))
        for b in laid  # in layout order: a row's left column, then its right one
    ]


def bundled_blocks(loaded, i: int, name: str) -> list:
    return [(k, place, canonical(x) if k == sv.CHART else x) for k, place, x in loaded.blocks(i, name)]


@pytest.mark.slow  # the page's Altair charts of every 7th step in four views: 10-20 s here
def test_the_bundle_reads_back_losslessly_and_expands_to_the_step_views(built):
    """Every chart bound from its template and its numbers is the Vega-Lite the page's chart builder makes (its
    marks, encodings, titles, sizes and rows), in normal and lecture sizes; every HTML block is the page's."""
    trace, wire, bundle = built
    text = pb.bundle_json(wire)
    loaded = pb.load_bundle(text)
    assert loaded.doc == bundle == json.loads(json.dumps(bundle))  # JSON all the way down, nothing lost
    memo = {}
    for i, cursor in enumerate(steps.moments(trace)):
        if i % 7:  # every 7th step (each view of it) against a fresh step view: the tables index right
            continue
        for name, options in pb.VIEWS.items():
            title, expected = expected_blocks(trace, cursor, options, memo)
            assert bundled_blocks(loaded, i, name) == expected
            assert loaded.doc["steps"][i]["title"] == title


@pytest.mark.slow  # the page's Altair charts of many steps of three traces in one view each
@pytest.mark.parametrize(
    "name, view",
    [("suffix_greedy_k8.json", "full"), ("tree_dynamic_t1_1654.json", "focus+lecture"), ("eagle_t1_k3.json", "full")],
)
def test_templates_bind_to_the_builders_charts_for_suffix_dynamic_trees_and_heads(name, view):
    """The chart kinds the bundled lecture traces lack (suffix decoding's path probabilities, a dynamic tree, a
    head's feature flow) are also the page's own: every step of the first three rounds (each phase's kinds), then
    every third step (later rounds' shapes), since Altair builds each expected chart slowly."""
    trace = trace_from_json((REGRESSION / name).read_text())
    loaded = pb.load_bundle(pb.player_bundle(trace, views=(view,)))
    memo = {}
    for i, cursor in enumerate(steps.moments(trace)):
        if cursor.round >= 3 and i % 3:
            continue
        _, expected = expected_blocks(trace, cursor, pb.VIEWS[view], memo)
        assert bundled_blocks(loaded, i, view) == expected
    kinds = {loaded.doc["charts"][c]["template"] for c in range(len(loaded.doc["charts"]))}
    assert len(kinds) == len(loaded.doc["templates"]) >= 3


def test_a_chart_kinds_template_is_built_once_and_a_chart_carries_only_its_numbers():
    """Two positions' pq charts share one template; what differs between them is their rows and their values (the
    title's lines, the tokens' order), never the spec; a hole the builder's spec lacks is refused."""
    from specviz.viz import chart_templates as ct
    from specviz.viz import round_charts as charts

    trace = trace_from_json((TRACES / NAMES[0]).read_text())
    first, second = trace.rounds[0].positions[:2]
    one, two = ct.parts(charts.pq_chart, first), ct.parts(charts.pq_chart, second)
    assert one.kind == two.kind and one.key == two.key
    spec = ct.template(charts.pq_chart, (first,), one, False)
    assert ct.template(charts.pq_chart, (second,), two, False) is spec
    for pos, chart in ((first, one), (second, two)):
        bound = ct.bind(spec, ct.view_params(chart, False), {"d0": ct.rows_of(chart.data[0])})
        assert canonical(bound) == canonical(sv.styled(charts.pq_chart(pos), False).to_dict(validate=False))
    assert set(ct.view_params(one, False)) == {"order", "title", "subtitle"}
    with pytest.raises(KeyError, match="nothing at"):
        ct._punch({"encoding": {}}, ("encoding", "x", "sort"), "order")


def test_each_step_is_a_few_hundred_bytes_whatever_the_round(built):
    """A step holds its navigation, its title and its rows by index: its size does not grow with the round (the
    committed text is a count of rounds, the run's times a count of rows); no dataset holds more rows than a chart of
    one round draws (a top-10, a tree, a KV strip), never the vocabulary."""
    trace, wire, bundle = built
    sizes = [len(json.dumps(s, ensure_ascii=False, separators=(",", ":"))) for s in bundle["steps"]]
    assert max(sizes) <= 700, max(sizes)
    first, last = sizes[: len(sizes) // 3], sizes[-len(sizes) // 3 :]
    assert sum(last) / len(last) <= 1.1 * sum(first) / len(first) + 40
    assert all(len(row["columns"]) <= 2 for row in bundle["rows"])
    longest = max(len(d["rows"]) for d in bundle["datasets"])
    assert longest <= max(2 * len(trace.rounds), 16 * 16), longest  # the run's times, or a mask of 16 nodes


def test_de_duplication_shrinks_the_bundle_several_times(built):
    trace, wire, bundle = built
    loaded = pb.load_bundle(wire)
    inline = sum(
        len(json.dumps(loaded.blocks(i, view))) for i in range(len(bundle["steps"])) for view in bundle["views"]
    )
    assert len(pb.bundle_json(wire)) * 4 < inline
    assert len(set(bundle["html"])) == len(bundle["html"])
    for table in ("templates", "rows", "datasets"):
        assert len({json.dumps(c, sort_keys=True) for c in bundle[table]}) == len(bundle[table])
    assert len(bundle["templates"]) <= 32  # one per chart kind, key and view (16 x 2 at most), however many charts


def test_navigation_agrees_with_the_round_pages_cursor_moves(built):
    trace, _, bundle = built
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
    with pytest.raises(PlayerFormatError, match="version 1: this specviz reads version 3"):
        pb.load_bundle({"format": pb.FORMAT, "version": 1})
    old = pb.load_bundle({"format": pb.FORMAT, "version": 2, "steps": [], "html": ["<p>x</p>"]})
    assert old.doc["html"] == ["<p>x</p>"]  # version 2 was the document itself: read as it is
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
    trace = trace_from_json((TRACES / NAMES[0]).read_text())
    trace = trace_from_dict({**trace_to_dict(trace), "rounds": trace_to_dict(trace)["rounds"][:2]})
    live, recorded = (json.dumps(pb.player_bundle(trace, views=("full",), live=flag)) for flag in (True, False))
    assert "another machine" not in live and "first-call warm-up" in live
    assert "another machine" in recorded and "first-call warm-up" not in recorded


def test_the_wire_form_sends_each_string_once_and_is_under_half_the_document(built):
    """Version 3's wire form: the strings table holds each string once; the JSON sent is under half the decoded
    document's (v2's layout), and a step costs a couple of hundred bytes of it (its columns of the steps table)."""
    _, wire, bundle = built
    assert len(set(wire["strings"])) == len(wire["strings"])
    sent, document = (len(json.dumps(d, ensure_ascii=False, separators=(",", ":"))) for d in (wire, bundle))
    assert sent * 2 < document, (sent, document)
    per_step = len(json.dumps(wire["steps"], ensure_ascii=False, separators=(",", ":"))) / len(bundle["steps"])
    assert per_step <= 300, per_step
