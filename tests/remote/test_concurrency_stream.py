"""The load sweep without vLLM: the streamed request against a scripted server (events, bursts, counts, faults) and
the CLI's refusals of bad sweep options, each before any request is sent."""

from __future__ import annotations

import csv
import io
import json
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_server import fake_server  # noqa: E402
from scripted_vllm import refusal, scripted_vllm, stall  # noqa: E402

from specviz.cli import main
from specviz.core.settings import RunSettings
from specviz.errors import SettingsError
from specviz.remote.concurrency import LOOP_THREADS, Overloaded, closed_loop, parse_levels, request_count, timed_request
from specviz.remote.errors import MalformedAnswer, ServerError, ServerHTTPError, ServerUnreachable
from specviz.remote.http import parse_url, retry_after_s

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
    from specviz.remote.concurrency import Baseline, sweep
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


# ------------------------------------------------------------------------------------------------- faults under load
def sweep_cli(tmp_path, spec_url, plain_url, *extra):
    """The load sweep from the command line over one prompt at concurrency 1 and 2 -> (exit code, JSON, CSV)."""
    prompts = tmp_path / "p.txt"
    prompts.write_text("def f():\n")
    out, table = tmp_path / "load.json", tmp_path / "load.csv"
    args = ["measure", str(prompts), "--server", spec_url, "--baseline-server", plain_url, "--concurrency", "1,2"]
    code = main([*args, "--max-new-tokens", "4", "--json", str(out), "--csv", str(table), *extra])
    return code, json.loads(out.read_text()), table.read_text()


LEVEL_1 = 3  # one prompt at concurrency 1: a warm-up request and two counted ones


def loop_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(LOOP_THREADS)]


def test_a_server_refusing_requests_at_a_level_is_overloaded_there_and_the_finished_levels_are_kept(tmp_path, capsys):
    refuse = lambda n: refusal(429) if n >= LEVEL_1 else None  # noqa: E731
    with scripted_vllm(fault=refuse) as (spec_url, _), scripted_vllm(speculative=False) as (plain_url, _):
        code, doc, table = sweep_cli(tmp_path, spec_url, plain_url)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert [level["concurrency"] for level in doc["levels"]] == [1]  # level 1 kept, in the JSON and the CSV
    assert table.count("\n") == 3  # the header, then level 1's two servers
    failure = doc["failure"]
    assert (failure["server"], failure["concurrency"], failure["kind"], failure["statuses"]) == (
        spec_url,
        2,
        "overloaded",
        [429],
    )
    assert 1 <= failure["refused"] <= failure["sent"] <= 2  # the warm-up's two requests, refused as they came
    words = (
        f"{spec_url} answered HTTP 429 (Too Many Requests) to {failure['refused']} of the {failure['sent']} requests"
    )
    assert words in err and "sent at concurrency 2: it is overloaded" in err
    assert "Lower the concurrency levels" in err and "--max-num-seqs" in err and "the queue is full" in err
    assert "The levels finished before are kept." in err


def test_a_retry_after_is_honoured_once_and_the_request_served_then_counts():
    refuse_first = lambda n: refusal(503, "0", 0.0) if n == 0 else None  # noqa: E731
    with scripted_vllm(fault=refuse_first) as (url, state):
        loop = closed_loop(parse_url(url), "tiny", ["a", "b"], SETTINGS, 1, 2)
    assert (len(loop.timings), loop.retried, state["streamed"]) == (2, 1, 3)


def test_a_level_served_after_one_retry_is_kept_and_says_so(tmp_path, capsys):
    refuse_first = lambda n: refusal(503, "0", 0.0) if n == 0 else None  # noqa: E731
    with scripted_vllm(fault=refuse_first) as (spec_url, _), scripted_vllm(speculative=False) as (plain_url, _):
        code, doc, table = sweep_cli(tmp_path, spec_url, plain_url)
    assert code == 0 and doc["failure"] is None
    assert [[s["retried_requests"] for s in level["summaries"]] for level in doc["levels"]] == [[0, 1], [0, 0]]
    assert (
        f"note: {spec_url} refused 1 request(s) once and served them after its Retry-After wait"
        in capsys.readouterr().out
    )
    assert [row["retried_requests"] for row in csv.DictReader(io.StringIO(table))] == ["0", "1", "0", "0"]


@pytest.mark.parametrize(
    "retry_after, said",
    [("0", "It asked to retry after 0 s; the sweep waits once per level and server, at most 10 s"), ("3600", "3600 s")],
    ids=["refused-again", "asks-too-long"],
)
def test_a_server_that_keeps_refusing_or_asks_too_long_a_wait_ends_the_loop_at_once(retry_after, said):
    started = time.monotonic()
    with scripted_vllm(fault=lambda n: refusal(503, retry_after, 0.0)) as (url, state):
        with pytest.raises(Overloaded, match="HTTP 503 \\(Service Unavailable\\)") as refused:
            closed_loop(parse_url(url), "tiny", ["a"], SETTINGS, 2, 8)
    assert said in str(refused.value)
    assert time.monotonic() - started < 5  # no wait of an hour, no retry loop
    assert state["streamed"] <= 2 + 1  # the two slots' requests, and at most one retry
    assert not loop_threads()


def test_a_request_past_the_timeout_ends_the_level_naming_the_timeout_and_leaves_no_thread(tmp_path, capsys):
    stalled = []  # when the first stalled request reached the server

    def slow(n):
        if n < LEVEL_1:
            return None
        stalled.append(time.monotonic())
        return stall(5.0)

    with scripted_vllm(fault=slow) as (spec_url, _), scripted_vllm(speculative=False) as (plain_url, _):
        code, doc, _ = sweep_cli(tmp_path, spec_url, plain_url, "--timeout", "0.5")
        ended = time.monotonic()
        assert not loop_threads()  # the level's other thread stopped too, before the stalled answers came
    assert ended - stalled[0] < 4.0  # the sweep ended past the 0.5 s timeout, not when the 5 s answers came
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert [level["concurrency"] for level in doc["levels"]] == [1]
    assert (doc["failure"]["kind"], doc["failure"]["timeout_s"], doc["failure"]["concurrency"]) == ("timeout", 0.5, 2)
    assert f"{spec_url} did not finish a request within the 0.5 s timeout at concurrency 2" in err
    assert "raise the timeout per request (--timeout" in err and "The levels finished before are kept." in err


def test_other_clients_on_a_servers_counters_are_flagged_in_the_json_the_table_and_the_csv(tmp_path, capsys):
    with (
        scripted_vllm(metrics=True) as (spec_url, _),
        scripted_vllm(speculative=False, metrics=True, others=1) as (plain_url, state),
    ):
        code, doc, table = sweep_cli(tmp_path, spec_url, plain_url)
    out = capsys.readouterr().out
    assert code == 0 and doc["failure"] is None
    level_1, level_2 = doc["levels"]
    assert list(level_1["other_traffic"]) == [plain_url]  # the speculative server's counters match the sweep's
    sent = LEVEL_1  # our requests at level 1 (warm-up included); as many of the other client's finished beside
    assert f"{2 * sent} requests finished instead of {sent}" in level_1["other_traffic"][plain_url]
    assert (
        f"the server generated {2 * 4 * sent} tokens, our {sent} requests {4 * sent}"
        in level_1["other_traffic"][plain_url]
    )
    assert "not the sweep's alone" in level_2["other_traffic"][plain_url]
    assert f"warning: {plain_url}: other clients used the server during this level" in out
    rows = list(csv.DictReader(io.StringIO(table)))
    assert [bool(row["other_traffic"]) for row in rows] == [True, False, True, False]  # baseline rows only


def test_retry_after_in_seconds_or_as_a_date():
    assert retry_after_s("5") == 5.0 and retry_after_s(None) is None and retry_after_s("soon") is None
    assert retry_after_s("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412500.0) == pytest.approx(10.0)
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412500.0) == 0.0  # a date past: no wait
