"""Cost probes: one drafter's draft step, held ready to be timed again and again (engine/costs.py times them).

A proposer whose draft step runs a model of its own supplies its probe (its `cost_probe` classmethod), so the cost
measurement names no drafter: each probe is built over the prompt, `forward()` is one draft step (or one pass that
drafts `drafts` tokens), and `restore()` puts its state back so the next timing starts from the same place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from specviz.core.settings import RunSettings
from specviz.engine.forward.kv import CachedModel
from specviz.engine.proposers.base import RunContext

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair


class HeadStepProbe:
    """A chained feature head (EagleDrafter's proposers) after reading the prompt's pairs, as its drafter holds it:
    one timed step reads one drafted pair (its own state back, the next token) and draws its logits; restore crops
    it."""

    drafts = 1  # one step drafts one token
    target_forward: str | None = None  # its c is against a target step on the run's own forward

    def __init__(self, proposer_cls, pair: ModelPair, ids: list[int], settings: RunSettings):
        made = proposer_cls.for_run(RunContext(pair, settings))  # the head runs the target's forward
        target = CachedModel(
            pair.target, pair.vocab_size, ids + ids[-1:], hidden_layers=made.hidden_layers, forward=settings.forward
        )
        target.prefill()  # features of every prompt token
        self.drafter = made.start(ids + ids[-1:], target.hidden)
        self.token = torch.tensor(ids[-1:], device=pair.device)  # (1,)

    def forward(self) -> torch.Tensor:
        d = self.drafter
        state = d.proposer.step(self.token, d.last, d.cache)
        d.fed_extra += 1
        return d.proposer.logits(state)

    def restore(self) -> None:
        self.drafter.cache.crop(-self.drafter.fed_extra)
        self.drafter.fed_extra = 0


class PassProbe:
    """Parallel heads that draft a whole chain in one pass over the target's feature of the prompt's last row: one
    timed pass is every head's block and LM head (the drafter's whole proposal); the heads keep no state to restore.
    Its time is shared among the `drafts` tokens the pass makes."""

    target_forward: str | None = None

    def __init__(self, proposer_cls, pair: ModelPair, ids: list[int], settings: RunSettings, drafts: int):
        layers = proposer_cls.hidden_layers
        target = CachedModel(
            pair.target, pair.vocab_size, ids + ids[-1:], hidden_layers=layers, forward=settings.forward
        )
        target.prefill()
        self.drafter = proposer_cls.for_run(RunContext(pair, settings)).start(ids + ids[-1:], target.hidden)
        self.drafts = drafts
        self.u = torch.ones(drafts, device=pair.device)  # (drafts,) uniforms: unused when greedy

    def forward(self):
        return self.drafter.propose(self.drafts, self.u)

    def restore(self) -> None:
        pass
