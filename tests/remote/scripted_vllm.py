"""A scripted vLLM server for the load sweep's fault paths (no vLLM needed): what connect() and connect_plain() ask
(/v1/models, the probe completion, /metrics), and streamed completions whose n-th one can be answered otherwise (a
refusal, a stall) and whose counters can count another client's requests beside ours."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

from fake_server import MODELS, fake_server, metrics_text

STREAM_HEADERS = {"Content-Type": "text/event-stream"}
SPEC = {"num_spec_tokens": 4, "num_drafts": 1, "num_draft_tokens": 4, "num_accepted_tokens": 1}


def sse(*events) -> bytes:
    """Server-sent events, then [DONE]."""
    return "".join([f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]).encode()


def streamed(tokens: int, speculative: bool) -> bytes:
    """A streamed completion of `tokens` tokens, two to an event, its usage (and spec metrics) in the last."""
    events = [
        {"choices": [{"index": 0, "text": "x", "token_ids": list(range(i, min(i + 2, tokens)))}]}
        for i in range(0, tokens, 2)
    ]
    last = {"choices": [], "usage": {"completion_tokens": tokens}}
    if speculative:
        last["metrics"] = {"speculative_decoding": {**SPEC, "per_step_accepted": [1], "per_step_drafted": [4]}}
    return sse(*events, last)


def probe(speculative: bool) -> dict:
    """The non-streamed probe connect() sends (8 tokens), with the per-request metrics when speculative."""
    doc = {"choices": [{"text": "x" * 8, "token_ids": list(range(8)), "finish_reason": "length"}]}
    doc["usage"] = {"completion_tokens": 8}
    if speculative:
        doc["metrics"] = {"speculative_decoding": {**SPEC, "per_step_accepted": [1], "per_step_drafted": [4]}}
    return doc


def plain_metrics(finished: float, generated: float) -> str:
    """A plain server's /metrics: request and token counters, no speculative ones."""
    labels = 'engine="0",model_name="tiny"'
    return (
        "process_start_time_seconds 1.0\n"
        f"vllm:generation_tokens_total{{{labels}}} {generated}\n"
        f'vllm:request_success_total{{{labels},finished_reason="length"}} {finished}\n'
        f"vllm:num_requests_running{{{labels}}} 0.0\n"
    )


def refusal(status: int, retry_after: str | None = None, seconds: float = 0.2):
    """A route refusing with `status` after `seconds` (so the loop's other requests are in flight meanwhile)."""
    headers = {} if retry_after is None else {"Retry-After": retry_after}

    def route(handler, body):
        time.sleep(seconds)
        return status, {"error": {"message": "the queue is full"}}, headers

    return route


def stall(seconds: float):
    """A route that answers a streamed completion only after `seconds` (past a short timeout)."""

    def route(handler, body):
        time.sleep(seconds)
        return 200, streamed(json.loads(body)["max_tokens"], True), STREAM_HEADERS

    return route


@contextmanager
def scripted_vllm(
    speculative: bool = True,
    fault: Callable[[int], object] | None = None,
    metrics: bool = False,
    others: int = 0,
):
    """Yields (url, state). fault(n): None to answer the n-th streamed completion (from 0) normally, else the route
    that answers it instead. metrics: serve /metrics counting the completions served, plus `others` requests of
    another client (and their tokens) finishing beside each of ours."""
    state = {"streamed": 0, "finished": 0, "tokens": 0}
    lock = threading.Lock()

    def completions(handler, body):
        doc = json.loads(body)
        if not doc.get("stream"):
            return 200, probe(speculative), {}
        with lock:
            n = state["streamed"]
            state["streamed"] += 1
        route = fault(n) if fault else None
        if route is not None:
            return route(handler, body)
        with lock:  # counted before the answer goes out, as vLLM does
            state["finished"] += 1 + others
            state["tokens"] += doc["max_tokens"] * (1 + others)
        return 200, streamed(doc["max_tokens"], speculative), STREAM_HEADERS

    def counters(handler, body):
        with lock:
            finished, tokens = state["finished"], state["tokens"]
        page = metrics_text(generated=tokens, finished=finished) if speculative else plain_metrics(finished, tokens)
        return 200, page, {"Content-Type": "text/plain"}

    routes = {"GET /v1/models": (200, MODELS, {}), "POST /v1/completions": completions}
    if metrics:
        routes["GET /metrics"] = counters
    with fake_server(routes) as (url, _):
        yield url, state
