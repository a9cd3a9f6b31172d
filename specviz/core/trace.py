"""The trace of a speculative run: every decision, as frozen dataclasses that round-trip through JSON losslessly.

The JSON document (format "specviz.trace") is what `python -m specviz run --json` prints and what the app downloads
and replays. Its shape is documented in docs/trace-format.md and is stable within a version. Version 1: chain
rounds (`rounds[].positions[]`). Version 2 adds tree rounds: `rounds[].nodes[]` (every drafted node and its verdict)
and `rounds[].path` (the accepted nodes); a tree round's `positions` are the nodes of its accepted path, then, when the
round ends in a correction, the last child rejected, so readers of version 1 see a chain-like round. Chain runs are
still written as version 1, byte for byte; both versions load.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any

from specviz.core import schedule, stats
from specviz.core.schedule import ScheduleStep
from specviz.core.settings import RunSettings
from specviz.errors import SettingsError, TraceFormatError

TRACE_FORMAT = "specviz.trace"
TOP_N = 10  # alternatives of p, q and the residual a round records per position
TRACE_VERSION = 1  # chain runs
TREE_TRACE_VERSION = 2  # runs with tree rounds
READABLE_VERSIONS = (TRACE_VERSION, TREE_TRACE_VERSION)
MAX_TRACE_BYTES = 64_000_000  # Trace.from_json's default cap (the command line); the app passes its upload cap

# Verdict of one drafted position.
ACCEPTED, REJECTED, UNREACHED, AFTER_STOP = "accepted", "rejected", "unreached", "after_stop"
# Origin of the token the target adds at the end of a round.
CORRECTION, BONUS, TARGET = "correction", "bonus", "target"
# Suffix decoding's tries (SuffixMatch.source): this request's prompt + output, or the session's earlier outputs.
SUFFIX_REQUEST, SUFFIX_GLOBAL = "request", "global"
SUFFIX_SOURCES = (SUFFIX_REQUEST, SUFFIX_GLOBAL)


@dataclass(frozen=True)
class TokenProb:
    """One entry of a top-N list: token id, its text, and its probability."""

    token_id: int
    text: str
    prob: float


@dataclass(frozen=True)
class Position:
    """One drafted token and how the target judged it."""

    index: int  # 0-based position within the round
    token_id: int
    text: str
    q: float  # q_i(x): draft probability (1.0 for a deterministic drafter)
    p: float  # p_i(x): target probability under the same sampling settings
    ratio: float  # min(1, p/q): the acceptance probability
    u: float  # the uniform draw; accepted iff u <= ratio (and every earlier position was accepted)
    accepted: bool  # committed as part of the output
    verdict: str  # accepted | rejected | unreached (after a rejection) | after_stop (after EOS / length limit)
    overlap: float | None = None  # sum_x min(p_i(x), q_i(x)): the probability of accepting here, before x is drawn
    p_top: tuple[TokenProb, ...] = ()  # top-10 of p_i
    q_top: tuple[TokenProb, ...] = ()  # top-10 of q_i


@dataclass(frozen=True)
class Node:
    """One node of a draft tree and how the target judged it (specviz.core.verify.verify_tree)."""

    id: int  # breadth-first number within the round
    parent: int  # the parent node's id; -1 for a child of the root (the committed prefix)
    depth: int  # 1 for the root's children
    token_id: int
    text: str
    q: float  # q_j(x): probability in the distribution this child was drawn from (1.0 for a top-b child)
    p: float | None  # probability under the target it was judged against: p at its parent, or the residual left by
    #                  its rejected elder siblings (None when never tried)
    ratio: float | None  # min(1, p/q): the acceptance probability (None when never tried)
    u: float  # the uniform it was (or would have been) judged with
    verdict: str  # accepted | rejected | unreached (never tried) | after_stop (accepted, cut by a stop condition)
    p_top: tuple[TokenProb, ...] = ()  # top-10 of the distribution it was judged against (empty when never tried)
    q_top: tuple[TokenProb, ...] = ()  # top-10 of the distribution it was drawn from


@dataclass(frozen=True)
class Scored:
    """One candidate a dynamic (EAGLE-2) tree round scored (core/dyntree.py): kept and verified, or pruned."""

    parent: int  # the parent candidate's index in the round's `scored`; -1 for a child of the root
    depth: int  # 1 for the root's children
    token_id: int
    text: str
    q: float  # the draft's probability of this token at its parent (softmax of its logits)
    score: float  # cumulative draft log-probability from the root down: the ranking score
    expanded: bool  # the draft read it to score its children (it was in a frontier)
    node: int  # its id among the round's nodes when kept; -1 when pruned


@dataclass(frozen=True)
class ExtraToken:
    """The token the target adds after the accepted drafts: a correction, a bonus, or (plain decoding) the next
    token."""

    token_id: int
    text: str
    kind: str  # correction | bonus | target
    prob: float  # its probability in the distribution it was drawn from (the residual for a correction)
    p: float  # p(x) at that position
    u: float  # the uniform used to draw it


@dataclass(frozen=True)
class SuffixMatch:
    """Suffix decoding's round (core/suffix_tree.py): which trie drafted, the end of the text it matched, and each
    drafted token's path probability (the counts' ratios multiplied along the walk; it stops below min_token_prob)."""

    source: str  # "request" (this prompt + output) or "global" (the session's earlier outputs)
    match_ids: tuple[int, ...]  # the matched suffix: the last match_len tokens of the text, oldest first
    match_text: tuple[str, ...]  # their texts
    probs: tuple[float, ...]  # one per drafted token, non-increasing
    score: float  # sum(probs): how the best match and trie were chosen


@dataclass(frozen=True)
class Crossing:
    """A round drafted across tokenizers (TLI, SLEM; core/crossvocab.py): the draft's own tokens and their text, the
    target's tokens for that text, what fell outside the shared tokens, and how the draft realigned after the commit."""

    method: str  # "tli" or "slem"
    draft_ids: tuple[int, ...]  # the draft's own tokens, in order
    draft_texts: tuple[str, ...]  # their texts
    target_ids: tuple[int, ...]  # the proposal in the target's ids (TLI: one per draft token; SLEM: the text
    #                              re-tokenized, cut to K)
    target_texts: tuple[str, ...]  # their texts
    outside: tuple[bool, ...]  # per draft token: its spelling is not one the target has (SLEM; TLI never drafts one)
    lost: tuple[float, ...]  # TLI, per position: the draft's processed mass outside the shared tokens (masked)
    masked: tuple[tuple[TokenProb, ...], ...]  # TLI, per position: the most likely masked draft tokens
    kept: int  # after the commit: draft tokens of the draft's context (and its drafts) still valid
    dropped: int  # after the commit: draft tokens thrown away, where its tokens and the committed text disagreed
    fresh: int  # after the commit: draft tokens it reads anew (the committed text re-tokenized from the mismatch)
    seam: bool = False  # SLEM: the draft's text merged into the last committed token, so it was tokenized alone


@dataclass(frozen=True)
class Round:
    """Draft K, one target pass, accept/reject, commit: what happened, with timings and cache lengths."""

    index: int
    positions: tuple[Position, ...]
    extra: ExtraToken | None  # None when a stop condition was met before it
    residual_top: tuple[TokenProb, ...]  # top-10 of norm(max(0, p - q)) at the rejection; empty otherwise
    committed: tuple[int, ...]  # token ids committed this round, in order
    draft_ms: float
    verify_ms: float
    target_cache: tuple[int, int]  # target KV length after the verify pass, and after rollback
    draft_cache: tuple[int, int]  # draft KV length after drafting, and after rollback (0, 0 without a draft model)
    stop: str | None = None  # "eos" or "max_new_tokens" when this round ended the run
    bonus_top: tuple[TokenProb, ...] = ()  # top-10 of p_{K+1} when no draft was rejected (the bonus / plain token)
    nodes: tuple[Node, ...] = ()  # tree rounds only: every drafted node (positions = the accepted path's nodes, then
    #                               the last child rejected when the round ends in a correction)
    path: tuple[int, ...] = ()  # tree rounds only: ids of the accepted nodes from the root down
    schedule: ScheduleStep | None = None  # adaptive-K runs only (core/schedule.py): the K this round allowed, why its
    #                                       draft stopped, and the next round's K; None for constant-K runs
    scored: tuple[Scored, ...] = ()  # dynamic-tree rounds only: every candidate scored, in scoring order (the kept
    #                                  ones are the nodes; the rest were pruned)
    suffix: SuffixMatch | None = None  # suffix decoding's rounds: where the draft came from; None for other methods
    crossing: Crossing | None = None  # rounds drafted across tokenizers (TLI, SLEM); None for other methods

    @property
    def is_tree(self) -> bool:
        return bool(self.nodes)

    def children(self, parent: int) -> tuple[Node, ...]:
        """Tree rounds: the children of node `parent` (-1 = the root) in the order they are tried."""
        return tuple(node for node in self.nodes if node.parent == parent)

    @property
    def proposed(self) -> int:
        """Drafts that count as proposed: all but those cut off by a stop condition earlier in the round (for a tree,
        every node drafted)."""
        if self.nodes:
            return len(self.nodes)
        return sum(pos.verdict != AFTER_STOP for pos in self.positions)

    @property
    def accepted(self) -> int:
        return sum(pos.accepted for pos in self.positions)

    @property
    def judged(self) -> int:
        """Drafts that met the accept test (accepted, or the one rejected); those after a rejection never do. For a
        tree: every child tried (each rejected sibling, and the accepted ones)."""
        items = self.nodes or self.positions
        return sum(item.verdict in (ACCEPTED, REJECTED) for item in items)


@dataclass(frozen=True)
class Totals:
    """Run totals: alpha (accepted / judged), acceptance_rate (accepted / proposed) and tau (committed / rounds),
    as defined in core/stats.py."""

    proposed: int
    accepted: int
    judged: int
    rounds: int
    committed: int
    alpha: float | None  # None when nothing was judged (plain decoding)
    acceptance_rate: float | None  # None when nothing was proposed
    tau: float
    wall_s: float
    tokens_per_s: float

    @classmethod
    def of(cls, rounds: tuple[Round, ...], wall_s: float) -> Totals:
        counts = stats.Tally(
            proposed=sum(r.proposed for r in rounds),
            accepted=sum(r.accepted for r in rounds),
            judged=sum(r.judged for r in rounds),
            rounds=len(rounds),
            committed=sum(len(r.committed) for r in rounds),
        )
        return cls(
            proposed=counts.proposed,
            accepted=counts.accepted,
            judged=counts.judged,
            rounds=counts.rounds,
            committed=counts.committed,
            alpha=counts.alpha,
            acceptance_rate=counts.acceptance_rate,
            tau=counts.tau or 0.0,
            wall_s=wall_s,
            tokens_per_s=stats.tokens_per_s(counts.committed, wall_s),
        )


@dataclass(frozen=True)
class Trace:
    """A whole run: prompt, settings, rounds, the generated text and the totals, plus where it ran."""

    settings: RunSettings
    prompt: str
    prompt_ids: tuple[int, ...]
    rounds: tuple[Round, ...]
    text: str
    totals: Totals
    meta: dict[str, Any] = field(default_factory=dict)  # target, draft, device, dtype, specviz version

    @property
    def output_ids(self) -> tuple[int, ...]:
        return tuple(t for r in self.rounds for t in r.committed)

    def tokens(self, n_rounds: int | None = None) -> list[tuple[int, str, str]]:
        """Output tokens (of the first n_rounds rounds) as (token_id, text, origin), origin one of accepted,
        correction, bonus or target."""
        out = []
        for r in self.rounds[:n_rounds]:
            out += [(pos.token_id, pos.text, ACCEPTED) for pos in r.positions if pos.accepted]
            if r.extra:
                out.append((r.extra.token_id, r.extra.text, r.extra.kind))
        return out

    def without_timings(self) -> Trace:
        """The same trace with every clock reading zeroed: what two runs with one seed must agree on."""
        rounds = tuple(replace(r, draft_ms=0.0, verify_ms=0.0) for r in self.rounds)
        return replace(self, rounds=rounds, totals=replace(self.totals, wall_s=0.0, tokens_per_s=0.0))

    def to_dict(self) -> dict:
        body = asdict(self)
        body["settings"] = self.settings.to_dict()
        tree = any(r.nodes for r in self.rounds)
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

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, doc: Any) -> Trace:
        _check_header(doc)
        try:
            rounds = _rounds_from(doc)
            return cls(
                settings=RunSettings.from_dict(doc["settings"]),
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

    @classmethod
    def from_json(cls, text: str | bytes, max_bytes: int = MAX_TRACE_BYTES) -> Trace:
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
        return cls.from_dict(doc)


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
# draw (a number as a token's text, a dangling tree parent, an unknown kind) gets past Trace.from_dict.
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
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _wrong(value, where, "a number")
    return value


def _optional_number(value: Any, where: str) -> float | None:
    return None if value is None else _number(value, where)


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
    return dict(value)


def _totals_wall_s(doc: dict) -> float:
    totals = doc.get("totals")
    if not isinstance(totals, dict):
        raise _wrong(totals, "totals", "an object")
    return float(_number(totals.get("wall_s"), "totals.wall_s"))


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


TOKEN_PROB = {"token_id": _token_id, "text": _text, "prob": _number}
POSITION = {
    "index": _int,
    "token_id": _token_id,
    "text": _text,
    **dict.fromkeys(("q", "p", "ratio", "u"), _number),
    "accepted": _flag,
    "verdict": _one_of(VERDICTS),
    "overlap": _optional_number,
    **dict.fromkeys(("p_top", "q_top"), _tops),
}
NODE = {
    **dict.fromkeys(("id", "parent", "depth"), _int),
    "token_id": _token_id,
    "text": _text,
    "q": _number,
    **dict.fromkeys(("p", "ratio"), _optional_number),
    "u": _number,
    "verdict": _one_of(VERDICTS),
    **dict.fromkeys(("p_top", "q_top"), _tops),
}
SCORED = {
    **dict.fromkeys(("parent", "depth", "node"), _int),
    "token_id": _token_id,
    "text": _text,
    **dict.fromkeys(("q", "score"), _number),
    "expanded": _flag,
}
EXTRA = {
    "token_id": _token_id,
    "text": _text,
    "kind": _one_of(EXTRA_KINDS),
    **dict.fromkeys(("prob", "p", "u"), _number),
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


def _numbers(value: Any, where: str) -> tuple[float, ...]:
    return tuple(_number(item, f"{where}[{i}]") for i, item in enumerate(_items(value, where)))


SCHEDULE_STEP = {
    **dict.fromkeys(("k", "next_k"), _int),
    "stop": _one_of(schedule.STOPS),
    "confidences": _numbers,
    **dict.fromkeys(("threshold", "next_threshold"), _optional_number),
}


def _optional_schedule(value: Any, where: str) -> ScheduleStep | None:
    return None if value is None else _build(ScheduleStep, value, where, SCHEDULE_STEP)


SUFFIX_MATCH = {
    "source": _one_of(SUFFIX_SOURCES),
    "match_ids": _token_ids,
    "match_text": _texts,
    "probs": _numbers,
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
    "lost": _numbers,
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
    **dict.fromkeys(("draft_ms", "verify_ms"), _number),
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
