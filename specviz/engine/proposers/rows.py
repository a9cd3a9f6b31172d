"""Rows of head states (a tensor, or a tuple of such for EAGLE-3), shared by every feature-head drafter that drafts
trees; their masks are engine/forward/masks.py's."""

from __future__ import annotations

import torch


def cat_rows(states: list):
    """Head states with a leading row axis, (1, H) or tuples of such -> one (n, H) (or a tuple of such)."""
    if isinstance(states[0], tuple):
        return tuple(torch.cat(parts) for parts in zip(*states))
    return torch.cat(states)


def rows_of(state):
    """A head's state for one row, (H,) or a tuple of such -> the same with a leading row axis (1, H)."""
    return tuple(s[None] for s in state) if isinstance(state, tuple) else state[None]


def take_rows(state, rows: torch.Tensor):
    """Rows of a head's state, (n, H) or a tuple of such -> (len(rows), H) each."""
    return tuple(s[rows] for s in state) if isinstance(state, tuple) else state[rows]
