"""Hostile trace documents (over the size cap, nested 100 000 deep, wrong types and values, dangling tree nodes):
each is refused with one clear TraceFormatError at load, so nothing the drawing code cannot draw gets into a
session; valid traces still load identically."""

import json
import re
from pathlib import Path

import pytest

from specviz.core.trace_json import trace_from_json, trace_to_json
from specviz.errors import SpecvizError, TraceFormatError

ROOT = Path(__file__).resolve().parents[2]
VALID = sorted((ROOT / "tests" / "fixtures" / "regression").glob("*.json")) + sorted(
    p for p in (ROOT / "assets" / "traces").glob("*.json") if p.name != "index.json"
)
CHAIN = ROOT / "assets" / "traces" / "early-rejection-residual.json"
TREE = ROOT / "assets" / "traces" / "tree-sibling-accepted.json"


def doc_of(path: Path) -> dict:
    return json.loads(path.read_text())


def refused(doc, match: str, **kwargs) -> str:
    """The message trace_from_json gives for doc (a dict, or text as is)."""
    text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
    with pytest.raises(TraceFormatError, match=match) as info:
        trace_from_json(text, **kwargs)
    return str(info.value)


def first_tree_round(doc: dict) -> dict:
    return next(r for r in doc["rounds"] if r.get("nodes"))


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_every_bundled_and_recorded_trace_still_loads_identically(path):
    text = path.read_text()
    trace = trace_from_json(text)
    assert trace_from_json(trace_to_json(trace)) == trace
    assert json.loads(trace_to_json(trace))["rounds"] == json.loads(text)["rounds"]


def test_a_document_over_max_bytes_is_refused_before_it_is_parsed():
    text = CHAIN.read_text()
    message = refused(text, "limited to 1 kB", max_bytes=1000)
    assert "kB" in message
    refused(text.encode(), "limited to", max_bytes=1000)
    assert trace_from_json(text, max_bytes=len(text.encode()))  # exactly at the cap loads


def test_the_default_cap_refuses_a_huge_document_without_parsing_it():
    refused(b"[" * 70_000_000, "limited to 64,000 kB")


@pytest.mark.parametrize("depth", [100_000, 200_000])
def test_deep_nesting_is_a_clear_message_not_a_recursion_error(depth):
    refused("[" * depth + "]" * depth, "nested too deeply")


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d["rounds"][0]["positions"][0].update(text=12345), r"rounds\[0\]\.positions\[0\]\.text is 12345"),
        (lambda d: d["rounds"][0]["positions"][0].update(text=None), r"positions\[0\]\.text is None, not text"),
        (lambda d: d.update(prompt=["a", "b"]), r"prompt is \['a', 'b'\], not text"),
        (lambda d: d.update(prompt_ids="abcdef"), r"prompt_ids is 'abcdef', not a list"),
        (lambda d: d["rounds"][0].update(committed="xyz"), r"rounds\[0\]\.committed is 'xyz', not a list"),
        (lambda d: d.update(rounds=[]), "no rounds"),
        (lambda d: d["rounds"][0]["extra"].update(kind="banana"), r"extra\.kind is 'banana', not one of correction"),
        (lambda d: d["rounds"][0]["positions"][0].update(verdict="maybe"), r"verdict is 'maybe'"),
        (lambda d: d["rounds"][0]["positions"][0].update(token_id=-4), r"token_id is -4, not a token id"),
        (lambda d: d["rounds"][0]["positions"][0].update(token_id=5.0), r"token_id is 5.0, not a whole number"),
        (lambda d: d["rounds"][0]["positions"][0]["p_top"][0].update(text=7), r"p_top\[0\]\.text is 7"),
        (lambda d: d["rounds"][0].update(committed=[1, 2, 3]), r"accepted drafts and extra token are"),
        (lambda d: d.update(prompt_ids=[1, -2]), r"prompt_ids\[1\] is -2"),
        (lambda d: d["rounds"][1].update(index=7), r"rounds\[1\]\.index is 7"),
        (lambda d: d["rounds"][0]["positions"][0].update(index=3), r"positions\[0\]\.index is 3"),
        (lambda d: d["rounds"][0].update(target_cache=[1]), "not two cache lengths"),
        (lambda d: d["rounds"][0].update(stop="banana"), r"stop is 'banana'"),
        (lambda d: d["rounds"][0].update(positions={"a": 1}), "not a list"),
        (lambda d: d["rounds"].__setitem__(0, "round"), r"rounds\[0\] is 'round', not an object"),
        (lambda d: d["rounds"][0]["positions"][0].update(colour="red"), "unknown field 'colour'"),
        (lambda d: d.update(meta=["a", "b"]), "meta is"),
        (lambda d: d.update(text=3), "text is 3"),
        (lambda d: d["totals"].update(wall_s="fast"), "totals.wall_s is 'fast'"),
    ],
)
def test_wrong_types_and_values_in_a_chain_trace_are_refused_where_they_enter(edit, match):
    doc = doc_of(CHAIN)
    edit(doc)
    message = refused(doc, match)
    assert "damaged or hand-edited" in message
    assert "Re-export" in message


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda r: r["nodes"][1].update(parent=999), r"nodes\[1\]\.parent is 999"),
        (lambda r: r["nodes"][0].update(parent=0), r"nodes\[0\]\.parent is 0"),  # its own parent
        (lambda r: r["nodes"][1].update(parent=-7), r"nodes\[1\]\.parent is -7"),
        (lambda r: r.update(path=[999, 1000]), r"path\[0\] is 999"),
        (lambda r: r["nodes"][0].update(id=5), r"nodes\[0\]\.id is 5"),
        (lambda r: r["nodes"][0].update(depth=0), r"nodes\[0\]\.depth is 0"),
        (lambda r: r["nodes"][0].update(text={"a": 1}), r"nodes\[0\]\.text is \{'a': 1\}"),
    ],
)
def test_a_tree_round_whose_nodes_or_path_dangle_is_refused(edit, match):
    doc = doc_of(TREE)
    edit(first_tree_round(doc))
    refused(doc, match)


def test_a_path_that_skips_a_level_is_refused():
    doc = doc_of(TREE)
    r = first_tree_round(doc)
    deep = next(n["id"] for n in r["nodes"] if n["depth"] == 2)
    r["path"] = [deep]
    refused(doc, r"path\[0\] is \d+, not a child of -1")


def test_every_refusal_is_a_specviz_error_the_ui_shows():
    assert issubclass(TraceFormatError, SpecvizError)


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d["rounds"][0]["positions"][0].update(q=NAN), r"rounds\[0\]\.positions\[0\]\.q is nan, not a fin"),
        (lambda d: d["rounds"][0]["positions"][0].update(p=INF), r"positions\[0\]\.p is inf, not a finite number"),
        (lambda d: d["rounds"][0]["positions"][1].update(ratio=-INF), r"positions\[1\]\.ratio is -inf"),
        (lambda d: d["rounds"][0]["positions"][0].update(q=-5), r"positions\[0\]\.q is -5, not a probability"),
        (lambda d: d["rounds"][0]["positions"][0].update(p=1e308), r"positions\[0\]\.p is 1e\+308, not a probab"),
        (lambda d: d["rounds"][0]["positions"][0].update(u=1.5), r"positions\[0\]\.u is 1\.5, not a probability"),
        (lambda d: d["rounds"][0]["positions"][0].update(overlap=NAN), r"positions\[0\]\.overlap is nan"),
        (lambda d: d["rounds"][0]["positions"][0]["p_top"][0].update(prob=2), r"p_top\[0\]\.prob is 2, not a prob"),
        (lambda d: d["rounds"][0]["extra"].update(prob=NAN), r"rounds\[0\]\.extra\.prob is nan"),
        (lambda d: d["rounds"][0].update(verify_ms=NAN), r"rounds\[0\]\.verify_ms is nan, not a finite number"),
        (lambda d: d["rounds"][0].update(draft_ms=-1), r"rounds\[0\]\.draft_ms is -1, not a time"),
        (lambda d: d["totals"].update(wall_s=INF), r"totals\.wall_s is inf"),
        (lambda d: d.update(meta={"gpu": {"speed": NAN}}), r"meta\.gpu\.speed is nan, not a finite number"),
    ],
    ids=lambda v: getattr(v, "__name__", str(v))[:30],
)
def test_probabilities_that_are_not_finite_or_not_from_0_to_1_are_refused_naming_the_field(edit, match):
    """Python's JSON reader takes NaN, Infinity and 1e999; a bundle holding one is no JSON the browser reads, and a
    q of -5 or a p of 1e308 is no probability: each is refused where it enters, the field named."""
    doc = doc_of(CHAIN)
    edit(doc)
    message = refused(json.dumps(doc), match)  # json.dumps writes NaN / Infinity, as a hand-edited file would hold
    assert "damaged or hand-edited" in message


def test_a_tree_nodes_probability_and_a_numbers_overflow_are_refused():
    doc = doc_of(TREE)
    first_tree_round(doc)["nodes"][0]["q"] = NAN
    refused(doc, r"nodes\[0\]\.q is nan")
    text = re.sub(r'"wall_s": [0-9.e+-]+', '"wall_s": 1e999', CHAIN.read_text())  # reads as infinity
    refused(text, r"totals\.wall_s is inf, not a finite number")


def test_a_bundle_is_strict_json_so_a_non_finite_number_is_refused_there_too():
    from specviz.errors import PlayerFormatError
    from specviz.viz.player_bundle import bundle_json

    assert bundle_json({"a": 1.5}) == '{"a":1.5}'
    with pytest.raises(PlayerFormatError, match="not finite"):
        bundle_json({"a": [NAN]})
