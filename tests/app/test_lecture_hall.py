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
