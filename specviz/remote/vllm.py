"""Measure speculative decoding on a running vLLM server: the same RunRecords as in-process runs, over HTTP.

    server = connect("http://127.0.0.1:8000")             # what it serves, its method and K, which metrics it has
    record = server.run(prompt, settings, tag)            # one /v1/completions request -> RunRecord (source "vllm")
    for result in measure(server, rows, settings): ...    # a workload (PairedRun with plain None: no baseline)

Where the numbers come from, best first:
1. Per-request metrics (`vllm serve ... --per-request-spec-decode-metrics detailed`): each response carries the
   accepted and drafted counts of every verify step, so the record has its rounds, exactly, whatever else the server
   is doing (any concurrency).
2. The same at the `summary` level, or 3. the Prometheus counters on /metrics, read before and after each request at
   concurrency 1: totals only (drafts, draft tokens, accepted tokens, engine steps). The record then carries
   `totals` and no per-round lists. Other clients' requests move these counters; the record then says so in
   meta["warnings"].
vLLM exposes its speculative config only in dev mode (/server_info with VLLM_SERVER_DEV_MODE=1); otherwise K is read
from the per-position counters or the per-request metrics, and the method is the one the caller declares (a draft
model unless told otherwise), checked against what the steps look like; Server.notes says which.

Round accounting, against specviz's own loop: vLLM's first target pass (the prefill) commits one token with no
drafts, so its record starts with that round; specviz's prefill commits nothing (its first round verifies the
prompt's last token plus K drafts). vLLM drafts K tokens even when fewer remain before max_tokens and cuts the
output afterwards, so its last round may commit fewer than accepted + 1; the committed counts always add up to the
completion's tokens.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from specviz import methods
from specviz.core import stats
from specviz.core.record import VLLM, RunRecord
from specviz.core.settings import RunSettings
from specviz.errors import SettingsError, SpecvizError
from specviz.measure.prompts import PromptRow
from specviz.measure.workload import PairedRun, Progress, run_workload
from specviz.remote import answers, prometheus
from specviz.remote.answers import MAX_SERVER_K, Completion, SpecFields, SpecMetrics, bad, whole
from specviz.remote.errors import (
    ConcurrencyUnsupported,
    NotOpenAIServer,
    ServerError,
    ServerHTTPError,
    ServerRestarted,
    SpeculationOff,
    StatisticsOff,
    UnknownModel,
    UnsupportedMethod,
)
from specviz.remote.http import DEFAULT_TIMEOUT_S, Endpoint, parse_url, request

# specviz's names for vLLM's speculative methods (from the registry): draft_model -> draft, ngram -> ngram.
FROM_VLLM = methods.FROM_VLLM
START_WITH_SPECULATION = (
    "Start vLLM with speculation and its per-request metrics, e.g.\n"
    '  vllm serve TARGET --speculative-config \'{"method": "draft_model", "model": "DRAFT", '
    '"num_speculative_tokens": 4}\' --per-request-spec-decode-metrics detailed\n'
    '(or "method": "ngram" with "prompt_lookup_max": 3 for n-gram lookup).'
)

# Sample names on /metrics; the first one present is used (names change between versions).
DRAFTS = ("vllm:spec_decode_num_drafts_total",)
DRAFT_TOKENS = ("vllm:spec_decode_num_draft_tokens_total",)
ACCEPTED = ("vllm:spec_decode_num_accepted_tokens_total",)
ACCEPTED_PER_POS = ("vllm:spec_decode_num_accepted_tokens_per_pos_total",)  # labelled position="0".."K-1"
GENERATION_TOKENS = ("vllm:generation_tokens_total",)
FINISHED = ("vllm:request_success_total",)  # labelled finished_reason
STEPS = ("vllm:iteration_tokens_total_count",)  # a histogram's count: one observation per engine step
RUNNING = ("vllm:num_requests_running",)  # a gauge
COUNTED = (DRAFTS, DRAFT_TOKENS, ACCEPTED, GENERATION_TOKENS, FINISHED, STEPS)

# Per-request metric fields, with the alternative spellings seen or expected across versions.
SPEC_BLOCK = ("speculative_decoding", "spec_decoding", "spec_decode")
F_STEPS = ("num_spec_steps", "num_drafts")
F_ACCEPTED = ("num_accepted_draft_tokens", "num_accepted_tokens")
F_DRAFT_TOKENS = ("num_draft_tokens",)
F_K = ("num_spec_tokens", "num_speculative_tokens")
F_HISTOGRAM = ("acceptance_histogram", "acceptance_length_histogram")
F_PER_STEP_ACCEPTED = ("per_step_accepted", "accepted_per_step")
F_PER_STEP_DRAFTED = ("per_step_drafted", "drafted_per_step")
FIELDS = SpecFields(F_K, F_STEPS, F_ACCEPTED, F_DRAFT_TOKENS, F_HISTOGRAM, F_PER_STEP_ACCEPTED, F_PER_STEP_DRAFTED)
PROBE_TOKENS = 8  # the connection check's completion: a prefill and a verify step or two, whatever K


# ---------------------------------------------------------------------------------------------------------- counters
@dataclass(frozen=True)
class Counters:
    """One reading of the server's counters for one model, summed over engines (data-parallel ranks)."""

    values: dict[str, float]  # each counter name above (first tuple entry) -> its value; absent ones left out
    accepted_per_pos: dict[int, float]
    generation: tuple[float, ...]  # process start time and every counter's _created stamp: changes on a restart
    engines: int

    @property
    def speculative(self) -> bool:
        return DRAFTS[0] in self.values

    @property
    def k(self) -> int | None:
        return max(self.accepted_per_pos) + 1 if self.accepted_per_pos else None


def read_counters(endpoint: Endpoint, model: str) -> Counters | None:
    """The counters on /metrics for `model`, or None when the server publishes none of vLLM's (statistics off)."""
    try:
        response = request(endpoint, "GET", "/metrics")
    except ServerHTTPError:
        return None
    samples = prometheus.parse(response.text())
    ours = [s for s in samples if s.name.startswith("vllm:")]
    if not ours:
        return None
    label = {"model_name": model} if any(s.label("model_name") == model for s in ours) else {}
    values = {}
    for names in (*COUNTED, RUNNING):
        found = next((v for v in (prometheus.total(samples, n, **label) for n in names) if v is not None), None)
        if found is not None:
            values[names[0]] = found
    per_pos = next(
        (found for found in (prometheus.by_label(samples, n, "position", **label) for n in ACCEPTED_PER_POS) if found),
        {},
    )
    stamps = sorted(
        (s.name, s.labels, s.value)
        for s in samples
        if s.name.endswith("_created") or s.name == "process_start_time_seconds"
    )
    engines = len({s.label("engine") for s in ours if s.label("engine") is not None}) or 1
    where = f"{endpoint.url}/metrics"
    values = {name: _counter(where, name, value) for name, value in values.items()}
    stamps = [v for *_, v in stamps if not math.isnan(v)]  # a NaN stamp would never equal itself: a false restart
    return Counters(values, _positions(where, per_pos), tuple(stamps), engines)


def _counter(where: str, name: str, value: float) -> float:
    """A counter's (or gauge's) reading: finite and not negative, else MalformedAnswer."""
    if math.isfinite(value) and value >= 0:
        return value
    raise bad(where, name, value, "a finite count of at least 0")


def _positions(where: str, per_pos: dict[str, float]) -> dict[int, float]:
    """{position label: accepted tokens} -> {draft position: count}: each label a position 0..MAX_SERVER_K-1 (so
    K from these counters is at most MAX_SERVER_K), each count finite and not negative."""
    out = {}
    for label, value in per_pos.items():
        field = f'{ACCEPTED_PER_POS[0]}{{position="{label}"}}'
        position = int(label) if label.isdigit() and len(label) <= 3 else None
        if position is None or position >= MAX_SERVER_K:
            raise bad(
                where,
                "the label of " + field,
                label,
                f"a draft position from 0 to {MAX_SERVER_K - 1} (specviz takes K up to {MAX_SERVER_K})",
            )
        out[position] = _counter(where, field, value)
    return out


@dataclass(frozen=True)
class Delta:
    """What the counters moved by during one request."""

    values: dict[str, float]
    accepted_per_pos: dict[int, float]
    running_before: float

    def get(self, names: tuple[str, ...]) -> int | None:
        value = self.values.get(names[0])
        return None if value is None else int(round(value))


def delta(before: Counters, after: Counters, server_url: str) -> Delta:
    """after - before; a restart (new _created stamps, a counter that went back) raises ServerRestarted."""
    went_back = [n for n, v in before.values.items() if n != RUNNING[0] and after.values.get(n, 0.0) < v]
    if before.generation != after.generation or went_back:
        raise ServerRestarted(
            f"The server at {server_url} restarted during the measurement (its counters were reset). The prompts "
            "finished before are kept; measure the others again once it is back."
        )
    values = {n: after.values[n] - v for n, v in before.values.items() if n in after.values and n != RUNNING[0]}
    per_pos = {p: after.accepted_per_pos.get(p, v) - v for p, v in before.accepted_per_pos.items()}
    return Delta(values, per_pos, before.values.get(RUNNING[0], 0.0))


# ------------------------------------------------------------------------------------------------------------ server
@dataclass(frozen=True)
class Server:
    """A vLLM server and what specviz found out about it. Safe to show: the API key is in `endpoint`, never shown."""

    endpoint: Endpoint = field(repr=False)
    model: str
    models: tuple[str, ...]
    version: str | None
    method: str  # specviz's registry name of the server's speculative method
    vllm_method: str | None  # vLLM's own name, when the server said it
    k: int
    per_request: bool  # responses carry metrics.speculative_decoding
    counters: bool  # /metrics has the speculative-decoding counters
    max_model_len: int | None = None
    notes: tuple[str, ...] = ()  # how the method and K were found

    @property
    def url(self) -> str:
        return self.endpoint.url

    def __repr__(self) -> str:
        return f"Server({self.url!r}, model={self.model!r}, method={self.method!r}, k={self.k})"

    def describe(self) -> dict:
        """What a JSON export or a page shows about the server (no credentials)."""
        return {
            "server": self.url,
            "model": self.model,
            "vllm_version": self.version,
            "method": self.method,
            "vllm_method": self.vllm_method,
            "k": self.k,
            "metrics": "per-request" if self.per_request else "counters",
            "notes": list(self.notes),
        }

    def settings(self, base: RunSettings) -> RunSettings:
        """`base` with the server's method and K (what it will run whatever is asked)."""
        return replace(base, method=self.method, k=self.k)

    def run(self, prompt: str, settings: RunSettings, tag: str = "untagged", exclusive: bool = True) -> RunRecord:
        """One completion of `prompt` with the settings' sampling and length -> its RunRecord.

        exclusive: no other request of ours is in flight, so the counters around it are this request's (the counter
        path, and the engine-step count, need that); measure() passes False at concurrency > 1.
        """
        if settings.method != self.method or settings.k != self.k:
            raise SettingsError(
                f"This server runs {methods.label(self.method)} with K={self.k}; it cannot run {settings.method} with "
                f"K={settings.k}. Restart vLLM with another --speculative-config to measure that."
            )
        with redacting(self.endpoint):
            use_counters = exclusive and self.counters
            before = read_counters(self.endpoint, self.model) if use_counters else None
            start = time.perf_counter()
            answer = self._complete(prompt, settings)
            wall_s = time.perf_counter() - start
            moved = None
            if before is not None:
                after = read_counters(self.endpoint, self.model)
                moved = delta(before, after, self.url) if after is not None else _gone(self.url)
            return self._record(prompt, settings, tag, answer, wall_s, moved)

    def _complete(self, prompt: str, settings: RunSettings) -> Completion:
        """One completion with the settings' sampling and length, its answer checked (answers.completion)."""
        sampling = settings.sampling
        body = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": settings.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "seed": settings.seed,
            "ignore_eos": not settings.stop_at_eos,
            "n": 1,
            "stream": False,
            "return_token_ids": True,
        }
        if sampling.top_k:
            body["top_k"] = sampling.top_k
        return _completion(self.endpoint, body)

    def _record(
        self, prompt: str, settings: RunSettings, tag: str, answer: Completion, wall_s: float, moved: Delta | None
    ) -> RunRecord:
        """The RunRecord of one checked answer: per-round lists from per-step metrics, else totals."""
        ids, n_tokens = answer.ids, answer.n_tokens
        where = f"{self.url}/v1/completions"
        spec = (
            None if answer.spec is None else answers.spec_metrics(answer.spec, where, settings.max_new_tokens, FIELDS)
        )
        meta = {
            "server": self.url,
            "model": self.model,
            "vllm_version": self.version,
            "finish_reason": answer.finish_reason,
            "warnings": [],
        }
        if moved is not None:
            per_pos = [moved.accepted_per_pos[p] for p in sorted(moved.accepted_per_pos)]
            meta["counters"] = {**{n.split(":")[-1]: v for n, v in moved.values.items()}, "accepted_per_pos": per_pos}
            meta["warnings"] += _others(moved, n_tokens)
        steps = moved.get(STEPS) if moved is not None and not meta["warnings"] else None  # this request's passes
        common = dict(
            source=VLLM,
            method=self.method,
            k=self.k,
            prompt=prompt,
            text=answer.text,
            output_ids=ids,
            round_end_s=(),
            wall_s=wall_s,
            settings=settings.to_dict(),
            tag=tag,
        )
        accepted, drafted = (None, None) if spec is None else (spec.per_step_accepted, spec.per_step_drafted)
        if spec is not None and accepted is not None and drafted is not None:
            meta["metrics"] = "per-request, per step"
            rounds = rounds_from_steps(list(drafted), list(accepted), n_tokens, steps, meta)
            self._check_method(rounds, meta)
            return RunRecord(**common, **rounds, meta=_clean(meta))
        if spec is not None:
            meta["metrics"] = "per-request summary"
            totals = totals_from_summary(spec, n_tokens, steps, self.k)
        elif moved is not None:
            meta["metrics"] = "counters"
            if not moved.values.get(DRAFTS[0]) and n_tokens > 1:
                meta["warnings"].append("the speculative counters did not move: no drafts were made for this prompt")
            totals = totals_from_counters(moved, n_tokens, steps, self.k)
        else:
            raise StatisticsOff(
                f"{self.url} returned no speculative-decoding metrics with this completion, and its counters cannot "
                "be read for it (another request of ours was in flight, or /metrics is off). Start vLLM with "
                "--per-request-spec-decode-metrics detailed, or measure at concurrency 1 with its statistics on."
            )
        return RunRecord(
            **common,
            per_round_committed=(),
            per_round_drafted=None,
            per_round_accepted=None,
            per_round_judged=None,
            totals=totals,
            meta=_clean(meta),
        )

    def _check_method(self, rounds: dict, meta: dict) -> None:
        if self.vllm_method is None and self.method == methods.DRAFT:
            drafted = rounds["per_round_drafted"][1:]
            if any(0 < d < self.k for d in drafted[:-1]) or 0 in drafted:
                meta["warnings"].append(
                    "some steps drafted fewer than K tokens or none: that looks like n-gram lookup, not a draft model "
                    "(the server does not say which; pass the method it runs)"
                )


def _gone(url: str):
    raise ServerRestarted(f"The counters of the server at {url} disappeared during the measurement: did it restart?")


def _metrics(answer: Completion, where: str, max_tokens: int) -> SpecMetrics | None:
    """The answer's speculative-decoding block, checked against the request's max_tokens; None when it has none."""
    return None if answer.spec is None else answers.spec_metrics(answer.spec, where, max_tokens, FIELDS)


def _completion(endpoint: Endpoint, body: dict) -> Completion:
    """POST /v1/completions -> its answer, checked against the request (answers.completion)."""
    doc = request(endpoint, "POST", "/v1/completions", body).json(endpoint, "/v1/completions")
    return answers.completion(doc, f"{endpoint.url}/v1/completions", body["max_tokens"], SPEC_BLOCK)


def other_traffic(moved: Delta, tokens: int, requests: int = 1) -> list[str]:
    """Signs that requests other than our `requests` (which made `tokens` tokens) ran on the server while the counters
    moved: some already running, more finished, more tokens generated. [] when there are none."""
    finished, generated = moved.get(FINISHED), moved.get(GENERATION_TOKENS)
    ours = "this completion" if requests == 1 else f"our {requests} requests"
    signs = []
    if moved.running_before > 0:
        signs.append(f"{moved.running_before:.0f} request(s) were already running")
    if finished is not None and finished != requests:
        signs.append(f"{finished} requests finished instead of {requests}")
    if generated is not None and generated != tokens:
        signs.append(f"the server generated {generated} tokens, {ours} {tokens}")
    return signs


def _others(moved: Delta, n_tokens: int) -> list[str]:
    """Signs that requests other than ours ran while ours did: the counters then are not this prompt's alone."""
    signs = other_traffic(moved, n_tokens)
    if not signs:
        return []
    return [
        "other clients used the server during this request (" + "; ".join(signs) + "): the counter figures "
        "(engine steps, and the totals on the counter path) are not this prompt's alone"
    ]


def _clean(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if v is not None and v != []}


def rounds_from_steps(
    drafted: list[int], accepted: list[int], n_tokens: int, engine_steps: int | None, meta: dict
) -> dict:
    """Per-round lists from vLLM's per-step counts: the prefill round, the steps without drafts, then the verify steps.

    A verify step judged its accepted drafts plus the one it rejected (none if it accepted all) and committed
    accepted + 1; the last one may have been cut by max_tokens or EOS. Steps without drafts (an n-gram miss) are not in
    vLLM's lists: their number comes from the engine-step counter when it is this request's, else from the token
    count; where they fell is not known, so they are listed after the prefill.
    """
    steps = len(accepted)
    misses = _misses(engine_steps, steps, n_tokens, 1 + sum(a + 1 for a in accepted), meta)
    if misses:
        meta["rounds_without_drafts"] = misses
    committed = [1] + [1] * misses + [a + 1 for a in accepted]
    cut = sum(committed) - n_tokens
    if cut > 0:
        if steps == 0 or cut >= committed[-1]:
            meta["warnings"].append(f"the per-step counts give {sum(committed)} tokens, the completion {n_tokens}")
        else:
            committed[-1] -= cut
            meta["last_round_cut"] = cut
    elif cut < 0:
        meta["warnings"].append(f"the per-step counts give {sum(committed)} tokens, the completion {n_tokens}")
    zeros = [0] * (1 + misses)
    return {
        "per_round_committed": tuple(committed),
        "per_round_drafted": tuple(zeros + drafted),
        "per_round_accepted": tuple(zeros + accepted),
        "per_round_judged": tuple(zeros + [a + (a < d) for d, a in zip(drafted, accepted)]),
    }


def _misses(engine_steps: int | None, steps: int, n_tokens: int, uncut: int, meta: dict) -> int:
    """Engine steps without drafts: from the engine-step counter when it is possible (at least the verify steps + 1,
    at most one step a token: every step commits one), else from the token count (the lists are trusted)."""
    if engine_steps is not None and steps + 1 <= engine_steps <= max(n_tokens, steps + 1):
        return engine_steps - 1 - steps
    if engine_steps is not None:
        meta["warnings"].append(
            f"the engine-step counter ({engine_steps}) is not between the verify steps + 1 ({steps + 1}) and the "
            f"tokens ({n_tokens}); ignored"
        )
    return max(0, n_tokens - uncut)


def _judged(accepted: int, spec_steps: int, full_steps: int | None, draft_tokens: int, k: int) -> int | None:
    """accepted + one rejected draft per step that did not accept all it drafted; known when every step drafted K."""
    if full_steps is None or draft_tokens != k * spec_steps:
        return None
    return accepted + spec_steps - full_steps


def totals_from_summary(spec: SpecMetrics, n_tokens: int, engine_steps: int | None, k: int) -> stats.Tally:
    """Totals from the summary-level metrics (counts, and the histogram for the steps that accepted all K)."""
    steps, accepted, draft_tokens = spec.steps or 0, spec.accepted or 0, spec.draft_tokens or 0
    histogram = spec.histogram
    full = histogram[k] if histogram is not None and len(histogram) > k else None
    rounds = engine_steps if engine_steps is not None else 1 + steps + max(0, n_tokens - 1 - steps - accepted)
    return stats.Tally(draft_tokens, accepted, _judged(accepted, steps, full, draft_tokens, k), rounds, n_tokens, steps)


def totals_from_counters(moved: Delta, n_tokens: int, engine_steps: int | None, k: int) -> stats.Tally:
    drafts, accepted, draft_tokens = (
        (moved.get(DRAFTS) or 0),
        (moved.get(ACCEPTED) or 0),
        (moved.get(DRAFT_TOKENS) or 0),
    )
    full = moved.accepted_per_pos.get(k - 1)
    judged = _judged(accepted, drafts, None if full is None else int(round(full)), draft_tokens, k)
    return stats.Tally(draft_tokens, accepted, judged, engine_steps, n_tokens, drafts)


# ----------------------------------------------------------------------------------------------------------- connect
def connect(
    url: str,
    model: str | None = None,
    api_key: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    method: str | None = None,
) -> Server:
    """Find out what the server at `url` serves and how it speculates; one short probe completion checks it works.

    model: which served model (needed when it serves several). method: specviz's name of the speculative method the
    server runs, used only when the server does not say ("draft" when not given either).
    """
    endpoint = parse_url(url, api_key, timeout_s)
    with redacting(endpoint):
        return _discover(endpoint, model, method)


@contextmanager
def redacting(endpoint: Endpoint) -> Iterator[None]:
    """Every SpecvizError raised inside has the endpoint's secrets replaced by *** (a server may echo the key, or
    user:password in base64, in any field that a message quotes: a model id, a malformed count)."""
    try:
        yield
    except SpecvizError as exc:
        exc.args = tuple(endpoint.redact(arg) if isinstance(arg, str) else arg for arg in exc.args)
        raise


def _discover(endpoint: Endpoint, model: str | None, method: str | None) -> Server:
    """What connect finds out, in order: the models, the version, the config, the counters, one probe completion."""
    models, max_len = _models(endpoint)
    model = _choose(endpoint, models, model)
    version = _version(endpoint)
    notes: list[str] = []
    vllm_method, k, by_batch = _server_info(endpoint)
    if vllm_method:
        notes.append("method and K from /server_info")
    if by_batch:
        notes.append(by_batch)
    counters = read_counters(endpoint, model)
    probe = _probe(endpoint, model)
    spec = _metrics(probe, f"{endpoint.url}/v1/completions", PROBE_TOKENS)
    if counters is not None and not counters.speculative and spec is None:
        raise SpeculationOff(
            f"The server at {endpoint.url} decodes {model!r} without speculation. " + START_WITH_SPECULATION
        )
    if spec is None and counters is None:
        raise StatisticsOff(
            f"The server at {endpoint.url} reports no speculative-decoding statistics: no per-request metrics and no "
            "counters on /metrics (statistics disabled with --disable-log-stats, or speculation off). Start it with "
            "--per-request-spec-decode-metrics detailed and without --disable-log-stats."
        )
    if k is None:
        k = (spec.k if spec else None) or (counters.k if counters else None)
        if k is not None:
            notes.append("K from the per-request metrics" if spec and spec.k else "K from the per-position counters")
    if k is None:
        raise StatisticsOff(f"The server at {endpoint.url} does not say how many tokens it drafts (K).")
    name = _method_name(vllm_method, method, notes)
    return Server(
        endpoint,
        model,
        tuple(models),
        version,
        name,
        vllm_method,
        k,
        spec is not None,
        bool(counters and counters.speculative),
        max_len,
        tuple(notes),
    )


def _models(endpoint: Endpoint) -> tuple[list[str], int | None]:
    try:
        doc = request(endpoint, "GET", "/v1/models").json(endpoint, "/v1/models")
    except ServerHTTPError as exc:
        if exc.status in (401, 403):
            raise
        raise NotOpenAIServer(
            f"{endpoint.url} answered /v1/models with HTTP {exc.status}: it is not an OpenAI-compatible server "
            "(vLLM serves one at http://HOST:8000 by default). Check the URL and port."
        ) from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list) or not all(isinstance(m, dict) and "id" in m for m in data):
        raise NotOpenAIServer(f"{endpoint.url}/v1/models is not an OpenAI model list; is this a vLLM server?")
    if not data:
        raise NotOpenAIServer(f"{endpoint.url} serves no model.")
    lengths = [m.get("max_model_len") for m in data if isinstance(m.get("max_model_len"), int)]
    return [str(m["id"]) for m in data], (lengths[0] if lengths else None)


def _choose(endpoint: Endpoint, models: list[str], model: str | None) -> str:
    if model is None:
        if len(models) > 1:
            raise UnknownModel(f"{endpoint.url} serves several models: {', '.join(models)}. Choose one with --model.")
        return models[0]
    if model not in models:
        raise UnknownModel(f"{endpoint.url} does not serve {model!r}; it serves: {', '.join(models)}.")
    return model


def _version(endpoint: Endpoint) -> str | None:
    try:
        doc = request(endpoint, "GET", "/version").json(endpoint, "/version")
    except ServerError:
        return None
    return str(doc.get("version")) if isinstance(doc, dict) and doc.get("version") else None


def _server_info(endpoint: Endpoint) -> tuple[str | None, int | None, str]:
    """(method, K, a note on K's batch-size schedule or '') from /server_info, served only in vLLM's dev mode
    (VLLM_SERVER_DEV_MODE=1); else (None, None, '')."""
    try:
        doc = request(endpoint, "GET", "/server_info?config_format=json").json(endpoint, "/server_info")
    except ServerError:
        return None, None, ""
    config = doc.get("vllm_config") if isinstance(doc, dict) else None
    spec = config.get("speculative_config") if isinstance(config, dict) else None
    if not isinstance(config, dict) or "speculative_config" not in config:
        return None, None, ""
    if spec is None:
        raise SpeculationOff(f"The server at {endpoint.url} runs without speculation. " + START_WITH_SPECULATION)
    if not isinstance(spec, dict):
        return None, None, ""
    where, k = f"{endpoint.url}/server_info", spec.get("num_speculative_tokens")
    method = answers.text_or_none(spec.get("method"), where, "speculative_config.method")
    k = None if k is None else whole(k, where, "speculative_config.num_speculative_tokens", 1, MAX_SERVER_K)
    return method, k, _batch_schedule_note(spec.get("num_speculative_tokens_per_batch_size"), where)


def _batch_schedule_note(schedule, where: str) -> str:
    """vLLM's num_speculative_tokens_per_batch_size ([(first batch size, last, K), ...]) in words, or '' when the
    server drafts the same K at every batch size: under load such a server changes K with the batch, so a load
    sweep's levels do not all run the K it reports."""
    if schedule is None:
        return ""
    field = "speculative_config.num_speculative_tokens_per_batch_size"
    if not isinstance(schedule, list) or not all(isinstance(e, list | tuple) and len(e) == 3 for e in schedule):
        raise bad(where, field, schedule, "a list of (first, last, K) batch-size ranges")
    ranges = [
        (
            whole(a, where, field, 1, 1 << 20),
            whole(b, where, field, 1, 1 << 20),
            whole(n, where, field, 0, MAX_SERVER_K),
        )
        for a, b, n in schedule
    ]
    words = ", ".join(f"{a}–{b} → {n}" for a, b, n in ranges)
    return f"K changes with the batch size (num_speculative_tokens_per_batch_size): batch {words}"


def _probe(endpoint: Endpoint, model: str) -> Completion:
    """A short greedy completion: checks the model answers, and shows which per-request metrics come back."""
    body = {"model": model, "prompt": "def", "max_tokens": PROBE_TOKENS, "temperature": 0, "n": 1, "stream": False}
    return _completion(endpoint, body)


def _method_name(vllm_method: str | None, declared: str | None, notes: list[str]) -> str:
    if declared in methods.CROSSING and vllm_method in (None, methods.VLLM_DRAFT_MODEL):  # use_heterogeneous_vocab
        notes.append(f"method {declared!r} as declared: a draft model with its own vocabulary")
        return declared
    if vllm_method is not None:
        if vllm_method not in FROM_VLLM:
            raise UnsupportedMethod(
                f"The server speculates with vLLM's {vllm_method!r} method; specviz measures "
                f"{', '.join(FROM_VLLM)} (its registry has no entry for {vllm_method!r} yet)."
            )
        if declared is not None and declared != FROM_VLLM[vllm_method]:
            raise SettingsError(f"The server runs {vllm_method} ({FROM_VLLM[vllm_method]}), not {declared}.")
        return FROM_VLLM[vllm_method]
    if declared is not None:
        methods.get(declared)
        if declared not in FROM_VLLM.values():
            raise SettingsError(
                f"A vLLM server speculates with one of {', '.join(FROM_VLLM.values())}; got {declared!r}."
            )
        notes.append(f"method {declared!r} as declared: the server does not expose it")
        return declared
    notes.append(
        "method assumed to be a draft model: the server does not expose it (declare ngram if it runs n-gram "
        "lookup; vLLM shows its config at /server_info when started with VLLM_SERVER_DEV_MODE=1)"
    )
    return methods.DRAFT


# ----------------------------------------------------------------------------------------------------------- measure
def measure(
    server: Server,
    rows: Iterable[PromptRow],
    base: RunSettings,
    concurrency: int = 1,
    on_progress: Callable[[Progress], None] | None = None,
    repeats: int = 1,
) -> Iterator[PairedRun]:
    """Every prompt through the server with its method and K, `concurrency` requests at a time; yields results as they
    finish (PairedRun without plain runs: a server has no plain baseline here, so no speedup is claimed). Like every
    workload, each run makes exactly max_new_tokens tokens (EOS ignored). A caller that meets an error keeps what was
    yielded before it. Impossible requests are refused here, before anything is sent."""
    rows, settings = list(rows), replace(server.settings(base), stop_at_eos=False)
    check_concurrency(server, concurrency, repeats)
    if concurrency == 1:
        return run_workload(server.run, rows, [server.method], [server.k], settings, on_progress, repeats, False)
    return _concurrent(server, rows, settings, concurrency, on_progress)


def check_concurrency(server: Server, concurrency: int, repeats: int = 1) -> None:
    """Concurrent requests need per-request metrics (global counters cannot be attributed) and no timing repeats."""
    if concurrency < 1:
        raise SettingsError(f"concurrency must be at least 1; got {concurrency}.")
    if concurrency > 1 and repeats != 1:
        raise SettingsError("Timing repeats run one request at a time: use concurrency 1 with repeats.")
    if concurrency > 1 and not server.per_request:
        raise ConcurrencyUnsupported(
            f"Concurrency {concurrency} needs per-request metrics: {server.url} has only global counters, which "
            "cannot tell concurrent requests apart. Use concurrency 1, or start vLLM with "
            "--per-request-spec-decode-metrics detailed."
        )


def _concurrent(
    server: Server,
    rows: list[PromptRow],
    settings: RunSettings,
    concurrency: int,
    on_progress: Callable[[Progress], None] | None,
) -> Iterator[PairedRun]:
    start, done = time.perf_counter(), 0
    with ThreadPoolExecutor(concurrency) as pool:
        pending = {pool.submit(server.run, row.prompt, settings, row.tag, False) for row in rows}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    record = future.result()
                    done += 1
                    if on_progress:
                        on_progress(Progress(done, len(rows), record.prompt, time.perf_counter() - start))
                    yield PairedRun((record,))
        finally:
            for future in pending:
                future.cancel()
