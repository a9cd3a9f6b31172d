"""A trace as pandas DataFrames: one row per round, per drafted position, per tree node (pure: a Trace in, frames out).

Kept out of core/trace.py so that the core stays free of pandas; the frames are a view of the trace, like a chart.
"""

from __future__ import annotations

from dataclasses import fields

import pandas as pd

from specviz.core.trace import Node, Position, Trace

_TOPS = ("p_top", "q_top")  # the top-alternative lists: not scalars, left out of the frames


def rounds_frame(trace: Trace) -> pd.DataFrame:
    """One row per round: proposed, accepted, committed, extra token kind, timings, cache lengths."""
    return pd.DataFrame(
        {
            "round": r.index,
            "proposed": r.proposed,
            "accepted": r.accepted,
            "committed": len(r.committed),
            "extra_kind": r.extra.kind if r.extra else None,
            "extra_text": r.extra.text if r.extra else None,
            "draft_ms": r.draft_ms,
            "verify_ms": r.verify_ms,
            "target_cache_before": r.target_cache[0],
            "target_cache_after": r.target_cache[1],
            "draft_cache_before": r.draft_cache[0],
            "draft_cache_after": r.draft_cache[1],
            "stop": r.stop,
        }
        for r in trace.rounds
    )


def positions_frame(trace: Trace) -> pd.DataFrame:
    """One row per drafted position: token, q, p, ratio, u, accepted, verdict."""
    scalar = [f.name for f in fields(Position) if f.name not in _TOPS]
    rows = [
        {"round": r.index, **{name: getattr(pos, name) for name in scalar}} for r in trace.rounds for pos in r.positions
    ]
    return pd.DataFrame(rows, columns=["round", *scalar])


def nodes_frame(trace: Trace) -> pd.DataFrame:
    """Tree runs: one row per drafted node (id, parent, depth, token, q, p, ratio, u, verdict, on_path); empty for
    chain runs."""
    names = [f.name for f in fields(Node) if f.name not in _TOPS]
    rows = [
        {"round": r.index, **{name: getattr(node, name) for name in names}, "on_path": node.id in r.path}
        for r in trace.rounds
        for node in r.nodes
    ]
    return pd.DataFrame(rows, columns=["round", *names, "on_path"])
