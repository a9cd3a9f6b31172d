"""The four-event shop model (view, click, cart, buy): a first-order Markov chain with a start row, its editable
tables and its per-row acceptance rate."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from specviz.core.toy import MarkovModel

EVENTS = ("view", "click", "cart", "buy")
START = "START"
ROWS = (START,) + EVENTS  # the row labels of an editable transition table

# The seed's synthetic shopping-event transition probabilities (rows: previous event, START first).
SHOP_TARGET = (
    (0.60, 0.25, 0.10, 0.05),
    (0.30, 0.55, 0.12, 0.03),
    (0.20, 0.25, 0.45, 0.10),
    (0.10, 0.10, 0.25, 0.55),
    (0.70, 0.20, 0.08, 0.02),
)
SHOP_DRAFT = (
    (0.58, 0.27, 0.10, 0.05),
    (0.33, 0.51, 0.13, 0.03),
    (0.22, 0.23, 0.43, 0.12),
    (0.12, 0.10, 0.23, 0.55),
    (0.66, 0.23, 0.09, 0.02),
)
# A deliberately poor draft for the same target (α ≈ 0.6): every bug's bias is large enough to see in 20,000 samples.
POOR_DRAFT = (
    (0.25, 0.25, 0.25, 0.25),
    (0.60, 0.20, 0.10, 0.10),
    (0.10, 0.60, 0.20, 0.10),
    (0.40, 0.10, 0.10, 0.40),
    (0.30, 0.30, 0.20, 0.20),
)


def chain_from_rows(rows: Sequence[Sequence[float]], name: str = "table", normalise: bool = True) -> MarkovModel:
    """A chain from the editor's table: rows START, view, click, cart, buy; each row normalised to sum to 1."""
    return MarkovModel.from_rows(rows, name, normalise, labels=ROWS)


def shop_models(draft: Sequence[Sequence[float]] = SHOP_DRAFT) -> tuple[MarkovModel, MarkovModel]:
    return chain_from_rows(SHOP_TARGET, "target table"), chain_from_rows(draft, "draft table")


def chain_alpha(p: MarkovModel, q: MarkovModel) -> list[float]:
    """Per-row acceptance rate Σ_x min(p, q), in the order of ROWS (START first)."""
    return torch.minimum(p.rows, q.rows).sum(-1).roll(1).tolist()  # rows has START last
