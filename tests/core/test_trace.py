import json

import pytest

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.core.trace import ExtraToken, Position, Round, TokenProb, Totals, Trace
from specviz.core.trace_json import trace_from_dict, trace_from_json, trace_to_dict, trace_to_json
from specviz.errors import TraceFormatError
from specviz.viz import trace_frames


def hand_trace() -> Trace:
    """Two rounds: a rejection with a correction, then two accepted drafts and a bonus."""
    top = (TokenProb(5, " x", 0.75), TokenProb(6, " y", 0.25))
    r0 = Round(
        index=0,
        positions=(
            Position(
                0, 5, " x", q=0.5, p=0.75, ratio=1.0, u=0.9, accepted=True, verdict="accepted", p_top=top, q_top=top
            ),
            Position(1, 6, " y", q=0.5, p=0.1, ratio=0.2, u=0.6, accepted=False, verdict="rejected"),
        ),
        extra=ExtraToken(7, " z", "correction", prob=1.0, p=0.9, u=0.3),
        residual_top=(TokenProb(7, " z", 1.0),),
        committed=(5, 7),
        draft_ms=1.5,
        verify_ms=3.25,
        target_cache=(6, 4),
        draft_cache=(5, 4),
    )
    r1 = Round(
        index=1,
        positions=(
            Position(0, 5, " x", 1.0, 1.0, 1.0, 0.2, True, "accepted"),
            Position(1, 5, " x", 1.0, 1.0, 1.0, 0.4, True, "accepted"),
        ),
        extra=ExtraToken(8, "!", "bonus", 1.0, 1.0, 0.5),
        residual_top=(),
        committed=(5, 5, 8),
        draft_ms=1.0,
        verify_ms=3.0,
        target_cache=(7, 7),
        draft_cache=(6, 6),
        stop="max_new_tokens",
    )
    settings = RunSettings(k=2, sampling=SamplingSettings(temperature=0.7, top_k=20), max_new_tokens=5, seed=3)
    rounds = (r0, r1)
    return Trace(settings, "Hello", (1, 2, 3), rounds, " x z x x!", Totals.of(rounds, wall_s=0.5), {"target": "t"})


def test_totals_follow_the_paper_definitions():
    totals = hand_trace().totals
    assert (totals.proposed, totals.accepted, totals.rounds, totals.committed) == (4, 3, 2, 5)
    assert totals.alpha == 0.75
    assert totals.tau == 2.5
    assert totals.tokens_per_s == 10.0


def test_alpha_counts_only_judged_drafts_and_the_acceptance_rate_all_proposed():
    # accepted, rejected, then one draft never judged: alpha = 1/2 (the paper's), acceptance rate = 1/3 (vLLM's)
    verdicts = ("accepted", "rejected", "unreached")
    positions = tuple(Position(i, 5, " x", 0.5, 0.5, 1.0, 0.1, v == "accepted", v) for i, v in enumerate(verdicts))
    rnd = Round(0, positions, ExtraToken(7, " z", "correction", 1.0, 1.0, 0.3), (), (5, 7), 1.0, 1.0, (4, 2), (4, 2))
    totals = Totals.of((rnd,), wall_s=1.0)
    assert (totals.proposed, totals.judged, totals.accepted) == (3, 2, 1)
    assert totals.alpha == 0.5
    assert totals.acceptance_rate == pytest.approx(1 / 3)


def test_json_round_trips_losslessly():
    trace = hand_trace()
    assert trace_from_json(trace_to_json(trace)) == trace
    assert trace_to_json(trace_from_json(trace_to_json(trace, indent=2))) == trace_to_json(trace)


def test_a_trace_saved_before_judged_counts_existed_still_loads():
    doc = trace_to_dict(hand_trace())
    for key in ("judged", "acceptance_rate"):
        del doc["totals"][key]
    doc["totals"]["alpha"] = 0.123  # totals are recounted from the rounds, not trusted
    assert trace_from_dict(doc) == hand_trace()


def test_json_has_the_documented_shape():
    doc = json.loads(trace_to_json(hand_trace()))
    assert doc["format"] == "specviz.trace"
    assert doc["version"] == 1
    assert {"settings", "rounds", "text", "totals"} <= doc.keys()
    position = doc["rounds"][0]["positions"][0]
    assert {"token_id", "text", "p", "q", "ratio", "u", "accepted"} <= position.keys()
    assert set(doc["totals"]) == {
        "proposed",
        "accepted",
        "judged",
        "rounds",
        "committed",
        "alpha",
        "acceptance_rate",
        "tau",
        "wall_s",
        "tokens_per_s",
    }
    assert doc["settings"]["sampling"] == {"temperature": 0.7, "top_k": 20, "top_p": 1.0}


def test_data_frames_one_row_per_round_and_per_position():
    trace = hand_trace()
    rounds, positions = trace_frames.rounds_frame(trace), trace_frames.positions_frame(trace)
    assert list(rounds["committed"]) == [2, 3]
    assert list(rounds["extra_kind"]) == ["correction", "bonus"]
    assert len(positions) == 4
    assert list(positions["verdict"]) == ["accepted", "rejected", "accepted", "accepted"]
    assert {"round", "token_id", "p", "q", "ratio", "u", "accepted"} <= set(positions.columns)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(version=99), "format version 99"),
        (lambda d: d.pop("format"), "not a specviz trace"),
        (lambda d: d["rounds"][0].pop("positions"), "missing field 'positions'"),
        (lambda d: d["settings"].update(k=0), "settings are invalid"),
    ],
)
def test_damaged_or_foreign_traces_are_refused_clearly(edit, message):
    doc = json.loads(trace_to_json(hand_trace()))
    edit(doc)
    with pytest.raises(TraceFormatError, match=message):
        trace_from_json(json.dumps(doc))


def test_non_json_is_refused_clearly():
    with pytest.raises(TraceFormatError, match="not JSON"):
        trace_from_json(b"\x89PNG\r\n")


def test_a_tree_trace_round_trips_with_each_nodes_distributions_and_older_tree_traces_still_load():
    from specviz.ui.render import TRACES_DIR

    text = (TRACES_DIR / "tree-sibling-accepted.json").read_text()
    trace = trace_from_json(text)
    assert trace_from_json(trace_to_json(trace)) == trace
    tried = [n for r in trace.rounds for n in r.nodes if n.ratio is not None]
    assert tried
    assert all(n.p_top and n.q_top for n in tried)  # what each child was judged against, and drawn from
    assert all(not n.p_top for r in trace.rounds for n in r.nodes if n.ratio is None)
    doc = json.loads(text)
    for r in doc["rounds"]:  # a version-2 trace written before nodes kept their top-10 lists
        for node in r["nodes"]:
            del node["p_top"], node["q_top"]
    older = trace_from_dict(doc)
    assert [n.token_id for n in older.rounds[1].nodes] == [n.token_id for n in trace.rounds[1].nodes]
    assert "p_top" not in trace_frames.nodes_frame(trace).columns
