"""Playback order of a round: draft, verify, judge each position until the first rejection, resolve, commit."""

from specviz.core.settings import RunSettings
from specviz.core.trace import ExtraToken, Position, Round, Totals, Trace
from specviz.viz import steps


def pos(i, verdict):
    return Position(i, i, "t", 0.5, 0.5, 1.0, 0.1, verdict == "accepted", verdict)


def make_round(index, verdicts, extra="correction"):
    extra_token = ExtraToken(9, "z", extra, 1.0, 1.0, 0.5) if extra else None
    return Round(
        index, tuple(pos(i, v) for i, v in enumerate(verdicts)), extra_token, (), (1,), 1.0, 1.0, (0, 0), (0, 0)
    )


def test_round_steps_judge_until_the_first_rejection():
    r = make_round(0, ["accepted", "rejected", "unreached"])
    assert [(s.phase, s.position) for s in steps.round_steps(r)] == [
        ("draft", None),
        ("verify", None),
        ("judge", 0),
        ("judge", 1),
        ("resolve", None),
        ("commit", None),
    ]


def test_plain_rounds_and_stopped_rounds():
    plain = make_round(0, [], extra="target")
    assert [s.phase for s in steps.round_steps(plain)] == ["verify", "resolve", "commit"]
    stopped = make_round(0, ["accepted", "after_stop"], extra=None)
    assert [s.phase for s in steps.round_steps(stopped)] == ["draft", "verify", "judge", "commit"]


def test_cursor_moves_through_rounds_and_stops_at_the_end():
    rounds = (make_round(0, ["rejected"]), make_round(1, ["accepted"], extra="bonus"))
    trace = Trace(RunSettings(k=1), "p", (1,), rounds, "", Totals.of(rounds, 1.0))
    cursor, seen = steps.Cursor(), []
    while not steps.at_end(trace, cursor):
        seen.append((cursor.round, steps.current_step(trace, cursor).phase, steps.rounds_committed(trace, cursor)))
        cursor = steps.next_step(trace, cursor)
    assert seen[4] == (0, "commit", 1) and seen[5] == (1, "draft", 1)
    assert steps.next_step(trace, cursor) == cursor
    assert steps.next_round(trace, steps.Cursor()) == steps.Cursor(1, 0)
    assert steps.next_round(trace, steps.Cursor(1, 0)) == steps.last_cursor(trace)
