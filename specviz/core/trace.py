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
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from specviz.core import stats
from specviz.core.settings import RunSettings
from specviz.errors import SettingsError, TraceFormatError

TRACE_FORMAT = "specviz.trace"
TOP_N = 10  # alternatives of p, q and the residual a round records per position
TRACE_VERSION = 1  # chain runs
TREE_TRACE_VERSION = 2  # runs with tree rounds
READABLE_VERSIONS = (TRACE_VERSION, TREE_TRACE_VERSION)

# Verdict of one drafted position.
ACCEPTED, REJECTED, UNREACHED, AFTER_STOP = "accepted", "rejected", "unreached", "after_stop"
# Origin of the token the target adds at the end of a round.
CORRECTION, BONUS, TARGET = "correction", "bonus", "target"


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
        return {"format": TRACE_FORMAT, "version": TREE_TRACE_VERSION if tree else TRACE_VERSION, **body}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, doc: Any) -> Trace:
        _check_header(doc)
        try:
            rounds = tuple(_round_from_dict(r) for r in doc["rounds"])
            return cls(
                settings=RunSettings.from_dict(doc["settings"]),
                prompt=doc["prompt"],
                prompt_ids=tuple(doc["prompt_ids"]),
                rounds=rounds,
                text=doc["text"],
                totals=Totals.of(rounds, float(doc["totals"]["wall_s"])),  # recounted: older traces lack new totals
                meta=dict(doc.get("meta", {})),
            )
        except SettingsError as exc:
            raise TraceFormatError(f"The trace's settings are invalid: {exc}") from exc
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise TraceFormatError(
                f"This trace JSON is damaged or hand-edited: {_describe(exc)}. "
                "Re-export it from specviz (download button or `python -m specviz run --json`)."
            ) from exc

    @classmethod
    def from_json(cls, text: str | bytes) -> Trace:
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TraceFormatError(f"This file is not JSON ({exc}); a specviz trace is a .json file.") from exc
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


def _tops(items: list) -> tuple[TokenProb, ...]:
    return tuple(TokenProb(**item) for item in items)


def _round_from_dict(r: dict) -> Round:
    positions = tuple(
        Position(**{**pos, "p_top": _tops(pos["p_top"]), "q_top": _tops(pos["q_top"])}) for pos in r["positions"]
    )
    return Round(
        **{
            **r,
            "positions": positions,
            "extra": ExtraToken(**r["extra"]) if r["extra"] is not None else None,
            "residual_top": _tops(r["residual_top"]),
            "bonus_top": _tops(r["bonus_top"]),
            "committed": tuple(r["committed"]),
            "target_cache": tuple(r["target_cache"]),
            "draft_cache": tuple(r["draft_cache"]),
            "nodes": tuple(
                Node(**{**node, "p_top": _tops(node.get("p_top", ())), "q_top": _tops(node.get("q_top", ()))})
                for node in r.get("nodes", ())
            ),
            "path": tuple(r.get("path", ())),
        }
    )


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc}"
    return str(exc)
