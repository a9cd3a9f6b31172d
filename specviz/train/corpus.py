"""Stage `corpus`: gather a clean, deterministic corpus that every machine of this kind has offline.

Code   = Python's own standard library source (`sysconfig.get_paths()["stdlib"]`), minus tests, GUI/legacy
         packages, generated tables and licence headers, deduplicated.
Prose  = the English documentation text in `pydoc_data.topics`, plus, where Debian's `python3.11-doc` is installed,
         the tutorial/FAQ/HOWTO/reference HTML converted to text with `html.parser` (paragraph-deduplicated).

Every list is sorted, the split is a hash of the document id, and the training order is a seeded shuffle, so the
same machine gives the same corpus; `manifest.json` records what was gathered (counts, bytes, sha256).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import sysconfig
from html.parser import HTMLParser
from pathlib import Path

import numpy as np

# Packages left out of the code corpus: tests, GUI toolkits and demos, legacy/deprecated trees, generated tables.
EXCLUDED_PARTS = {
    "test",
    "tests",
    "idle_test",
    "site-packages",
    "idlelib",
    "tkinter",
    "turtledemo",
    "encodings",
    "lib2to3",
    "distutils",
    "ensurepip",
    "__phello__",
    "pydoc_data",
    "msilib",
    "_distutils_hack",
}
EXCLUDED_FILES = {"this.py", "antigravity.py", "__hello__.py"}
MAX_FILE_BYTES = 130_000  # drops _pydecimal.py and turtle.py, the two outliers
DOC_SECTIONS = ("tutorial", "faq", "howto", "reference")  # subsets of /usr/share/doc/python3.11/html
DOC_FILES = ("glossary.html",)
DOCS_DIR = Path("/usr/share/doc/python3.11/html")
VAL_PERCENT = {"code": 4, "prose": 12}

_LITERAL_LINE = re.compile(
    r"""^(?:\s*(?:'[^']*'|"[^"]*"|0[xX][0-9a-fA-F]+|-?\d+(?:\.\d+)?|[,:()\[\]{}]))+\s*,?\s*(?:\#.*)?$"""
)
_LICENCE_WORDS = re.compile(r"copyright|licen[cs]e|all rights reserved", re.I)


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def strip_licence_header(text: str) -> str:
    """Drop a leading block of `#` comments (after shebang/coding lines) if it mentions a copyright/licence."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and (lines[i].startswith("#!") or re.match(r"#.*coding[:=]", lines[i])):
        i += 1
    j = i
    while j < len(lines) and (lines[j].startswith("#") or not lines[j].strip()):
        j += 1
    if j > i and _LICENCE_WORDS.search("\n".join(lines[i:j])):
        lines = lines[:i] + lines[j:]
    return "\n".join(lines)


def clean_code(text: str) -> str | None:
    """Normalise one source file, or return None when it looks generated / table-like / too long-lined."""
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    text = strip_licence_header(text)
    lines = [ln.rstrip() for ln in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    body = [ln for ln in lines if ln.strip()]
    if len(body) < 8:
        return None
    literal = sum(1 for ln in body if _LITERAL_LINE.match(ln))
    long_lines = sum(1 for ln in body if len(ln) > 120)
    if literal / len(body) > 0.3 or long_lines / len(body) > 0.02:
        return None
    # collapse runs of >2 blank lines
    out = re.sub(r"\n{4,}", "\n\n\n", "\n".join(lines)).strip("\n") + "\n"
    return out


def gather_code(root: Path) -> tuple[list[dict], dict]:
    docs, seen, skipped = [], set(), {"excluded": 0, "too_big": 0, "unreadable": 0, "table_like": 0, "duplicate": 0}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if set(rel.parts[:-1]) & EXCLUDED_PARTS or rel.name in EXCLUDED_FILES or rel.parts[0].startswith("config-"):
            skipped["excluded"] += 1
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            skipped["too_big"] += 1
            continue
        try:
            raw = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            skipped["unreadable"] += 1
            continue
        text = clean_code(raw)
        if text is None:
            skipped["table_like"] += 1
            continue
        h = hashlib.sha1(text.encode()).hexdigest()
        if h in seen:
            skipped["duplicate"] += 1
            continue
        seen.add(h)
        docs.append({"id": f"stdlib/{rel.as_posix()}", "kind": "code", "text": text})
    return docs, skipped


class _DocText(HTMLParser):
    """Text of the Sphinx `<div role="main">` body: block tags become line breaks, `<pre>` keeps its spacing."""

    BLOCK = {
        "p",
        "div",
        "section",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "li",
        "dt",
        "dd",
        "tr",
        "table",
        "ul",
        "ol",
        "dl",
        "blockquote",
        "br",
        "pre",
        "caption",
    }
    SKIP = {"script", "style", "head", "nav"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth_main = 0  # >0 while inside the main body div
        self.skip = 0
        self.pre = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.depth_main:
            if tag == "div":
                self.depth_main += 1
        elif tag == "div" and a.get("role") == "main":
            self.depth_main = 1
            return
        if not self.depth_main:
            return
        if tag in self.SKIP or (tag == "a" and "headerlink" in (a.get("class") or "")):
            self.skip += 1
        if tag == "pre":
            self.pre += 1
        if tag in self.BLOCK:
            self.parts.append("\n\n" if tag in {"p", "pre", "h1", "h2", "h3", "h4", "dt", "table"} else "\n")
        if tag == "li":
            self.parts.append("* ")

    def handle_endtag(self, tag):
        if not self.depth_main:
            return
        if tag == "div":
            self.depth_main -= 1
        if tag in self.SKIP or tag == "a" and self.skip:
            self.skip = max(0, self.skip - 1)
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.depth_main or self.skip:
            return
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))

    def text(self) -> str:
        raw = html.unescape("".join(self.parts)).replace("\u00b6", "")
        lines = [ln.rstrip() for ln in raw.split("\n")]
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def html_to_text(source: str) -> str:
    parser = _DocText()
    parser.feed(source)
    return parser.text()


def _paragraph_dedupe(docs: list[dict]) -> int:
    """Remove paragraphs (blank-line separated) already seen in an earlier prose document. Returns count removed."""
    seen, removed = set(), 0
    for d in docs:
        keep = []
        for para in d["text"].split("\n\n"):
            key = re.sub(r"\s+", " ", para).strip()
            if len(key) >= 40 and key in seen:
                removed += 1
                continue
            seen.add(key)
            keep.append(para)
        d["text"] = "\n\n".join(keep).strip() + "\n"
    return removed


def gather_prose(use_docs: str) -> tuple[list[dict], dict]:
    from pydoc_data import topics

    docs = [
        {"id": f"topics/{name}", "kind": "prose", "text": topics.topics[name].strip() + "\n"}
        for name in sorted(topics.topics)
    ]
    info = {"pydoc_topics": len(docs), "docs_dir": None, "doc_pages": 0}
    if use_docs != "off" and DOCS_DIR.is_dir():
        pages = [p for s in DOC_SECTIONS for p in sorted((DOCS_DIR / s).rglob("*.html"))]
        pages += [DOCS_DIR / f for f in DOC_FILES if (DOCS_DIR / f).exists()]
        for p in pages:
            text = html_to_text(p.read_text(encoding="utf-8", errors="replace"))
            if len(text) > 200:
                docs.append({"id": f"docs/{p.relative_to(DOCS_DIR).as_posix()}", "kind": "prose", "text": text})
        info.update(docs_dir=str(DOCS_DIR), doc_pages=len(docs) - info["pydoc_topics"])
    elif use_docs == "on":
        raise SystemExit(f"--docs on but {DOCS_DIR} is missing: apt-get install -y python3.11-doc")
    info["paragraphs_deduplicated"] = _paragraph_dedupe(docs)
    docs = [d for d in docs if len(d["text"]) > 100]
    return docs, info


def is_validation(doc_id: str, kind: str) -> bool:
    return int(hashlib.sha1(doc_id.encode()).hexdigest()[:8], 16) % 100 < VAL_PERCENT[kind]


def _stats(docs: list[dict]) -> dict:
    h = hashlib.sha256()
    for d in docs:
        h.update(d["id"].encode() + b"\0" + d["text"].encode() + b"\0")
    return {
        "documents": len(docs),
        "chars": sum(len(d["text"]) for d in docs),
        "bytes": sum(len(d["text"].encode()) for d in docs),
        "sha256": h.hexdigest(),
    }


def write_jsonl(path: Path, docs: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def build_corpus(out_dir: Path, *, seed: int, use_docs: str, log) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    root = stdlib_root()
    code, skipped = gather_code(root)
    prose, prose_info = gather_prose(use_docs)
    splits = {"train": [], "val_code": [], "val_prose": []}
    for d in code + prose:
        if is_validation(d["id"], d["kind"]):
            splits[f"val_{d['kind']}"].append(d)
        else:
            splits["train"].append(d)
    order = np.random.default_rng(seed).permutation(len(splits["train"]))  # seeded training order
    splits["train"] = [splits["train"][i] for i in order]
    manifest = {
        "stdlib_root": str(root),
        "seed": seed,
        "excluded_parts": sorted(EXCLUDED_PARTS),
        "code_skipped": skipped,
        "prose": prose_info,
        "all_code": _stats(code),
        "all_prose": _stats(prose),
        "splits": {},
    }
    for name, docs in splits.items():
        write_jsonl(out_dir / f"{name}.jsonl", docs)
        st = _stats(docs)
        st["code_documents"] = sum(d["kind"] == "code" for d in docs)
        st["prose_documents"] = sum(d["kind"] == "prose" for d in docs)
        manifest["splits"][name] = st
        log(
            f"corpus {name}: {st['documents']} docs ({st['code_documents']} code, {st['prose_documents']} prose), "
            f"{st['bytes'] / 1e6:.2f} MB"
        )
    manifest["val_ids"] = {k: [d["id"] for d in splits[k]] for k in ("val_code", "val_prose")}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest


def check_workloads(corpus_dir: Path, workload_files: list[Path], log) -> dict:
    """Every prompt (and every line of 25+ characters in it) must not occur anywhere in the corpus."""
    texts = [d["text"] for name in ("train", "val_code", "val_prose") for d in read_jsonl(corpus_dir / f"{name}.jsonl")]
    # also the raw stdlib, before cleaning (a prompt copied from it would be a leak even if cleaning changed it)
    blob = "\n\0".join(texts)
    raw = "\n\0".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(stdlib_root().rglob("*.py"))
        if "site-packages" not in p.parts
    )
    result = {"prompts": 0, "leaks": []}
    for wf in workload_files:
        if not wf.exists():
            continue
        for n, line in enumerate(wf.read_text().splitlines()):
            if not line.strip():
                continue
            prompt = json.loads(line)["prompt"]
            result["prompts"] += 1
            probes = [prompt] + [ln.strip() for ln in prompt.split("\n") if len(ln.strip()) >= 25]
            for probe in probes:
                if probe in blob or probe in raw:
                    result["leaks"].append({"file": wf.name, "line": n + 1, "probe": probe})
    log(f"workload check: {result['prompts']} prompts, {len(result['leaks'])} leaks")
    for leak in result["leaks"]:
        log(f"  LEAK {leak['file']}:{leak['line']}: {leak['probe']!r}")
    return result
