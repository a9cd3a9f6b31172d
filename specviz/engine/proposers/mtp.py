"""MTP: one DeepSeek-V3-style module chained across depths, in EAGLE-1's drafter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from specviz import methods
from specviz.engine.proposers.base import RunContext, tree_shape
from specviz.engine.proposers.eagle import EagleProposer
from specviz.engine.proposers.runners import HfEagleRunner, chosen_runner

if TYPE_CHECKING:
    import torch

    from specviz.engine.heads.mtp import MtpModule


@dataclass(frozen=True)
class HfMtpRunner(HfEagleRunner):
    """The MTP module through its own modules: logits read its output norm before the target's LM head."""

    head: MtpModule

    def logits(self, out: Any, vocab_size: int) -> torch.Tensor:
        return self.lm_head(self.head.normed(out))[..., :vocab_size]


@dataclass(frozen=True)
class MtpProposer(EagleProposer):
    """One MTP module (engine/heads/mtp.py), chained across depths: EAGLE-1's drafter, caches and trees, the module in
    the head's place; its logits read the module's output norm before the target's LM head (DeepSeek's shared head)."""

    method: ClassVar[str] = methods.MTP

    @classmethod
    def for_run(cls, context: RunContext) -> MtpProposer:
        pair, settings = context.pair, context.settings
        target = pair.target
        reference = HfMtpRunner(
            pair.load_head_for(cls.method), target.get_input_embeddings(), target.get_output_embeddings()
        )
        runner = chosen_runner(reference, target, settings.forward)
        dynamic = settings.dynamic if settings.is_tree else None  # EAGLE-1's drafter grows it (it was left out)
        return cls(runner, pair.vocab_size, settings.sampling, tree_shape(settings), dynamic)
