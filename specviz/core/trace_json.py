"""A trace (core/trace.py) to its JSON document and back, every field of an untrusted document checked where it enters.

The JSON document (format "specviz.trace") is what `python -m specviz run --json` prints and what the app downloads
and replays. Its shape is documented in docs/trace-format.md and is stable within a version. Version 1: chain
rounds (`rounds[].positions[]`). Version 2 adds tree rounds: `rounds[].nodes[]` (every drafted node and its verdict)
and `rounds[].path` (the accepted nodes); a tree round's `positions` are the nodes of its accepted path, then, when the
round ends in a correction, the last child rejected, so readers of version 1 see a chain-like round. Chain runs are
still written as version 1, byte for byte; both versions load.
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any

from specviz.core import schedule
from specviz.core.schedule import ScheduleStep
from specviz.core.settings import MAX_K, RunSettings
from specviz.core.trace import (
    ACCEPTED,
    AFTER_STOP,
    BONUS,
    CORRECTION,
    REJECTED,
    SUFFIX_SOURCES,
    TARGET,
    UNREACHED,
    Crossing,
    ExtraToken,
    Node,
    Position,
    Round,
    Scored,
    SuffixMatch,
    TokenProb,
    Totals,
    Trace,
)
from specviz.errors import SettingsError, TraceFormatError

TRACE_FORMAT = "specviz.trace"
TRACE_VERSION = 1  # chain runs
TREE_TRACE_VERSION = 2  # runs with tree rounds
READABLE_VERSIONS = (TRACE_VERSION, TREE_TRACE_VERSION)
MAX_TRACE_BYTES = 64_000_000  # trace_from_json's default cap (the command line); the app passes its upload cap


def trace_to_dict(trace: Trace) -> dict:
    """The trace as its JSON document: version 1 for chain runs (byte for byte), 2 with tree rounds."""
    body = asdict(trace)
    body["settings"] = trace.settings.to_dict()
    tree = any(r.nodes for r in trace.rounds)
    if not tree:
        for r in body["rounds"]:  # chain runs: exactly the version-1 document
            del r["nodes"], r["path"]
    for r in body["rounds"]:
        if r["schedule"] is None:  # constant-K runs: the document they always had
            del r["schedule"]
        if not r["scored"]:  # all but dynamic trees: the document they always had
            del r["scored"]
        if r["suffix"] is None:  # other methods (and older suffix traces): the document they always had
            del r["suffix"]
        if r["crossing"] is None:  # one tokenizer: the document it always had
            del r["crossing"]
    return {"format": TRACE_FORMAT, "version": TREE_TRACE_VERSION if tree else TRACE_VERSION, **body}


def trace_to_json(trace: Trace, indent: int | None = None) -> str:
    """The trace's JSON document as text (what `run --json` prints and the app downloads)."""
    return json.dumps(trace_to_dict(trace), indent=indent, ensure_ascii=False)


def trace_from_dict(doc: Any) -> Trace:
    """A trace from its parsed JSON document, every field checked where it enters."""
    _check_header(doc)
    try:
        rounds = _rounds_from(doc)
        settings = RunSettings.from_dict(doc["settings"])
        check_within(settings, rounds, own_bounds(settings), "its settings allow")
        return Trace(
            settings=settings,
            prompt=_text(doc.get("prompt"), "prompt"),
            prompt_ids=_token_ids(doc.get("prompt_ids"), "prompt_ids"),
            rounds=rounds,
            text=_text(doc.get("text"), "text"),
            totals=Totals.of(rounds, _totals_wall_s(doc)),  # recounted: older traces lack new totals
            meta=_meta(doc.get("meta", {})),
        )
    except SettingsError as exc:
        raise TraceFormatError(f"The trace's settings are invalid: {exc}") from exc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _damaged(_describe(exc)) from exc


def trace_from_json(text: str | bytes, max_bytes: int = MAX_TRACE_BYTES) -> Trace:
    """Parse and validate a trace document of at most max_bytes (the app passes its upload cap)."""
    _check_size(text, max_bytes)
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"This file is not JSON ({exc}); a specviz trace is a .json file.") from exc
    except RecursionError:
        raise TraceFormatError(
            "This JSON is nested too deeply to be a specviz trace (a trace nests a few levels only)."
        ) from None
    return trace_from_dict(doc)


def _check_header(doc: Any) -> None:
    if not isinstance(doc, dict) or doc.get("format") != TRACE_FORMAT:
        raise TraceFormatError(
            f'This JSON is not a specviz trace (expected "format": "{TRACE_FORMAT}" at the top level).'
        )
    if doc.get("version") not in READABLE_VERSIONS:
        raise TraceFormatError(
            f"This trace is format version {doc.get('version')!r}; this specviz reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}. "
            "Re-run it with this version of specviz to get a readable trace."
        )


# Loading: every field of an untrusted document is checked where it enters, so nothing the drawing code cannot
# draw (a number as a token's text, a dangling tree parent, an unknown kind) gets past trace_from_dict.
VERDICTS = (ACCEPTED, REJECTED, UNREACHED, AFTER_STOP)
EXTRA_KINDS = (CORRECTION, BONUS, TARGET)
STOPS = ("eos", "max_new_tokens")


def _check_size(text: str | bytes, max_bytes: int) -> None:
    """Refuse a document over max_bytes before parsing it."""
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise TraceFormatError(
            f"This trace is {size / 1e3:,.0f} kB; traces are limited to {max_bytes / 1e3:,.0f} kB here. "
            "Replay a shorter run (fewer new tokens)."
        )


def _damaged(detail: str) -> TraceFormatError:
    return TraceFormatError(
        f"This trace JSON is damaged or hand-edited: {detail}. "
        "Re-export it from specviz (download button or `python -m specviz run --json`)."
    )


def _show(value: Any) -> str:
    """A short repr of a bad value for a message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _wrong(value: Any, where: str, expected: str) -> TraceFormatError:
    return _damaged(f"{where} is {_show(value)}, not {expected}")


def _int(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _wrong(value, where, "a whole number")
    return value


def _token_id(value: Any, where: str) -> int:
    if _int(value, where) < 0:
        raise _wrong(value, where, "a token id (a whole number >= 0)")
    return value


def _number(value: Any, where: str) -> float:
    """A finite number: JSON has no NaN or infinity (Python's reader takes them, and 1e999 reads as infinity), and the
    player's bundle, strict JSON for the browser, could not hold one."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise _wrong(value, where, "a finite number")
    return value


def _optional_number(value: Any, where: str) -> float | None:
    return None if value is None else _number(value, where)


PROBABILITY_SLACK = 1e-3  # a probability a little above 1: float32 sums (an overlap, a top list) round up


def _probability(value: Any, where: str) -> float:
    """A probability: a finite number from 0 to 1 (within PROBABILITY_SLACK above 1)."""
    if not 0 <= _number(value, where) <= 1 + PROBABILITY_SLACK:
        raise _wrong(value, where, "a probability (a number from 0 to 1)")
    return value


def _optional_probability(value: Any, where: str) -> float | None:
    return None if value is None else _probability(value, where)


def _duration(value: Any, where: str) -> float:
    """A measured time: a finite number of at least 0."""
    if _number(value, where) < 0:
        raise _wrong(value, where, "a time (a number of at least 0)")
    return value


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _wrong(value, where, "true or false")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _wrong(value, where, "text (a JSON string)")
    return value


def _one_of(options: tuple[str, ...]):
    """A check that the value is one of options (None too when None is among them)."""

    def check(value: Any, where: str) -> str | None:
        if value not in options or not (value is None or isinstance(value, str)):
            raise _wrong(value, where, "one of " + ", ".join(map(str, options)))
        return value

    return check


def _items(value: Any, where: str) -> list | tuple:
    if not isinstance(value, (list, tuple)):  # tuples: from_dict also reads to_dict()'s own output
        raise _wrong(value, where, "a list")
    return value


def _token_ids(value: Any, where: str) -> tuple[int, ...]:
    return tuple(_token_id(item, f"{where}[{i}]") for i, item in enumerate(_items(value, where)))


def _cache(value: Any, where: str) -> tuple[int, int]:
    if len(_items(value, where)) != 2:
        raise _wrong(value, where, "two cache lengths")
    return (_int(value[0], f"{where}[0]"), _int(value[1], f"{where}[1]"))


def _meta(value: Any) -> dict:
    if not isinstance(value, dict):
        raise _wrong(value, "meta", "an object")
    _finite_inside(value, "meta")
    return dict(value)


def _finite_inside(value: Any, where: str) -> None:
    """Free-form JSON (the meta) holds no NaN or infinity anywhere: a bundle made from it is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        raise _wrong(value, where, "a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _finite_inside(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _finite_inside(item, f"{where}[{i}]")


def _totals_wall_s(doc: dict) -> float:
    totals = doc.get("totals")
    if not isinstance(totals, dict):
        raise _wrong(totals, "totals", "an object")
    return float(_duration(totals.get("wall_s"), "totals.wall_s"))


def _build(cls: type, raw: Any, where: str, checks: dict) -> Any:
    """cls from the object raw: every field known, every required one present, each through its check."""
    if not isinstance(raw, dict):
        raise _wrong(raw, where, "an object")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(raw) - set(known), key=str)
    if unknown:
        raise _damaged(f"{where} has an unknown field {unknown[0]!r}")
    optional = {name for name, f in known.items() if f.default is not MISSING or f.default_factory is not MISSING}
    missing = [name for name in known if name not in raw and name not in optional]
    if missing:
        raise _damaged(f"missing field {missing[0]!r} in {where}")
    return cls(**{name: checks[name](value, f"{where}.{name}") for name, value in raw.items()})


def _tops(value: Any, where: str) -> tuple[TokenProb, ...]:
    return tuple(_build(TokenProb, item, f"{where}[{i}]", TOKEN_PROB) for i, item in enumerate(_items(value, where)))


TOKEN_PROB = {"token_id": _token_id, "text": _text, "prob": _probability}
POSITION = {
    "index": _int,
    "token_id": _token_id,
    "text": _text,
    **dict.fromkeys(("q", "p", "ratio", "u"), _probability),
    "accepted": _flag,
    "verdict": _one_of(VERDICTS),
    "overlap": _optional_probability,
    **dict.fromkeys(("p_top", "q_top"), _tops),
}
NODE = {
    **dict.fromkeys(("id", "parent", "depth"), _int),
    "token_id": _token_id,
    "text": _text,
    "q": _probability,
    **dict.fromkeys(("p", "ratio"), _optional_probability),
    "u": _probability,
    "verdict": _one_of(VERDICTS),
    **dict.fromkeys(("p_top", "q_top"), _tops),
}
SCORED = {
    **dict.fromkeys(("parent", "depth", "node"), _int),
    "token_id": _token_id,
    "text": _text,
    "q": _probability,
    "score": _number,  # a cumulative log-probability
    "expanded": _flag,
}
EXTRA = {
    "token_id": _token_id,
    "text": _text,
    "kind": _one_of(EXTRA_KINDS),
    **dict.fromkeys(("prob", "p", "u"), _probability),
}


def _many(cls: type, checks: dict):
    """A check for a list of cls objects."""

    def check(value: Any, where: str) -> tuple:
        return tuple(_build(cls, item, f"{where}[{i}]", checks) for i, item in enumerate(_items(value, where)))

    return check


def _optional_extra(value: Any, where: str) -> ExtraToken | None:
    return None if value is None else _build(ExtraToken, value, where, EXTRA)


def _texts(value: Any, where: str) -> tuple[str, ...]:
    return tuple(_text(item, f"{where}[{i}]") for i, item in enumerate(_items(value, where)))


def _probabilities(value: Any, where: str) -> tuple[float, ...]:
    return tuple(_probability(item, f"{where}[{i}]") for i, item in enumerate(_items(value, where)))


SCHEDULE_STEP = {
    **dict.fromkeys(("k", "next_k"), _int),
    "stop": _one_of(schedule.STOPS),
    "confidences": _probabilities,
    **dict.fromkeys(("threshold", "next_threshold"), _optional_number),
}


def _optional_schedule(value: Any, where: str) -> ScheduleStep | None:
    return None if value is None else _build(ScheduleStep, value, where, SCHEDULE_STEP)


SUFFIX_MATCH = {
    "source": _one_of(SUFFIX_SOURCES),
    "match_ids": _token_ids,
    "match_text": _texts,
    "probs": _probabilities,
    "score": _number,
}


def _optional_suffix(value: Any, where: str) -> SuffixMatch | None:
    """A suffix round's match, its texts one per matched token."""
    if value is None:
        return None
    match = _build(SuffixMatch, value, where, SUFFIX_MATCH)
    if len(match.match_text) != len(match.match_ids):
        raise _damaged(f"{where} has {len(match.match_ids)} match_ids but {len(match.match_text)} match_text entries")
    return match


def _flags(value: Any, where: str) -> tuple[bool, ...]:
    return tuple(_flag(item, f"{where}[{i}]") for i, item in enumerate(_items(value, where)))


def _top_lists(value: Any, where: str) -> tuple[tuple[TokenProb, ...], ...]:
    return tuple(_tops(item, f"{where}[{i}]") for i, item in enumerate(_items(value, where)))


CROSSING = {
    "method": _one_of(("tli", "slem")),
    **dict.fromkeys(("draft_ids", "target_ids"), _token_ids),
    **dict.fromkeys(("draft_texts", "target_texts"), _texts),
    "outside": _flags,
    "lost": _probabilities,
    "masked": _top_lists,
    **dict.fromkeys(("kept", "dropped", "fresh"), _int),
    "seam": _flag,
}


def _optional_crossing(value: Any, where: str) -> Crossing | None:
    """A round drafted across tokenizers, its texts one per token."""
    if value is None:
        return None
    crossing = _build(Crossing, value, where, CROSSING)
    if len(crossing.draft_texts) != len(crossing.draft_ids) or len(crossing.target_texts) != len(crossing.target_ids):
        raise _damaged(f"{where} has token ids and texts of different lengths")
    return crossing


ROUND = {
    "index": _int,
    "positions": _many(Position, POSITION),
    "extra": _optional_extra,
    **dict.fromkeys(("residual_top", "bonus_top"), _tops),
    **dict.fromkeys(("committed", "path"), _token_ids),
    **dict.fromkeys(("draft_ms", "verify_ms"), _duration),
    **dict.fromkeys(("target_cache", "draft_cache"), _cache),
    "stop": _one_of((None, *STOPS)),
    "nodes": _many(Node, NODE),
    "schedule": _optional_schedule,
    "scored": _many(Scored, SCORED),
    "suffix": _optional_suffix,
    "crossing": _optional_crossing,
}


def _rounds_from(doc: dict) -> tuple[Round, ...]:
    """The document's rounds, each checked on its own and against the others (numbered 0, 1, 2, ...)."""
    raw = _items(doc.get("rounds"), "rounds")
    if not raw:
        raise _damaged("it has no rounds (every run has at least one), so there is nothing to replay")
    rounds = tuple(_round_from_dict(r, f"rounds[{i}]") for i, r in enumerate(raw))
    for i, r in enumerate(rounds):
        if r.index != i:
            raise _wrong(r.index, f"rounds[{i}].index", f"{i} (rounds are numbered in order)")
    return rounds


def _round_from_dict(r: Any, where: str = "rounds[0]") -> Round:
    """One round, with its positions numbered in order, its committed tokens those it accepted (and its extra), and
    its tree (if any) well formed."""
    rnd = _build(Round, r, where, ROUND)
    for i, pos in enumerate(rnd.positions):
        if pos.index != i:
            raise _wrong(pos.index, f"{where}.positions[{i}].index", f"{i} (positions are numbered in order)")
    made = tuple(pos.token_id for pos in rnd.positions if pos.accepted) + ((rnd.extra.token_id,) if rnd.extra else ())
    if rnd.committed != made:
        raise _damaged(
            f"{where}.committed is {_show(list(rnd.committed))}, but its accepted drafts and extra token are "
            f"{_show(list(made))}"
        )
    _check_tree(rnd, where)
    return rnd


def _check_tree(rnd: Round, where: str) -> None:
    """Tree rounds: node i has id i, its parent comes before it (-1 = the root) one level up, and the path walks
    down from the root through existing nodes."""
    for i, node in enumerate(rnd.nodes):
        at = f"{where}.nodes[{i}]"
        if node.id != i:
            raise _wrong(node.id, f"{at}.id", f"{i} (nodes are numbered in order)")
        if not -1 <= node.parent < i:
            raise _wrong(node.parent, f"{at}.parent", f"-1 (the root) or the id of an earlier node (0 to {i - 1})")
        depth = 1 if node.parent == -1 else rnd.nodes[node.parent].depth + 1
        if node.depth != depth:
            raise _wrong(node.depth, f"{at}.depth", f"{depth} (one below its parent)")
    parent = -1
    for j, node_id in enumerate(rnd.path):
        if node_id >= len(rnd.nodes) or rnd.nodes[node_id].parent != parent:
            raise _wrong(node_id, f"{where}.path[{j}]", f"a child of {parent} among the round's {len(rnd.nodes)} nodes")
        parent = node_id
    for i, cand in enumerate(rnd.scored):
        if not -1 <= cand.parent < i:
            raise _wrong(
                cand.parent, f"{where}.scored[{i}].parent", f"-1 (the root) or an earlier candidate (0 to {i - 1})"
            )
        if not -1 <= cand.node < len(rnd.nodes):
            raise _wrong(
                cand.node, f"{where}.scored[{i}].node", f"-1 (pruned) or a node id (0 to {len(rnd.nodes) - 1})"
            )


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc}"
    return str(exc)


# Bounds: what one trace may hold, so that replaying it (the player bundle builds every step of it) costs what a run
# with its settings would, never more. A document under the size cap can still hold one round of a thousand drafts;
# each bound below is one a real run never passes.
@dataclass(frozen=True)
class Bounds:
    """The most one trace may hold: drafts (positions) in one round, nodes in one tree round, children of one tree
    node, candidates one dynamic-tree round scores, new tokens committed (and so rounds: each commits at least one)."""

    positions: int
    nodes: int
    children: int
    scored: int
    new_tokens: int


def own_bounds(settings: RunSettings) -> Bounds:
    """What a run with these settings can record: a chain round drafts at most its K (the heuristic schedule's
    ceiling, MAX_K; none for plain decoding); a tree round's positions are a path down the tree and at most its
    depth, its nodes at most the tree's (a dynamic tree's budget), each node's children at most its top-k or the
    shape's width at that depth; the run commits at most max_new_tokens."""
    tree = settings.is_tree
    dynamic = settings.dynamic
    return Bounds(
        positions=settings.draft_length if tree else settings.draft_slots,
        nodes=settings.draft_slots if tree else 0,
        children=(dynamic.topk if dynamic else max(settings.tree, default=0)) if tree else 0,
        scored=dynamic.candidates if tree and dynamic else 0,
        new_tokens=settings.max_new_tokens,
    )


def check_within(settings: RunSettings, rounds: tuple[Round, ...], most: Bounds, allowed: str) -> None:
    """Refuse rounds that hold more than `most` allows, naming what the trace holds and what is allowed; `allowed`
    says whose bound it is ("its settings allow", "this deployment replays")."""
    what = f"{settings.method}, K = {settings.k}" + (f", tree {settings.tree_label}" if settings.is_tree else "")
    committed = sum(len(r.committed) for r in rounds)
    if len(rounds) > most.new_tokens or committed > most.new_tokens:
        raise TraceFormatError(
            f"This trace has {len(rounds)} rounds committing {committed} tokens; {allowed} at most {most.new_tokens} "
            f"new tokens ({what}; every round commits at least one). Replay a shorter run."
        )
    for i, r in enumerate(rounds):
        if len(r.positions) > most.positions:
            limit = "no drafts (plain decoding)" if not most.positions else f"at most {most.positions} drafts a round"
            raise TraceFormatError(
                f"Round {i + 1} of this trace has {len(r.positions)} drafted positions; {allowed} {limit} "
                f"({what}; K is at most {MAX_K} anywhere). Replay a run with a smaller K."
            )
        if len(r.nodes) > most.nodes:
            limit = f"at most {most.nodes} tree nodes a round" if most.nodes else "no tree nodes (a chain run)"
            raise TraceFormatError(
                f"Round {i + 1} of this trace has {len(r.nodes)} tree nodes; {allowed} {limit} ({what}). "
                "Replay a run with a smaller tree."
            )
        _check_tree_bounds(r, i, most, allowed, settings, what)


def _check_tree_bounds(r: Round, i: int, most: Bounds, allowed: str, settings: RunSettings, what: str) -> None:
    """A tree round's nodes: no deeper than the tree, no more children under one node than it draws, and no more
    candidates scored than a dynamic tree scores."""
    width = settings.tree if settings.is_tree and not settings.dynamic else ()
    children: dict[int, int] = {}
    for node in r.nodes:
        if node.depth > most.positions:
            raise TraceFormatError(
                f"Round {i + 1} of this trace has a tree node at depth {node.depth}; {allowed} trees at most "
                f"{most.positions} levels deep ({what}). Replay a run with a smaller tree."
            )
        children[node.parent] = children.get(node.parent, 0) + 1
        wide = min(width[node.depth - 1], most.children) if width else most.children
        if children[node.parent] > wide:
            under = "the root" if node.parent < 0 else f"node {node.parent + 1}"
            raise TraceFormatError(
                f"Round {i + 1} of this trace has more than {wide} children under {under}; {allowed} at most {wide} "
                f"there ({what}). Replay a run with a smaller tree."
            )
    if len(r.scored) > most.scored:
        raise TraceFormatError(
            f"Round {i + 1} of this trace scored {len(r.scored)} dynamic-tree candidates; {allowed} at most "
            f"{most.scored} ({what}). Replay a run with a smaller tree."
        )
