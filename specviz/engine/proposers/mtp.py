"""MTP: one DeepSeek-V3-style module chained across depths, in EAGLE-1's drafter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.engine.lean_heads import lean_step
from specviz.engine.proposers.base import tree_shape
from specviz.engine.proposers.eagle import EagleProposer

if TYPE_CHECKING:
    from specviz.engine.models import ModelPair


@dataclass(frozen=True)
class MtpProposer(EagleProposer):
    """One MTP module (engine/mtp.py), chained across depths: EAGLE-1's drafter, caches and trees, the module in the
    head's place; its logits read the module's output norm before the target's LM head (DeepSeek's shared head)."""

    method: ClassVar[str] = methods.MTP

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> MtpProposer:
        target = pair.target
        embed, lm_head = target.get_input_embeddings(), target.get_output_embeddings()
        module = pair.load_head_for(cls.method)
        lean = lean_step(module, target, settings.forward)
        return cls(module, embed, lm_head, pair.vocab_size, settings.sampling, tree_shape(settings), lean=lean)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """(..., V) the target's LM head on the module's normed output(s) h (..., H)."""
        if self.lean is not None:
            return self.lean.logits(h, self.vocab_size)  # the output norm included
        return self.lm_head(self.head.normed(h))[..., : self.vocab_size]
