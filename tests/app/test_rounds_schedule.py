"""The round page's draft phase says why an adaptive round's draft stopped where it did: the
heuristic's K and its next value, the confidence that fell below the threshold; the sidebar offers the K schedule
only for the methods whose K is a chain of drafts."""

from app_helpers import click, open_page, text

from specviz import methods
from specviz.core import schedule
from specviz.viz import run_notes


def markdown(at) -> str:
    return " ".join(text(m) for m in at.markdown)


def fresh_run(at):
    at = at.sidebar.slider(key="temperature").set_value(0.0).run()
    return click(at, run_notes.NEW_RUN)


def test_the_heuristic_round_says_its_k_and_the_next(tiny_default):
    at = open_page("pages/rounds.py")
    at = at.sidebar.selectbox(key="k_schedule").set_value(schedule.HEURISTIC).run()
    assert any("K schedule constant (the sidebar: heuristic)" in text(w) for w in at.warning)  # not yet run
    at = fresh_run(at)
    assert not at.exception
    trace = at.session_state["rounds_trace"]
    assert trace.settings.k_schedule == schedule.HEURISTIC
    first = trace.rounds[0].schedule
    assert f"It stopped at cap K = 4: the schedule's K. Heuristic: K 4 → {first.next_k} after a" in markdown(at)


def test_the_confidence_round_says_which_token_fell_below_the_threshold(tiny_default):
    at = open_page("pages/rounds.py")
    at = at.sidebar.selectbox(key="k_schedule").set_value(schedule.CONFIDENCE).run()
    at = at.sidebar.slider(key="confidence_threshold").set_value(1.0).run()  # every draft is below 1: one a round
    at = fresh_run(at)
    assert not at.exception
    r = at.session_state["rounds_trace"].rounds[0]
    assert len(r.positions) == 1 and r.schedule.stop == schedule.STOP_CONFIDENCE
    said = markdown(at)
    assert f"the draft gave it {r.schedule.confidences[0]:.2f} < the threshold 1.00" in said
    assert "(K = 4 is only the cap)" in said


def test_the_schedule_is_offered_only_where_k_is_a_chain(tiny_default):
    at = open_page("pages/rounds.py")
    assert any(s.key == "k_schedule" for s in at.sidebar.selectbox)
    at = at.sidebar.selectbox(key="k_schedule").set_value(schedule.HEURISTIC).run()
    at = at.sidebar.radio(key="method").set_value(methods.NGRAM).run()
    assert not any(s.key == "k_schedule" for s in at.sidebar.selectbox)
    at = click(at, run_notes.NEW_RUN)
    assert not at.exception
    assert at.session_state["rounds_trace"].settings.k_schedule == schedule.CONSTANT  # lookup: K per round as is
