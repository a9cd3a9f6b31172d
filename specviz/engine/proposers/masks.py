"""Rows of head states and the attention masks of tree passes, shared by every drafter that drafts trees."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    pass


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


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(m, T) bool (True = may attend) -> (1, 1, m, T) additive mask: 0 or the dtype's minimum."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return mask.masked_fill(~allowed, torch.finfo(dtype).min)[None, None]


def ancestor_matrix(parents: tuple[int, ...]) -> torch.Tensor:
    """(N, N) bool: entry (i, j) is True when node j is node i or one of its ancestors."""
    n = len(parents)
    sees = torch.eye(n, dtype=torch.bool)
    for i, parent in enumerate(parents):  # breadth-first: a parent's row is complete before its children's
        if parent >= 0:
            sees[i] |= sees[parent]
    return sees
