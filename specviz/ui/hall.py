"""The lecture hall's Streamlit side: every model run of a page goes through the one pool (specviz.engine.hall) shared
by all sessions, and the waiting session is told its place and an estimate ("3 runs ahead of yours, about 4 s").

The waiting page polls the pool a few times a second and redraws its message when its words change; a redraw is how
Streamlit tells a session that its tab closed (the rerun is stopped: StopException), so a poll that finds a stop
requested redraws at once, and the session's queued run is then dropped before a worker can start it. A worker also
skips a queued run whose every session is disconnected (Streamlit knows at once, the page only at its next redraw).
A rerun of the page while it waits (a widget touched) keeps the place: the rerun asks for the same run and finds it
queued. A run that fails raises its error here, in its own session only.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Hashable

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from specviz.engine.hall import Hall, plural, waiting_message, workers_for
from specviz.ui.limits import Limits

POLL_S = 0.5  # how often a waiting page asks for its place (redrawn when its words change)
KEEPALIVE_S = 3.0  # redrawn at least this often even so: a redraw is where a closed tab's session learns it stopped
WORKERS_ENV = "SPECVIZ_WORKERS"  # how many runs at once (default: one per core but one, at least one)
LOG = logging.getLogger("specviz.hall")  # said in the server's log: a closed tab's queued run dropped
_HALLS: dict[tuple, Hall] = {}
_LOCK = threading.Lock()


class _QuietWorkers(logging.Filter):
    """The pool's threads warm Streamlit's caches (st.cache_data) with no script run of their own: Streamlit would
    log 'missing ScriptRunContext' on every such call."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not threading.current_thread().name.startswith("specviz-hall")


logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_QuietWorkers())


def lecture_hall(limits: Limits | None = None) -> Hall:
    """The one pool of this server for these limits (a module-level singleton: every session's script thread finds
    the same one; tests that change the limits get their own)."""
    limits = limits or Limits.from_env()
    workers = workers_for(os.cpu_count(), os.environ.get(WORKERS_ENV))
    config = (workers, limits.max_queued, limits.runs_per_session if limits.public else None)
    with _LOCK:
        if config not in _HALLS:
            _HALLS[config] = Hall(workers, max_queued=config[1], per_session=config[2], alive=session_connected)
        return _HALLS[config]


def session_id() -> str:
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else "no-session"


def session_connected(session: str) -> bool:
    """Whether the session's tab is still connected (Streamlit marks it inactive when its websocket closes), so a
    worker skips a closed tab's queued run even before that session's waiting loop hears of the close."""
    return session == "no-session" or not Runtime.exists() or Runtime.instance().is_active_session(session)


def stop_requested() -> bool:
    """Whether Streamlit asked this script run to stop (its tab closed): it says so only at the next element drawn,
    so the waiting loop looks here to draw one at once. Reads the pinned Streamlit's request state (no getter)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    requests = getattr(ctx, "script_requests", None)
    return getattr(requests, "_state", None) == ScriptRequestType.STOP


def in_the_hall(
    kind: str, key: Hashable, fn: Callable, what: str = "run", cache: bool = True, running: str = "", keep: str = ""
):
    """fn()'s value, computed in the pool (or handed out again: equal keys are one run). While it waits, the page
    shows its place and an estimate where this is called. fn may report progress: see `reporting`. keep: a name the
    run's ticket is kept under in the session until it is done, so that a rerun of the page meanwhile (a widget
    touched, another button pressed) waits for it again with `resume` instead of losing it. Raises HallFull (the
    queue or this session's share is full), the run's own SpecvizError, or RunFailed for anything else."""
    limits = Limits.from_env()
    hall = lecture_hall(limits)
    ticket = hall.submit((kind, key), fn, session_id(), kind, cache)
    if keep:
        st.session_state[keep] = (hall, ticket, kind, what, running)
    return _waited(hall, ticket, kind, what, running, keep)


def resume(keep: str):
    """The page's own run kept under `keep` that a rerun interrupted, waited for again where this is called: its
    result, or None when there is none (never started, or already handed out)."""
    kept = st.session_state.get(keep)
    return None if kept is None else _waited(*kept, keep)


def forget(keep: str) -> None:
    """The kept run is handed out (or given up): a later rerun does not wait for it again."""
    if keep:
        st.session_state.pop(keep, None)


def _waited(hall: Hall, ticket, kind: str, what: str, running: str, keep: str):
    """Wait for the ticket's job, telling the page its place, then its result (or error); forgets `keep` then."""
    limits = Limits.from_env()
    if not hall.wait(ticket, 0):
        box, shown, drawn_at = st.empty(), None, 0.0
        try:
            while not hall.wait(ticket, POLL_S):
                message = waiting_message(hall.place(ticket), what, running)
                if limits.public:
                    message += f" (Public mode: {plural(limits.runs_per_session, 'run')} per session at a time.)"
                stale = time.monotonic() - drawn_at > KEEPALIVE_S
                if message != shown or stale or stop_requested():  # drawing is where a closed tab raises
                    box.info(message, icon=":material/hourglass_top:")
                    shown, drawn_at = message, time.monotonic()
        except StopException:  # the tab closed (or the viewer pressed Stop): a run still queued is dropped
            dropped = hall.release(ticket)
            forget(keep)
            LOG.warning(
                "a session stopped waiting for its %s: %s", kind, "dropped from the queue" if dropped else "kept"
            )
            raise
        box.empty()
    forget(keep)
    return hall.result(ticket)


def reporting(fn: Callable[[Callable[[float, str], None]], object]) -> Callable:
    """Mark fn as taking a progress callback report(fraction, text): the waiting page shows what it reports."""
    fn.reports_progress = True
    return fn
