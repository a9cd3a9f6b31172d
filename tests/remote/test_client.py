"""The vLLM client without vLLM: counters, round accounting, secrets, public mode and every HTTP fault, against
hand-written metrics and a scripted loopback server."""

from __future__ import annotations

import json
import math
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_server import MODELS, fake_server, metrics_text, slow  # noqa: E402

from specviz.core.settings import RunSettings
from specviz.measure.prompts import PromptRow
from specviz.measure.summary import results_csv, results_json, summarize
from specviz.remote import check_host, host_allowed, prometheus
from specviz.remote.errors import (
    ConcurrencyUnsupported,
    HostNotAllowed,
    NotOpenAIServer,
    ServerError,
    ServerHTTPError,
    ServerRestarted,
    ServerTimeout,
    ServerUnreachable,
    SpeculationOff,
    StatisticsOff,
    UnknownModel,
)
from specviz.remote.http import BadServerURL, parse_url
from specviz.remote.vllm import connect, delta, measure, read_counters, rounds_from_steps
from specviz.ui.limits import Limits

KEY = "sk-test-0123456789"


def completion(text="abc", tokens=6, spec=None):
    doc = {
        "choices": [{"text": text, "finish_reason": "length", "token_ids": list(range(tokens))}],
        "usage": {"completion_tokens": tokens},
        "metrics": {"speculative_decoding": spec},
    }
    return 200, doc, {}


DETAILED = {
    "num_spec_steps": 2,
    "num_accepted_draft_tokens": 3,
    "num_draft_tokens": 8,
    "num_spec_tokens": 4,
    "acceptance_histogram": [0, 1, 1, 0, 0],
    "per_step_accepted": [2, 1],
    "per_step_drafted": [4, 4],
}


# ------------------------------------------------------------------------------------------------------- prometheus
def test_prometheus_parse_sums_engines_and_filters_labels():
    text = metrics_text(drafts=10, draft_tokens=40, accepted=22, per_pos=(8, 6, 5, 3), engines=("0", "1"))
    text += 'other_metric{model_name="x",note="a \\"quoted\\", comma"} 7\n# comment\nbroken line\n'
    samples = prometheus.parse(text)
    assert prometheus.total(samples, "vllm:spec_decode_num_drafts_total") == 10  # two engines, 5 each
    assert prometheus.total(samples, "vllm:spec_decode_num_drafts_total", model_name="other") is None
    assert prometheus.by_label(samples, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "position") == {
        "0": 8,
        "1": 6,
        "2": 5,
        "3": 3,
    }
    assert next(s for s in samples if s.name == "other_metric").label("note") == 'a "quoted", comma'


def test_counters_delta_and_restart_detection():
    routes = {
        "/metrics": (
            200,
            metrics_text(
                drafts=4,
                draft_tokens=16,
                accepted=9,
                per_pos=(4, 3, 1, 1),
                generated=13,
                finished=1,
                steps=5,
                engines=("0", "1"),
            ),
            {},
        )
    }
    with fake_server(routes) as (url, _):
        endpoint = parse_url(url)
        before = read_counters(endpoint, "tiny")
        assert before.k == 4
        assert before.engines == 2
        assert before.speculative
        routes["/metrics"] = (
            200,
            metrics_text(
                drafts=6,
                draft_tokens=24,
                accepted=12,
                per_pos=(5, 4, 2, 1),
                generated=18,
                finished=2,
                steps=8,
                engines=("0", "1"),
            ),
            {},
        )
        moved = delta(before, read_counters(endpoint, "tiny"), url)
        assert moved.values["vllm:spec_decode_num_drafts_total"] == 2
        assert moved.accepted_per_pos == {
            0: 1,
            1: 1,
            2: 1,
            3: 0,
        }
        # a restart: the counters start again from zero (and their _created stamps change)
        routes["/metrics"] = (200, metrics_text(drafts=1, created=2.0), {})
        with pytest.raises(ServerRestarted, match="restarted during the measurement"):
            delta(before, read_counters(endpoint, "tiny"), url)
        routes["/metrics"] = (200, "# statistics disabled\n", {})
        assert read_counters(endpoint, "tiny") is None


# ------------------------------------------------------------------------------------------------ round accounting
def test_rounds_from_steps_prefill_round_and_a_cut_last_step():
    meta = {"warnings": []}
    # prefill 1 token; steps accept 4, 1, 4 of 4 -> 1 + 5 + 2 + 5 = 13 tokens, but max_tokens cut at 10
    rounds = rounds_from_steps([4, 4, 4], [4, 1, 4], n_tokens=10, engine_steps=4, meta=meta)
    assert rounds["per_round_committed"] == (1, 5, 2, 2)
    assert meta["last_round_cut"] == 3
    assert rounds["per_round_drafted"] == (0, 4, 4, 4)
    assert rounds["per_round_accepted"] == (0, 4, 1, 4)
    assert rounds["per_round_judged"] == (0, 4, 2, 4)  # a step that accepts all drafts judged no rejected one
    assert not meta["warnings"]


def test_rounds_from_steps_counts_steps_without_drafts():
    meta = {"warnings": []}
    # an n-gram server: 2 verify steps (accept 1 of 2, 0 of 3) and 3 steps that found nothing to draft
    rounds = rounds_from_steps([2, 3], [1, 0], n_tokens=7, engine_steps=6, meta=meta)
    assert rounds["per_round_committed"] == (1, 1, 1, 1, 2, 1)
    assert meta["rounds_without_drafts"] == 3
    assert rounds["per_round_judged"] == (0, 0, 0, 0, 2, 1)
    # without the engine-step counter the token count tells the same when nothing was cut
    assert rounds_from_steps([2, 3], [1, 0], 7, None, {"warnings": []}) == rounds


# ----------------------------------------------------------------------------------------------- a scripted server
def vllm_like(spec=DETAILED, metrics=True, models=MODELS):
    routes = {
        "/v1/models": (200, models, {}),
        "/version": (200, {"version": "0.32.0"}, {}),
        # an honest server: never more tokens than asked for (specviz refuses a count above max_tokens)
        "POST /v1/completions": lambda handler, body: completion(
            tokens=min(6, json.loads(body)["max_tokens"]), spec=spec
        ),
    }
    if metrics:
        routes["/metrics"] = (200, metrics_text(), {})
    return routes


def test_connect_and_run_per_request_path_keeps_the_key_secret(monkeypatch):
    with fake_server(vllm_like(metrics=False)) as (url, seen):
        server = connect(url.replace("http://", f"http://user:{KEY}@") + "/v1", api_key=KEY)
        assert (server.model, server.k, server.method, server.per_request) == ("tiny", 4, "draft", True)
        assert any("assumed" in note for note in server.notes)
        record = server.run("def f():", server.settings(RunSettings(max_new_tokens=6)), "code")
        assert seen[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert record.per_round_committed == (1, 3, 2)
    assert record.committed == 6
    assert record.source == "vllm"
    assert record.alpha == pytest.approx(3 / 5)
    assert record.tau == pytest.approx(6 / 3)
    assert record.meta["server"] == url
    assert "tiny" == record.meta["model"]
    rows = [PairedRunLike(record)]
    exported = results_json(rows, server.settings(RunSettings()), server.describe()) + results_csv(rows)
    for text in (exported, repr(server), repr(server.endpoint), json.dumps(record.to_dict()), str(server.describe())):
        assert KEY not in text
        assert "user:" not in text


def PairedRunLike(record):
    from specviz.measure.workload import PairedRun

    return PairedRun((record,))


def test_a_workload_without_baseline_claims_no_speedup():
    with fake_server(vllm_like()) as (url, _):
        server = connect(url)
        results = list(measure(server, [PromptRow("a", "x"), PromptRow("b", "y")], RunSettings(max_new_tokens=6)))
    assert len(results) == 2
    assert all(r.plains == () and r.speedup is None for r in results)
    overall = next(row for row in summarize(results) if row["tag"] == "all")
    assert overall["speedup"] is None
    assert overall["plain_tokens_per_s"] is None
    assert all(math.isnan(v) for v in overall["speedup_ci"])
    assert overall["alpha"] == pytest.approx(3 / 5)
    assert overall["tokens_per_s"] > 0
    doc = json.loads(results_json(results, RunSettings(), server.describe()))
    assert doc["runs"][0]["source"] == "vllm"
    assert doc["runs"][0]["server"] == url
    assert doc["runs"][0]["speedup"] is None
    header, first = (line.split(",") for line in results_csv(results).splitlines()[:2])
    row = dict(zip(header, first))
    assert row["plain_tokens_per_s"] == row["speedup"] == ""  # left empty: no plain run to compare with


def test_summary_level_metrics_give_totals():
    summary = {k: v for k, v in DETAILED.items() if not k.startswith("per_step")}
    with fake_server(vllm_like(spec=summary, metrics=False)) as (url, _):
        server = connect(url)
        record = server.run("p", server.settings(RunSettings(max_new_tokens=6)))
    assert record.per_round_accepted is None
    assert record.meta["metrics"] == "per-request summary"
    # 2 verify steps drafting 4 each, accepting 2 and 1: both rejected one draft; the prefill is a round of its own
    assert (record.proposed, record.accepted, record.judged, record.rounds, record.committed) == (8, 3, 5, 3, 6)


def test_counter_path_totals_and_other_clients():
    routes = vllm_like(spec=None)
    with fake_server(routes) as (url, _):
        server = connect(url, method="ngram")
        assert (server.per_request, server.counters, server.method) == (False, True, "ngram")
        calls = iter(
            [
                metrics_text(),
                metrics_text(
                    drafts=2, draft_tokens=8, accepted=3, per_pos=(2, 1, 0, 0), generated=6, finished=1, steps=3
                ),
            ]
        )
        routes["/metrics"] = lambda handler, body: (200, next(calls), {})
        record = server.run("p", server.settings(RunSettings(max_new_tokens=6)))
        assert record.per_round_committed == ()
        assert record.per_round_accepted is None
        assert (record.proposed, record.accepted, record.judged, record.rounds, record.committed) == (8, 3, 5, 3, 6)
        assert record.tau == pytest.approx(6 / 3)
        assert record.alpha == pytest.approx(3 / 5)
        assert "warnings" not in record.meta
        # another client's request finished during ours: 2 requests, 9 tokens generated
        calls = iter([metrics_text(), metrics_text(drafts=3, draft_tokens=12, generated=9, finished=2, steps=5)])
        record = server.run("p", server.settings(RunSettings(max_new_tokens=6)))
        assert "other clients used the server" in record.meta["warnings"][0]
        assert record.rounds is None
        with pytest.raises(ConcurrencyUnsupported, match="per-request metrics"):
            list(measure(server, [PromptRow("a")], RunSettings(), concurrency=2))


def test_concurrent_requests_with_per_request_metrics():
    with fake_server(vllm_like(metrics=False)) as (url, seen):
        server = connect(url)
        results = list(measure(server, [PromptRow(str(i)) for i in range(5)], RunSettings(max_new_tokens=6), 3))
    assert sorted(r.prompt for r in results) == ["0", "1", "2", "3", "4"]
    assert all(r.alpha == 0.6 for r in results)
    assert not any(s["path"] == "/metrics" for s in seen[-5:])  # counters are never read around concurrent requests


# ----------------------------------------------------------------------------------------------------------- faults
@pytest.mark.parametrize(
    "routes, error, message",
    [
        ({}, NotOpenAIServer, "not an OpenAI-compatible server"),
        (
            {"/v1/models": (200, "<html>hello</html>", {"Content-Type": "text/html"})},
            NotOpenAIServer,
            "did not answer with JSON",
        ),
        ({"/v1/models": (401, {"error": {"message": "Unauthorized"}}, {})}, ServerHTTPError, "--api-key-env"),
        ({**vllm_like(spec=None, metrics=False)}, StatisticsOff, "--per-request-spec-decode-metrics detailed"),
        (
            {**vllm_like(spec=None), "/metrics": (200, "vllm:generation_tokens_total 3\n", {})},
            SpeculationOff,
            "without speculation",
        ),
        (
            {**vllm_like(), "/v1/models": (200, {"data": [{"id": "a"}, {"id": "b"}]}, {})},
            UnknownModel,
            "serves several",
        ),
        (
            {**vllm_like(), "/v1/models": (302, "", {"Location": "http://example.org/v1/models"})},
            ServerError,
            "redirects to another host",
        ),
        (
            {**vllm_like(), "POST /v1/completions": (400, {"error": {"message": f"max_tokens too big {KEY}"}}, {})},
            ServerHTTPError,
            "HTTP 400 from the server: max_tokens too big \\*\\*\\*",
        ),
    ],
)
def test_faults_are_specviz_errors_with_a_way_out(routes, error, message):
    with fake_server(routes) as (url, _):
        with pytest.raises(error, match=message) as caught:
            connect(url, api_key=KEY)
    assert KEY not in str(caught.value)


def test_unknown_model_lists_the_served_ones():
    with fake_server(vllm_like()) as (url, _):
        with pytest.raises(UnknownModel, match="does not serve 'big'; it serves: tiny"):
            connect(url, model="big")


def test_redirect_on_the_same_host_is_followed():
    routes = {
        **vllm_like(),
        "/v1/models": lambda h, b: (307, "", {"Location": "/v1/models2"}),
        "/v1/models2": (200, MODELS, {}),
    }
    with fake_server(routes) as (url, _):
        assert connect(url).model == "tiny"


def test_timeouts_size_caps_and_unreachable_urls():
    with fake_server({**vllm_like(), "/v1/models": slow(2.0, (200, MODELS, {}))}) as (url, _):
        with pytest.raises(ServerTimeout, match="did not answer within 0.5 s"):
            connect(url, timeout_s=0.5)
    with fake_server({**vllm_like(), "/v1/models": (200, b"x" * 9_000_000, {})}) as (url, _):
        with pytest.raises(ServerError, match="sent more than 8 MB"):
            connect(url)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ServerUnreachable, match="Nothing is listening"):
        connect(f"http://127.0.0.1:{port}")
    for bad in ("", "ftp://host/x", "http://host:notaport", "http://"):
        with pytest.raises(BadServerURL):
            parse_url(bad)


# ------------------------------------------------------------------------------------------------------ public mode
def test_public_mode_allows_only_listed_servers():
    allowed = ("gpu.example.org:8000", "http://127.0.0.1")
    assert host_allowed("http://gpu.example.org:8000", allowed)
    assert host_allowed("GPU.example.org:8000/v1", allowed)
    assert not host_allowed("http://gpu.example.org:9000", allowed)  # the entry names a port
    assert host_allowed("http://127.0.0.1:8123", allowed)  # no port in the entry: any port
    assert not host_allowed("http://127.0.0.1.evil.org", allowed)
    assert not host_allowed("not a url::", allowed)
    public = Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_SERVERS": "gpu.example.org:8000"})
    with pytest.raises(HostNotAllowed, match="SPECVIZ_SERVERS"):
        public.check_server("http://10.1.2.3:8000")
    public.check_server("http://gpu.example.org:8000")
    Limits.from_env({}).check_server("http://anything:1")  # private mode: any server
    with pytest.raises(HostNotAllowed, match="allowed: none"):
        check_host("http://gpu.example.org:8000", public=True, allowed=())
