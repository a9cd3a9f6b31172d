"""A trace holds no more than a run of its settings can make: drafts per round within its K, tree nodes within its
tree, children within the tree's width, rounds and tokens within max new tokens; and in public mode within the
deployment's caps. Each refusal names what the trace holds and what is allowed."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest
from hostile_traces import chain_doc, chain_round, tree_doc

from specviz.core.trace_json import trace_from_dict, trace_from_json
from specviz.errors import TraceFormatError
from specviz.ui.limits import Limits

ROOT = Path(__file__).resolve().parents[2]


def refusal(doc: dict) -> str:
    with pytest.raises(TraceFormatError) as caught:
        trace_from_dict(doc)
    return str(caught.value)


def test_well_formed_hand_built_traces_and_every_recorded_trace_load():
    trace_from_dict(chain_doc(k=4, positions=4, rounds=3))
    trace_from_dict(tree_doc((2, 2), rounds=2))
    recorded = glob.glob(str(ROOT / "tests/fixtures/regression/*.json")) + glob.glob(
        str(ROOT / "assets/traces/*-*.json")
    )
    assert len(recorded) > 20
    for path in recorded:  # every method's real rounds, chain and tree, static and dynamic, fit their own bounds
        trace_from_json(Path(path).read_text())


def test_a_chain_round_longer_than_its_k_is_refused():
    # the upload that held the queue: one round of 1,300 drafts from settings with K = 4, under 200 kB
    doc = chain_doc(k=4, positions=1300)
    assert len(json.dumps(doc)) < 210_000
    said = refusal(doc)
    assert "1300 drafted positions" in said and "at most 4 drafts a round" in said


def test_plain_decoding_rounds_hold_no_drafts():
    doc = chain_doc(k=4, positions=2)
    doc["settings"]["method"] = "plain"
    assert "no drafts (plain decoding)" in refusal(doc)


def test_a_tree_round_with_more_nodes_than_its_tree_is_refused():
    said = refusal(tree_doc((2, 2), widths=(1600,)))  # 1,600 children of the root, from a 6-node tree
    assert "1600 tree nodes" in said and "at most 6 tree nodes" in said


def test_a_tree_round_wider_or_deeper_than_its_shape_is_refused():
    assert "more than 2 children under the root" in refusal(tree_doc((2, 2), widths=(3,)))
    assert "3 drafted positions" in refusal(tree_doc((2, 2), widths=(2, 2, 1)))  # a path longer than the tree
    dynamic = tree_doc((2, 2), widths=(5,))
    dynamic["settings"] |= {"tree": [], "dynamic": {"budget": 16, "depth": 3, "topk": 4}, "k": 3}
    assert "more than 4 children under the root" in refusal(dynamic)


def test_a_chain_trace_holds_no_tree_nodes():
    doc = tree_doc((2, 2))
    doc["settings"] |= {"method": "draft", "tree": []}
    assert "no tree nodes (a chain run)" in refusal(doc)


def test_more_rounds_or_tokens_than_max_new_tokens_are_refused():
    said = refusal(chain_doc(k=4, rounds=65, max_new_tokens=64))  # each round commits at least one token
    assert "65 rounds" in said and "at most 64 new tokens" in said
    doc = chain_doc(k=4, rounds=2, max_new_tokens=8)
    doc["rounds"] = [chain_round(i, 4, accepted=4) for i in range(2)]  # 5 tokens a round: 10 of 8
    assert "committing 10 tokens" in refusal(doc)


def test_public_mode_replays_only_what_its_caps_allow_a_run():
    public, private = Limits.from_env({"SPECVIZ_PUBLIC": "1"}), Limits.from_env({})
    long_k = trace_from_dict(chain_doc(k=12, positions=12))
    with pytest.raises(TraceFormatError, match="this deployment replays at most 8 drafts a round"):
        public.check_trace(long_k)
    private.check_trace(long_k)
    wide = trace_from_dict(tree_doc((16, 15), widths=(16, 6)))  # 16 + 96 nodes, public cap 64
    with pytest.raises(TraceFormatError, match="this deployment replays at most 64 tree nodes a round"):
        public.check_trace(wide)
    long_run = trace_from_dict(chain_doc(k=4, rounds=80, max_new_tokens=200))
    with pytest.raises(TraceFormatError, match="80 rounds committing 80 tokens; this deployment replays at most 64"):
        public.check_trace(long_run)
    public.check_trace(trace_from_dict(chain_doc(k=8, positions=8, rounds=64)))  # at the caps: replayed
