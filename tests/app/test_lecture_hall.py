"""The round page's model runs go through the lecture hall (specviz.engine.hall): a run that fails there, or that the
queue refuses, is said on its own page; the place is freed for the next run."""

import threading

import pytest
from app_helpers import click, open_page

import specviz.ui.hall as ui_hall
from specviz.ui.limits import Limits


@pytest.fixture(autouse=True)
def fresh_halls():
    """Each test its own pool: a run another test finished is not handed out again here."""
    ui_hall._HALLS.clear()
    yield
    ui_hall._HALLS.clear()


def test_a_run_that_fails_in_the_pool_is_said_and_the_next_run_goes_ahead(tiny_default, monkeypatch):
    import specviz.ui.render as render

    real = render.generate

    def broken(*args, **kwargs):
        raise RuntimeError("the worker ran out of memory\nTraceback lines a viewer should not see")

    monkeypatch.setattr(render, "generate", broken)
    at = open_page("pages/rounds.py")
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors == [
        "This run failed in the model pool (RuntimeError: the worker ran out of memory). Its place in the queue is "
        "freed and the other sessions' runs go on; try other settings, or a shorter prompt."
    ]
    monkeypatch.setattr(render, "generate", real)
    at = click(at, "▶ New run with these settings")  # the pool's worker is free: the same run now succeeds
    assert not at.exception and not at.error
    assert any(c.value.startswith("Round 1 of") for c in at.caption)


def test_a_full_queue_refuses_the_run_with_a_message_in_public_mode(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_MAX_QUEUED", "1")
    hall = ui_hall.lecture_hall(Limits.from_env())
    release, started = threading.Event(), threading.Event()

    def lecturer_run():
        started.set()
        release.wait(60)

    running = hall.submit("busy", lecturer_run, "lecturer")
    assert started.wait(30)
    waiting = hall.submit("queued", lambda: None, "student")  # the one place in the queue is taken
    try:
        at = open_page("pages/rounds.py")
        assert not at.exception
        assert [e.value for e in at.error] == [
            "The queue for model runs is full (1 run waiting): try again in a minute. The bundled lecture traces "
            "replay with no model and open at once."
        ]
    finally:
        release.set()
    assert hall.wait(running, 30) and hall.wait(waiting, 30)
    at = click(at, "▶ New run with these settings")  # the queue is free again
    assert not at.exception and not at.error


def busy_hall(monkeypatch, client: str):
    """The public pool with one run of `client` holding its one worker (from another tab, still connected and
    never stale); release() lets it end."""
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_WORKERS", "1")
    monkeypatch.setattr(ui_hall, "session_connected", lambda session: True)
    hall = ui_hall.lecture_hall(Limits.from_env())
    hall.stale_s = float("inf")
    release, started = threading.Event(), threading.Event()

    def other_tabs_run():
        started.set()
        release.wait(60)

    running = hall.submit("busy", other_tabs_run, "other-tab", client=client)
    assert started.wait(30)
    return hall, running, release


def test_a_visitors_second_tab_is_refused_while_its_first_tabs_run_holds_the_worker(tiny_default, monkeypatch):
    monkeypatch.setattr(ui_hall, "client_id", lambda session, limits: "address:203.0.113.7")  # one visitor, two tabs
    hall, running, release = busy_hall(monkeypatch, "address:203.0.113.7")
    try:
        at = open_page("pages/rounds.py")
        assert not at.exception
        [error] = [e.value for e in at.error]
        assert error.startswith("Your earlier run is still running")
        assert error.endswith(
            "This deployment runs 1 run per visitor at a time, however many tabs: start this one when it is drawn."
        )
    finally:
        release.set()
    assert hall.wait(running, 30)
    at = click(at, "▶ New run with these settings")  # its first tab's run is done: the share is free
    assert not at.exception and not at.error


def test_a_queued_run_is_told_its_place_and_an_estimate_before_any_run_has_finished(monkeypatch):
    hall, running, release = busy_hall(monkeypatch, "address:198.51.100.1")
    try:
        place = hall.place(hall.submit("queued", lambda: None, "s2", client="address:203.0.113.7"))
        words = ui_hall.waiting_message(place) + ui_hall.public_words(Limits.from_env())
    finally:
        release.set()
    assert place.ahead == 1 and place.guessed  # nothing timed yet: the priors stand in, said to be a guess
    assert 0 < place.estimate_s <= 2 * ui_hall.PRIORS_S["run"] and 0 < place.latest_s <= 240
    assert words.startswith("Your run is 2nd in line (1 run ahead of yours), about ")
    assert words.endswith(
        "(Public mode: 1 run per visitor at a time, however many tabs; a run may take at most 120 s.)"
    )


def test_a_run_that_reaches_its_time_budget_is_stopped_and_the_page_says_why(tiny_default, monkeypatch):
    import specviz.ui.render as render
    from specviz.engine.cancel import checkpoint

    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_MAX_RUN_SECONDS", "5")
    hall = ui_hall.lecture_hall(Limits.from_env())
    now = [0.0]
    hall.clock = lambda: now[0]  # the run's rounds move this clock, a second each: no real waiting

    def endless(*args, **kwargs):
        while True:
            checkpoint()
            now[0] += 1

    monkeypatch.setattr(render, "generate", endless)
    at = open_page("pages/rounds.py")
    assert not at.exception
    assert [e.value for e in at.error] == [
        "This run was stopped after 5 s, this deployment's time budget for one run, so that other visitors' runs go "
        "on. Ask for less: fewer new tokens, a smaller K, or fewer lanes or prompts."
    ]


def test_a_visitor_is_its_address_or_what_the_trusted_proxy_forwards():
    key = ui_hall.client_key
    assert key(None, "203.0.113.7", "s1", trust_proxy=False) == "address:203.0.113.7"
    assert key("198.51.100.9", "203.0.113.7", "s1", trust_proxy=False) == "address:203.0.113.7"  # not trusted
    spoofed = "1.2.3.4, 5.6.7.8, 198.51.100.9"  # the visitor wrote the first two; the proxy appended the last
    assert key(spoofed, "10.0.0.2", "s1", trust_proxy=True) == "address:198.51.100.9"
    assert key(None, "10.0.0.2", "s1", trust_proxy=True) == "address:10.0.0.2"  # no header: the connection
    assert key(None, "2001:db8:1:2::5", "s1", False) == key(None, "2001:db8:1:2:ffff::9", "s2", False)  # one /64
    assert key(None, "2001:db8:1:3::5", "s1", False) != key(None, "2001:db8:1:2::5", "s1", False)
    assert key(None, "::ffff:203.0.113.7", "s1", False) == "address:203.0.113.7"
    assert key(None, None, "s1", False) == "session:s1"  # no request at all (a script): the session itself
    assert key(None, "localhost", "s1", False) == key(None, "localhost", "s2", False) == "address:localhost"
