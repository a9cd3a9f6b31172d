"""The load sweep without vLLM: the streamed request against a scripted server (events, bursts, counts, faults) and
the CLI's refusals of bad sweep options, each before any request is sent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_server import fake_server  # noqa: E402

from specviz.cli import main
from specviz.core.settings import RunSettings
from specviz.errors import SettingsError
from specviz.remote.errors import MalformedAnswer, ServerError, ServerHTTPError, ServerUnreachable
from specviz.remote.http import parse_url
from specviz.remote.load import parse_levels, request_count, timed_request

SETTINGS = RunSettings(max_new_tokens=4, stop_at_eos=False)


def sse(*events, done=True) -> bytes:
    lines = [f"data: {json.dumps(e)}\n\n" for e in events] + (["data: [DONE]\n\n"] if done else [])
    return "".join(lines).encode()


def chunk(ids):
    return {"choices": [{"index": 0, "text": "x" * len(ids), "token_ids": ids}]}


USAGE = {"choices": [], "usage": {"completion_tokens": 4}}
SPEC = {"num_drafts": 2, "num_draft_tokens": 8, "num_accepted_tokens": 3, "per_step_accepted": [2, 1]}
STREAM_HEADERS = {"Content-Type": "text/event-stream"}


def run(payload: bytes, status=200):
    with fake_server({"POST /v1/completions": (status, payload, STREAM_HEADERS)}) as (url, seen):
        timing = timed_request(parse_url(url, api_key="sk-secret-1234"), "tiny", "def", 0, SETTINGS, 0.0)
        return timing, json.loads(seen[0]["body"])


def test_a_streamed_request_counts_bursts_usage_and_the_speculative_metrics():
    final = {**USAGE, "metrics": {"speculative_decoding": SPEC}}
    timing, sent = run(sse(chunk([5]), chunk([6, 7, 8]), final))
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True} and sent["ignore_eos"]
    assert [n for _, n in timing.arrivals] == [1, 3]  # the verify step's three tokens came in one event
    assert (timing.tokens, timing.streamed) == (4, 4)
    assert (timing.accepted, timing.drafted, timing.per_step_accepted) == (3, 8, (2, 1))
    assert 0 < timing.ttft_s <= timing.e2e_s
    assert timing.itl_ms[1:] == [0.0, 0.0]  # a burst of 3: one gap, then two zeros


def test_usage_differing_from_the_tokens_streamed_is_kept_for_the_check():
    timing, _ = run(sse(chunk([5, 6]), {"choices": [], "usage": {"completion_tokens": 3}}))
    assert (timing.tokens, timing.streamed) == (3, 2)


@pytest.mark.parametrize(
    "payload, status, error, message",
    [
        (sse(chunk([5]), done=False), 200, ServerUnreachable, "ended its stream before"),
        (sse({"error": {"message": "engine dead, key sk-secret-1234"}}), 200, ServerError, r"engine dead, key \*\*\*"),
        (b'{"error": {"message": "busy"}}', 503, ServerHTTPError, "HTTP 503 from the server: busy"),
        (sse(chunk([1, 2, 3, 4, 5])), 200, MalformedAnswer, "token_ids"),
        (sse(chunk([1]), {"choices": [], "usage": {"completion_tokens": 99}}), 200, MalformedAnswer, "completion"),
        (b"data: not json\n\n", 200, ServerError, "not JSON"),
    ],
    ids=["cut-off", "error-event-redacted", "http-503", "too-many-ids", "count-beyond-max", "not-json"],
)
def test_faults_in_the_stream_are_clear_errors(payload, status, error, message):
    with pytest.raises(error, match=message):
        run(payload, status)


def test_levels_and_request_counts():
    assert parse_levels("1, 2,4") == [1, 2, 4]
    assert request_count(3, 1) == 3 and request_count(3, 4) == 9 and request_count(5, 8) == 20
    for text, message in (("0", "from 1 to"), ("1,x", "whole numbers"), ("", "at least one"), ("2,2", "twice")):
        with pytest.raises(SettingsError, match=message):
            parse_levels(text)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--baseline-server", "http://127.0.0.1:9"], "only apply with --server URL"),
        (["--server", "http://127.0.0.1:9", "--concurrency", "1,2"], "add --baseline-server"),
        (["--server", "http://127.0.0.1:9", "--server", "http://127.0.0.1:8"], "load sweep only"),
        (["--server", "a:1", "--baseline-server", "b:1", "--concurrency", "0"], "from 1 to 256; got 0"),
        (["--server", "a:1", "--baseline-server", "b:1", "--concurrency", "two"], "whole numbers"),
        (["--server", "a:1", "--baseline-server", "b:1", "--k", "4"], "drop --k"),
        (["--server", "a:1", "--concurrency", "x"], "--concurrency takes whole numbers"),
    ],
    ids=["baseline-alone", "levels-alone", "servers-alone", "zero", "word", "k", "word-single"],
)
def test_bad_sweep_options_are_refused_before_any_request(args, message, tmp_path, capsys):
    prompts = tmp_path / "p.txt"
    prompts.write_text("def f():\n")
    assert main(["measure", str(prompts), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_rounds_alternate_the_servers_order_and_merge_into_one_run_per_server():
    from specviz import methods
    from specviz.remote.load import Baseline, sweep
    from specviz.remote.vllm import Server

    order = []

    def route(name):
        def answer(handler, body):
            order.append(name)
            return 200, sse(chunk([1, 2]), chunk([3, 4]), USAGE), STREAM_HEADERS

        return answer

    with (
        fake_server({"POST /v1/completions": route("plain")}) as (plain_url, _),
        fake_server({"POST /v1/completions": route("spec")}) as (spec_url, _),
    ):
        spec = Server(parse_url(spec_url), "tiny", ("tiny",), None, methods.DRAFT, None, 4, True, False)
        baseline = Baseline(parse_url(plain_url), "tiny", ("tiny",), None)
        [level] = list(sweep([spec], baseline, ["a", "b"], SETTINGS, [1], warmup=1, rounds=3))
    # warm-up (1) + 2 prompts, then 2 and 2 with the order reversed, then plain first again
    assert order == ["plain"] * 3 + ["spec"] * 3 + ["spec"] * 2 + ["plain"] * 2 + ["plain"] * 2 + ["spec"] * 2
    assert [len(run.requests) for run in level["runs"]] == [6, 6]  # every round's requests, warm-up left out
    assert [run.server for run in level["runs"]] == [baseline.url, spec.url]
