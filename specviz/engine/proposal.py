"""What a drafter proposes for one round (engine/proposers.py has the contract and the drafters)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.core.dyntree import GrownTree


@dataclass(frozen=True)
class Proposal:
    """What a drafter proposes for one round: a chain of up to K tokens, or a tree of nodes that name their parents."""

    tokens: torch.Tensor  # (n,) long, on the models' device
    q: torch.Tensor | None  # (n, V) what each was drawn from (given its elder siblings, in a tree); None: one-hot
    parents: tuple[int, ...] | None = None  # a tree: each node's parent, -1 = the root, breadth-first
    #                                         (core/verify.py tree_parents); None: a chain, each token after the last
    confidence: tuple[float, ...] = ()  # chains under the confidence K schedule: the draft's own probability of each
    #                                     token it drafted (core/schedule.py); empty otherwise
    grown: GrownTree | None = None  # a dynamic tree: every candidate scored, expanded, kept (core/dyntree.py)
    soft_q: torch.Tensor | None = None  # (n, V) a dynamic tree: the draft's softmax at each node's parent, for the
    #                                     trace (the judgement is one-hot: q above)

    @property
    def is_tree(self) -> bool:
        return self.parents is not None


def empty_chain(device: torch.device) -> Proposal:
    return Proposal(torch.empty(0, dtype=torch.long, device=device), None)
