"""python -m specviz bench-player: how long a new run takes from its decoding's end to the player showing round 1.

For each length asked (default 48 and 256 new tokens, each cut to what the pair's context holds), a live run with the
round page's first-run settings (the code preset, temperature 0.6, K = 4, seed 3) is decoded (timed after one
warm-up run), its player bundle built (viz.player_bundle, cold: the first bundle of the process, which builds the
chart templates, and warm: the next one, as a server that has drawn a run before) and packed (gzip + base64, what the
round page sends), and `python -m specviz export-html` of it timed in a fresh process. With Chromium (Playwright;
SPECVIZ_CHROMIUM or /usr/bin/chromium), the packed bundle is served over loopback HTTP to a page that has the player
and the Vega libraries loaded (as the round page has after its first run), which fetches it (transfer), unpacks it
and draws round 1 (draw). The figures go into a JSON file under a label (--label, default "current"), beside the
labels already there, with the CPU named and the load beside them.

This module reads only the public entry points (player_bundle, packed, SpecvizPlayer.mount), so the same file runs
against an older checkout to measure its "before" (`python -m specviz.cli.bench_player` there).
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from specviz.core.trace_json import trace_to_json

REPO = Path(__file__).resolve().parents[2]
FIRST_RUN = {"temperature": 0.6, "top_p": 1.0, "k": 4, "seed": 3}  # ui.controls.FIRST_RUN (ui imports streamlit)
LENGTHS = "48,256"


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The pair to run (the bundled one by default): by name or its target and draft, device and dtype."""
    parser.add_argument(
        "--pair",
        dest="bench_pair",  # not "pair": cli.model_args' resolve_pair leaves this command's model arguments to it
        default=None,
        metavar="NAME",
        help="a pair by name (`python -m specviz pairs`), e.g. smollm2: its target and draft (n-gram lookup when it "
        "has no draft model), and its chat template for an instruct target",
    )
    parser.add_argument("--target", default=None, help="hub id or local directory (default: bundled pair)")
    parser.add_argument("--draft", default=None, help="hub id or local directory of the draft model")
    parser.add_argument("--device", default="auto", help="auto (cuda > mps > cpu), cpu, cuda or mps")
    parser.add_argument("--dtype", default="auto", help="auto (float32 on CPU), float32, bfloat16 or float16")


def add_bench_player_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "bench-player",
        help="time a new run from its decoding's end to the player showing round 1 (bundle, transfer, draw)",
        description=__doc__.split("\n\n")[1],
    )
    add_model_arguments(parser)
    parser.add_argument("--tokens", default=LENGTHS, help=f"new tokens per run, comma-separated (default {LENGTHS})")
    parser.add_argument(
        "--preset",
        default="code",
        help="the pair's prompt preset to decode (default code, the round page's first run; smollm2's english asks "
        "for a longer answer; an unknown name lists the pair's presets)",
    )
    parser.add_argument("--label", default="current", help="the name these figures go under in the JSON file")
    parser.add_argument("--no-browser", action="store_true", help="leave out the Chromium figures (transfer, draw)")
    parser.add_argument("--json", dest="json_out", help="write (merge) the figures into this JSON file")
    parser.set_defaults(handler=cmd_bench_player)
    return parser


def cmd_bench_player(args: argparse.Namespace) -> int:
    from specviz.errors import SpecvizError

    try:
        lengths = [int(n) for n in args.tokens.split(",") if n.strip()]
    except ValueError:
        raise SpecvizError(f"--tokens {args.tokens!r}: give whole numbers, comma-separated, e.g. 48,256.") from None
    if not lengths or min(lengths) < 1:
        raise SpecvizError(f"--tokens {args.tokens!r}: give at least one length of 1 or more.")
    if args.json_out:
        from specviz.cli.args import check_writable

        check_writable(args.json_out, "--json")
    figures = measure(args, lengths, browser=not args.no_browser)
    if args.json_out:
        write(Path(args.json_out), args.label, figures)
    for run in figures["runs"]:
        print(summary(run))
    if args.json_out:
        print(f"wrote {args.json_out} (label {args.label!r})")
    return 0


def summary(run: dict) -> str:
    cold = f" (cold {run['bundle_cold_s']:.2f} s)" if run["bundle_cold_s"] else ""
    said = (
        f"{run['tokens']} tokens, {run['rounds']} rounds, {run['steps']} steps: decode {run['decode_s']:.2f} s, "
        f"bundle {run['bundle_s']:.2f} s{cold}, "
        f"{run['bundle_json_bytes'] / 1e3:.0f} kB JSON, {run['bundle_packed_bytes'] / 1e3:.0f} kB packed, "
        f"export-html {run['export_html_s']:.2f} s"
    )
    if "browser" in run:
        b = run["browser"]
        said += f"; transfer {b['transfer_ms']:.0f} ms, unpack {b['unpack_ms']:.0f} ms, draw {b['draw_ms']:.0f} ms"
    return said


def environment(pair) -> dict:
    import torch

    from specviz.measure.bench import cpu_model

    return {
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": sys.version.split()[0],
        "target": pair.describe()["target"],
        "draft": pair.describe()["draft"],
        "vocab_size": pair.vocab_size,
    }


def measure(args: argparse.Namespace, lengths: list[int], browser: bool = True) -> dict:
    from specviz import methods
    from specviz.core.settings import RunSettings, SamplingSettings
    from specviz.engine.decode import chat_wrapped, encode_prompt, generate
    from specviz.engine.loading.catalogue import presets_for
    from specviz.engine.loading.models import load_pair
    from specviz.errors import SpecvizError

    target, draft, chat = chosen_pair(args)
    presets = presets_for(target)
    if args.preset not in presets:
        raise SpecvizError(f"--preset {args.preset!r}: this pair's presets are {', '.join(presets)}.")
    prompt = presets[args.preset]
    pair = load_pair(target, draft, device=args.device, dtype=args.dtype, threads=1)
    prompt = chat_wrapped(pair, prompt) if chat else prompt  # an instruct target: as the round page sends it
    room = (pair.context_length or 10**9) - len(encode_prompt(pair, prompt))  # the toy pair's context: 256
    runs, cold = [], True
    for asked in lengths:
        settings = RunSettings(
            method=methods.DRAFT if draft else methods.NGRAM,
            k=FIRST_RUN["k"],
            sampling=SamplingSettings(FIRST_RUN["temperature"], 0, FIRST_RUN["top_p"]),
            max_new_tokens=min(asked, room),
            seed=FIRST_RUN["seed"],
            draft_vocab=pair.recommended_draft_vocab,
        )
        generate(pair, prompt, settings)  # warm-up: the first call's allocations are not the run's
        load = os.getloadavg()[0]
        start = time.perf_counter()
        trace = generate(pair, prompt, settings)
        run = {
            "preset": args.preset,
            "asked_tokens": asked,
            "max_new_tokens": settings.max_new_tokens,
            "decode_s": time.perf_counter() - start,
        }
        run |= bundle_figures(trace, cold)
        cold = False
        run["export_html_s"], run["export_html_bytes"] = export_figures(trace)
        if browser:
            run["browser"] = browser_figures(run.pop("_packed"))
            b = run["browser"]
            run["new_run_drawn_s"] = run["bundle_s"] + run["pack_s"] + (b["total_ms"] / 1e3)
        run.pop("_packed", None)
        run["load_average"] = [round(load, 2), round(os.getloadavg()[0], 2)]  # before and after
        runs.append(run)
    return {"environment": environment(pair), "runs": runs}


def chosen_pair(args: argparse.Namespace) -> tuple[str, str | None, bool]:
    """The target, the draft model (None: n-gram lookup drafts) and whether prompts go through the target's chat
    template: --pair NAME, else --target / --draft, else the bundled pair."""
    from specviz.engine.loading.catalogue import find_pair, uses_chat
    from specviz.engine.loading.shipped import BUNDLED_DRAFT, BUNDLED_TARGET
    from specviz.errors import SpecvizError

    if args.bench_pair is not None:
        if args.target is not None:
            raise SpecvizError("--pair names the target already: give --pair NAME or --target, not both.")
        spec = find_pair(args.bench_pair)
        target, draft = spec.sources()
        return target, args.draft or draft, spec.chat
    target = args.target or BUNDLED_TARGET
    return target, args.draft or (BUNDLED_DRAFT if target == BUNDLED_TARGET else None), uses_chat(target)


def bundle_figures(trace, cold: bool) -> dict:
    """The bundle's build time (the first of the process: cold; then warm, as a server's next run), size and shape."""
    from specviz.viz.export_html import packed
    from specviz.viz.player_bundle import bundle_json, player_bundle

    start = time.perf_counter()
    bundle = player_bundle(trace, live=True)
    first = time.perf_counter() - start
    start = time.perf_counter()
    bundle = player_bundle(trace, live=True)
    warm = time.perf_counter() - start
    text = bundle_json(bundle).encode("utf-8")
    start = time.perf_counter()
    packed_text = packed(bundle)
    pack = time.perf_counter() - start
    tables = {k: len(json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()) for k, v in bundle.items()}
    listed = bundle["steps"] if isinstance(bundle["steps"], list) else None  # versions 1-2: a list of step entries
    if listed is None:  # version 3's wire form: steps column-wise; the entries as a reader decodes them
        from specviz.viz.player_bundle import load_bundle

        listed = load_bundle(bundle).doc["steps"]
    steps = len(listed)
    return {
        "tokens": sum(len(r.committed) for r in trace.rounds),
        "rounds": len(trace.rounds),
        "steps": steps,
        "bundle_version": bundle["version"],
        "bundle_s": warm,
        "bundle_cold_s": first if cold else None,
        "pack_s": pack,
        "bundle_json_bytes": len(text),
        "bundle_gzip_bytes": len(gzip.compress(text, mtime=0)),
        "bundle_packed_bytes": len(packed_text),
        "bytes_per_step": round(len(text) / steps),
        "step_entry_bytes_max": max(
            len(json.dumps(s, separators=(",", ":"), ensure_ascii=False).encode()) for s in listed
        ),
        "steps_table_bytes_per_step": round(tables["steps"] / steps),
        "tables_bytes": {k: v for k, v in tables.items() if v > 100},
        "charts": len(bundle["charts"]),
        "_packed": packed_text,
    }


def export_figures(trace) -> tuple[float, int]:
    """`python -m specviz export-html` of the run in a fresh process (imports included): seconds and bytes."""
    with tempfile.TemporaryDirectory() as folder:
        path, out = Path(folder) / "run.json", Path(folder) / "run.html"
        path.write_text(trace_to_json(trace), encoding="utf-8")
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "specviz", "export-html", str(path), "-o", str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        if done.returncode:
            raise RuntimeError(f"export-html failed: {done.stderr[-2000:]}")
        return seconds, out.stat().st_size


PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>%CSS%</style></head><body><div id="player"></div>
<script src="js/vega.min.js"></script><script src="js/vega-lite.min.js"></script>
<script src="js/vega-embed.min.js"></script><script src="js/specviz-player.js"></script>
<script>
window.measure = async () => {
  const root = document.getElementById("player");
  const t0 = performance.now();
  const raw = await (await fetch("bundle.txt", {cache: "no-store"})).text();
  const t1 = performance.now();
  const doc = await SpecvizPlayer.unpack(raw);
  const t2 = performance.now();
  SpecvizPlayer.mount(root, doc, {moment: "hash", start: 0});
  await new Promise((resolve) => {
    const check = () => (root.dataset.rendered ? resolve() : requestAnimationFrame(check));
    check();
  });
  const t3 = performance.now();
  return {transfer_ms: t1 - t0, unpack_ms: t2 - t1, draw_ms: t3 - t2, total_ms: t3 - t0, bytes: raw.length,
          title: document.querySelector(".spz-where").textContent};
};
</script></body></html>"""


def browser_figures(packed_text: str, js_dir: Path | None = None) -> dict:
    """In Chromium: fetch the packed bundle over loopback HTTP, unpack it, draw round 1 (median of 3 fresh pages)."""
    from playwright.sync_api import sync_playwright

    js_dir = js_dir or REPO / "static" / "js"
    chromium = os.environ.get("SPECVIZ_CHROMIUM", "/usr/bin/chromium")
    files = {
        "/index.html": PAGE.replace("%CSS%", (js_dir / "specviz-player.css").read_text(encoding="utf-8")).encode(),
        "/bundle.txt": packed_text.encode("ascii"),
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            path = self.path.split("?")[0]
            body = files.get(path)
            if body is None and path.startswith("/js/"):
                body = (js_dir / path.removeprefix("/js/")).read_bytes()
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    tries = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=flags)
            for _ in range(3):
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(url)
                page.wait_for_function("() => window.SpecvizPlayer && window.vegaEmbed")
                tries.append(page.evaluate("window.measure()"))
                page.close()
            browser.close()
    finally:
        server.shutdown()
    tries.sort(key=lambda t: t["total_ms"])
    middle = tries[len(tries) // 2]
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in middle.items()} | {"tries": len(tries)}


def write(path: Path, label: str, figures: dict) -> None:
    """Merge these figures into the file under `label`, keeping the others."""
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    doc.setdefault("what", __doc__.split("\n\n")[1].replace("\n", " "))
    doc.setdefault("measurements", {})[label] = figures | {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":  # an older checkout without the subcommand: python -m specviz.cli.bench_player ...
    top = argparse.ArgumentParser(prog="python -m specviz.cli.bench_player")
    add_bench_player_parser(top.add_subparsers(dest="command", required=True))
    sys.exit(cmd_bench_player(top.parse_args(["bench-player", *sys.argv[1:]])))
