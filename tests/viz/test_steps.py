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
    assert seen[4] == (0, "commit", 1)
    assert seen[5] == (1, "draft", 1)
    assert steps.next_step(trace, cursor) == cursor
    assert steps.next_round(trace, steps.Cursor()) == steps.Cursor(1, 0)
    assert steps.next_round(trace, steps.Cursor(1, 0)) == steps.last_cursor(trace)


def lecture_trace():
    rounds = (
        make_round(0, ["accepted", "rejected"]),  # draft verify judge judge resolve(correction) commit
        make_round(1, ["accepted", "accepted"], extra="bonus"),  # draft verify judge judge resolve(bonus) commit
    )
    return Trace(RunSettings(k=2), "p", (1,), rounds, "", Totals.of(rounds, 1.0))


def test_previous_step_undoes_next_step_everywhere():
    trace = lecture_trace()
    cursor, seen = steps.Cursor(), [steps.Cursor()]
    while not steps.at_end(trace, cursor):
        cursor = steps.next_step(trace, cursor)
        seen.append(cursor)
    for before, after in zip(seen, seen[1:]):
        assert steps.previous_step(trace, after) == before
    assert steps.previous_step(trace, steps.Cursor()) == steps.Cursor()  # stays put at the very start


def test_next_rejection_and_next_bonus():
    trace = lecture_trace()
    rejection = steps.next_event(trace, steps.Cursor(), "rejection")
    assert rejection == steps.Cursor(0, 3)
    assert steps.current_step(trace, rejection) == steps.Step("judge", 1)
    assert steps.next_event(trace, rejection, "rejection") is None
    bonus = steps.next_event(trace, steps.Cursor(), "bonus")
    assert bonus == steps.Cursor(1, 4)
    assert steps.current_step(trace, bonus).phase == "resolve"


def test_url_params_round_trip_every_moment_and_forgive_bad_ones():
    trace = lecture_trace()
    cursor = steps.Cursor()
    while True:
        assert steps.cursor_from_params(trace, steps.url_params(trace, cursor)) == cursor
        if steps.at_end(trace, cursor):
            break
        cursor = steps.next_step(trace, cursor)
    assert steps.url_params(trace, steps.Cursor(0, 3)) == {"round": "1", "phase": "judge", "pos": "2"}
    assert steps.cursor_from_params(trace, {"round": "99", "phase": "commit"}) == steps.last_cursor(trace)
    assert steps.cursor_from_params(trace, {"round": "x", "phase": "nonsense"}) == steps.Cursor()
    assert steps.cursor_from_params(trace, {"round": "1", "phase": "judge", "pos": "7"}) == steps.Cursor(0, 3)


def test_a_moment_the_trace_does_not_have_is_said_with_the_moment_shown_instead():
    trace = lecture_trace()
    rounds = len(trace.rounds)
    every = steps.Cursor()
    while True:  # every moment the trace has: nothing to say
        assert steps.moment_note(trace, steps.url_params(trace, every)) == ""
        if steps.at_end(trace, every):
            break
        every = steps.next_step(trace, every)
    assert steps.moment_note(trace, {"round": "99", "phase": "commit"}) == (
        f"The link asks for round 99, and this run has {rounds} rounds: showing round {rounds}'s commit phase instead."
    )
    said = steps.moment_note(trace, {"round": "x", "phase": "nonsense"})
    assert said.startswith("The link asks for round 'x', which is not a number, and the phase 'nonsense', which is ")
    assert said.endswith("showing round 1's draft phase instead.")
    assert steps.moment_note(trace, {"round": "1", "phase": "judge", "pos": "7"}) == (
        "The link asks for the judging of position 7 in round 1, which never came: showing position 2 of round 1's "
        "judge phase instead."
    )
