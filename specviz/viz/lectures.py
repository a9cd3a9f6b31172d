"""The bundled lecture traces as prebuilt offline pages: which file each is, where the app serves it, what it opens at.

Each entry of assets/traces/index.json is exported once (viz.export_html) into static/lectures/<name>.html, which
Streamlit serves as a plain file at <base URL path>/app/static/lectures/<name>.html when `server.enableStaticServing`
is on (.streamlit/config.toml): a class opens one URL and costs the server a file download (gzip, ETag), no Python.
`python -m specviz export-html --lectures` rebuilds them, `--lectures --check` says which are stale (cli/export.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from specviz.core.trace import Trace
from specviz.core.trace_json import trace_from_json
from specviz.errors import SpecvizError
from specviz.viz import steps

REPO = Path(__file__).resolve().parents[2]
TRACES_DIR = REPO / "assets" / "traces"
STATIC_DIR = REPO / "static"  # Streamlit's static folder: beside the main script (app.py)
LECTURES_DIR = STATIC_DIR / "lectures"
SERVED_AT = "app/static/lectures"  # where Streamlit serves LECTURES_DIR, below the app's base URL path
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")  # a lecture's name is its file name and part of a URL: keep it plain

Builder = Callable[[str, dict], str]  # (name, index entry) -> the page's HTML


def lecture_index(traces_dir: Path = TRACES_DIR) -> dict[str, dict]:
    """The bundled lecture traces (index.json): name -> file, title, what it shows and the moment it opens at."""
    path = traces_dir / "index.json"
    index = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    bad = [name for name in index if not _NAME.fullmatch(name)]
    if bad:
        raise SpecvizError(
            f"{path}: lecture name(s) {', '.join(map(repr, bad))} cannot be file names in a URL: use lower-case "
            "letters, digits and hyphens."
        )
    return index


def page_file(name: str) -> str:
    """A lecture's prebuilt page, as a file name under static/lectures/."""
    return f"{name}.html"


def lecture_trace(info: dict, traces_dir: Path = TRACES_DIR) -> Trace:
    """The trace an index entry names."""
    return trace_from_json((traces_dir / info["file"]).read_text(encoding="utf-8"))


def lecture_html(name: str, info: dict, traces_dir: Path = TRACES_DIR) -> str:
    """A lecture's offline page: its trace exported with its own title and words (what export-html gives)."""
    from specviz.viz.export_html import trace_html_file  # the Vega libraries are read only when a page is built

    return trace_html_file(lecture_trace(info, traces_dir), info.get("title", ""), info.get("what", ""))


def lecture_pages(index: dict[str, dict], build: Builder | None = None) -> dict[str, str]:
    """Every lecture's page: file name -> HTML (build: how a page is made; default lecture_html, the exporter)."""
    build = build or lecture_html
    return {page_file(name): build(name, info) for name, info in index.items()}


def stale_pages(folder: Path, pages: dict[str, str]) -> list[str]:
    """What in `folder` differs from `pages`: each file missing, different, or left over (an .html no lecture has)."""
    problems = []
    for file, text in pages.items():
        path = folder / file
        if not path.is_file():
            problems.append(f"{file} is missing")
        elif path.read_bytes() != text.encode("utf-8"):
            problems.append(f"{file} is not what the exporter gives today")
    extra = sorted(p.name for p in folder.glob("*.html") if p.name not in pages) if folder.is_dir() else []
    problems += [f"{file} belongs to no lecture in index.json" for file in extra]
    return problems


def write_pages(folder: Path, pages: dict[str, str]) -> tuple[list[str], list[str]]:
    """Write every page into `folder` (real files: Streamlit refuses links out of static/) and remove the .html
    files no lecture has; returns (written, removed)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for file, text in pages.items():
        path = folder / file
        if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
            path.write_bytes(text.encode("utf-8"))  # bytes: the same file on every OS (no newline translation)
            written.append(file)
    removed = sorted(p.name for p in folder.glob("*.html") if p.name not in pages)
    for file in removed:
        (folder / file).unlink()
    return written, removed


def opening_fragment(trace: Trace, info: dict) -> str:
    """The address fragment that opens a lecture's page at its moment (#round=3&phase=resolve), as the player reads
    it; the index's moment is resolved on the trace as the round page resolves it."""
    return "#" + steps.query_string(steps.url_params(trace, steps.cursor_from_params(trace, info)))


def lecture_url(name: str, fragment: str = "", base_url_path: str = "") -> str:
    """A lecture page's address on the app's server, from its root: /<base URL path>/app/static/lectures/<name>.html."""
    base = base_url_path.strip("/")
    return "/" + (base + "/" if base else "") + f"{SERVED_AT}/{page_file(name)}{fragment}"


_PACKED = re.compile(r'<script id="bundle" type="application/octet-stream">([A-Za-z0-9+/=]+)</script>')


def prebuilt_page(trace: Trace, title: str, about: str, folder: Path = LECTURES_DIR) -> str | None:
    """A lecture's prebuilt page, when `trace`, `title` and `about` are exactly what it was built from (the committed
    pages are checked to be what the exporter gives today: tests); None otherwise."""
    for name, info in lecture_index().items():
        if (info.get("title", ""), info.get("what", "")) != (title, about):
            continue
        page = folder / page_file(name)
        if page.exists() and lecture_trace(info) == trace:
            return page.read_text(encoding="utf-8")
    return None


def prebuilt_packed(trace: Trace, title: str, about: str, folder: Path = LECTURES_DIR) -> str | None:
    """The packed player bundle inside that page (so the round page opens a bundled lecture without building its
    bundle again, which takes seconds); None where there is no such page."""
    page = prebuilt_page(trace, title, about, folder)
    found = _PACKED.search(page) if page else None
    return found.group(1) if found else None
