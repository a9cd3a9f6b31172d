"""Hand-built trace documents for the bounds an upload is checked against and the player bundle's cost: chain rounds
of any length and tree rounds of any width, every other field well formed, so only the size under test is wrong."""

from __future__ import annotations

import copy

from specviz.core.trace_json import TRACE_FORMAT, TRACE_VERSION, TREE_TRACE_VERSION

ROUND_TIMES = {"draft_ms": 1.0, "verify_ms": 2.0, "target_cache": [10, 9], "draft_cache": [10, 9], "stop": None}


def _tops(n: int, token: int = 5) -> list[dict]:
    return [{"token_id": token + i, "text": f"t{token + i}", "prob": 0.5 / (i + 1)} for i in range(n)]


def _document(settings: dict, rounds: list[dict], version: int) -> dict:
    return {
        "format": TRACE_FORMAT,
        "version": version,
        "settings": {"method": "draft", "k": 4, "max_new_tokens": 64, **settings},
        "prompt": "def f",
        "prompt_ids": [1, 2, 3],
        "rounds": rounds,
        "text": "",
        "totals": {"wall_s": 0.1},
        "meta": {},
    }


def chain_round(index: int, positions: int, accepted: int = 0, tops: int = 0) -> dict:
    """A chain round of `positions` drafts: the first `accepted` accepted, the next rejected (unless all were
    accepted: then a bonus), the rest unreached."""
    rows = []
    for i in range(positions):
        verdict = "accepted" if i < accepted else "rejected" if i == accepted else "unreached"
        rows.append(
            {
                "index": i,
                "token_id": 7,
                "text": "a",
                "q": 0.5,
                "p": 0.25,
                "ratio": 0.5,
                "u": 0.1 if verdict == "accepted" else 0.9,
                "accepted": verdict == "accepted",
                "verdict": verdict,
                "p_top": _tops(tops),
                "q_top": _tops(tops),
            }
        )
    kind = "bonus" if accepted >= positions else "correction"
    extra = {"token_id": 9, "text": "b", "kind": kind, "prob": 0.5, "p": 0.5, "u": 0.3}
    return {
        "index": index,
        "positions": rows,
        "extra": extra,
        "residual_top": _tops(tops) if kind == "correction" else [],
        "bonus_top": _tops(tops) if kind == "bonus" else [],
        "committed": [7] * min(accepted, positions) + [9],
        **copy.deepcopy(ROUND_TIMES),
    }


def chain_doc(k: int = 4, positions: int = 4, rounds: int = 1, max_new_tokens: int = 64, tops: int = 0) -> dict:
    """A chain trace (settings.k = k) of `rounds` rounds of `positions` drafts each, every first draft rejected."""
    made = [chain_round(i, positions, tops=tops) for i in range(rounds)]
    return _document({"k": k, "max_new_tokens": max_new_tokens}, made, TRACE_VERSION)


def tree_round(index: int, widths: tuple[int, ...], tops: int = 0) -> dict:
    """A tree round of children per depth `widths` (nodes numbered breadth first): at each depth every child of the
    path's last node is tried, all rejected but the last, which is accepted; the deepest level is all rejected, so
    the round ends in a correction."""
    nodes, parents, path = [], [-1], []
    for depth, width in enumerate(widths, start=1):
        level, walked = [], path[-1] if path else -1  # the node whose children this depth tries
        for parent in parents:
            for c in range(width):
                on_path = parent == walked
                accept = on_path and c == width - 1 and depth < len(widths)
                verdict = ("accepted" if accept else "rejected") if on_path else "unreached"
                nodes.append(
                    {
                        "id": len(nodes),
                        "parent": parent,
                        "depth": depth,
                        "token_id": 7,
                        "text": "a",
                        "q": 1.0,
                        "p": 0.25 if on_path else None,
                        "ratio": 0.25 if on_path else None,
                        "u": 0.1 if accept else 0.9,
                        "verdict": verdict,
                        "p_top": _tops(tops),
                        "q_top": _tops(tops),
                    }
                )
                level.append(nodes[-1]["id"])
                if accept:
                    path.append(nodes[-1]["id"])
        parents = level
    drawn = {"token_id": 7, "text": "a", "q": 1.0, "p": 0.25, "ratio": 0.25}
    positions = [{"index": i, **drawn, "u": 0.1, "accepted": True, "verdict": "accepted"} for i in range(len(path))]
    positions.append({"index": len(path), **drawn, "u": 0.9, "accepted": False, "verdict": "rejected"})
    return {
        "index": index,
        "positions": positions,
        "extra": {"token_id": 9, "text": "b", "kind": "correction", "prob": 0.5, "p": 0.5, "u": 0.3},
        "residual_top": _tops(tops),
        "bonus_top": [],
        "committed": [7] * len(path) + [9],
        "nodes": nodes,
        "path": path,
        **copy.deepcopy(ROUND_TIMES),
    }


def tree_doc(
    shape: tuple[int, ...] = (2, 2), widths: tuple[int, ...] | None = None, rounds: int = 1, **settings
) -> dict:
    """A tree trace whose settings name `shape`, its rounds drafted with children per depth `widths` (the shape
    itself unless given)."""
    made = [tree_round(i, widths or shape) for i in range(rounds)]
    return _document({"method": "tree", "k": len(shape), "tree": list(shape), **settings}, made, TREE_TRACE_VERSION)
