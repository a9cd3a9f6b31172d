"""A listed server that misbehaves on purpose (probes F6, F7, F8, F15, F18, F21, F22 of ../shared/PROBES.md): each
answer must end in a clear SpecvizError, within the request's deadline and in small memory; never a traceback, a hang
or a credential shown. Every server here is a real one on 127.0.0.1 that the test starts and that stops by itself."""

from __future__ import annotations

import base64
import socket
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_server import MODELS, fake_server  # noqa: E402

from specviz.errors import SettingsError
from specviz.remote.errors import ServerHTTPError, ServerTimeout
from specviz.remote.http import parse_url, request
from specviz.remote.vllm import connect


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


# ------------------------------------------------------------------------------------------- F6: one deadline a call
@pytest.mark.parametrize("drip_head", [False, True], ids=["body", "headers"])
def test_a_server_dripping_its_answer_is_cut_off_at_the_timeout(drip_head):
    # 0.2 s a byte: no single read waits 2 s, so a per-read timeout never fires (the old code took 13+ s here)
    with drip_server(_head(len(BODY)), BODY, 0.2, drip_head=drip_head) as url:
        start = time.monotonic()
        with pytest.raises(ServerTimeout) as caught:
            connect(url, timeout_s=2)
        took = time.monotonic() - start
    assert took < 3.0, f"took {took:.1f} s with a 2 s timeout"
    message = str(caught.value)
    assert f"{url}/v1/models did not answer within 2 s" in message and "raise the timeout" in message


def test_the_deadline_covers_redirects_too():
    # each hop answers in 0.8 s, inside a per-read timeout of 2 s; four hops together pass the 2 s deadline
    routes = {f"/hop{i}": _slow_redirect(0.8, f"/hop{i + 1}") for i in range(3)}
    with fake_server({**routes, "/hop3": _slow_redirect(0.8, "/end"), "/end": (200, MODELS, {})}) as (url, _):
        start = time.monotonic()
        with pytest.raises(ServerTimeout, match="did not answer within 2 s"):
            request(parse_url(url, timeout_s=2), "GET", "/hop0")
        assert time.monotonic() - start < 3.0


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


# ------------------------------------------------------------------------------------------- F15: the timeout itself
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
    assert "timeout" in err and "Traceback" not in err and "Invalid value" not in err


# ------------------------------------------------------------------------------------------- F18: echoed credentials
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
        assert "***" in message and "@" not in message, (name, message)


def test_an_echoed_bearer_key_is_redacted():
    key = "sk-hostile-0123456789"
    with fake_server({"/v1/models": _echo_authorization}) as (url, _):
        with pytest.raises(ServerHTTPError, match=r"bad key Bearer \*\*\*") as caught:
            connect(url, api_key=key)
    assert key not in str(caught.value)


def test_userinfo_is_never_in_the_endpoint_or_its_messages():
    endpoint = parse_url("http://alice:hunter2pass@127.0.0.1:9/v1")
    for text in (endpoint.url, repr(endpoint), str(endpoint.__dict__.get("host"))):
        assert "alice" not in text and "hunter2pass" not in text
    with pytest.raises(Exception) as caught:  # nothing listens on port 9
        connect("http://alice:hunter2pass@127.0.0.1:9")
    assert "alice" not in str(caught.value) and "hunter2pass" not in str(caught.value)
