"""The player bundle's work grows linearly with the trace: each phase's panel is built once per view however many
later steps of its round show it again, a round's steps are listed once, and a series that grows by a round at a
time is extended, not remade. Counted, not timed."""

from __future__ import annotations

import pytest
from hostile_traces import chain_doc, chain_round, tree_doc

from specviz.core.trace_json import trace_from_dict
from specviz.viz import player_bundle as pb
from specviz.viz import step_view as sv
from specviz.viz import steps


def long_chain(rounds: int, k: int = 16) -> dict:
    doc = chain_doc(k=k, positions=k, max_new_tokens=rounds * (k + 1))
    doc["rounds"] = [chain_round(i, k, accepted=k) for i in range(rounds)]  # every draft judged, then a bonus
    return doc


def counted_builds(monkeypatch, trace) -> dict[str, int]:
    """How many times each phase's panel builder ran while the trace's bundle was built."""
    calls: dict[str, int] = {}
    for phase, build in list(sv.PHASES.items()):

        def counting(*args, _phase=phase, _build=build):
            calls[_phase] = calls.get(_phase, 0) + 1
            return _build(*args)

        monkeypatch.setitem(sv.PHASES, phase, counting)
    pb.player_bundle(trace)
    return calls


@pytest.mark.parametrize("rounds", [1, 3])
def test_each_judge_panel_is_built_once_per_view_not_once_per_later_step(monkeypatch, rounds):
    trace = trace_from_dict(long_chain(rounds))
    calls = counted_builds(monkeypatch, trace)
    # 16 judge steps a round; the full views show every earlier one again under each later step (136 a round)
    assert calls[steps.JUDGE] == 16 * rounds * len(pb.VIEWS)
    assert calls[steps.DRAFT] == rounds * len(pb.VIEWS)


def test_a_tree_rounds_draft_panel_follows_the_cursor_and_the_rest_are_built_once(monkeypatch):
    trace = trace_from_dict(tree_doc((4, 3), rounds=2))  # 4 children tried, the last accepted, then 3 tried
    calls = counted_builds(monkeypatch, trace)
    judged = sum(1 for r in trace.rounds for node in r.nodes if node.ratio is not None)
    assert judged == 14
    assert calls[steps.JUDGE] == judged * len(pb.VIEWS)
    per_round = len(steps.round_steps(trace.rounds[0]))  # its tree drawn as the walk stands at each step
    assert calls[steps.DRAFT] == 2 * per_round * 2 + 2 * 2  # the full views: once per step; focus: its own step


def test_a_rounds_steps_are_listed_once_however_often_the_cursor_asks(monkeypatch):
    trace = trace_from_dict(long_chain(4))
    listed = []
    real = steps._round_steps
    monkeypatch.setattr(steps, "_round_steps", lambda r: listed.append(r) or real(r))
    pb.player_bundle(trace)
    assert len(listed) == len(trace.rounds)


def test_a_growing_series_is_extended_as_made_afresh():
    rows = [{"round": i, "ms": i * 1.5} for i in range(5)]
    grown = pb.extended(pb.columnar(rows[:2]), rows[2:])
    assert grown == pb.columnar(rows)
    wider = [*rows, {"round": 5, "ms": 2.0, "kind": "bonus"}]  # a new column: made afresh, in first-seen order
    assert pb.extended(pb.columnar(rows), wider[5:]) == pb.columnar(wider)
