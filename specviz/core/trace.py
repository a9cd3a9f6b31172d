"""The trace of a speculative run: every decision, as frozen dataclasses. Their JSON document, which round-trips
losslessly, is core/trace_json.py."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from specviz.core import stats
from specviz.core.schedule import ScheduleStep
from specviz.core.settings import RunSettings

TOP_N = 10  # alternatives of p, q and the residual a round records per position


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
