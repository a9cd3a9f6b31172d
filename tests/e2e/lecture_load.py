"""A lecture's load on the round page, in real Chromium: N sessions open the round page at once, each with a prompt of
its own (a live run), and one more opens a bundled lecture trace meanwhile. Writes every session's wait to JSON.

    python tests/e2e/lecture_load.py --sessions 10 --out /tmp/lecture-load.json [--root DIR] [--tokens 48]

The app is served from --root (default: this checkout) on a free port. First one warm-up session opens a live run
(loading the pair and the page's imports), then the bundled trace is opened alone, then the N live sessions and,
--delay seconds later, the bundled one. Each wait is taken in the page itself (Date.now() when the player's element
says data-ready, against the moment its page was asked for), so the sessions are timed at once, not in turn. A
session's page is also read every 100 ms for the lecture hall's queue message ("N runs ahead of yours, about T s"),
kept with the time it was seen. Afterwards each live run is decoded again alone in this process with the settings its
trace records (the "decode alone" column: the slowest live run should be drawn within their sum plus a few seconds).
The CPU seconds the server and Chromium spent from the first live session to the last one drawn are read from /proc
(Linux).

--shared-cache opens every session as a tab of one browser context, so the app's scripts are fetched and compiled
once (by the warm-up) instead of in each session: in a lecture each student's browser does that on its own machine.
On a machine where the browsers share the server's cores (a lecture's students are on their own machines), give each
its own: --server-cpus 0 --browser-cpus 1 pins the server (and the "decode alone" runs) to CPU 0 and Chromium to CPU 1.

Not part of the test suite (it takes minutes); tests/e2e/test_lecture_hall_browser.py runs a small version of it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from browser_helpers import CHROMIUM, CHROMIUM_FLAGS, free_port, wait_healthy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = "early-rejection-residual"
PROMPTS = [  # one prompt per session, none of them a preset (each is a run of its own)
    "def add(a, b):",
    "import os\n\ndef list_files(path):",
    "class Stack:\n    def __init__(self):",
    "def fibonacci(n):",
    "for i in range(10):",
    "def read_json(path):\n    with open(path) as f:",
    "import re\n\npattern = re.compile(",
    "def is_prime(n):",
    "with open('data.txt') as f:\n    for line in f:",
    "def merge(a, b):\n    result = []",
    "from collections import Counter\n\ndef top_words(text):",
    "def reverse(s):",
]

# In each page: when the player is ready, and every lecture-hall message seen (its text, when it was first seen).
WATCH = """() => {
  window.__load = {ready: null, seen: [], error: null};
  const said = /[^\\n]*(ahead of yours|is next|Running your|Preparing every step|Timing plain)[^\\n]*/g;
  const look = () => {
    const w = window.__load;
    const root = document.querySelector('.spz-mount[data-ready="1"]');
    if (root && w.ready === null) w.ready = Date.now();
    const main = document.querySelector('[data-testid="stMain"]');
    const text = main ? main.innerText : '';
    for (const m of text.matchAll(said)) {
      const line = m[0].trim();
      if (!w.seen.length || w.seen[w.seen.length - 1][1] !== line) w.seen.push([Date.now(), line]);
    }
    const ex = document.querySelector('[data-testid="stException"], [data-testid="stAlertContentError"]');
    if (ex && !w.error) w.error = ex.innerText.slice(0, 400);
  };
  setInterval(look, 100);
}"""


SERVED: list[int] = []  # the server processes started, latest last (cpu_split reads the current one)


@contextmanager
def served(root: Path, log_path: Path, env_extra: dict[str, str], cpus: set[int] | None = None):
    """`streamlit run app.py` from `root` (its own specviz first on the path) on a free loopback port, on `cpus`
    (None: wherever the system puts it)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("SPECVIZ_TARGET", "SPECVIZ_DRAFT", "SPECVIZ_STEPPING")}
    env |= {"PYTHONPATH": str(root)} | env_extra
    command = [sys.executable, "-m", "streamlit", "run", str(root / "app.py"), "--server.port", str(port)]
    command += ["--server.address", "127.0.0.1", "--server.headless", "true", "--server.fileWatcherType", "none"]
    command += ["--browser.gatherUsageStats", "false"]
    with open(log_path, "w") as log:
        pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=pin)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, process, timeout_s=120)
            SERVED.append(process.pid)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


def open_session(browser, url: str, query: dict[str, str], shared=None):
    """A fresh app session asking for the round page at `query`, in a browser context of its own or in `shared` (its
    tabs share the HTTP cache and compiled scripts); returns (tab, the time it was asked, ms)."""
    context = shared or browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    tab.add_init_script(f"({WATCH})()")
    asked = time.time() * 1000
    tab.goto(f"{url}/rounds?{urlencode(query)}", wait_until="commit")
    return tab, asked


def wait_ready(tab, timeout_s: float) -> dict:
    """Until the player is ready (or the page shows an error, or timeout_s) -> what the page recorded."""
    tab.wait_for_function(
        "() => window.__load && (window.__load.ready !== null || window.__load.error)", timeout=timeout_s * 1000
    )
    return tab.evaluate("() => window.__load")


def result(tab, asked: float, timeout_s: float) -> dict:
    try:
        seen = wait_ready(tab, timeout_s)
    except Exception as exc:  # noqa: BLE001 - Playwright's TimeoutError: recorded, the others still count
        return {"wait_s": None, "error": f"not ready: {exc}"[:300], "seen": []}
    wait = None if seen["ready"] is None else round((seen["ready"] - asked) / 1000, 2)
    shown = [[round((t - asked) / 1000, 1), line] for t, line in seen["seen"]]
    return {"wait_s": wait, "error": seen["error"], "seen": shown}


def trace_of(tab) -> dict | None:
    """The run a session shows, from its download button (to time its decode alone afterwards)."""
    try:
        with tab.expect_download(timeout=60_000) as download:
            tab.get_by_role("button", name="Download this trace (JSON)").click()
        return json.loads(Path(download.value.path()).read_text())
    except Exception:  # noqa: BLE001 - a session that failed has no trace to time
        return None


def decode_alone(traces: list[dict | None]) -> list[float | None]:
    """Each run decoded again, one at a time, in this process: seconds of generate() with its recorded settings."""
    from specviz.core.trace_json import trace_from_json
    from specviz.engine.decode import generate
    from specviz.engine.loading.models import load_pair

    pair = load_pair(device="cpu")
    generate(pair, "def warm():", trace_from_json(json.dumps(next(t for t in traces if t))).settings)
    times = []
    for doc in traces:
        if doc is None:
            times.append(None)
            continue
        trace = trace_from_json(json.dumps(doc))
        start = time.perf_counter()
        generate(pair, trace.prompt, trace.settings)
        times.append(round(time.perf_counter() - start, 3))
    return times


def _stat(pid: int) -> tuple[int, float] | None:
    """A process's parent and its CPU seconds so far (user + system), from /proc; None once it has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_split(server_pid: int) -> dict[str, float]:
    """CPU seconds so far of the app's server (its process and children) and of everything else this script started
    (Chromium's browser, renderer and GPU processes, Playwright's driver), from /proc: where a load's time went."""
    table = {int(d.name): _stat(int(d.name)) for d in Path("/proc").iterdir() if d.name.isdigit()}
    table = {pid: found for pid, found in table.items() if found is not None}

    def below(root: int) -> set[int]:
        tree, grew = {root}, True
        while grew:
            more = {pid for pid, (parent, _) in table.items() if parent in tree} - tree
            tree, grew = tree | more, bool(more)
        return tree

    server = below(server_pid)
    browsers = below(os.getpid()) - server - {os.getpid()}
    return {
        "server_cpu_s": round(sum(table[p][1] for p in server if p in table), 1),
        "browser_cpu_s": round(sum(table[p][1] for p in browsers if p in table), 1),
    }


def load_average() -> str:
    return repr(Path("/proc/loadavg").read_text().split(" ", 3)[:3])


def run(args) -> dict:
    from playwright.sync_api import sync_playwright

    report = {"sessions": args.sessions, "tokens": args.tokens, "root": str(args.root), "bundled": BUNDLED}
    report["cores"], report["load_before"] = os.cpu_count(), load_average()
    report["shared_cache"] = args.shared_cache
    report["server_cpus"], report["browser_cpus"] = sorted(args.server_cpus or []), sorted(args.browser_cpus or [])
    log_path = Path(args.out).with_suffix(".server.log")
    everywhere = os.sched_getaffinity(0)
    with served(args.root, log_path, {"SPECVIZ_PUBLIC": "1"} if args.public else {}, args.server_cpus) as url:
        if args.browser_cpus:  # Playwright's driver and Chromium inherit this process's CPUs
            os.sched_setaffinity(0, args.browser_cpus)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            shared = browser.new_context(viewport={"width": 1280, "height": 800}) if args.shared_cache else None
            tab, asked = open_session(browser, url, {"prompt": "def warm_up():", "n": str(args.tokens)}, shared)
            report["warm_up"] = result(tab, asked, args.timeout)
            tab.close()
            tab, asked = open_session(browser, url, {"trace": BUNDLED}, shared)
            report["bundled_alone"] = result(tab, asked, args.timeout)
            tab.close()
            report["load_at_start"] = load_average()
            cpu_at_start = cpu_split(SERVED[-1])
            started = time.time()
            live = [
                open_session(browser, url, {"prompt": PROMPTS[i % len(PROMPTS)], "n": str(args.tokens)}, shared)
                for i in range(args.sessions)
            ]
            time.sleep(args.delay)
            bundled = open_session(browser, url, {"trace": BUNDLED}, shared)
            report["bundled_under_load"] = result(*bundled, args.timeout)
            report["live"] = [result(t, a, args.timeout) for t, a in live]
            report["all_drawn_s"] = round(time.time() - started, 1)
            report["load_at_end"] = load_average()
            cpu_at_end = cpu_split(SERVED[-1])  # before any tab closes: a closed renderer's time is gone
            report["cpu_during_load_s"] = {k: round(cpu_at_end[k] - cpu_at_start[k], 1) for k in cpu_at_end}
            traces = [trace_of(t) for t, _ in live]
            browser.close()
    os.sched_setaffinity(0, args.server_cpus or everywhere)  # each run decoded alone where the server decoded it
    report["decode_alone_s"] = decode_alone(traces)
    waits = [r["wait_s"] for r in report["live"] if r["wait_s"] is not None]
    decodes = [d for d in report["decode_alone_s"] if d is not None]
    report["summary"] = {
        "live_median_s": statistics.median(waits) if waits else None,
        "live_max_s": max(waits) if waits else None,
        "live_min_s": min(waits) if waits else None,
        "sum_decode_alone_s": round(sum(decodes), 2),
        "bundled_alone_s": report["bundled_alone"]["wait_s"],
        "bundled_under_load_s": report["bundled_under_load"]["wait_s"],
        "failed": args.sessions - len(waits),
        "all_drawn_s": report["all_drawn_s"],
        **report["cpu_during_load_s"],
    }
    return report


def markdown(reports: dict[str, dict]) -> str:
    """Reports (label -> the JSON this script wrote) as the tables of docs/lecture-hall.md: each session's wait, with
    its run decoded alone beside it, then the bundled session's times and the load."""
    labels = list(reports)
    rows = ["| session | " + " | ".join(f"{label}: wait (s) | decode alone (s)" for label in labels) + " |"]
    rows.append("|---|" + "---|---|" * len(labels))
    count = max(len(r["live"]) for r in reports.values())
    for i in range(count):
        cells = []
        for r in reports.values():
            wait = r["live"][i]["wait_s"] if i < len(r["live"]) else None
            alone = r["decode_alone_s"][i] if i < len(r["decode_alone_s"]) else None
            cells += ["failed" if wait is None else f"{wait:.1f}", "" if alone is None else f"{alone:.2f}"]
        rows.append(f"| live {i + 1} | " + " | ".join(cells) + " |")
    summary = ["", "| | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    lines = {
        "live runs: fastest / median / slowest (s)": lambda r: (
            "{live_min_s:.1f} / {live_median_s:.1f} / {live_max_s:.1f}".format(**r["summary"])
        ),
        "the ten decodes alone, summed (s)": lambda r: f"{r['summary']['sum_decode_alone_s']:.1f}",
        "bundled trace, alone (s)": lambda r: f"{r['summary']['bundled_alone_s']:.1f}",
        "bundled trace, under the load (s)": lambda r: f"{r['summary']['bundled_under_load_s']:.1f}",
        "CPU during the load: server / Chromium (s)": lambda r: (
            "{server_cpu_s:.0f} / {browser_cpu_s:.0f}".format(**r["cpu_during_load_s"])
            if "cpu_during_load_s" in r
            else ""
        ),
        "load average (1 min) before / at the start / at the end": lambda r: " / ".join(
            ast.literal_eval(r[k])[0] for k in ("load_before", "load_at_start", "load_at_end")
        ),
    }
    for name, cell in lines.items():
        summary.append(f"| {name} | " + " | ".join(cell(r) for r in reports.values()) + " |")
    return "\n".join(rows + summary)


def main() -> None:
    if sys.argv[1:2] == ["--markdown"]:  # --markdown LABEL=FILE ...: the tables of reports written before
        pairs = [arg.split("=", 1) for arg in sys.argv[2:]]
        print(markdown({label: json.loads(Path(path).read_text()) for label, path in pairs}))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds between the live sessions and the bundled")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a session may wait before it counts failed")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to serve")
    parser.add_argument("--public", action="store_true", help="serve with SPECVIZ_PUBLIC=1")
    cpus = lambda text: {int(c) for c in text.split(",")}  # noqa: E731
    parser.add_argument("--server-cpus", type=cpus, default=None, help="CPUs for the server, e.g. 0 (default: any)")
    parser.add_argument("--browser-cpus", type=cpus, default=None, help="CPUs for Chromium, e.g. 1 (default: any)")
    parser.add_argument(
        "--shared-cache",
        action="store_true",
        help="every session a tab of one browser context (one HTTP cache, scripts compiled once), after the warm-up",
    )
    parser.add_argument("--out", default="/tmp/lecture-load.json")
    args = parser.parse_args()
    report = run(args)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report["summary"], indent=2))


if __name__ == "__main__":
    main()
