"""Every attention mask the engine builds, in one place: which rows may attend to which (bool, True = may attend) and
its additive form (0 or the dtype's minimum), which eager and sdpa attention both take as given.

Causal passes (a prompt, a chain's drafts) and tree passes (a node sees the cache, its ancestors and itself) are the
two shapes; the target's forward, the draft model's, the feature heads' and early exit's all draw on these."""

from __future__ import annotations

import torch


def causal_allowed(cached: int, n: int, device: torch.device) -> torch.Tensor:
    """(n, cached + n) bool: token i of n new ones sees every cached token and the new ones up to itself."""
    seen = torch.arange(cached + n, device=device)
    return seen[None] <= (cached + torch.arange(n, device=device))[:, None]


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(m, T) bool (True = may attend) -> (1, 1, m, T) additive mask: 0 or the dtype's minimum."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return mask.masked_fill(~allowed, torch.finfo(dtype).min)[None, None]


def causal_mask(cached: int, n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(1, 1, n, cached + n) additive causal mask of n new tokens after `cached` ones."""
    return additive_mask(causal_allowed(cached, n, device), dtype)


def ancestor_matrix(parents: tuple[int, ...]) -> torch.Tensor:
    """(N, N) bool: entry (i, j) is True when node j is node i or one of its ancestors."""
    n = len(parents)
    sees = torch.eye(n, dtype=torch.bool)
    for i, parent in enumerate(parents):  # breadth-first: a parent's row is complete before its children's
        if parent >= 0:
            sees[i] |= sees[parent]
    return sees


def after_cache(sees: torch.Tensor, cached: int) -> torch.Tensor:
    """Tree nodes' view of each other, sees (m, nodes), behind `cached` rows every node sees -> (m, cached + nodes)."""
    return torch.cat([sees.new_ones(sees.shape[0], cached), sees], dim=1)
