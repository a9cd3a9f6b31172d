"""The load sweep through vLLM: the same prompts through a plain server and speculative ones, at each concurrency.

    baseline = connect_plain(PLAIN_URL, model=spec.model)      # refuses one that speculates or serves another model
    for level in sweep([spec], baseline, prompts, settings, [1, 2, 4]):   # {concurrency, runs: [LevelRun, ...]}
        ...                                                      # measure/concurrency.py turns them into numbers

Each request is streamed (/v1/completions with "stream": true and usage, so the last event carries the token count
and, with --per-request-spec-decode-metrics, the speculative-decoding block): its time to first token, every event's
arrival and tokens, its end. A level is a closed loop: N threads each send the next prompt (round the list) as soon
as their last request finished, until every prompt was sent equally often, at least 2N requests in all; N warm-up
requests go first and are not counted. Levels run in order, the plain server first at each; a server that fails
stops the sweep with SweepFailed, the finished levels kept.

Faults under load (each stops the sweep at its level, with a message naming the server and the level):
- HTTP 429 / 503: the server is overloaded at that concurrency (Overloaded: the status, how many of the requests sent
  were refused). A Retry-After of at most MAX_RETRY_WAIT_S is honoured once per level and server (RetryBudget): a level
  waits at most that much longer and sends at most one request twice.
- a request slower than the endpoint's timeout (LevelTimedOut: names the timeout).
Either way the loop stops sending, the requests in flight finish, and every thread ends. Other clients' requests are
not a fault: where /metrics has counters, those read around each server's level that moved beyond the sweep's own
requests and tokens (vllm.other_traffic) flag the level (LevelRun.other_traffic), which is kept.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.errors import SettingsError, SpecvizError
from specviz.measure.concurrency import FAILED, OVERLOADED, TIMED_OUT, LevelRun, RequestTiming, failure_words, machine
from specviz.measure.concurrency import document as document_of
from specviz.remote import answers, vllm
from specviz.remote.answers import bad, whole
from specviz.remote.errors import ServerError, ServerHTTPError, ServerTimeout, SpeculationOff
from specviz.remote.http import DEFAULT_TIMEOUT_S, Endpoint, parse_url, stream
from specviz.remote.vllm import Server, redacting

MAX_CONCURRENCY = 256
OVERLOAD_STATUSES = (429, 503)  # a server (or a proxy before it) refusing work it has no room for
REASONS = {429: "Too Many Requests", 503: "Service Unavailable"}
MAX_RETRY_WAIT_S = 10.0  # the longest Retry-After honoured, once per level and server: a level waits at most this
LOOP_THREADS = "specviz-load"  # the closed loop's threads' name prefix (a test checks none is left running)


class DifferentModels(ServerError):
    """The baseline serves another model than the speculative server: the comparison would mean nothing."""


class SweepFailed(ServerError):
    """A server failed during a level; `concurrency` and `server` say where (the finished levels are kept). details:
    the failure's optional keys in a specviz.load document (kind, and an overload's statuses and counts or a
    timeout's seconds)."""

    def __init__(self, message: str, server: str, concurrency: int, reason: str, details: dict | None = None):
        super().__init__(message)
        self.server, self.concurrency, self.reason = server, concurrency, reason
        self.details = dict(details or {})


class Overloaded(ServerError):
    """A server refused requests of a level with HTTP 429 or 503: it is overloaded at that concurrency."""

    def __init__(self, message: str, statuses: Sequence[int], refused: int, sent: int):
        super().__init__(message)
        self.statuses, self.refused, self.sent = list(statuses), refused, sent


class LevelTimedOut(ServerTimeout):
    """A request of a level took longer than the timeout: the server is too slow at that concurrency for it."""

    def __init__(self, message: str, timeout_s: float):
        super().__init__(message)
        self.timeout_s = timeout_s


def failure_details(exc: SpecvizError) -> dict:
    """What a document's failure records beside its message: the kind, and an overload's or a timeout's figures."""
    if isinstance(exc, Overloaded):
        return {"kind": OVERLOADED, "statuses": exc.statuses, "refused": exc.refused, "sent": exc.sent}
    if isinstance(exc, LevelTimedOut):
        return {"kind": TIMED_OUT, "timeout_s": exc.timeout_s}
    return {"kind": FAILED}


@dataclass(frozen=True)
class Baseline:
    """A vLLM server decoding without speculation: what it serves."""

    endpoint: Endpoint = field(repr=False)
    model: str
    models: tuple[str, ...]
    version: str | None

    @property
    def url(self) -> str:
        return self.endpoint.url

    def describe(self) -> dict:
        return {
            "server": self.url,
            "model": self.model,
            "vllm_version": self.version,
            "method": methods.PLAIN,
            "k": None,
        }


def connect_plain(
    url: str, model: str | None = None, api_key: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> Baseline:
    """The plain server at `url`; SpeculationOff's opposite when it speculates (it would be no baseline)."""
    endpoint = parse_url(url, api_key, timeout_s)
    with redacting(endpoint):
        models, _ = vllm._models(endpoint)
        chosen = model if model in models else vllm._choose(endpoint, models, None if len(models) == 1 else model)
        counters = vllm.read_counters(endpoint, chosen)
        probe = vllm._probe(endpoint, chosen)
        if (counters is not None and counters.speculative) or probe.spec is not None:
            raise SpeculationOff(
                f"The baseline server at {endpoint.url} speculates: a baseline decodes without speculation. Start it "
                "without --speculative-config (`python -m specviz serve --method none`)."
            )
        return Baseline(endpoint, chosen, tuple(models), vllm._version(endpoint))


def check_same_model(spec: Server, baseline: Baseline) -> None:
    if spec.model != baseline.model:
        raise DifferentModels(
            f"The baseline at {baseline.url} serves {baseline.model!r}, the speculative server at {spec.url} serves "
            f"{spec.model!r}: a speedup between two different models would mean nothing. Start both on the same "
            "model (and the same --served-model-name)."
        )


def parse_levels(text: str, what: str = "--concurrency") -> list[int]:
    """'1,2,4' -> [1, 2, 4]: whole numbers from 1 to MAX_CONCURRENCY, each once, in the order given. what: the
    option or field the text came from, as the message names it."""
    parts = [part.strip() for part in str(text).split(",") if part.strip()]
    try:
        levels = [int(part) for part in parts]
    except ValueError:
        raise SettingsError(f"{what} takes whole numbers separated by commas (e.g. 1,2,4); got {text!r}.") from None
    if not levels:
        raise SettingsError(f"{what} needs at least one level, e.g. 1,2,4.")
    wrong = [n for n in levels if not 1 <= n <= MAX_CONCURRENCY]
    if wrong:
        raise SettingsError(f"Each concurrency must be from 1 to {MAX_CONCURRENCY}; got {wrong[0]}.")
    if len(set(levels)) != len(levels):
        raise SettingsError(f"{what} lists a level twice: {text!r}.")
    return levels


def request_count(prompts: int, concurrency: int) -> int:
    """Every prompt equally often, at least 2 requests per slot of the closed loop (and every prompt once)."""
    return prompts * math.ceil(max(prompts, 2 * concurrency) / prompts)


def body(model: str, prompt: str, settings: RunSettings) -> dict:
    """The streamed completion of `prompt`: exactly max_new_tokens tokens (EOS ignored), the settings' sampling."""
    sampling = settings.sampling
    out = {
        "model": model,
        "prompt": prompt,
        "max_tokens": settings.max_new_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "seed": settings.seed,
        "ignore_eos": True,
        "n": 1,
        "stream": True,
        "stream_options": {"include_usage": True},
        "return_token_ids": True,
    }
    if sampling.top_k:
        out["top_k"] = sampling.top_k
    return out


def timed_request(endpoint: Endpoint, model: str, prompt: str, index: int, settings: RunSettings, t0: float):
    """One streamed request -> its RequestTiming (times after sending; sent_s after t0, the level's start)."""
    where, max_tokens = f"{endpoint.url}/v1/completions", settings.max_new_tokens
    sent = time.perf_counter()
    arrivals, usage, spec = [], None, None
    for arrived, event in stream(endpoint, "/v1/completions", body(model, prompt, settings)):
        if not isinstance(event, dict):
            raise bad(where, "a streamed event", event, "a JSON object")
        choices = event.get("choices") or []
        if not isinstance(choices, list) or (choices and not isinstance(choices[0], dict)):
            raise bad(where, "choices", choices, "a list of completion chunks")
        if choices:
            ids = choices[0].get("token_ids")
            n = len(answers.wholes(ids, where, "token_ids", 2**31 - 1, max_tokens)) if ids is not None else 1
            if n:
                arrivals.append((arrived - sent, n))
        if event.get("usage") is not None:
            usage = event["usage"]
        holder = event.get("metrics")
        if isinstance(holder, dict):
            name = answers.present(holder, vllm.SPEC_BLOCK)
            spec = holder[name] if name is not None else spec
    end = time.perf_counter()
    streamed = sum(n for _, n in arrivals)
    if streamed > max_tokens:
        raise bad(where, "the tokens streamed", streamed, f"at most the {max_tokens} asked for")
    count = usage.get("completion_tokens") if isinstance(usage, dict) else None
    tokens = streamed if count is None else whole(count, where, "usage.completion_tokens", 0, max_tokens)
    metrics = None if not isinstance(spec, dict) else answers.spec_metrics(spec, where, max_tokens, vllm.FIELDS)
    return RequestTiming(
        prompt=index,
        sent_s=sent - t0,
        ttft_s=arrivals[0][0] if arrivals else end - sent,
        e2e_s=end - sent,
        arrivals=tuple(arrivals),
        tokens=tokens,
        streamed=streamed,
        accepted=None if metrics is None else metrics.accepted,
        drafted=None if metrics is None else metrics.draft_tokens,
        per_step_accepted=None if metrics is None else metrics.per_step_accepted,
    )


@dataclass(frozen=True)
class Loop:
    """What one closed loop measured: its requests' timings, its wall time, and how many were served on a retry."""

    timings: tuple[RequestTiming, ...]
    wall_s: float
    retried: int = 0


class RetryBudget:
    """The Retry-After waits a level may still take: one, for the first refusal asking at most MAX_RETRY_WAIT_S (a
    lone refusal is a blip; more mean the server is overloaded). Shared by a level's warm-up and counted loops."""

    def __init__(self, waits: int = 1):
        self._left, self._lock = waits, threading.Lock()

    def take(self) -> bool:
        """One wait, if any is left."""
        with self._lock:
            self._left -= 1
            return self._left >= 0


def closed_loop(
    endpoint: Endpoint,
    model: str,
    prompts: Sequence[str],
    settings: RunSettings,
    concurrency: int,
    total: int,
    budget: RetryBudget | None = None,
) -> Loop:
    """`total` requests over the prompts (round the list), `concurrency` in flight. The first fault stops every
    thread after its current request and is raised: Overloaded when requests were refused (HTTP 429 / 503; a
    Retry-After of at most MAX_RETRY_WAIT_S is honoured while the budget, one wait unless given, lasts), LevelTimedOut
    when one took longer than the endpoint's timeout, else the error itself."""
    budget = RetryBudget() if budget is None else budget
    lock, stop = threading.Lock(), threading.Event()
    taken, results, errors, refused, retried = [0], [], [], [], [0]
    t0 = time.perf_counter()

    def next_index() -> int | None:
        with lock:
            if stop.is_set() or taken[0] >= total:
                return None
            taken[0] += 1
            return (taken[0] - 1) % len(prompts)

    def attempt(index: int) -> tuple[RequestTiming, bool]:
        """One request -> (its timing, whether it was served on a retry after the server's Retry-After wait)."""
        try:
            return timed_request(endpoint, model, prompts[index], index, settings, t0), False
        except ServerHTTPError as exc:
            if not (_may_retry(exc) and budget.take()) or stop.wait(exc.retry_after_s):  # or the loop ended meanwhile
                raise
        return timed_request(endpoint, model, prompts[index], index, settings, t0), True

    def worker() -> None:
        while (index := next_index()) is not None:
            try:
                timing, waited = attempt(index)
            except BaseException as exc:  # noqa: BLE001 (handed to the caller's thread below)
                with lock:
                    (refused if _refusal(exc) else errors).append(exc)
                stop.set()
                return
            with lock:
                results.append(timing)
                retried[0] += waited

    with ThreadPoolExecutor(concurrency, thread_name_prefix=LOOP_THREADS) as pool:
        workers = [pool.submit(worker) for _ in range(concurrency)]
        try:
            wait(workers)
        except BaseException:  # Ctrl-C: each thread stops after its current request, not after the whole level
            with lock:
                errors.append(KeyboardInterrupt())
            stop.set()
            raise
    if refused:
        raise overloaded(endpoint, concurrency, refused, taken[0])
    if errors and isinstance(errors[0], ServerTimeout):
        raise timed_out(endpoint, concurrency, len(results), taken[0])
    if errors:
        raise errors[0]
    return Loop(tuple(results), max((r.sent_s + r.e2e_s for r in results), default=0.0), retried[0])


def _refusal(exc: BaseException) -> bool:
    """An HTTP 429 or 503: the server refuses work it has no room for (it is overloaded at this concurrency)."""
    return isinstance(exc, ServerHTTPError) and exc.status in OVERLOAD_STATUSES


def _may_retry(exc: ServerHTTPError) -> bool:
    """A refusal whose Retry-After asks for a wait the sweep takes (at most MAX_RETRY_WAIT_S)."""
    return _refusal(exc) and exc.retry_after_s is not None and exc.retry_after_s <= MAX_RETRY_WAIT_S


def overloaded(endpoint: Endpoint, concurrency: int, refused: Sequence[ServerHTTPError], sent: int) -> Overloaded:
    """The message for a level whose requests were refused: who, at which level, which status, how many, what to do."""
    statuses = sorted({exc.status for exc in refused})
    said = " and ".join(f"HTTP {status} ({REASONS[status]})" for status in statuses)
    asked = [exc.retry_after_s for exc in refused if exc.retry_after_s is not None]
    waits = (
        f" It asked to retry after {max(asked):g} s; the sweep waits once per level and server, at most "
        f"{MAX_RETRY_WAIT_S:g} s, and was refused again or asked to wait longer."
        if asked
        else ""
    )
    return Overloaded(
        f"{endpoint.url} answered {said} to {len(refused)} of the {sent} requests sent at concurrency {concurrency}: "
        f"it is overloaded at this concurrency (it refuses requests instead of queueing them).{waits} Lower the "
        "concurrency levels, or let the server take more requests at once (vLLM's --max-num-seqs, or the limit of a "
        f"proxy or gateway in front of it). Its first refusal: {refused[0]}",
        statuses,
        len(refused),
        sent,
    )


def timed_out(endpoint: Endpoint, concurrency: int, finished: int, sent: int) -> LevelTimedOut:
    """The message for a level with a request slower than the timeout: who, at which level, the timeout, what to do."""
    return LevelTimedOut(
        f"{endpoint.url} did not finish a request within the {endpoint.timeout_s:g} s timeout at concurrency "
        f"{concurrency} ({finished} of the {sent} requests sent finished in time): at this concurrency it is slower "
        "than the timeout allows. Lower the concurrency levels, ask for fewer new tokens, or raise the timeout per "
        "request (--timeout; on the workload page, Timeout per request).",
        endpoint.timeout_s,
    )


def run_level(
    endpoint: Endpoint,
    model: str,
    prompts: Sequence[str],
    settings: RunSettings,
    concurrency: int,
    warmup: int | None = None,
    total: int | None = None,
) -> LevelRun:
    """One server at one concurrency: warm-up requests (not counted), then the closed loop. Where the server has
    counters on /metrics they are read before and after: requests or tokens beyond the sweep's own are other
    clients' (vllm.other_traffic), and the run says so."""
    warmup = concurrency if warmup is None else warmup
    budget = RetryBudget()  # one Retry-After wait for the whole level
    before = vllm.read_counters(endpoint, model)
    warm = closed_loop(endpoint, model, prompts, settings, concurrency, warmup, budget) if warmup else Loop((), 0.0)
    total = request_count(len(prompts), concurrency) if total is None else total
    loop = closed_loop(endpoint, model, prompts, settings, concurrency, total, budget)
    signs: list[str] = []
    if before is not None:
        after = vllm.read_counters(endpoint, model)
        moved = vllm.delta(before, after, endpoint.url) if after is not None else vllm._gone(endpoint.url)
        sent = warm.timings + loop.timings
        signs = vllm.other_traffic(moved, sum(r.tokens for r in sent), len(sent))
    requests = tuple(sorted(loop.timings, key=lambda r: r.sent_s))
    return LevelRun(endpoint.url, concurrency, loop.wall_s, requests, warm.retried + loop.retried, tuple(signs))


def merge(runs: Sequence[LevelRun]) -> LevelRun:
    """One server's rounds at one level as one run: every request, the rounds' wall times, retries and signs of
    other clients added (each sign named by its round when there are several)."""
    requests = tuple(r for run in runs for r in run.requests)
    signs = tuple(
        sign if len(runs) == 1 else f"round {i + 1}: {sign}" for i, run in enumerate(runs) for sign in run.other_traffic
    )
    wall_s, retried = sum(run.wall_s for run in runs), sum(run.retried for run in runs)
    return LevelRun(runs[0].server, runs[0].concurrency, wall_s, requests, retried, signs)


def sweep(
    servers: Sequence[Server],
    baseline: Baseline,
    prompts: Sequence[str],
    settings: RunSettings,
    levels: Sequence[int],
    on_level: Callable[[str, int], None] | None = None,
    warmup: int | None = None,
    rounds: int = 1,
) -> Iterator[dict]:
    """Yield {concurrency, runs: [baseline's LevelRun, each server's]} per level, in order; a server that fails
    raises SweepFailed naming it and the level (what was yielded before is the caller's to keep).

    rounds: each level runs the servers this many times in turn, the order reversed every other round (plain, spec,
    spec, plain, ...), so that a machine whose load drifts (a shared CPU) weighs on every server alike; each server's
    rounds are merged into one run."""
    if not prompts:
        raise SettingsError("The load sweep needs at least one prompt.")
    if not servers:
        raise SettingsError("Give at least one speculative server (--server URL) to compare with the baseline.")
    if rounds < 1:
        raise SettingsError(f"rounds (--repeats) must be at least 1; got {rounds}.")
    for server in servers:
        check_same_model(server, baseline)
    everyone = (baseline, *servers)
    for level in levels:
        blocks: dict[str, list[LevelRun]] = {who.url: [] for who in everyone}
        for turn in range(rounds):
            for who in everyone if turn % 2 == 0 else everyone[::-1]:
                if on_level:
                    on_level(who.url, level)
                try:
                    with redacting(who.endpoint):
                        run = run_level(who.endpoint, who.model, prompts, settings, level, 0 if turn else warmup)
                except SpecvizError as exc:
                    details = failure_details(exc)
                    failure = {"server": who.url, "concurrency": level, "error": str(exc), **details}
                    raise SweepFailed(failure_words(failure), who.url, level, str(exc), details) from None
                blocks[who.url].append(run)
        yield {"concurrency": level, "runs": [merge(blocks[who.url]) for who in everyone]}


def sweep_settings(base: RunSettings, levels: Sequence[int], rounds: int) -> dict:
    """The settings a specviz.load document records: sampling, length, levels, warm-up and rounds."""
    return {
        "max_new_tokens": base.max_new_tokens,
        "temperature": base.sampling.temperature,
        "top_p": base.sampling.top_p,
        "top_k": base.sampling.top_k,
        "seed": base.seed,
        "concurrency": list(levels),
        "warmup_requests": "one per slot (N at concurrency N) before each server's first round, not counted",
        "rounds": rounds,
    }


def sweep_documents(
    servers: Sequence[Server],
    baseline: Baseline,
    rows: Sequence,
    base: RunSettings,
    levels: Sequence[int],
    rounds: int = 1,
    on_level: Callable[[str, int], None] | None = None,
) -> Iterator[dict]:
    """The sweep as specviz.load documents (measure/concurrency.py): one after each finished level, so a caller that
    stops keeps what finished; when a server fails, a last one that names the failure and keeps the levels before it.
    rows: the prompts (measure/prompts.PromptRow: prompt, tag)."""
    started, finished = time.perf_counter(), []
    prompts = [{"tag": row.tag, "chars": len(row.prompt)} for row in rows]
    settings = sweep_settings(base, levels, rounds)

    def document(failure: dict | None = None) -> dict:
        described = [s.describe() for s in servers]
        elapsed = time.perf_counter() - started
        return document_of(
            finished, baseline.describe(), described, settings, machine(), prompts, failure, elapsed, base.seed
        )

    try:
        for level in sweep(servers, baseline, [row.prompt for row in rows], base, levels, on_level, rounds=rounds):
            finished.append(level)
            yield document()
    except SweepFailed as error:
        yield document(
            {"server": error.server, "concurrency": error.concurrency, "error": error.reason, **error.details}
        )
    except SpecvizError as error:
        yield document({"server": None, "concurrency": None, "error": str(error)})
