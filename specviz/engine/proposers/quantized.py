"""The target's own low-bit copy drafts for it (ML-SpecQD's one level): the same layers, rounded to fewer bits and
run through weight-only kernels (engine/forward/quantized.py), a chain sampled token by token as a draft model's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch
from transformers import PreTrainedModel

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.forward.kv import CachedModel
from specviz.engine.forward.lean import lean_refusal
from specviz.engine.forward.quantized import QuantizedCopy, quantized_copy
from specviz.engine.proposers.base import Proposer, RunContext
from specviz.engine.proposers.draft_model import DraftModelDrafter
from specviz.errors import SettingsError

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair


@dataclass(frozen=True)
class QuantizedProposer(Proposer):
    """q is the low-bit copy's processed distribution; its own KV cache, the lean forward. The copy is built once per
    loaded target and options and shared read-only, like the target."""

    method: ClassVar[str] = methods.QUANTIZED
    adaptive: ClassVar[bool] = True
    target: PreTrainedModel
    copy: QuantizedCopy
    vocab_size: int
    sampling: SamplingSettings

    @classmethod
    def for_run(cls, context: RunContext) -> QuantizedProposer:
        pair, settings = context.pair, context.settings
        return cls(pair.target, copy_for(pair, settings), pair.vocab_size, settings.sampling)

    @classmethod
    def cost_probe(cls, pair: ModelPair, ids: list[int], settings: RunSettings) -> CopyStepProbe:
        """One draft step of the copy over the prompt, to be timed (engine/costs.py)."""
        return CopyStepProbe(CachedModel(pair.target, pair.vocab_size, ids, lean=copy_for(pair, settings).weights))

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> DraftModelDrafter:
        state = CachedModel(self.target, self.vocab_size, prompt_ids, lean=self.copy.weights)
        return DraftModelDrafter(state, self.sampling)


def copy_for(pair: ModelPair, settings: RunSettings) -> QuantizedCopy:
    """The pair's target at the run's bits, refused with the reason where the lean forward cannot run it."""
    why = lean_refusal(pair.target)
    if why:
        raise SettingsError(f"The quantized self-draft runs the target's copy through the lean forward, but {why}.")
    return quantized_copy(pair.target, settings.quant)


class CopyStepProbe:
    """The copy after reading the prompt (its last token pending): one timed step reads that token; restore crops it."""

    drafts = 1
    target_forward: str | None = None  # its c is against a target step on the run's own forward

    def __init__(self, state: CachedModel):
        state.prefill()
        self.state, self.length, self.pending = state, state.length, list(state.pending)

    def forward(self) -> torch.Tensor:
        return self.state.forward(logits_to_keep=1)  # (1, V)

    def restore(self) -> None:
        self.state.cache.crop(self.length)
        self.state.pending, self.state.fed_extra = list(self.pending), 0
