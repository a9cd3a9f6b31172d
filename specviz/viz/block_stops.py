"""A round verified as a block (core/verify.py, verify_block), read back from its trace for the round page: each
draft's weight w_i, the stop test after it (u_i against h_i), which drafts the block kept, and what token-by-token
verification would have kept with the same draws. Pure: the trace's positions hold p and q of each draft, h_i (as
the position's ratio) and u_i."""

from __future__ import annotations

from dataclasses import dataclass

from specviz.core.trace import Round


@dataclass(frozen=True)
class BlockStop:
    """May the block end after `after` drafts? Its weight w there, its stop probability h, the draw u, and whether
    that draft is in the prefix the block kept."""

    after: int  # drafts up to and including this one (1-based)
    weight: float  # w_i = min(1, w_(i-1) · p_i / q_i)
    h: float  # the probability that the block may end here
    u: float
    kept: bool
    last: bool  # the block's last draft: h = w there

    @property
    def passed(self) -> bool:
        return self.u <= self.h

    @property
    def verdict(self) -> str:
        """As the charts colour and mark it: accepted (kept) or rejected."""
        return "accepted" if self.kept else "rejected"


def block_stops(r: Round) -> tuple[BlockStop, ...]:
    """Every drafted position's stop test, in order (the weights from each draft's p and q, as verify_block forms
    them)."""
    weights, w = [], 1.0
    for pos in r.positions:
        w = min(1.0, w * pos.p / pos.q) if pos.q > 0 else 1.0
        weights.append(w)
    kept = max((pos.index + 1 for pos in r.positions if pos.u <= pos.ratio), default=0)  # the longest passing stop
    last = len(r.positions)
    return tuple(
        BlockStop(pos.index + 1, w, pos.ratio, pos.u, pos.index < kept, pos.index + 1 == last)
        for pos, w in zip(r.positions, weights, strict=True)
    )


def kept_drafts(stops: tuple[BlockStop, ...]) -> int:
    """τ of the round: the longest prefix whose stop passed (0: none did)."""
    return max((s.after for s in stops if s.passed), default=0)


def kept_weight(stops: tuple[BlockStop, ...]) -> float:
    """The weight of the kept prefix (1 for none): the residual the next token is drawn from is max(0, w·p − q)."""
    kept = kept_drafts(stops)
    return stops[kept - 1].weight if kept else 1.0


def token_by_token_kept(r: Round) -> int:
    """How many drafts token-by-token verification keeps with the same draws: u_i against min(1, p_i / q_i), to the
    first that fails."""
    kept = 0
    for pos in r.positions:
        if pos.q > 0 and pos.u > min(1.0, pos.p / pos.q):
            break
        kept += 1
    return kept
