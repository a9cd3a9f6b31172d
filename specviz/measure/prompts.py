"""Prompts to measure on: read from .jsonl, .csv or text, strict about what it reports and lenient about what it keeps.

Unreadable rows are listed by line number and the valid rows still run.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from specviz.core.record import UNTAGGED
from specviz.errors import SpecvizError

MAX_PROMPTS = 500
MAX_FILE_BYTES = 2_000_000


class WorkloadError(SpecvizError):
    """A workload that cannot be read at all (binary, too big, no prompt column, no valid rows)."""


@dataclass(frozen=True)
class PromptRow:
    prompt: str
    tag: str = UNTAGGED
    line: int = 0  # where it came from in the input, for messages


@dataclass(frozen=True)
class Workload:
    rows: tuple[PromptRow, ...]
    problems: tuple[str, ...] = ()  # "line 7: ..." for every row that was skipped


def parse_workload(
    data: bytes | str, filename: str = "pasted.txt", max_bytes: int = MAX_FILE_BYTES, max_prompts: int = MAX_PROMPTS
) -> Workload:
    """Prompts from .jsonl ({"prompt", "tag"}), .csv (prompt[, tag] columns) or text (blocks split by --- or blank
    lines)."""
    text = _as_text(data, filename, max_bytes)
    suffix = Path(filename).suffix.lower()
    parse = {".jsonl": _parse_jsonl, ".json": _parse_jsonl, ".csv": _parse_csv}.get(suffix, _parse_text)
    rows, problems = parse(text)
    if not rows:
        detail = f" ({'; '.join(problems[:3])})" if problems else ""
        raise WorkloadError(f"{filename}: no usable prompts found{detail}.")
    if len(rows) > max_prompts:
        raise WorkloadError(f"{filename}: {len(rows)} prompts; at most {max_prompts} per run. Split the file.")
    return Workload(tuple(rows), tuple(problems))


def _as_text(data: bytes | str, filename: str, max_bytes: int) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise WorkloadError(
            f"{filename} is {len(raw) / 1e3:,.0f} kB; workloads are limited to {max_bytes / 1e3:,.0f} kB here."
        )
    if b"\x00" in raw:
        raise WorkloadError(f"{filename} looks binary, not text: give a .txt, .jsonl or .csv file.")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise WorkloadError(f"{filename} is not UTF-8 text (byte {exc.start}): save it as UTF-8.") from exc


def _parse_jsonl(text: str) -> tuple[list[PromptRow], list[str]]:
    rows, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc.msg})")
            continue
        row = _row(record, number) if isinstance(record, dict) else 'expected an object with a "prompt" field'
        (rows.append(row) if isinstance(row, PromptRow) else problems.append(f"line {number}: {row}"))
    return rows, problems


def _parse_csv(text: str) -> tuple[list[PromptRow], list[str]]:
    reader = csv.DictReader(io.StringIO(text))
    columns = [c.strip().lower() for c in reader.fieldnames or []]
    if "prompt" not in columns:
        raise WorkloadError(
            f"The CSV has no 'prompt' column (its columns: {', '.join(columns) or 'none'}). "
            "Add a header row with prompt[,tag]."
        )
    rows, problems = [], []
    for record in reader:
        number = reader.line_num
        clean = {(k or "").strip().lower(): v for k, v in record.items()}
        row = _row(clean, number)
        (rows.append(row) if isinstance(row, PromptRow) else problems.append(f"line {number}: {row}"))
    return rows, problems


def _parse_text(text: str) -> tuple[list[PromptRow], list[str]]:
    """Blocks separated by a line holding only --- or, when there is none, by blank lines."""
    lines = text.splitlines()
    dashed = any(line.strip() == "---" for line in lines)
    rows, block, start = [], [], 1
    for number, line in enumerate([*lines, None], start=1):  # None ends the last block
        if line is None or (line.strip() == "---" if dashed else not line.strip()):
            if "".join(block).strip():
                rows.append(PromptRow("\n".join(block).strip("\n"), UNTAGGED, start))
            block, start = [], number + 1
        else:
            block.append(line)
    return rows, []


def _row(record: dict, number: int) -> PromptRow | str:
    prompt = record.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return 'missing or empty "prompt"'
    tag = record.get("tag") or UNTAGGED
    return PromptRow(prompt, str(tag).strip() or UNTAGGED, number)


def read_workload(path: str | Path) -> Workload:
    """parse_workload on a file, with a clear message when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise WorkloadError(f"Cannot read {str(path)!r}: {exc.strerror}.") from exc
    return parse_workload(data, str(path))
