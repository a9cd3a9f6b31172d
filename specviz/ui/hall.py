"""The lecture hall's Streamlit side: every model run of a page goes through the one pool (specviz.engine.hall) shared
by all sessions, and the waiting session is told its place and an estimate ("Your run is 4th in line (3 runs ahead of
yours), about 15 s").

The waiting page polls the pool a few times a second and redraws its message when its words change; a redraw is how
Streamlit tells a session that its tab closed (the rerun is stopped: StopException), so a poll that finds a stop
requested redraws at once, and the session's queued run is then dropped before a worker can start it. A worker also
skips a queued run whose every session is disconnected (Streamlit knows at once, the page only at its next redraw).
A rerun of the page while it waits (a widget touched) keeps the place: the rerun asks for the same run and finds it
queued. A run that fails raises its error here, in its own session only.

In public mode the share is a visitor's, not a tab's: the client is the connection's address (or, behind the
operator's proxy, SPECVIZ_TRUSTED_PROXY, the address it forwards), so more tabs, reloads or scripted sessions get no
more runs at once; each run may take SPECVIZ_MAX_RUN_SECONDS, and a run whose tabs all closed is stopped.
"""

from __future__ import annotations

import ipaddress
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
PRIORS_S = {  # a kind's expected seconds until one is timed here: guesses on the high side, said to be guesses
    "run": 10.0,  # a live run of the public caps (64 tokens) on two busy cores; bundled-pair runs take 0.3-4 s
    "bundle": 3.0,  # a run's player bundle (under 0.5 s measured)
    "versus_plain": 30.0,  # the home page's measurement: plain and speculative, each timed more than once
    "race": 60.0,  # every lane, each repeated
    "k_sweep": 60.0,  # every K of the sweep
}
FORWARDED = "X-Forwarded-For"
_UNTRUSTED_SAID: list[bool] = []  # the log said once that a forwarded address was ignored
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
    per_client = limits.runs_per_client if limits.public else None
    config = (workers, limits.max_queued, per_client, limits.max_run_seconds or None)
    with _LOCK:
        if config not in _HALLS:
            _HALLS[config] = Hall(
                workers, config[1], config[2], budget_s=config[3], priors=PRIORS_S, alive=session_connected
            )
        return _HALLS[config]


def session_id() -> str:
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else "no-session"


def client_id(session: str, limits: Limits) -> str:
    """Who this session's visitor is, for the hall's share: its address as client_key reads it from Streamlit's
    request (st.context), or the session itself where there is no request (a test, a script)."""
    if not Runtime.exists():
        return client_key(None, None, session, limits.trusted_proxy)
    headers = st.context.headers
    forwarded = ",".join(headers.get_all(FORWARDED)) or None
    if forwarded and limits.public and not limits.trusted_proxy and not _UNTRUSTED_SAID:
        _UNTRUSTED_SAID.append(True)
        LOG.warning(
            "requests carry %s but SPECVIZ_TRUSTED_PROXY is off: each visitor is its connection's address (behind a "
            "proxy, every visitor shares the proxy's one share; set SPECVIZ_TRUSTED_PROXY=1 there)",
            FORWARDED,
        )
    address = st.context.ip_address or ("localhost" if len(headers) else None)  # Streamlit hides a loopback address
    return client_key(forwarded, address, session, limits.trusted_proxy)


def client_key(forwarded: str | None, address: str | None, session: str, trust_proxy: bool) -> str:
    """A visitor's key: with trust_proxy, the last address of X-Forwarded-For (the one the operator's proxy
    appended; those before it the visitor may have written), else the connection's address, else the session. An
    IPv6 address counts by its /64, the block one household or host is given."""
    if trust_proxy and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        address = hops[-1] if hops else address
    if not address:
        return f"session:{session}"
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return f"address:{address.strip()}"
    if ip.version == 6:
        if ip.ipv4_mapped is not None:  # ::ffff:203.0.113.7 is 203.0.113.7
            return f"address:{ip.ipv4_mapped}"
        return f"address:{ipaddress.ip_network(f'{ip}/64', strict=False)}"
    return f"address:{ip}"


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
    kind: str,
    key: Hashable,
    fn: Callable,
    what: str = "run",
    cache: bool = True,
    running: str = "",
    keep: str = "",
    finish_alone: bool = False,
):
    """fn()'s value, computed in the pool (or handed out again: equal keys are one run). While it waits, the page
    shows its place and an estimate where this is called. fn may report progress: see `reporting`. keep: a name the
    run's ticket is kept under in the session until it is done, so that a rerun of the page meanwhile (a widget
    touched, another button pressed) waits for it again with `resume` instead of losing it. finish_alone: a run every
    visitor is shown (the home page's), finished even when its tab closes. Raises HallFull (the queue or this
    visitor's share is full), RunStopped (its budget ran out), the run's own SpecvizError, or RunFailed for anything
    else."""
    limits = Limits.from_env()
    hall = lecture_hall(limits)
    session = session_id()
    ticket = hall.submit((kind, key), fn, session, kind, cache, client_id(session, limits), finish_alone)
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
                message = waiting_message(hall.place(ticket), what, running) + public_words(limits)
                stale = time.monotonic() - drawn_at > KEEPALIVE_S
                if message != shown or stale or stop_requested():  # drawing is where a closed tab raises
                    box.info(message, icon=":material/hourglass_top:")
                    shown, drawn_at = message, time.monotonic()
        except StopException:  # the tab closed (or the viewer pressed Stop): its run is dropped, or stopped
            dropped = hall.release(ticket)
            forget(keep)
            fate = "dropped from the queue" if dropped else "stopped at its next step unless another session waits"
            LOG.warning("a session stopped waiting for its %s: %s", kind, fate)
            raise
        box.empty()
    forget(keep)
    return hall.result(ticket)


def public_words(limits: Limits) -> str:
    """What a waiting page adds in public mode: the share and the budget, which the estimate's "at most" rests on."""
    if not limits.public:
        return ""
    budget = f"; a run may take at most {limits.max_run_seconds} s" if limits.max_run_seconds else ""
    return f" (Public mode: {plural(limits.runs_per_client, 'run')} per visitor at a time, however many tabs{budget}.)"


def reporting(fn: Callable[[Callable[[float, str], None]], object]) -> Callable:
    """Mark fn as taking a progress callback report(fraction, text): the waiting page shows what it reports."""
    fn.reports_progress = True
    return fn
