"""python -m specviz export-html TRACE.json -o run.html: a trace as one offline HTML file that steps through it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specviz.cli.args import check_writable
from specviz.core.trace import Trace
from specviz.errors import SpecvizError

TRACES_DIR = Path(__file__).resolve().parents[2] / "assets" / "traces"


def add_export_parser(subparsers) -> argparse.ArgumentParser:
    """Register `export-html` on an argparse subparsers object."""
    parser = subparsers.add_parser(
        "export-html",
        help="write a trace as one offline HTML file that steps through it (no network, no Python)",
        description="A trace (from `run --json`, the round page's download or assets/traces/) as one HTML file with "
        "the player and the Vega libraries inside: the round page's keys, the moment in the address, lecture mode.",
    )
    parser.add_argument("trace", help="a specviz trace JSON file")
    parser.add_argument("-o", "--output", required=True, help="the HTML file to write, e.g. run.html")
    parser.add_argument("--title", default="", help="what the run is, as the page's heading (default: its settings)")
    parser.add_argument("--about", default="", help="a sentence on what the run shows (default: how it was recorded)")
    parser.set_defaults(handler=cmd_export_html)
    return parser


def bundled_words(path: Path) -> tuple[str, str]:
    """A bundled lecture trace's own title and description (assets/traces/index.json), or ("", "") for any other."""
    index = TRACES_DIR / "index.json"
    if not index.exists() or path.resolve().parent != TRACES_DIR.resolve():
        return "", ""
    for info in json.loads(index.read_text(encoding="utf-8")).values():
        if info.get("file") == path.name:
            return info.get("title", ""), info.get("what", "")
    return "", ""


def read_trace(name: str) -> Trace:
    """The trace a user named, or one clear message saying why it cannot be read."""
    path = Path(name)
    if path.is_dir():
        raise SpecvizError(f"{name!r} is a directory: give a trace JSON file, e.g. assets/traces/ngram-burst.json.")
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise SpecvizError(f"no such trace file: {name!r}. Save one with `python -m specviz run --json`.") from None
    except OSError as exc:
        raise SpecvizError(f"cannot read the trace file {name!r}: {exc.strerror}.") from None
    try:
        return Trace.from_json(text)
    except SpecvizError as exc:
        raise SpecvizError(f"{name}: {exc}") from None


def cmd_export_html(args: argparse.Namespace) -> int:
    from specviz.viz.export_html import trace_html_file

    check_writable(args.output, "--output")
    trace = read_trace(args.trace)
    title, about = bundled_words(Path(args.trace))
    page = trace_html_file(trace, args.title or title, args.about or about)
    Path(args.output).write_text(page, encoding="utf-8")
    print(f"wrote {args.output} ({len(page.encode('utf-8')) / 1e6:.2f} MB): open it in a browser, no network needed")
    return 0
