"""The lecture hall: one bounded pool of worker threads that every model run of the app goes through, first come first
served, so a waiting session can be told its place ("3 runs ahead of yours, about 4 s") and work that needs no model
(bundled traces, the player, the calculator) is never stuck behind forty sessions' runs sharing the cores.

Pure (no streamlit): the app's glue is specviz/ui/hall.py. A job is a key (equal keys are one job: two sessions asking
for the same run wait for the same one, and a finished result is handed out again at once), a function to call and
the sessions waiting for it. A waiting session polls `place()`, which is also its heartbeat: a queued job whose every
session has stopped polling for `stale_s` seconds, or that every session has `release()`d (a closed tab), is dropped
without running; a running one is stopped at its next checkpoint (engine/cancel.py: the decode loop's next round, or
its next progress report), and so is one that has run for its time budget (`budget_s`), with a message saying so. A
job that raises frees its worker and hands the error to its own sessions only.

The share caps count per client (a visitor's address, however many tabs or sessions it opens), not per session: a
reload or a second tab gets no second share while the first one's run still holds a worker.

The estimate is a small simulation: each worker is free after its running job's expected remainder, each queued job
ahead takes the next free worker for the median of the last runs of its kind (a kind not timed yet: its prior, given
by the app, else the median of the last runs of every kind, else the time budget; the estimate then says it is a
guess); no job counts for more than the budget. The estimate is when this one is done; with no prior, no run timed
and no budget there is none, and the waiting page says so.
"""

from __future__ import annotations

import itertools
import math
import statistics
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from specviz.engine.cancel import stop_check
from specviz.errors import SpecvizError

QUEUED, RUNNING, DONE, FAILED, DROPPED = "queued", "running", "done", "failed", "dropped"
RECENT = 10  # runs of a kind whose median is its expected duration


class HallFull(SpecvizError):
    """A run refused before it is queued: the queue is full, or this session already has its share waiting."""


class RunFailed(SpecvizError):
    """A run that raised something other than a SpecvizError in the pool (its session is told; the others go on)."""


class RunDropped(SpecvizError):
    """A run dropped from the queue (nobody waited for it any more) that its session asked for after all."""


class RunStopped(SpecvizError):
    """A running job stopped at a checkpoint: its time budget ran out, or nobody waits for it any more."""


@dataclass(frozen=True)
class Place:
    """Where a session's job stands: what a waiting page says."""

    state: str  # queued, running, done, failed, dropped
    ahead: int = 0  # jobs before this one: those running and those queued before it
    estimate_s: float | None = None  # seconds until it is done; None with no prior, no run timed and no budget
    progress: tuple[float, str] | None = None  # a running job's own report: fraction done and what it is doing
    guessed: bool = False  # the estimate stands a prior or other kinds' times in for a kind not timed here yet
    latest_s: float | None = None  # seconds until it is done at the latest: every job takes its whole budget

    @property
    def finished(self) -> bool:
        return self.state in (DONE, FAILED, DROPPED)

    @property
    def position(self) -> int:
        """Its place in line, counting the runs being served: 1 when nothing is ahead of it."""
        return self.ahead + 1


@dataclass
class Job:
    key: Hashable
    fn: Callable
    kind: str
    number: int  # order of arrival
    waiters: dict[str, float] = field(default_factory=dict)  # session -> when it last polled
    state: str = QUEUED
    started: float | None = None
    result: object = None
    error: BaseException | None = None
    progress: tuple[float, str] | None = None
    cached: bool = True  # its result is kept for the next session asking the same key
    clients: set[str] = field(default_factory=set)  # every client that asked for it (the per-client cap)
    stopping: SpecvizError | None = None  # why a checkpoint stopped it (it holds its worker until it unwinds)
    finish_alone: bool = False  # runs to its end when nobody waits any more (its budget still holds)
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Ticket:
    """A session's claim on a job (kept by the session while it waits)."""

    key: Hashable
    session: str
    job: Job


def finish_time(free: list[float], queued_kinds: list[str], own: str, expected: Callable[[str], float | None]):
    """Seconds until a job of kind `own` is done, behind jobs of `queued_kinds` (in order), with workers free after
    `free` seconds each (0 for an idle one): each job takes the first free worker for its kind's expected time.
    None while a kind involved has not been timed yet."""
    costs = [expected(kind) for kind in [*queued_kinds, own]]
    if any(cost is None for cost in costs):
        return None
    free, finish = sorted(free), 0.0
    for cost in costs:
        finish = free.pop(0) + cost
        free.append(finish)
        free.sort()
    return finish


class Hall:
    """The pool. workers: threads that run jobs (started when the first job arrives). max_queued: jobs waiting at
    most (None: no cap). per_client: jobs one client (all its sessions together) may have queued or running at once
    (None: no cap). budget_s: seconds a job may run before a checkpoint stops it (None: no budget). priors: expected
    seconds per kind before a run of it is timed (guesses). keep: finished results kept for another session asking
    the same key. clock: time.monotonic, or a test's. alive(session): whether a session is still connected (a
    closed tab's job is then nobody's)."""

    def __init__(
        self,
        workers: int,
        max_queued: int | None = None,
        per_client: int | None = None,
        stale_s: float = 30.0,
        keep: int = 64,
        clock: Callable[[], float] = time.monotonic,
        start: bool = True,
        alive: Callable[[str], bool] = lambda session: True,
        budget_s: float | None = None,
        priors: dict[str, float] | None = None,
    ):
        if workers < 1:
            raise ValueError(f"a hall needs at least one worker, not {workers}")
        self.workers, self.max_queued, self.per_client = workers, max_queued, per_client
        self.stale_s, self.keep, self.clock, self.alive = stale_s, keep, clock, alive
        self.budget_s, self.priors = budget_s, dict(priors or {})
        self._lock = threading.Condition()
        self._queue: deque[Job] = deque()
        self._running: list[Job] = []
        self._jobs: dict[Hashable, Job] = {}  # queued or running, by key
        self._done: OrderedDict[Hashable, object] = OrderedDict()  # finished results, least recently used first
        self._durations: dict[str, deque[float]] = {}
        self._numbers = itertools.count()
        self._threads: list[threading.Thread] = []
        self._start_threads = start

    # ---- what a session calls ----------------------------------------------------------------------------------
    def submit(
        self,
        key: Hashable,
        fn: Callable,
        session: str,
        kind: str = "run",
        cache: bool = True,
        client: str = "",
        finish_alone: bool = False,
    ) -> Ticket:
        """Ask for the job `key` (fn() computes it): a finished result, the same job another session asked for, or a
        new one at the back of the queue. The session stops waiting for any other job it asked for (a page waits
        for one run at a time: a queued one nobody else waits for is dropped, a running one stopped at its next
        checkpoint). cache False: run afresh and keep nothing (a run that learns from its session). client: who
        the session is (its address; empty: the session itself), whose share the caps count. finish_alone: once
        started, run to the end even when nobody waits any more (a server-wide measurement the next visitor is shown).
        Raises HallFull when the queue or this client's share is full (and then gives up nothing)."""
        client = client or session
        with self._lock:
            if cache and key in self._done:
                self._done.move_to_end(key)
                job = Job(key, fn, kind, -1, state=DONE, result=self._done[key])
                job.done.set()
                return Ticket(key, session, job)
            job = self._jobs.get(key) if cache else None
            if job is None:
                self._refuse_if_full(session, client, key)
            self._release_others(session, key)
            if job is None:
                number = next(self._numbers)
                job = Job(key if cache else (key, number), fn, kind, number, cached=cache, finish_alone=finish_alone)
                self._jobs[job.key] = job
                self._queue.append(job)
                self._ensure_workers()
                self._lock.notify_all()
            job.waiters[session] = self.clock()
            job.clients.add(client)
            return Ticket(job.key, session, job)

    def place(self, ticket: Ticket) -> Place:
        """Where the ticket's job stands now; also the session's heartbeat (it is still waiting)."""
        with self._lock:
            job = ticket.job
            if job.state in (DONE, FAILED, DROPPED):
                return Place(job.state)
            job.waiters[ticket.session] = self.clock()
            now = self.clock()
            cost = self._cost
            if job.state == RUNNING:
                left = self._left(job, now)
                guessed = left is not None and self._expected(job.kind) is None
                return Place(RUNNING, 0, left, job.progress, guessed, self._latest_running(job, now))
            remaining = [self._left(j, now) for j in self._running]
            ahead = [j for j in self._queue if j.number < job.number and not self._abandoned(j, now)]
            idle = [0.0] * (self.workers - len(self._running))
            timed = all(left is not None for left in remaining)
            eta = finish_time(remaining + idle, [j.kind for j in ahead], job.kind, cost) if timed else None
            kinds = {job.kind, *(j.kind for j in ahead), *(j.kind for j in self._running)}
            guessed = eta is not None and any(self._expected(kind) is None for kind in kinds)
            latest = self._latest(ahead, job.kind, now)
            return Place(QUEUED, len(ahead) + len(self._running), eta, guessed=guessed, latest_s=latest)

    def wait(self, ticket: Ticket, timeout: float | None = None) -> bool:
        """Block until the job is finished (True) or timeout seconds pass (False)."""
        return ticket.job.done.wait(timeout)

    def result(self, ticket: Ticket):
        """The finished job's result; its error (a SpecvizError as raised, anything else as RunFailed); RunDropped
        for a job dropped from the queue."""
        job = ticket.job
        if job.state == DONE:
            return job.result
        if job.state == FAILED:
            if isinstance(job.error, SpecvizError):
                raise job.error
            raise RunFailed(failure_message(job.error)) from job.error
        if job.state == DROPPED:
            raise RunDropped("This run was dropped from the queue when nobody was waiting for it: start it again.")
        raise RuntimeError("result() before the job finished: wait() for it first")

    def release(self, ticket: Ticket) -> bool:
        """The session will not wait for this job any more (its tab closed): a queued job nobody waits for is
        dropped now (True); a running one nobody waits for is stopped at its next checkpoint (False, as is a job
        another session still waits for)."""
        with self._lock:
            job = ticket.job
            job.waiters.pop(ticket.session, None)
            if job.state == DROPPED:  # a worker found nobody connected waiting for it
                return True
            if job.state == QUEUED and not job.waiters:
                self._drop(job)
                return True
            return False

    # ---- what the page says about the pool ---------------------------------------------------------------------
    def snapshot(self) -> dict:
        """Counts for a page or a log: queued, running, workers, and the expected seconds of each kind timed."""
        with self._lock:
            kinds = {kind: self._expected(kind) for kind in self._durations}
            return {"queued": len(self._queue), "running": len(self._running), "workers": self.workers, **kinds}

    def expected(self, kind: str) -> float | None:
        with self._lock:
            return self._expected(kind)

    # ---- the workers -------------------------------------------------------------------------------------------
    def run_next(self, block: bool = True) -> bool:
        """Take the next job that someone still waits for and run it; False when there was none (block False).
        The worker threads loop on this; a test calls it itself (start=False) to step the pool."""
        with self._lock:
            job = self._take()
            while job is None and block:
                self._lock.wait()
                job = self._take()
            if job is None:
                return False
            job.state, job.started = RUNNING, self.clock()
            self._running.append(job)

        def report(fraction: float, text: str = "") -> None:  # also a checkpoint: a report is between steps
            job.progress = (float(fraction), str(text))
            self.check(job)

        try:
            with stop_check(lambda: self.check(job)):
                value = job.fn(report) if getattr(job.fn, "reports_progress", False) else job.fn()
            outcome, error = DONE, None
        except Exception as exc:  # noqa: BLE001 - any failure of one run goes to its own sessions, never the pool
            value, outcome, error = None, FAILED, exc
        with self._lock:
            self._running.remove(job)
            if self._jobs.get(job.key) is job:  # a stopped job's key may name a newer job already
                del self._jobs[job.key]
            if outcome == DONE:
                self._durations.setdefault(job.kind, deque(maxlen=RECENT)).append(self.clock() - job.started)
                if job.cached:
                    self._done[job.key] = value
                    while len(self._done) > self.keep:
                        self._done.popitem(last=False)
            job.state, job.result, job.error = outcome, value, error
            job.done.set()
            self._lock.notify_all()
        return True

    def check(self, job: Job) -> None:
        """A running job's checkpoint: raise RunStopped if it has run for its time budget, or if nobody waits for
        it any more. From then on no session joins it (a session asking the same key gets a new job)."""
        with self._lock:
            if job.stopping is None:
                now = self.clock()
                if self.budget_s is not None and now - job.started >= self.budget_s:
                    job.stopping = RunStopped(budget_message(self.budget_s))
                elif not job.finish_alone and self._abandoned(job, now):
                    job.stopping = RunStopped(
                        "This run was stopped: no tab was waiting for it any more. Start it again to see it."
                    )
                else:
                    return
                if self._jobs.get(job.key) is job:
                    del self._jobs[job.key]
            raise job.stopping

    def _worker(self) -> None:
        while True:
            self.run_next()

    def _ensure_workers(self) -> None:
        if not self._start_threads:
            return
        while len(self._threads) < self.workers:
            thread = threading.Thread(target=self._worker, name=f"specviz-hall-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()

    # ---- under the lock ----------------------------------------------------------------------------------------
    def _take(self) -> Job | None:
        now = self.clock()
        while self._queue:
            job = self._queue.popleft()
            if self._abandoned(job, now):
                self._drop(job, from_queue=False)
                continue
            return job
        return None

    def _abandoned(self, job: Job, now: float) -> bool:
        """Nobody waits for the job: every waiter left, stopped asking for stale_s, or its tab is closed."""
        return self._abandoned_by(job.waiters, now)

    def _abandoned_by(self, waiters: dict[str, float], now: float) -> bool:
        return all(now - seen > self.stale_s or not self.alive(session) for session, seen in waiters.items())

    def _drop(self, job: Job, from_queue: bool = True) -> None:
        if from_queue:
            self._queue.remove(job)
        self._jobs.pop(job.key, None)
        job.state = DROPPED
        job.done.set()

    def _release_others(self, session: str, key: Hashable) -> None:
        for job in [j for j in self._queue if session in j.waiters and j.key != key]:
            job.waiters.pop(session)
            if not job.waiters:
                self._drop(job)
        for job in self._running:
            if job.key != key:
                job.waiters.pop(session, None)  # nobody left: its next checkpoint stops it

    def _given_up(self, job: Job, session: str, key: Hashable, now: float) -> bool:
        """Whether asking for `key` makes `session` give up `job`, leaving nobody else waiting for it (a queued one
        is then dropped, a running one stopped within a round): it is not counted against the share."""
        others = {s: seen for s, seen in job.waiters.items() if s != session}
        return job.key != key and session in job.waiters and self._abandoned_by(others, now)

    def _refuse_if_full(self, session: str, client: str, key: Hashable) -> None:
        now = self.clock()
        waiting = [j for j in self._queue if not self._abandoned(j, now) and not self._given_up(j, session, key, now)]
        if self.per_client is not None:
            running = [j for j in self._running if client in j.clients and not self._given_up(j, session, key, now)]
            if len(running) + sum(client in j.clients for j in waiting) >= self.per_client:
                raise HallFull(self._share_message(running, now))
        if self.max_queued is not None and len(waiting) >= self.max_queued:
            raise HallFull(
                f"The queue for model runs is full ({plural(len(waiting), 'run')} waiting): try again in a minute. "
                "The bundled lecture traces replay with no model and open at once."
            )

    def _share_message(self, running: list[Job], now: float) -> str:
        """What a client told its share is full hears: what holds it (a run of its, running or queued from another
        tab or session), when it is free, and the cap, which is per visitor however many tabs."""
        share = f"This deployment runs {plural(self.per_client, 'run')} per visitor at a time, however many tabs"
        if not running:
            return (
                f"Your earlier run, asked for in another tab, is still waiting in the queue. {share}: wait for that "
                "one, or close its tab and start this one again."
            )
        first = running[0]
        if first.stopping is not None or self._abandoned(first, now):
            return (
                "Your earlier run, whose tab was closed or reloaded, is being stopped: it frees your place at its next "
                f"step. {share}: start this one again in a moment."
            )
        left = self._left(first, now)
        when = f" (about {seconds(left)} left)" if left is not None else ""
        return f"Your earlier run is still running{when}. {share}: start this one when it is drawn."

    def _latest(self, ahead: list[Job], own: str, now: float) -> float | None:
        """When a queued job is done at the latest: every job, the running ones too, taking its whole budget (None
        with no budget). A checkpoint stops a job within a step of its budget; that step is the slack left out."""
        if self.budget_s is None:
            return None
        idle = [0.0] * (self.workers - len(self._running))
        free = [self._latest_running(j, now) for j in self._running] + idle
        return finish_time(free, [j.kind for j in ahead], own, lambda kind: self.budget_s)

    def _latest_running(self, job: Job, now: float) -> float | None:
        return None if self.budget_s is None else max(0.0, self.budget_s - (now - job.started))

    def _left(self, job: Job, now: float) -> float | None:
        """A running job's expected remainder (its kind's cost less its time so far; never past its budget)."""
        cost = self._cost(job.kind)
        return None if cost is None else max(0.0, cost - (now - job.started))

    def _expected(self, kind: str) -> float | None:
        recent = self._durations.get(kind)
        return statistics.median(recent) if recent else None

    def _cost(self, kind: str) -> float | None:
        """A kind's expected time for an estimate: its own median, else its prior (a guess), else the median of the
        recent runs of every kind (a guess), else the budget (the most any run takes), else None; never more than
        the budget, which stops any run that reaches it."""
        own = self._expected(kind)
        if own is None:
            own = self.priors.get(kind)
        if own is None:
            every = [d for recent in self._durations.values() for d in recent]
            own = statistics.median(every) if every else None
        if self.budget_s is None:
            return own
        return self.budget_s if own is None else min(own, self.budget_s)


def workers_for(cores: int | None, setting: str | None = None) -> int:
    """How many runs at once: the setting (a whole number of at least 1) if given, else one per core but one, so a
    core stays free for everything that needs no model (the pages, the player, bundled traces); at least one."""
    if setting is not None and setting.strip():
        try:
            value = int(setting.strip())
        except ValueError:
            value = 0
        if value < 1:
            raise SpecvizError(f"SPECVIZ_WORKERS={setting!r} is not a whole number of at least 1.")
        return value
    return max(1, (cores or 1) - 1)


def seconds(value: float, up: bool = False) -> str:
    """A wait as a person reads it after "about": "1 s" (never less), "4 s", "25 s" (to 5 s from 10 s on: the words
    change less often than the seconds), "2 min". up: rounded up, for a wait said after "at most"."""
    step = math.ceil if up else round
    if value < 10:
        return f"{max(1, step(value))} s"
    if value < 90:
        return f"{5 * step(value / 5)} s"
    return f"{step(value / 60)} min"


def budget_message(budget_s: float) -> str:
    """What a run stopped by its time budget tells its page: the budget, why, and how to ask for less."""
    return (
        f"This run was stopped after {budget_s:.0f} s, this deployment's time budget for one run, so that other "
        "visitors' runs go on. Ask for less: fewer new tokens, a smaller K, or fewer lanes or prompts."
    )


def failure_message(error: BaseException | None) -> str:
    kind = type(error).__name__ if error is not None else "an unknown error"
    text = str(error).strip().splitlines()[0][:200] if error is not None and str(error).strip() else ""
    return (
        f"This run failed in the model pool ({kind}{': ' + text if text else ''}). Its place in the queue is freed "
        "and the other sessions' runs go on; try other settings, or a shorter prompt."
    )


def waiting_message(place: Place, what: str = "run", running: str = "") -> str:
    """What a waiting session is told: "Your run is 4th in line (3 runs ahead of yours), about 4 s", "Your run is
    next, about 1 s", "Running your run now (about 1 s left)". running: what a running job is doing, in place of
    "Running your run"."""
    latest = "" if place.latest_s is None else f", at most {seconds(place.latest_s, up=True)}"
    eta = "" if place.estimate_s is None else f", about {seconds(place.estimate_s)}"
    if place.guessed:
        eta += " (a guess: runs like this one have not been timed here yet)"
    eta += latest if place.estimate_s is not None else ""
    if place.state == RUNNING:
        doing = f": {place.progress[1]}" if place.progress and place.progress[1] else ""
        left = "" if place.estimate_s is None else f" (about {seconds(place.estimate_s)} left{latest})"
        return f"{running or f'Running your {what}'} now{left}{doing}."
    if place.ahead == 0:
        return f"Your {what} is next{eta}."
    if place.estimate_s is None:
        eta = ", with no wait estimate yet: no run has finished on this server since it started"
    return (
        f"Your {what} is {ordinal(place.position)} in line ({plural(place.ahead, 'run')} ahead of yours){eta}. "
        "Model runs take turns on this machine's cores."
    )


def ordinal(number: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd."""
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
