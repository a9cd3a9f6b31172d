"""Prompts to measure on: read from .jsonl, .csv or text, strict about what it reports and lenient about what it keeps.

Unreadable rows are listed by line number and the valid rows still run. Every format can tag its prompts (a tag is a
kind of prompt the workload measures, and judges, on its own): a "tag" field in .jsonl, a tag column in .csv, and in
text (the workload page's paste box, a .txt file) a line `### tag: NAME`, which tags every prompt after it until the
next such line (prompts before the first are untagged). A `###` line that starts with "tag" but is not written so is
refused with its line number: read as a prompt it would leave the prompts after it with the wrong tag. `### ` lines
that do not start with "tag" (a Markdown heading) are prompt text.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from specviz.core.record import UNTAGGED
from specviz.errors import SpecvizError

MAX_PROMPTS = 500
MAX_FILE_BYTES = 2_000_000
MAX_TAG_CHARS = 40
RESERVED_TAG = "all"  # the whole workload's group in the summary and the verdicts (measure/summary.py ALL)
TAG_LINE = "### tag: NAME"
_TAG_LINE = re.compile(r"\s*###\s*tag\b(?P<rest>.*)", re.IGNORECASE)  # meant as a tag line
_TAG_NAME = re.compile(r"\s*:\s*(?P<name>\S.*?)\s*")  # what must follow "### tag"


class WorkloadError(SpecvizError):
    """A workload that cannot be read at all (binary, too big, no prompt column, no valid rows)."""


@dataclass(frozen=True)
class PromptRow:
    prompt: str
    tag: str = UNTAGGED
    line: int = 0  # where it came from in the input, for messages
    chat: bool | None = None  # through the target's chat template (a "chat" field or column); None: the pair decides
    row_id: str = ""  # a Spec-Bench row's question_id, named in messages instead of the line
    turns: tuple[str, ...] = ()  # a Spec-Bench row's user turns (prompt is the first, or the second with --second-turn)
    category: str = ""  # a Spec-Bench row's own category (an MT-bench subcategory such as "writing"; tag groups them)

    @property
    def where(self) -> str:
        """How messages name the row: 'question 245' for a Spec-Bench row, else 'line 7'."""
        return f"question {self.row_id}" if self.row_id else f"line {self.line}"


@dataclass(frozen=True)
class Workload:
    rows: tuple[PromptRow, ...]
    problems: tuple[str, ...] = ()  # "line 7: ..." for every row that was skipped


def parse_workload(
    data: bytes | str, filename: str = "pasted.txt", max_bytes: int = MAX_FILE_BYTES, max_prompts: int = MAX_PROMPTS
) -> Workload:
    """Prompts from .jsonl ({"prompt", "tag", "chat"}), .csv (prompt[, tag][, chat] columns) or text (blocks split by
    --- or blank lines, tagged by `### tag: NAME` lines). chat: whether a row goes through an instruct target's chat
    template (empty: the pair decides)."""
    text = _as_text(data, filename, max_bytes)
    suffix = Path(filename).suffix.lower()
    parse = {".jsonl": _parse_jsonl, ".json": _parse_jsonl, ".csv": _parse_csv}.get(suffix, _parse_text)
    rows, problems = parse(text)
    if not rows:
        detail = f" ({'; '.join(problems[:3])})" if problems else ""
        raise WorkloadError(f"{filename}: no usable prompts found{detail}.")
    if len(rows) > max_prompts:
        raise WorkloadError(f"{filename}: {len(rows)} prompts; a file holds at most {max_prompts}. Split the file.")
    return Workload(tuple(rows), tuple(problems))


def _as_text(data: bytes | str, filename: str, max_bytes: int) -> str:
    try:
        raw = data.encode("utf-8") if isinstance(data, str) else data
    except UnicodeEncodeError as exc:  # a str with a lone surrogate: not text any tokenizer takes
        raise WorkloadError(f"{filename} holds {_bad_char(exc)}, which is not text: remove it.") from exc
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
    rows: list[PromptRow] = []
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc.msg})")
            continue
        except RecursionError:
            problems.append(f"line {number}: nested too deeply to be a prompt record")
            continue
        row = _row(record, number) if isinstance(record, dict) else 'expected an object with a "prompt" field'
        (rows.append(row) if isinstance(row, PromptRow) else problems.append(f"line {number}: {row}"))
    return rows, problems


def _parse_csv(text: str) -> tuple[list[PromptRow], list[str]]:
    csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))  # any field the file can hold (it is capped)
    reader = csv.DictReader(io.StringIO(text), strict=True)
    try:
        columns = [c.strip().lower() for c in reader.fieldnames or []]
    except csv.Error as exc:
        raise WorkloadError(f"The CSV's header row (line 1) cannot be read: {_csv_problem(exc)}.") from exc
    if "prompt" not in columns:
        raise WorkloadError(
            f"The CSV has no 'prompt' column (its columns: {', '.join(columns) or 'none'}). "
            "Add a header row with prompt[,tag]."
        )
    rows: list[PromptRow] = []
    problems: list[str] = []
    for number, record in _csv_records(reader, problems, text.count("\n") + 2):
        clean = {(k or "").strip().lower(): v for k, v in record.items()}
        row = _row(clean, number)
        (rows.append(row) if isinstance(row, PromptRow) else problems.append(f"line {number}: {row}"))
    return rows, problems


def _csv_records(reader: csv.DictReader, problems: list[str], max_errors: int):
    """(line, record) for every readable record; an unreadable one becomes "line N: why" and reading goes on."""
    errors = 0
    while errors < max_errors:
        start = reader.line_num + 1  # the line the next record starts on
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.append(f"line {start}: {_csv_problem(exc)}")
            errors += 1
            continue
        yield reader.line_num, record


def _csv_problem(exc: csv.Error) -> str:
    """What a csv error means for someone editing the file."""
    text = str(exc)
    if "end of data" in text:
        return (
            'a quote (") opens here and never closes, so the rest of the file would be one prompt: close it '
            '(a quote inside a quoted field is written "")'
        )
    if "new-line character" in text:
        return "a line break (a lone carriage return) inside an unquoted field: put the field in quotes"
    return f"not valid CSV ({text})"


def _parse_text(text: str) -> tuple[list[PromptRow], list[str]]:
    """Blocks separated by a line holding only --- or, when there is none, by blank lines; a `### tag: NAME` line ends
    the block before it and tags the blocks after it."""
    lines = text.splitlines()
    dashed = any(line.strip() == "---" for line in lines)
    rows: list[PromptRow] = []
    block: list[str] = []
    start, tag = 1, UNTAGGED
    for number, line in enumerate([*lines, None], start=1):  # None ends the last block
        named = None if line is None else _tag_of_line(line, number)
        if line is None or named is not None or (line.strip() == "---" if dashed else not line.strip()):
            if "".join(block).strip():
                rows.append(PromptRow("\n".join(block).strip("\n"), tag, start))
            block, start, tag = [], number + 1, named or tag
        else:
            block.append(line)
    return rows, []


def _tag_of_line(line: str, number: int) -> str | None:
    """The tag a `### tag: NAME` line names; None for any other line; WorkloadError for a tag line written wrong."""
    meant = _TAG_LINE.fullmatch(line)
    if meant is None:
        return None
    written = _TAG_NAME.fullmatch(meant["rest"])
    if written is None:
        raise WorkloadError(
            f"line {number}: {line.strip()[:60]!r} is not a tag line: write {TAG_LINE!r} (a colon, then the tag)."
        )
    problem = tag_problem(written["name"])
    if problem:
        raise WorkloadError(f"line {number}: {problem}.")
    return written["name"]


def tag_problem(tag: str) -> str | None:
    """Why a tag cannot be used (None when it can): too long to show, or the name of the whole workload's group."""
    if tag.lower() == RESERVED_TAG:
        return f'the tag "{RESERVED_TAG}" is reserved for the whole workload: give these prompts another tag'
    if len(tag) > MAX_TAG_CHARS:
        return f"a tag is at most {MAX_TAG_CHARS} characters; this one has {len(tag)}"
    return None


def tag_counts(rows: Sequence[PromptRow]) -> dict[str, int]:
    """Prompts per tag, in the order the tags first appear."""
    return dict(Counter(row.tag for row in rows))


def tags_found(rows: Sequence[PromptRow]) -> str:
    """The tags of a workload in one line, as the page and the command line show them before measuring."""
    counts = tag_counts(rows)
    listed = ", ".join(f"{tag} ({n})" for tag, n in counts.items())
    if set(counts) == {UNTAGGED}:
        return f"{len(rows)} prompt(s), none tagged: the verdict judges them all together."
    judged = "; each tag is judged on its own as well as all together" if len(counts) > 1 else ""
    return f"{len(rows)} prompt(s) by tag: {listed}{judged}."


def _row(record: dict, number: int) -> PromptRow | str:
    if "prompt" not in record and "turns" in record:
        return _spec_bench_row(record, number)
    prompt = record.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return 'missing or empty "prompt"'
    tag = str(record.get("tag") or UNTAGGED).strip() or UNTAGGED
    for name, value in (("prompt", prompt), ("tag", tag)):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # JSON's "\ud800": a lone surrogate decodes, but is not text
            return f"the {name} holds {_bad_char(exc)}, which is not text (a lone surrogate): remove it"
    chat = _chat_flag(record.get("chat"))
    if isinstance(chat, str):
        return chat
    return tag_problem(tag) or PromptRow(prompt, tag, number, chat)


# Spec-Bench (hemingkx/Spec-Bench, data/spec_bench/question.jsonl): MT-bench's eight subcategories are one category
# there ("mt_bench" in its evaluation/speed.py); the other five are named as they are.
MT_BENCH = "mt_bench"
MT_BENCH_SUBCATEGORIES = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")


def spec_bench_tag(category: str) -> str:
    """The Spec-Bench category a row's own category belongs to: 'writing' -> 'mt_bench', 'qa' -> 'qa'."""
    return MT_BENCH if category in MT_BENCH_SUBCATEGORIES else category


def _spec_bench_row(record: dict, number: int) -> PromptRow | str:
    """A Spec-Bench row ({question_id, category, turns[, reference]}): its first turn is the prompt, its category the
    tag (MT-bench's subcategories grouped), its question_id what messages name it by."""
    turns = record.get("turns")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        return '"turns" must be a list of non-empty strings (a Spec-Bench row)'
    category = str(record.get("category") or "").strip()
    if not category:
        return 'a Spec-Bench row needs a "category"'
    row_id = str(record.get("question_id", number))
    row = _row({"prompt": turns[0], "tag": spec_bench_tag(category), "chat": record.get("chat")}, number)
    return replace(row, row_id=row_id, turns=tuple(turns), category=category) if isinstance(row, PromptRow) else row


CHAT_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False, "": None}


def _chat_flag(value) -> bool | None | str:
    """A row's "chat" field (JSON true / false) or column (true, false, yes, no, 1, 0; empty: the pair decides)."""
    if value is None or isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in CHAT_WORDS:
        return CHAT_WORDS[word]
    return f'"chat" is true or false (or empty: the pair decides); got {value!r}'


def wrapped_rows(pair, rows, chat: bool) -> tuple[PromptRow, ...]:
    """The rows with each prompt wrapped in the target's chat template where its own "chat" says so, or, where it says
    nothing, where `chat` does (an instruct pair's default; the CLI's --raw turns it off)."""
    from specviz.engine.decode import chat_wrapped

    wanted = lambda row: chat if row.chat is None else row.chat  # noqa: E731
    return tuple(replace(row, prompt=chat_wrapped(pair, row.prompt)) if wanted(row) else row for row in rows)


def _bad_char(exc: UnicodeEncodeError) -> str:
    return f"{exc.object[exc.start]!r} at character {exc.start}"


WORKLOADS_DIR = Path(__file__).resolve().parents[2] / "assets" / "workloads"
BUNDLED_WORKLOADS = ("spec-bench", "code", "prose", "structured", "copy")  # assets/workloads/NAME.jsonl


def workload_path(name_or_path: str | Path) -> Path:
    """A bundled workload's file by its name ('spec-bench', 'code', ...), or the path given; an unknown name that is
    no file is refused with the names."""
    text = str(name_or_path).strip()
    if text.lower() in BUNDLED_WORKLOADS:
        return WORKLOADS_DIR / f"{text.lower()}.jsonl"
    path = Path(text)
    if not path.exists() and not path.suffix:
        raise WorkloadError(
            f"No workload named {text!r}: give a file (.jsonl, .csv, .txt) or a bundled workload "
            f"({', '.join(BUNDLED_WORKLOADS)})."
        )
    return path


def read_workload(path: str | Path) -> Workload:
    """parse_workload on a file (or a bundled workload by name), with a clear message when it cannot be read."""
    path = workload_path(path)
    return parse_workload(read_capped(path, MAX_FILE_BYTES, "workload"), str(path))


def read_capped(path: str | Path, max_bytes: int, what: str) -> bytes:
    """At most max_bytes of a file, never more (so /dev/zero or a huge file is refused, not read to the end)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise WorkloadError(f"Cannot read {str(path)!r}: {exc.strerror or exc}.") from exc
    if len(data) > max_bytes:
        raise WorkloadError(
            f"{str(path)!r} is larger than {max_bytes / 1e3:,.0f} kB, the limit for a {what} file here: "
            "give a smaller file (or split it)."
        )
    return data
