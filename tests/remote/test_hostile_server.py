"""A listed server that misbehaves on purpose (an answer dripped a byte at a time, malformed JSON or /metrics, token
counts past what was asked for, a credential echoed back) and a timeout or allowlist that is not sane: each answer must
end in a clear SpecvizError, within the request's deadline and in small memory; never a traceback, a hang or a
credential shown. Every server here is a real one on 127.0.0.1 that the test starts and that stops by itself."""

from __future__ import annotations

import base64
import json
import re
import socket
import sys
import threading
import time
import tracemalloc
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_server import MODELS, fake_server, metrics_text  # noqa: E402
from test_client import DETAILED  # the per-request metrics an honest server sends

from specviz.core.settings import RunSettings
from specviz.errors import SettingsError
from specviz.remote import BadAllowlist, allowed_servers, check_host, host_allowed
from specviz.remote.answers import MAX_SERVER_K
from specviz.remote.errors import (
    HostNotAllowed,
    MalformedAnswer,
    ServerError,
    ServerHTTPError,
    ServerTimeout,
    UnknownModel,
)
from specviz.remote.http import parse_url, request
from specviz.remote.vllm import connect
from specviz.ui.limits import Limits


def _every_value(text: str, value: str) -> str:
    """A /metrics page with the value of every vllm: sample replaced by `value`."""
    return re.sub(r"^(vllm:\S+) \S+$", rf"\g<1> {value}", text, flags=re.M)


# ------------------------------------------------------------------------------------------------ a dripping server
@contextmanager
def drip_server(head: bytes, body: bytes, pause_s: float, drip_head: bool = False, limit_s: float = 15.0):
    """A server that sends `head` (status line and headers) and then `body`, one byte every `pause_s` (the head too
    when drip_head); each connection stops at limit_s or when the client hangs up. Yields its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        """Read the request, then drip; give up when the client leaves, the limit passes or the test ends."""
        ends = time.monotonic() + limit_s
        with conn:
            conn.settimeout(2.0)
            try:
                conn.recv(65536)
                if not drip_head:
                    conn.sendall(head)
                if not pause_s:  # no drip: all at once
                    conn.sendall(head + body if drip_head else body)
                    return
                for byte in (head if drip_head else b"") + body:
                    if stop.is_set() or time.monotonic() > ends:
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(pause_s)
            except OSError:  # the client gave up, as it should
                return

    def accept() -> None:
        """Serve each connection in its own thread until the test ends."""
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(2.0)
        listener.close()


def _head(length: int) -> bytes:
    """A 200 status line and JSON headers for a body of `length` bytes."""
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n".encode()


BODY = b'{"object": "list", "data": [{"id": "tiny", "object": "model"}]}'


# ----------------------------------------------------------------------------------------------- one deadline a call
@pytest.mark.parametrize("drip_head", [False, True], ids=["body", "headers"])
def test_a_server_dripping_its_answer_is_cut_off_at_the_timeout(drip_head):
    # 0.1 s a byte: no single read waits 1 s, so a per-read timeout never fires (the old code took 13+ s at 2 s)
    with drip_server(_head(len(BODY)), BODY, 0.1, drip_head=drip_head) as url:
        start = time.monotonic()
        with pytest.raises(ServerTimeout) as caught:
            connect(url, timeout_s=1)
        took = time.monotonic() - start
    assert took < 2.0, f"took {took:.1f} s with a 1 s timeout"
    message = str(caught.value)
    assert f"{url}/v1/models did not answer within 1 s" in message
    assert "raise the timeout" in message


def test_the_deadline_covers_redirects_too():
    # each hop answers in 0.4 s, inside a per-read timeout of 1 s; four hops together pass the 1 s deadline
    routes = {f"/hop{i}": _slow_redirect(0.4, f"/hop{i + 1}") for i in range(3)}
    with fake_server({**routes, "/hop3": _slow_redirect(0.4, "/end"), "/end": (200, MODELS, {})}) as (url, _):
        start = time.monotonic()
        with pytest.raises(ServerTimeout, match="did not answer within 1 s"):
            request(parse_url(url, timeout_s=1), "GET", "/hop0")
        assert time.monotonic() - start < 2.0


def _slow_redirect(seconds: float, to: str):
    """A route that waits, then redirects to `to` on the same server."""

    def route(handler, body):
        time.sleep(seconds)
        return 307, "", {"Location": to}

    return route


def test_a_prompt_answer_is_read_whole():
    # the deadline reader must not change what an honest server's answer reads as (chunked and by length)
    with drip_server(_head(len(BODY)), BODY, 0.0) as url:
        assert request(parse_url(url, timeout_s=5), "GET", "/v1/models").body == BODY
    chunked = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    parts = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (BODY[:10], BODY[10:])) + b"0\r\n\r\n"
    with drip_server(chunked, parts, 0.0) as url:
        assert request(parse_url(url, timeout_s=5), "GET", "/v1/models").body == BODY


# ------------------------------------------------------------------------------------------------ the timeout itself
@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1.0, 0, 0.0, 1e9, "abc", None, True])
def test_a_timeout_that_is_not_a_sane_number_of_seconds_is_refused(timeout):
    with pytest.raises(SettingsError, match="The timeout must be a number of seconds above 0 and at most 3600"):
        parse_url("http://127.0.0.1:8000", timeout_s=timeout)
    with pytest.raises(SettingsError, match="timeout"):
        connect("http://127.0.0.1:9", timeout_s=timeout)  # refused before any request


def test_the_cli_refuses_timeout_nan_with_one_line(tmp_path, capsys):
    from specviz.cli.main import main

    prompts = tmp_path / "two.jsonl"
    prompts.write_text('{"prompt": "def f():"}\n{"prompt": "x = 1"}\n')
    assert main(["measure", str(prompts), "--server", "http://127.0.0.1:9", "--timeout", "nan"]) != 0
    err = capsys.readouterr().err
    assert "timeout" in err
    assert "Traceback" not in err
    assert "Invalid value" not in err


# ------------------------------------------------------------------------------------------------ echoed credentials
def _echo_authorization(handler, body):
    """A 401 whose message repeats the Authorization header it got, as some proxies do."""
    return 401, {"error": {"message": f"bad key {handler.headers.get('Authorization')}"}}, {}


def test_a_basic_auth_url_echoed_back_is_redacted_in_every_form():
    user, password = "alice", "hunter2pass"
    pair = f"{user}:{password}"
    forms = {
        "basic": lambda h, b: _echo_authorization(h, b),
        "raw": lambda h, b: (401, {"error": {"message": f"who is {pair}? and {password}?"}}, {}),
        "urlsafe": lambda h, b: (401, {"detail": base64.urlsafe_b64encode(pair.encode()).decode().rstrip("=")}, {}),
    }
    for name, route in forms.items():
        with fake_server({"/v1/models": route}) as (url, seen):
            with pytest.raises(ServerHTTPError) as caught:
                connect(url.replace("http://", f"http://{user}:{password}@"))
        message = str(caught.value)
        assert seen[-1]["headers"]["Authorization"] == "Basic " + base64.b64encode(pair.encode()).decode()
        encoded = base64.b64encode(pair.encode()).decode()
        for secret in (password, pair, encoded, encoded.rstrip("="), encoded[:-4]):
            assert secret not in message, (name, message)
        assert "***" in message, (name, message)
        assert "@" not in message, (name, message)


def test_an_echoed_bearer_key_is_redacted():
    key = "sk-hostile-0123456789"
    with fake_server({"/v1/models": _echo_authorization}) as (url, _):
        with pytest.raises(ServerHTTPError, match=r"bad key Bearer \*\*\*") as caught:
            connect(url, api_key=key)
    assert key not in str(caught.value)


def test_userinfo_is_never_in_the_endpoint_or_its_messages():
    endpoint = parse_url("http://alice:hunter2pass@127.0.0.1:9/v1")
    for text in (endpoint.url, repr(endpoint), str(endpoint.__dict__.get("host"))):
        assert "alice" not in text
        assert "hunter2pass" not in text
    with pytest.raises(Exception) as caught:  # nothing listens on port 9
        connect("http://alice:hunter2pass@127.0.0.1:9")
    assert "alice" not in str(caught.value)
    assert "hunter2pass" not in str(caught.value)


# ---------------------------------------------------------------------------------------------- malformed answers
def _served(spec=DETAILED, tokens=6, metrics=None):
    """A server like test_client's, honest but for what the test puts in its answers."""
    routes = {
        "/v1/models": (200, MODELS, {}),
        "/version": (200, {"version": "0.32.0"}, {}),
        "POST /v1/completions": lambda h, b: _answer(spec, min(tokens, json.loads(b)["max_tokens"])),
    }
    if metrics is not None:
        routes["/metrics"] = (200, metrics, {})
    return routes


def _answer(spec, tokens):
    """A completion of `tokens` tokens with `spec` as its speculative-decoding block."""
    doc = {
        "choices": [{"text": "abc", "finish_reason": "length", "token_ids": list(range(tokens))}],
        "usage": {"completion_tokens": tokens},
        "metrics": {"speculative_decoding": spec},
    }
    return 200, doc, {}


def _record_answer(doc):
    """Connect to an honest server, then have the measured completion answer `doc` (a JSON-able value)."""
    routes = _served()
    with fake_server(routes) as (url, _):
        server = connect(url)
        routes["POST /v1/completions"] = (200, doc, {})
        return server.run("p", server.settings(RunSettings(max_new_tokens=6)))


GOOD = _answer(DETAILED, 6)[1]
MALFORMED_COMPLETIONS = {
    "a list": ([1, 2], "its answer = [1, 2]"),
    "no choices": ({"foo": 1}, "choices = None"),
    "string choices": ({"choices": "abc"}, "choices = 'abc'"),
    "empty choices": ({"choices": []}, "choices = []"),
    "choice a number": ({"choices": [7]}, "choices = [7]"),
    "text a list": ({**GOOD, "choices": [{"text": ["a"]}]}, r"choices[0].text = ['a']"),
    "ids strings": ({**GOOD, "choices": [{"text": "a", "token_ids": "abc"}]}, "token_ids = 'abc'"),
    "usage a list": ({**GOOD, "usage": [6]}, r"usage = [6]"),
    "completion_tokens a string": ({**GOOD, "usage": {"completion_tokens": "abc"}}, "completion_tokens = 'abc'"),
    "completion_tokens negative": ({**GOOD, "usage": {"completion_tokens": -1}}, "completion_tokens = -1"),
    "completion_tokens 2.5": ({**GOOD, "usage": {"completion_tokens": 2.5}}, "completion_tokens = 2.5"),
    "spec block a string": ({**GOOD, "metrics": {"speculative_decoding": "on"}}, "speculative_decoding = 'on'"),
    "per_step_drafted 5": (
        {**GOOD, "metrics": {"speculative_decoding": {**DETAILED, "per_step_drafted": 5}}},
        "per_step_drafted = 5",
    ),
    "per_step lengths": (
        {**GOOD, "metrics": {"speculative_decoding": {**DETAILED, "per_step_drafted": [4]}}},
        "lists of one length",
    ),
    "accepts more than drafted": (
        {**GOOD, "metrics": {"speculative_decoding": {**DETAILED, "per_step_accepted": [5, 1]}}},
        r"per_step_accepted[0] = 5",
    ),
    "num_spec_steps x": (
        {**GOOD, "metrics": {"speculative_decoding": {"num_spec_steps": "x", "num_spec_tokens": 4}}},
        "num_spec_steps = 'x'",
    ),
    "histogram a dict": (
        {**GOOD, "metrics": {"speculative_decoding": {"num_spec_steps": 2, "acceptance_histogram": {"a": 1}}}},
        "acceptance_histogram",
    ),
}


@pytest.mark.parametrize("doc, message", MALFORMED_COMPLETIONS.values(), ids=MALFORMED_COMPLETIONS.keys())
def test_a_malformed_completion_is_a_clear_error_not_a_traceback(doc, message):
    with pytest.raises(MalformedAnswer) as caught:
        _record_answer(doc)
    text = str(caught.value)
    assert message in text
    assert "/v1/completions sent" in text
    assert "check that the URL is a vLLM server's" in text


@pytest.mark.parametrize(
    "spec, message",
    [
        ({**DETAILED, "num_spec_tokens": "four"}, "num_spec_tokens = 'four'"),
        ({**DETAILED, "num_spec_tokens": 0}, "num_spec_tokens = 0"),
        ({**DETAILED, "num_spec_tokens": True}, "num_spec_tokens = True"),
        ({**DETAILED, "num_spec_tokens": 1_000_000}, "num_spec_tokens = 1000000, .* from 1 to 64"),
        ({"num_spec_steps": "x"}, "num_spec_steps = 'x'"),
    ],
    ids=["K four", "K 0", "K true", "K 1e6", "steps x"],
)
def test_malformed_metrics_in_the_connection_probe_are_refused_at_connect(spec, message):
    with fake_server(_served(spec=spec)) as (url, _):
        with pytest.raises(MalformedAnswer, match=message):
            connect(url)


def test_a_malformed_probe_answer_is_refused_at_connect():
    for doc, message in (([1, 2], "its answer"), ({"foo": 1}, "choices"), ({"choices": "abc"}, "choices")):
        routes = {**_served(), "POST /v1/completions": (200, doc, {})}
        with fake_server(routes) as (url, _):
            with pytest.raises(MalformedAnswer, match=message):
                connect(url)


@pytest.mark.parametrize(
    "server_info, message",
    [
        ({"num_speculative_tokens": 10**9, "method": "draft_model"}, "num_speculative_tokens = 1000000000"),
        ({"num_speculative_tokens": "4", "method": "draft_model"}, "num_speculative_tokens = '4'"),
        ({"num_speculative_tokens": 4, "method": ["draft_model"]}, r"speculative_config.method = \['draft_model'\]"),
        ({"num_speculative_tokens": 4, "num_speculative_tokens_per_batch_size": [[1, 8]]}, "per_batch_size = "),
        ({"num_speculative_tokens": 4, "num_speculative_tokens_per_batch_size": [[1, 8, 99]]}, "per_batch_size = 99"),
    ],
    ids=["K 1e9", "K a string", "method a list", "schedule of pairs", "schedule K 99"],
)
def test_a_malformed_server_info_is_refused_at_connect(server_info, message):
    info = {"vllm_config": {"speculative_config": server_info}}
    with fake_server({**_served(), "/server_info": (200, info, {})}) as (url, _):
        with pytest.raises(MalformedAnswer, match=message):
            connect(url)


def test_a_batch_size_schedule_is_noted_with_its_ranges():
    """vLLM's num_speculative_tokens_per_batch_size changes K with the batch: a load sweep must say so."""
    schedule = [[1, 4, 4], [5, 64, 2]]
    info = {"vllm_config": {"speculative_config": {
        "method": "draft_model", "num_speculative_tokens": 4, "num_speculative_tokens_per_batch_size": schedule,
    }}}  # fmt: skip
    with fake_server({**_served(), "/server_info": (200, info, {})}) as (url, _):
        server = connect(url)
    assert "K changes with the batch size (num_speculative_tokens_per_batch_size): batch 1–4 → 4, 5–64 → 2" in (
        server.notes
    )


# ---------------------------------------------------------------------------------------------- malformed /metrics
@pytest.mark.parametrize(
    "text, message",
    [
        (metrics_text().replace('position="1"', 'position="abc"'), "label of .*position=\"abc\".* = 'abc'"),
        (metrics_text().replace('position="1"', 'position="-1"'), "= '-1'"),
        (metrics_text().replace('position="1"', 'position="99999999"'), "= '99999999', .* from 0 to 63"),
        (metrics_text().replace('position="3"', 'position="64"'), "= '64'"),
        (_every_value(metrics_text(), "inf"), "= inf, where a vLLM server sends a finite count"),
        (_every_value(metrics_text(), "+Inf"), "= inf"),
        (_every_value(metrics_text(), "-1e300"), "= -1e[+]?300"),
        (_every_value(metrics_text(), "NaN"), "= nan"),
    ],
    ids=["position abc", "position -1", "position 99999999", "position 64", "inf", "+Inf", "-1e300", "nan"],
)
def test_malformed_metrics_are_refused_at_connect(text, message):
    # no per-request metrics: K comes from the per-position counters (position="99999999" once made it K = 100000000)
    with fake_server(_served(spec=None, metrics=text)) as (url, _):
        with pytest.raises(MalformedAnswer, match=message) as caught:
            connect(url)
    assert f"{url}/metrics sent" in str(caught.value)


def test_k_from_the_counters_up_to_the_cap_is_taken():
    per_pos = [0.0] * MAX_SERVER_K
    with fake_server(_served(spec=None, metrics=metrics_text(per_pos=per_pos))) as (url, _):
        server = connect(url)
    assert server.k == MAX_SERVER_K == 64
    assert any("per-position counters" in note for note in server.notes)


def test_malformed_metrics_during_a_measurement_are_refused():
    routes = _served(spec=None, metrics=metrics_text())
    with fake_server(routes) as (url, _):
        server = connect(url, method="ngram")
        pages = iter([metrics_text(), _every_value(metrics_text(), "inf")])
        routes["/metrics"] = lambda h, b: (200, next(pages), {})
        with pytest.raises(MalformedAnswer, match="= inf"):
            server.run("p", server.settings(RunSettings(max_new_tokens=6)))


# --------------------------------------------------------------------------------- counts beyond what was asked for
@pytest.mark.parametrize("count", [30_000_000, 10**12, 7])
def test_a_token_count_above_max_tokens_is_refused_fast_in_small_memory(count):
    doc = {**GOOD, "usage": {"completion_tokens": count}}
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(MalformedAnswer, match=f"completion_tokens = {count}, but the request asked for at most 6"):
            _record_answer(doc)
        took, (_, peak) = time.monotonic() - start, tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert took < 5, (took, peak)
    assert peak < 20_000_000, (took, peak)


def test_token_ids_beyond_max_tokens_are_refused():
    doc = {**GOOD, "choices": [{"text": "a", "token_ids": list(range(1000))}]}
    with pytest.raises(MalformedAnswer, match="token_ids = .* a list of at most 6"):
        _record_answer(doc)


def test_an_engine_step_counter_beyond_the_tokens_is_ignored_not_allocated():
    # per-request lists and counters at concurrency 1: the counter's engine steps (1e12) would be 1e12 rounds
    routes = _served(metrics=metrics_text())
    with fake_server(routes) as (url, _):
        server = connect(url)
        pages = iter([metrics_text(), metrics_text(generated=6, finished=1, steps=10**12)])
        routes["/metrics"] = lambda h, b: (200, next(pages), {})
        record = server.run("p", server.settings(RunSettings(max_new_tokens=6)))
    assert record.per_round_committed == (1, 3, 2)
    assert "rounds_without_drafts" not in record.meta
    assert any("engine-step counter (1000000000000)" in w for w in record.meta["warnings"])


def test_an_honest_answer_still_makes_its_record():
    record = _record_answer(GOOD)
    assert record.per_round_committed == (1, 3, 2)
    assert record.committed == 6
    assert record.alpha == 0.6


# --------------------------------------------------------------------------------------- the allowlist, read strictly
@pytest.mark.parametrize(
    "entry, why",
    [
        ("::1", "an IPv6 address goes in brackets, as [::1] (any port) or [::1]:8000"),
        ("127.0.0.1:abc", "not a host name, an IP address"),
        ("127.0.0.1:0", "port 0 is not one of 1-65535"),
        ("127.0.0.1:70000", "port 70000 is not one of 1-65535"),
        ("127.0.0.1:", "not a host name"),
        ("*", "not a host name"),
        ("[zz::1]:8000", "not a host name"),
        ("http://alice:hunter2pass@127.0.0.1:8000", "credentials (user:password@) do not belong"),
        ("127.0.0.1/v1?x=1", "not a host name"),
    ],
)
def test_a_malformed_allowlist_entry_is_named_and_allows_nothing(entry, why):
    env = {"SPECVIZ_PUBLIC": "1", "SPECVIZ_SERVERS": f"127.0.0.1:8000, {entry}"}
    limits = Limits.from_env(env)  # reading the environment never crashes a page
    for url in ("http://127.0.0.1:8000", "http://127.0.0.1:8001", "http://[::1]:8000", "http://anything:1"):
        assert not host_allowed(url, limits.servers)  # fails closed: not even the good entry
        with pytest.raises(BadAllowlist) as caught:
            limits.check_server(url)  # a HostNotAllowed (a SpecvizError), inside the page's try
        message = str(caught.value)
        assert why in message
        assert "Write each entry as host, host:port, [IPv6]:port" in message
        assert "measures no server" in message
        assert "hunter2pass" not in message
    Limits.from_env({"SPECVIZ_SERVERS": entry}).check_server("http://anything:1")  # private mode: any server


def test_well_formed_entries_allow_exactly_their_servers():
    allowed = allowed_servers("[::1]:8000, HTTP://GPU.Example.org:8000/v1 10.0.0.5 https://h.example.org:443")
    assert host_allowed("http://[::1]:8000", allowed)
    assert not host_allowed("http://[::1]:8001", allowed)
    assert host_allowed("http://[0:0:0:0:0:0:0:1]:8000", allowed)  # the same address spelt out
    assert host_allowed("http://gpu.example.org:8000", allowed)
    assert not host_allowed("gpu.example.org:80", allowed)
    assert host_allowed("http://10.0.0.5:1234", allowed)  # no port in the entry: any port
    assert host_allowed("h.example.org:443", allowed)
    assert not host_allowed("h.example.org:8443", allowed)
    assert not host_allowed("http://10.0.0.50:1234", allowed)
    assert not host_allowed("http://gpu.example.org.evil", allowed)
    check_host("http://[::1]:8000", public=True, allowed=allowed)
    with pytest.raises(HostNotAllowed, match="not one of them"):
        check_host("http://[::1]:9", public=True, allowed=allowed)


# ---------------------------------------------------- held probes: no request outside the allowlist, the 8 MB cap
def test_no_url_spelling_or_redirect_reaches_an_unlisted_server():
    with fake_server({}) as (unlisted, hits), fake_server(_served()) as (listed, _):
        port, other = listed.rsplit(":", 1)[1], unlisted.rsplit(":", 1)[1]
        allowed = allowed_servers(f"127.0.0.1:{port}")
        spellings = [
            f"http://127.0.0.1:{port}#@127.0.0.1:{other}",
            f"http://127.0.0.1:{port}@127.0.0.1:{other}",
            f"http://127.0.0.1:{other}",
            f"http://localhost:{other}",
            f"http://127.1:{other}",
            f"http://2130706433:{other}",
            f"http://0x7f000001:{other}",
            f"http://[::ffff:127.0.0.1]:{other}",
            f"127.0.0.1:{other}/v1",
            f"http://127.0.0.1:{other}\\@127.0.0.1:{port}",
        ]
        for url in spellings:
            try:
                check_host(url, public=True, allowed=allowed)
            except HostNotAllowed:
                continue
            try:
                connect(url, timeout_s=5)
            except ServerError:
                pass
        assert hits == [], [h["path"] for h in hits]
        for location in (
            f"http://127.0.0.1:{other}/v1/models",
            f"https://127.0.0.1:{port}/v1/models",
            "file:///etc/passwd",
        ):
            routes = {**_served(), "/v1/models": (302, "", {"Location": location})}
            with fake_server(routes) as (url, _):
                with pytest.raises(ServerError, match="redirects to another host"):
                    connect(url, timeout_s=5)
        assert hits == []
    with fake_server({**_served(), "/v1/models": (302, "", {"Location": "/v1/models"})}) as (url, _):
        with pytest.raises(ServerError, match="redirected more than 3 times"):
            connect(url, timeout_s=5)


def test_a_chunked_answer_past_8_mb_is_cut_off():
    chunked = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"x" * 1_000_000
    body = (b"%x\r\n%s\r\n" % (len(chunk), chunk)) * 13 + b"0\r\n\r\n"
    with drip_server(chunked, body, 0.0) as url:
        with pytest.raises(ServerError, match="sent more than 8 MB"):
            request(parse_url(url, timeout_s=10), "GET", "/v1/models")


def test_a_key_echoed_in_any_field_a_message_quotes_is_redacted():
    key = "sk-hostile-0123456789"
    echo = lambda h, b: (200, {"choices": h.headers.get("Authorization")}, {})  # noqa: E731
    models = lambda h, b: (200, {"data": [{"id": f"tiny {h.headers.get('Authorization')}"}]}, {})  # noqa: E731
    for routes, model, error in (
        ({**_served(), "POST /v1/completions": echo}, None, MalformedAnswer),
        ({**_served(), "/v1/models": models}, "other", UnknownModel),
    ):
        with fake_server(routes) as (url, _):
            with pytest.raises(error) as caught:
                connect(url, model=model, api_key=key)
        assert key not in str(caught.value), str(caught.value)
        assert "***" in str(caught.value), str(caught.value)
    routes = _served()
    with fake_server(routes) as (url, _):
        server = connect(url, api_key=key)
        routes["POST /v1/completions"] = echo
        with pytest.raises(MalformedAnswer) as caught:
            server.run("p", server.settings(RunSettings(max_new_tokens=6)))
    assert key not in str(caught.value)
    assert "Bearer ***" in str(caught.value)
