"""A feature head's runner: the lean-or-Hugging-Face choice made once when a proposer is built, so the drafter calls
the same few methods on either forward and never branches on it.

The lean runner applies the head's lean step (engine/heads/lean_heads.py); a Hugging Face runner applies the head's own
modules, the reference (each head's proposer module names its own). tests/engine/test_lean_heads.py holds the two
together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import torch

from specviz.core.settings import FORWARD_HF, FORWARD_LEAN
from specviz.engine.heads.lean_heads import LeanHead, lean_step

if TYPE_CHECKING:
    from transformers import PreTrainedModel


class HeadRunner(Protocol):
    """What a feature-head proposer asks of its head. An output is the head's feature (n, H), or for a head that
    keeps its pre-norm state too, the pair (normed, s), each (n, H); positions (1, n) and the additive mask
    (1, 1, n, cached + n) are a tree pass's."""

    forward: ClassVar[str]  # FORWARD_LEAN or FORWARD_HF: the forward the head runs

    @property
    def dtype(self) -> torch.dtype:
        """The target embedding's dtype, which a tree pass's additive mask takes."""
        ...

    def new_cache(self) -> Any:
        """One run's head cache."""
        ...

    def fuse(self, fused: torch.Tensor) -> torch.Tensor:
        """A head that reads several of the target's layers: their states side by side (n, layers H) -> (n, H)."""
        ...

    def run(self, tokens: torch.Tensor, states: torch.Tensor, cache: Any, positions=None, mask=None) -> Any:
        """The head over pairs: tokens (n,) x_{t+1} with states (n, H) -> its output(s)."""
        ...

    def logits(self, out: Any, vocab_size: int) -> torch.Tensor:
        """(..., V) draft logits over the target's vocabulary from the head's output(s) (..., H)."""
        ...


@dataclass(frozen=True)
class LeanRunner:
    """The head's lean step (engine/heads/lean_heads.py): its one layer through the lean forward."""

    forward: ClassVar[str] = FORWARD_LEAN
    step: LeanHead

    @property
    def dtype(self) -> torch.dtype:
        return self.step.weights.embed.dtype

    def new_cache(self) -> Any:
        return self.step.new_cache()

    def fuse(self, fused: torch.Tensor) -> torch.Tensor:
        return self.step.project.times(fused)

    def run(self, tokens: torch.Tensor, states: torch.Tensor, cache: Any, positions=None, mask=None) -> Any:
        return self.step.forward(tokens, states, cache, positions, mask)

    def logits(self, out: Any, vocab_size: int) -> torch.Tensor:
        return self.step.logits(out, vocab_size)  # the head's own output norm and vocabulary placement included


@dataclass(frozen=True)
class HfRunner:
    """A head through its own modules (the reference): what every such runner shares."""

    forward: ClassVar[str] = FORWARD_HF
    head: Any  # each runner narrows it to its head's class
    embed: torch.nn.Module  # the target's embedding, shared

    @property
    def dtype(self) -> torch.dtype:
        return next(self.embed.parameters()).dtype

    def new_cache(self) -> Any:
        return self.head.new_cache()


@dataclass(frozen=True)
class HfEagleRunner(HfRunner):
    """EAGLE-1's head through its own modules: logits are the target's LM head on g."""

    head: Any  # EAGLE-1's EagleHead, or a head drafting the same way (its runner, a subclass, narrows it)
    lm_head: torch.nn.Module  # the target's LM head, shared

    def fuse(self, fused: torch.Tensor) -> torch.Tensor:
        raise TypeError("this head reads one layer's states: it fuses none")

    def run(self, tokens: torch.Tensor, states: torch.Tensor, cache: Any, positions=None, mask=None) -> Any:
        return self.head(self.embed(tokens)[None], states[None], cache, positions, mask)[0]

    def logits(self, out: Any, vocab_size: int) -> torch.Tensor:
        return self.lm_head(out)[..., :vocab_size]


Reference = TypeVar("Reference", bound=HfRunner)  # a head's own Hugging Face runner


def chosen_runner(reference: Reference, target: PreTrainedModel, choice: str) -> Reference | LeanRunner:
    """The run's runner, chosen once: the head's lean step where the run's forward is lean (lean_heads.lean_step),
    else the reference runner, the head's own modules."""
    step = lean_step(reference.head, target, choice)
    return reference if step is None else LeanRunner(step)
