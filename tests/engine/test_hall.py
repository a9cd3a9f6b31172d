"""The lecture hall's queue (specviz.engine.hall), stepped by hand with a fake clock: places, estimates, sharing equal
runs, caps, closed sessions and failures."""

import itertools
import threading

import pytest

from specviz.engine.cancel import checkpoint
from specviz.engine.hall import (
    DONE,
    DROPPED,
    QUEUED,
    RUNNING,
    Hall,
    HallFull,
    Place,
    RunDropped,
    RunFailed,
    RunStopped,
    finish_time,
    ordinal,
    waiting_message,
    workers_for,
)
from specviz.errors import SettingsError, SpecvizError


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def hall(workers=1, **kw):
    clock = Clock()
    return Hall(workers, clock=clock, start=False, **kw), clock


def timed(clock, seconds, value=None):
    """A job that takes `seconds` of the fake clock."""

    def job():
        clock.now += seconds
        return value

    return job


def test_places_count_the_runs_ahead_first_come_first_served():
    h, clock = hall()
    tickets = [h.submit(f"run{i}", timed(clock, 2, i), f"s{i}") for i in range(4)]
    assert [h.place(t).ahead for t in tickets] == [0, 1, 2, 3]  # nothing running yet: s0 is next
    assert all(h.place(t).state == QUEUED for t in tickets)
    assert h.run_next(block=False)
    assert h.result(tickets[0]) == 0
    assert [h.place(t).ahead for t in tickets[1:]] == [0, 1, 2]
    while h.run_next(block=False):
        pass
    assert [h.result(t) for t in tickets] == [0, 1, 2, 3]  # in the order they came


def test_no_estimate_until_a_run_is_timed_then_the_median_of_recent_runs():
    h, clock = hall()
    first = h.submit("a", timed(clock, 3), "s1")
    assert h.place(first).estimate_s is None  # nothing timed yet: the page says so (test_messages)
    h.run_next(block=False)
    for i in range(3):
        h.submit(f"b{i}", timed(clock, 3), f"t{i}")
    last = h.submit("c", timed(clock, 3), "u")
    assert h.place(last) == Place(QUEUED, ahead=3, estimate_s=12.0)  # 3 ahead of 3 s each, then its own 3 s


def test_a_kind_not_timed_yet_is_estimated_from_the_runs_timed_so_far_and_said_to_be_a_guess():
    """A queued bundle behind runs, before any bundle was built: its wait is not left unknown when runs of another
    kind have been timed; their median stands in, and the page says it is a guess."""
    h, clock = hall()
    h.submit("warm", timed(clock, 4), "s")
    h.run_next(block=False)  # one run of 4 s timed, no bundle yet
    h.submit("r", timed(clock, 4), "s1")
    bundle = h.submit("b", timed(clock, 10), "s2", kind="bundle")
    assert h.place(bundle) == Place(QUEUED, ahead=1, estimate_s=8.0, guessed=True)
    assert waiting_message(h.place(bundle)).startswith(
        "Your run is 2nd in line (1 run ahead of yours), about 8 s (a guess: runs like this one have not been timed "
        "here yet)."
    )
    h.run_next(block=False)
    h.run_next(block=False)  # the bundle is timed now: 10 s
    later = [h.submit("r2", timed(clock, 4), "t1"), h.submit("b2", timed(clock, 10), "t2", kind="bundle")]
    assert h.place(later[1]) == Place(QUEUED, ahead=1, estimate_s=14.0)  # its own kind's time: no guess


def test_the_estimate_counts_what_a_running_run_has_left_and_every_worker():
    h, clock = hall(workers=2)
    h.submit("warm", timed(clock, 4), "s")
    h.run_next(block=False)  # one run of 4 s timed
    release = threading.Event()

    def slow():
        release.wait(5)

    running = h.submit("slow", slow, "s1")
    worker = threading.Thread(target=h.run_next)
    worker.start()
    while h.place(running).state != RUNNING:
        pass
    clock.now += 1  # the running run has 3 s of its 4 left
    queued = [h.submit(f"q{i}", timed(clock, 4), f"q{i}") for i in range(3)]
    # workers free at 3 (the running one) and 0 (idle): q0 on the idle one ends at 4, q1 at 3+4=7, q2 at 4+4=8
    assert [h.place(t).estimate_s for t in queued] == [4.0, 7.0, 8.0]
    assert [h.place(t).ahead for t in queued] == [1, 2, 3]
    assert h.place(running) == Place(RUNNING, 0, 3.0)
    release.set()
    worker.join()


def test_finish_time_simulates_the_workers():
    cost = {"run": 2.0, "bundle": 10.0}.get
    assert finish_time([0.0], [], "run", cost) == 2.0
    assert finish_time([1.0], ["bundle", "run"], "run", cost) == 15.0  # 1 + 10 + 2 + 2
    assert finish_time([0.0, 0.0], ["bundle", "run"], "run", cost) == 4.0  # the second worker takes both runs
    assert finish_time([0.0], ["new kind"], "run", cost) is None


def test_equal_keys_are_one_run_and_a_finished_one_is_handed_out_again():
    h, clock = hall()
    calls = []

    def job():
        calls.append(1)
        return "trace"

    a, b = h.submit("same", job, "s1"), h.submit("same", job, "s2")
    assert a.job is b.job
    h.run_next(block=False)
    assert h.result(a) == h.result(b) == "trace"
    again = h.submit("same", job, "s3")
    assert h.place(again).state == DONE and h.result(again) == "trace"
    assert not h.run_next(block=False)
    assert len(calls) == 1


def test_uncached_runs_run_each_time():
    h, _ = hall()
    calls = []
    for _ in range(2):
        t = h.submit("learns", lambda: calls.append(1) or len(calls), "s1", cache=False)
        h.run_next(block=False)
        assert h.result(t) == len(calls)
    assert len(calls) == 2


def test_a_closed_session_drops_its_queued_run_and_the_others_move_up():
    h, clock = hall()
    ran = []
    first = h.submit("a", lambda: ran.append("a"), "s1")
    closed = h.submit("b", lambda: ran.append("b"), "s2")
    last = h.submit("c", lambda: ran.append("c"), "s3")
    assert h.release(closed)  # s2's tab closed while it was queued: dropped
    assert h.place(closed).state == DROPPED
    assert h.place(last).ahead == 1
    with pytest.raises(RunDropped):
        h.result(closed)
    while h.run_next(block=False):
        pass
    assert ran == ["a", "c"]
    assert h.result(first) is None and h.result(last) is None


def test_a_run_another_session_still_waits_for_is_kept_when_one_closes():
    h, _ = hall()
    one, two = h.submit("shared", lambda: "x", "s1"), h.submit("shared", lambda: "x", "s2")
    assert not h.release(one)
    assert h.place(two).state == QUEUED
    h.run_next(block=False)
    assert h.result(two) == "x"


def test_a_run_nobody_polls_any_more_is_dropped_before_it_runs():
    h, clock = hall(stale_s=10)
    ran = []
    gone = h.submit("gone", lambda: ran.append("gone"), "s1")
    kept = h.submit("kept", lambda: ran.append("kept"), "s2")
    clock.now += 11
    h.place(kept)  # s2 still polls; s1's thread died without a word
    assert h.place(kept).ahead == 0  # the abandoned run ahead is not counted
    while h.run_next(block=False):
        pass
    assert ran == ["kept"]
    assert gone.job.state == DROPPED


def test_a_disconnected_sessions_queued_run_is_skipped_and_its_late_release_says_dropped():
    connected = {"s1": True, "s2": True, "s3": True}
    h, _ = hall(alive=lambda session: connected[session])
    ran = []
    h.submit("a", lambda: ran.append("a"), "s1")
    closed = h.submit("b", lambda: ran.append("b"), "s2")
    last = h.submit("c", lambda: ran.append("c"), "s3")
    connected["s2"] = False  # its websocket closed; its waiting loop has not heard yet
    assert h.place(last).ahead == 1
    while h.run_next(block=False):
        pass
    assert ran == ["a", "c"]
    assert closed.job.state == DROPPED
    assert h.release(closed)  # the loop hears of the close later: the run was dropped, not kept


def test_asking_for_another_run_gives_up_the_sessions_earlier_queued_one():
    h, _ = hall()
    ran = []
    h.submit("block", lambda: ran.append("block"), "other")
    earlier = h.submit("k=2", lambda: ran.append("k=2"), "s1")
    later = h.submit("k=4", lambda: ran.append("k=4"), "s1")  # the viewer changed K while waiting
    assert earlier.job.state == DROPPED
    assert h.place(later).ahead == 1
    while h.run_next(block=False):
        pass
    assert ran == ["block", "k=4"]


def test_a_failing_run_tells_its_own_session_and_frees_its_place():
    h, clock = hall()

    def broken():
        raise RuntimeError("CUDA out of memory\nmore lines")

    bad = h.submit("bad", broken, "s1")
    good = h.submit("good", lambda: "fine", "s2")
    h.run_next(block=False)
    assert h.place(bad).state == "failed"
    with pytest.raises(RunFailed, match=r"RuntimeError: CUDA out of memory\)\. Its place in the queue is freed"):
        h.result(bad)
    assert h.place(good).ahead == 0  # the worker is free for the next
    h.run_next(block=False)
    assert h.result(good) == "fine"
    retry = h.submit("bad", lambda: "ok now", "s1")  # a failure is not kept: asking again runs again
    h.run_next(block=False)
    assert h.result(retry) == "ok now"


def test_a_settings_error_reaches_the_page_as_itself():
    h, _ = hall()

    def refused():
        raise SettingsError("K must be at most 8")

    t = h.submit("k=99", refused, "s1")
    h.run_next(block=False)
    with pytest.raises(SettingsError, match="K must be at most 8"):
        h.result(t)


def test_the_queue_cap_refuses_with_a_message():
    h, _ = hall(max_queued=2)
    h.submit("a", lambda: 1, "s1")
    h.submit("b", lambda: 1, "s2")
    with pytest.raises(HallFull, match=r"queue for model runs is full \(2 runs waiting\).*bundled lecture traces"):
        h.submit("c", lambda: 1, "s3")
    h.submit("a", lambda: 1, "s4")  # joining a queued run adds nothing to the queue


def test_the_per_client_cap_refuses_a_second_tabs_run_while_the_first_runs():
    h, clock = hall(per_client=1)
    h.submit("timing", timed(clock, 2), "x")
    h.run_next(block=False)
    release = threading.Event()
    first = h.submit("mine", lambda: release.wait(5), "tab1", client="203.0.113.7")
    worker = threading.Thread(target=h.run_next)
    worker.start()
    while h.place(first).state != RUNNING:
        pass
    with pytest.raises(
        HallFull, match=r"earlier run is still running \(about 2 s left\)\. .*1 run per visitor at a time, however"
    ):
        h.submit("another", lambda: 1, "tab2", client="203.0.113.7")  # the same visitor's second tab
    h.submit("another", lambda: 1, "s2", client="198.51.100.1")  # another visitor is not capped by its run
    release.set()
    worker.join()
    h.submit("more", lambda: 1, "tab2", client="203.0.113.7")  # after it is done, the visitor may ask again


def rounds(clock, seconds_each=1.0, during=None):
    """A job like the decode loop: a checkpoint before each round of `seconds_each` on the fake clock, for ever
    (until a checkpoint stops it). during(n), if given, is what the rest of the world does before round n."""

    def job():
        for n in itertools.count():
            if during:
                during(n)
            checkpoint()
            clock.now += seconds_each

    return job


def test_forty_tabs_of_one_visitor_get_the_share_of_one_tab_and_cannot_fill_the_queue():
    h, _ = hall(per_client=1, max_queued=40)
    h.submit("tab 0's run", lambda: 1, "tab0", client="203.0.113.7")
    refused = 0
    for i in range(1, 40):
        with pytest.raises(
            HallFull, match=r"Your earlier run, asked for in another tab, is still waiting in the queue"
        ):
            h.submit(f"tab {i}'s run", lambda: 1, f"tab{i}", client="203.0.113.7")
        refused += 1
    assert refused == 39 and h.snapshot()["queued"] == 1
    others = [h.submit(f"visitor {i}", lambda: 1, f"v{i}", client=f"198.51.100.{i}") for i in range(39)]
    assert h.place(others[-1]).ahead == 39  # the other visitors still find 39 places
    joined = h.submit("tab 0's run", lambda: 1, "tab39", client="203.0.113.7")  # the same run: one job, no share
    assert joined.job is h.submit("tab 0's run", lambda: 1, "tab0", client="203.0.113.7").job


def test_a_reload_does_not_free_the_share_while_the_old_run_still_holds_the_worker():
    connected = {"tab": True, "reloaded": True}
    h, clock = hall(per_client=1, alive=lambda session: connected[session])
    said = []

    def reload(n):
        if n == 2:  # mid-run the visitor reloads: the old session is gone, the new one asks for another run
            connected["tab"] = False
            with pytest.raises(HallFull) as refused:
                h.submit("another", lambda: "b", "reloaded", client="203.0.113.7")
            said.append(str(refused.value))

    old = h.submit("long", rounds(clock, during=reload), "tab", client="203.0.113.7")
    h.run_next(block=False)  # the old run stops at its next round: nobody waits for it
    assert said == [
        "Your earlier run, whose tab was closed or reloaded, is being stopped: it frees your place at its next step. "
        "This deployment runs 1 run per visitor at a time, however many tabs: start this one again in a moment."
    ]
    assert old.job.state == "failed" and clock.now == 2.0  # two rounds ran, the third did not
    with pytest.raises(RunStopped, match="no tab was waiting for it any more"):
        h.result(old)
    again = h.submit("another", lambda: "b", "reloaded", client="203.0.113.7")  # the worker is free: the share too
    h.run_next(block=False)
    assert h.result(again) == "b"


def test_a_reload_that_asks_for_the_same_run_joins_it_and_keeps_it_running():
    connected = {"tab": True, "reloaded": True}
    h, clock = hall(per_client=1, alive=lambda session: connected[session])
    joined = []

    def reload(n):
        if n == 2:
            connected["tab"] = False
            joined.append(h.submit("long", None, "reloaded", client="203.0.113.7"))
        if n == 5:
            raise StopIteration  # the run's own end

    def job():
        try:
            rounds(clock, during=reload)()
        except StopIteration:
            return "done"

    h.submit("long", job, "tab", client="203.0.113.7")
    h.run_next(block=False)
    assert h.result(joined[0]) == "done"


def test_a_running_job_whose_every_session_went_away_is_stopped_at_its_next_round_and_the_next_runs():
    h, clock = hall()
    ran = []

    def close_tab(n):
        ran.append(n)
        if n == 3:
            h.release(gone)  # its tab closed: nobody waits for it any more

    gone = h.submit("gone", rounds(clock, during=close_tab), "s1")
    nxt = h.submit("next", lambda: "served", "s2")
    assert h.run_next(block=False)
    assert ran == [0, 1, 2, 3]  # round 3's checkpoint stopped it
    assert isinstance(gone.job.error, RunStopped)
    assert h.place(nxt).ahead == 0
    h.run_next(block=False)
    assert h.result(nxt) == "served"


def test_a_running_job_nobody_polls_any_more_is_stopped_but_one_still_polled_runs_on():
    h, clock = hall(stale_s=10)
    polled = []

    def nobody_polls(n):  # s1's page thread died without a word: no heartbeat after round 0
        if n == 12:
            polled.append(n)

    gone = h.submit("gone", rounds(clock, during=nobody_polls), "s1")
    h.run_next(block=False)
    assert isinstance(gone.job.error, RunStopped) and clock.now == 11.0  # stale after 10 s: stopped at round 11
    assert polled == []

    def heartbeat(n):
        h.place(kept)  # its page polls every round
        if n == 20:
            raise StopIteration

    kept = h.submit("kept", rounds(clock, during=heartbeat), "s2")
    h.run_next(block=False)
    assert isinstance(kept.job.error, StopIteration)  # it ran to its own end (round 20), never stopped


def test_a_server_wide_measurement_runs_to_its_end_when_its_tab_closes_and_is_handed_to_the_next_visitor():
    h, clock = hall()

    def close_tab(n):
        if n == 1:
            h.release(first)
        if n == 4:
            raise StopIteration  # its own end

    def measure():
        try:
            rounds(clock, during=close_tab)()
        except StopIteration:
            return "measured"

    first = h.submit("home", measure, "s1", finish_alone=True)
    h.run_next(block=False)
    assert h.result(h.submit("home", measure, "s2")) == "measured"  # kept: the next visitor gets it at once


def test_a_run_past_its_time_budget_is_stopped_with_a_message_naming_the_budget():
    h, clock = hall(budget_s=120)
    long = h.submit("long", rounds(clock, seconds_each=7, during=lambda n: h.place(long)), "s1")  # its page polls
    h.run_next(block=False)
    assert clock.now == 126.0  # 18 rounds of 7 s: the checkpoint at 126 s found the budget spent
    with pytest.raises(RunStopped) as stopped:
        h.result(long)
    assert str(stopped.value) == (
        "This run was stopped after 120 s, this deployment's time budget for one run, so that other visitors' runs "
        "go on. Ask for less: fewer new tokens, a smaller K, or fewer lanes or prompts."
    )


def test_a_progress_report_is_a_checkpoint_too():
    h, clock = hall(budget_s=10)
    reports = []

    def sweep(report):
        for k in range(1, 9):
            clock.now += 4
            report(k / 8, f"K = {k}")
            reports.append(k)

    sweep.reports_progress = True
    t = h.submit("sweep", sweep, "s1", kind="k_sweep")
    h.run_next(block=False)
    assert reports == [1, 2]  # the third report, at 12 s, stopped it
    with pytest.raises(RunStopped, match="stopped after 10 s"):
        h.result(t)


def test_a_queued_run_has_an_estimate_before_any_run_has_finished_from_the_priors_said_to_be_a_guess():
    h, _ = hall(priors={"run": 5.0, "race": 60.0})
    first = h.submit("a", lambda: 1, "s1")
    race = h.submit("r", lambda: 1, "s2", kind="race")
    last = h.submit("b", lambda: 1, "s3")
    assert h.place(first) == Place(QUEUED, 0, 5.0, guessed=True)
    assert h.place(race) == Place(QUEUED, 1, 65.0, guessed=True)
    assert h.place(last) == Place(QUEUED, 2, 70.0, guessed=True)
    assert waiting_message(h.place(last)) == (
        "Your run is 3rd in line (2 runs ahead of yours), about 70 s (a guess: runs like this one have not been timed "
        "here yet). Model runs take turns on this machine's cores."
    )
    budgeted, _ = hall(budget_s=30)  # no prior for a kind: the budget, the most any run takes
    budgeted.submit("a", lambda: 1, "s1", kind="bundle")
    assert budgeted.place(budgeted.submit("b", lambda: 1, "s2", kind="bundle")).estimate_s == 60.0


def test_a_second_sessions_short_run_started_meanwhile_is_served_within_the_time_its_note_states():
    """A visitor's long run has no timing yet and goes on and on; a second session asks for a short run meanwhile.
    The note it is shown ("at most N s") holds: the long run is stopped at its budget and the short one served."""
    h, clock = hall(budget_s=30, priors={"run": 5.0})
    asked = []

    def second_session(n):
        if n == 3:
            ticket = h.submit("short", timed(clock, 2, "short"), "s2")
            asked.append((ticket, clock.now, h.place(ticket)))

    h.submit("long", rounds(clock, during=second_session), "s1")
    h.run_next(block=False)
    ticket, at, place = asked[0]
    assert place == Place(QUEUED, 1, estimate_s=7.0, guessed=True, latest_s=57.0)  # 27 s of budget left, then 30
    note = waiting_message(place)
    assert note == (
        "Your run is 2nd in line (1 run ahead of yours), about 7 s (a guess: runs like this one have not been timed "
        "here yet), at most 60 s. Model runs take turns on this machine's cores."
    )
    h.run_next(block=False)
    assert h.result(ticket) == "short"
    assert clock.now - at <= place.latest_s  # served at 32 s, 29 s after it asked


def test_progress_reported_by_a_running_job_reaches_the_place():
    h, _ = hall()
    seen = []

    def job(report):
        report(0.5, "Decoded 5 of 10 runs")
        seen.append(h.place(t))
        return "raced"

    job.reports_progress = True
    t = h.submit("race", job, "s1")
    h.run_next(block=False)
    assert seen[0].progress == (0.5, "Decoded 5 of 10 runs")
    assert h.result(t) == "raced"


def test_worker_threads_run_jobs_on_their_own():
    h = Hall(2)
    tickets = [h.submit(i, lambda i=i: i * i, f"s{i}") for i in range(5)]
    for t in tickets:
        assert h.wait(t, 10)
    assert [h.result(t) for t in tickets] == [0, 1, 4, 9, 16]


def test_messages():
    assert waiting_message(Place(QUEUED, 3, 4.2)) == (
        "Your run is 4th in line (3 runs ahead of yours), about 4 s. Model runs take turns on this machine's cores."
    )
    assert waiting_message(Place(QUEUED, 1, None)).startswith(
        "Your run is 2nd in line (1 run ahead of yours), with no wait estimate yet: no run has finished on this server "
        "since it started."
    )
    assert waiting_message(Place(QUEUED, 0, 0.3)) == "Your run is next, about 1 s."
    assert waiting_message(Place(RUNNING, 0, 1.6)) == "Running your run now (about 2 s left)."
    assert waiting_message(Place(RUNNING, 0, 150.0, (0.5, "Decoded 5 of 10")), "race") == (
        "Running your race now (about 2 min left): Decoded 5 of 10."
    )
    assert waiting_message(Place(RUNNING), running="Preparing your steps") == "Preparing your steps now."
    assert waiting_message(Place(QUEUED, 2, 23.0)).startswith(
        "Your run is 3rd in line (2 runs ahead of yours), about 25 s."
    )
    numbers = (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111)
    assert " ".join(map(ordinal, numbers)) == "1st 2nd 3rd 4th 11th 12th 13th 21st 22nd 23rd 101st 111th"


def test_workers_from_the_cores():
    assert workers_for(2) == 1 and workers_for(16) == 15 and workers_for(1) == 1 and workers_for(None) == 1
    assert workers_for(2, "3") == 3
    with pytest.raises(SpecvizError, match="SPECVIZ_WORKERS='none' is not a whole number"):
        workers_for(2, "none")
    with pytest.raises(ValueError):
        Hall(0)
