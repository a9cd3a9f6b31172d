"""Playback of a trace, phase by phase: which step of which round the round-by-round page is showing.

A round plays as: draft (the K proposals) -> verify (one target pass) -> judge each position left to right until the
first rejection -> resolve (residual and correction, or bonus) -> commit (both caches roll back).
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.core.trace import ACCEPTED, REJECTED, Round, Trace

DRAFT, VERIFY, JUDGE, RESOLVE, COMMIT = "draft", "verify", "judge", "resolve", "commit"
PHASE_TITLES = {
    DRAFT: "1 · Draft",
    VERIFY: "2 · Verify (one target pass)",
    JUDGE: "3 · Accept or reject",
    RESOLVE: "4 · Correction or bonus",
    COMMIT: "5 · Commit and roll back",
}


@dataclass(frozen=True)
class Step:
    phase: str
    position: int | None = None  # for JUDGE: which drafted position is being judged


@dataclass(frozen=True)
class Cursor:
    round: int = 0
    step: int = 0


def round_steps(r: Round) -> tuple[Step, ...]:
    """The steps of one round; plain rounds (no drafts) skip drafting and judging."""
    judged = [p.index for p in r.positions if p.verdict in (ACCEPTED, REJECTED)]
    steps = [Step(DRAFT)] if r.positions else []
    steps += [Step(VERIFY)] + [Step(JUDGE, i) for i in judged]
    if r.extra is not None:
        steps.append(Step(RESOLVE))
    return tuple(steps + [Step(COMMIT)])


def current_step(trace: Trace, cursor: Cursor) -> Step:
    return round_steps(trace.rounds[cursor.round])[cursor.step]


def next_step(trace: Trace, cursor: Cursor) -> Cursor:
    """One phase forward; after a round's commit, the next round's first phase; stays put at the very end."""
    if cursor.step + 1 < len(round_steps(trace.rounds[cursor.round])):
        return Cursor(cursor.round, cursor.step + 1)
    return Cursor(cursor.round + 1, 0) if cursor.round + 1 < len(trace.rounds) else cursor


def next_round(trace: Trace, cursor: Cursor) -> Cursor:
    """The first phase of the next round, or the last phase of the last round."""
    if cursor.round + 1 < len(trace.rounds):
        return Cursor(cursor.round + 1, 0)
    return last_cursor(trace)


def last_cursor(trace: Trace) -> Cursor:
    last = len(trace.rounds) - 1
    return Cursor(last, len(round_steps(trace.rounds[last])) - 1)


def at_end(trace: Trace, cursor: Cursor) -> bool:
    return cursor == last_cursor(trace)


def rounds_committed(trace: Trace, cursor: Cursor) -> int:
    """How many rounds' tokens are already in the committed text at this cursor."""
    return cursor.round + (current_step(trace, cursor).phase == COMMIT)


def steps_shown(trace: Trace, cursor: Cursor) -> tuple[Step, ...]:
    """Every step of the current round up to and including the cursor: the panels on screen."""
    return round_steps(trace.rounds[cursor.round])[: cursor.step + 1]
