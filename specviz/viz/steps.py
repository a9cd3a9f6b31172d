"""Playback of a trace, phase by phase: which step of which round the round-by-round page is showing.

A round plays as: draft (the K proposals) -> verify (one target pass) -> judge each position left to right until the
first rejection -> resolve (residual and correction, or bonus) -> commit (both caches roll back). A tree round judges
the children it tried, in the order it tried them (node ids are breadth-first, so that is id order).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from specviz.core.trace import ACCEPTED, REJECTED, Node, Position, Round, Trace

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
    position: int | None = None  # for JUDGE: which drafted position (a tree round: which node id) is being judged


@dataclass(frozen=True)
class Cursor:
    round: int = 0
    step: int = 0


def judged_item(r: Round, position: int) -> Position | Node:
    """What a judge step judges: the drafted position, or in a tree round the node with that id."""
    return r.nodes[position] if r.is_tree else r.positions[position]


def round_steps(r: Round) -> tuple[Step, ...]:
    """The steps of one round; plain rounds (no drafts) skip drafting and judging. Made once per round (every move
    of the cursor asks for them: walking a round step by step would otherwise read it once per step)."""
    key = id(r)
    known = _STEPS.get(key)
    if known is None or known[0]() is not r:
        known = (weakref.ref(r, lambda _: _STEPS.pop(key, None)), _round_steps(r))
        _STEPS[key] = known
    return known[1]


_STEPS: dict[int, tuple[weakref.ref, tuple[Step, ...]]] = {}  # id of a live round -> (the round, its steps)


def _round_steps(r: Round) -> tuple[Step, ...]:
    if r.is_tree:
        judged = [node.id for node in r.nodes if node.ratio is not None]  # every child tried, in the order tried
    else:
        judged = [p.index for p in r.positions if p.verdict in (ACCEPTED, REJECTED)]
    steps = [Step(DRAFT)] if r.positions or r.nodes else []
    steps += [Step(VERIFY)] + [Step(JUDGE, i) for i in judged]
    if r.extra is not None:
        steps.append(Step(RESOLVE))
    return tuple(steps + [Step(COMMIT)])


def current_step(trace: Trace, cursor: Cursor) -> Step:
    return round_steps(trace.rounds[cursor.round])[cursor.step]


def step_label(r: Round, step: Step) -> str:
    """Which judgement the caption line names: ' (position i of K)', or ' (node j of N, depth d)' in a tree."""
    if step.phase != JUDGE:
        return ""
    if r.is_tree:
        node = r.nodes[step.position]
        return f" (node {node.id + 1} of {len(r.nodes)}, depth {node.depth})"
    return f" (position {step.position + 1} of {r.proposed})"


def next_step(trace: Trace, cursor: Cursor) -> Cursor:
    """One phase forward; after a round's commit, the next round's first phase; stays put at the very end."""
    if cursor.step + 1 < len(round_steps(trace.rounds[cursor.round])):
        return Cursor(cursor.round, cursor.step + 1)
    return Cursor(cursor.round + 1, 0) if cursor.round + 1 < len(trace.rounds) else cursor


def moments(trace: Trace) -> Iterator[Cursor]:
    """Every moment of the trace in playback order, from the first round's first phase to the last one's commit."""
    cursor = Cursor()
    while True:
        yield cursor
        if at_end(trace, cursor):
            return
        cursor = next_step(trace, cursor)


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


def previous_step(trace: Trace, cursor: Cursor) -> Cursor:
    """One phase back; from a round's first phase, the previous round's commit; stays put at the very start."""
    if cursor.step > 0:
        return Cursor(cursor.round, cursor.step - 1)
    if cursor.round > 0:
        return Cursor(cursor.round - 1, len(round_steps(trace.rounds[cursor.round - 1])) - 1)
    return cursor


def next_event(trace: Trace, cursor: Cursor, kind: str) -> Cursor | None:
    """The next moment after the cursor where something happens: kind "rejection" (the judge step of a rejected
    draft) or "bonus" (the resolve step of a round whose drafts all passed); None when there is none."""
    c = next_step(trace, cursor)
    while c != cursor:
        step = current_step(trace, c)
        r = trace.rounds[c.round]
        if kind == "rejection" and step.phase == JUDGE and judged_item(r, step.position).verdict == REJECTED:
            return c
        if kind == "bonus" and step.phase == RESOLVE and r.extra is not None and r.extra.kind == "bonus":
            return c
        cursor, c = c, next_step(trace, c)
    return None


def url_params(trace: Trace, cursor: Cursor) -> dict[str, str]:
    """The moment as URL parameters: round (1-based), phase name, and pos (1-based) for a judged position (a tree
    round: the judged node's id + 1)."""
    step = current_step(trace, cursor)
    params = {"round": str(cursor.round + 1), "phase": step.phase}
    if step.phase == JUDGE:
        params["pos"] = str(step.position + 1)
    return params


def query_string(params: dict[str, str]) -> str:
    """Parameters as the address bar writes them (a prompt's spaces and newlines percent-encoded)."""
    return urlencode(params, quote_via=quote)


def cursor_from_params(trace: Trace, params) -> Cursor:
    """The cursor a URL names (round=N, phase=..., pos=i), as near as this trace allows: an unknown phase or a
    round past the end falls back to the nearest moment rather than an error (a shared link still opens)."""
    try:
        n = int(params.get("round", "1")) - 1
    except ValueError:
        n = 0
    n = min(max(n, 0), len(trace.rounds) - 1)
    phase = params.get("phase", DRAFT)
    try:
        pos = int(params.get("pos", "1")) - 1
    except ValueError:
        pos = 0
    candidates = round_steps(trace.rounds[n])
    for i, step in enumerate(candidates):
        if step.phase == phase and (phase != JUDGE or step.position == pos):
            return Cursor(n, i)
    for i, step in enumerate(candidates):  # a judged position that was never judged: the round's last judgement
        if step.phase == phase:
            best = i
    return Cursor(n, best) if phase in {s.phase for s in candidates} else Cursor(n, 0)


PHASES = (DRAFT, VERIFY, JUDGE, RESOLVE, COMMIT)


def moment_note(trace: Trace, params) -> str:
    """What a link's moment asks for that this trace does not have, and the moment shown instead ("" when the trace
    has it): cursor_from_params falls back to the nearest moment, and the page says so with these words."""
    if not trace.rounds:
        return ""
    asked = []
    wanted = _number(params.get("round"))
    if "round" in params and wanted is None:
        asked.append(f"round {params['round']!r}, which is not a number")
    elif wanted is not None and not 1 <= wanted <= len(trace.rounds):
        count = len(trace.rounds)
        asked.append(f"round {wanted}, and this run has {count} round{'' if count == 1 else 's'}")
    phase = params.get("phase")
    if phase is not None and phase not in PHASES:
        asked.append(f"the phase {phase!r}, which is none of {', '.join(PHASES)}")
    shown = cursor_from_params(trace, params)
    step = round_steps(trace.rounds[shown.round])[shown.step]
    position = _number(params.get("pos"))
    if not asked and phase == JUDGE and position is not None and step.position != position - 1:
        asked.append(f"the judging of position {position} in round {shown.round + 1}, which never came")
    if not asked:
        return ""
    at = f"position {step.position + 1} of " if step.phase == JUDGE and step.position is not None else ""
    return (
        f"The link asks for {', and '.join(asked)}: showing {at}round {shown.round + 1}'s {step.phase} phase instead."
    )


def _number(text) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None
