"""A scripted HTTP server on the loopback interface, for the client's fault paths (no vLLM needed)."""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def fake_server(routes: dict):
    """routes: "METHOD /path" (or "/path" for any method) -> (status, body, headers) or a callable(handler, body)
    returning that; body is bytes, str or a JSON-able object. Yields (url, seen) with seen the requests received."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _serve(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
            path = self.path.split("?")[0]
            route = routes.get(f"{self.command} {path}", routes.get(path))
            if route is None:
                status, payload, headers = 404, {"detail": "Not Found"}, {}
            else:
                status, payload, headers = route(self, body) if callable(route) else route
            data = (
                payload
                if isinstance(payload, bytes)
                else (payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
            )
            try:
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        do_GET = do_POST = _serve

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)  # shutdown waits one poll
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def slow(seconds: float, then):
    def route(handler, body):
        time.sleep(seconds)
        return then

    return route


MODELS = {"object": "list", "data": [{"id": "tiny", "object": "model", "max_model_len": 256}]}


def metrics_text(
    drafts=0,
    draft_tokens=0,
    accepted=0,
    per_pos=(0, 0, 0, 0),
    generated=0,
    finished=0,
    steps=0,
    running=0,
    created=1.0,
    engines=("0",),
    model="tiny",
) -> str:
    """A /metrics page shaped like vLLM 0.32's, each count split evenly over the engines given."""
    lines = [f"process_start_time_seconds {created}"]
    share = len(engines)
    for engine in engines:
        labels = f'engine="{engine}",model_name="{model}"'
        lines += [
            "# TYPE vllm:spec_decode_num_drafts_total counter",
            f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts / share}",
            f"vllm:spec_decode_num_drafts_created{{{labels}}} {created}",
            f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {draft_tokens / share}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted / share}",
            *(
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} {v / share}'
                for i, v in enumerate(per_pos)
            ),
            f"vllm:generation_tokens_total{{{labels}}} {generated / share}",
            f'vllm:request_success_total{{{labels},finished_reason="length"}} {finished / share}',
            f'vllm:request_success_total{{{labels},finished_reason="stop"}} 0.0',
            f"vllm:iteration_tokens_total_count{{{labels}}} {steps / share}",
            f"vllm:num_requests_running{{{labels}}} {running / share}",
        ]
    return "\n".join(lines) + "\n"
