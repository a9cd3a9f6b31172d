"""python -m specviz export-html TRACE.json -o run.html: a trace as one offline HTML file that steps through it.

`export-html --lectures` rebuilds every bundled lecture trace's page in static/lectures/ (viz/lectures.py), which the
app serves as plain files; `--lectures --check` only says which are stale (after a change to the exporter or a
trace), and fails if any is.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specviz.cli.args import check_writable
from specviz.core.trace import Trace
from specviz.core.trace_json import MAX_TRACE_BYTES, trace_from_json
from specviz.errors import SpecvizError
from specviz.viz import lectures

TRACES_DIR = lectures.TRACES_DIR
REBUILD = "python -m specviz export-html --lectures"


def add_export_parser(subparsers) -> argparse.ArgumentParser:
    """Register `export-html` on an argparse subparsers object."""
    parser = subparsers.add_parser(
        "export-html",
        help="write a trace as one offline HTML file that steps through it (no network, no Python)",
        description="A trace (from `run --json`, the round page's download or assets/traces/) as one HTML file with "
        "the player and the Vega libraries inside: the round page's keys, the moment in the address, lecture mode. "
        "With --lectures: every bundled lecture trace (assets/traces/index.json) as static/lectures/NAME.html, the "
        "pages the app serves at /app/static/lectures/NAME.html.",
    )
    parser.add_argument("trace", nargs="?", help="a specviz trace JSON file (not with --lectures)")
    parser.add_argument(
        "-o",
        "--output",
        help="the HTML file to write, e.g. run.html (with --lectures: the folder, default static/lectures)",
    )
    parser.add_argument(
        "--lectures",
        action="store_true",
        help="build every bundled lecture trace's page into static/lectures/ (or -o DIR), removing pages of lectures "
        "no longer in the index",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="with --lectures: write nothing, list the pages that are stale, exit 1 if any",
    )
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
        with path.open("rb") as handle:
            text = handle.read(MAX_TRACE_BYTES + 1)  # never more: /dev/zero or a huge file is refused, not read
    except FileNotFoundError:
        raise SpecvizError(f"no such trace file: {name!r}. Save one with `python -m specviz run --json`.") from None
    except OSError as exc:
        raise SpecvizError(f"cannot read the trace file {name!r}: {exc.strerror}.") from None
    if len(text) > MAX_TRACE_BYTES:
        raise SpecvizError(
            f"{name}: this file is larger than {MAX_TRACE_BYTES / 1e6:,.0f} MB, the most a trace may be here; a trace "
            "from `python -m specviz run --json` is far smaller (replay a shorter run, with fewer new tokens)."
        )
    try:
        return trace_from_json(text)
    except SpecvizError as exc:
        raise SpecvizError(f"{name}: {exc}") from None


def cmd_export_html(args: argparse.Namespace) -> int:
    from specviz.viz.export_html import trace_html_file

    if args.lectures:
        return cmd_lectures(args)
    if args.check:
        raise SpecvizError("--check goes with --lectures: `python -m specviz export-html --lectures --check`.")
    if not args.trace or not args.output:
        raise SpecvizError(
            "give a trace and where to write it (`export-html TRACE.json -o run.html`), or --lectures to build the "
            "bundled lecture pages."
        )
    check_writable(args.output, "--output")
    trace = read_trace(args.trace)
    title, about = bundled_words(Path(args.trace))
    page = trace_html_file(trace, args.title or title, args.about or about)
    Path(args.output).write_text(page, encoding="utf-8")
    print(f"wrote {args.output} ({len(page.encode('utf-8')) / 1e6:.2f} MB): open it in a browser, no network needed")
    return 0


def cmd_lectures(args: argparse.Namespace) -> int:
    """Build (or with --check, compare) every bundled lecture trace's page."""
    if args.trace:
        raise SpecvizError(f"--lectures builds every bundled trace; leave out {args.trace!r} (or drop --lectures).")
    folder = Path(args.output) if args.output else lectures.LECTURES_DIR
    if folder.exists() and not folder.is_dir():
        raise SpecvizError(f"--output {args.output!r} is a file; with --lectures give a folder, e.g. static/lectures.")
    pages = lectures.lecture_pages(lectures.lecture_index())
    if args.check:
        stale = lectures.stale_pages(folder, pages)
        for problem in stale:
            print(f"{folder / problem}")
        print(
            f"{len(stale)} of {len(pages)} lecture pages stale"
            + (f": rebuild them with `{REBUILD}`." if stale else ".")
        )
        return 1 if stale else 0
    written, removed = lectures.write_pages(folder, pages)
    for file in written:
        print(f"wrote {folder / file} ({len(pages[file].encode('utf-8')) / 1e6:.2f} MB)")
    for file in removed:
        print(f"removed {folder / file} (no lecture in index.json has it)")
    print(
        f"{len(pages)} lecture pages in {folder}: {len(written)} written, {len(pages) - len(written)} already current."
    )
    return 0
