"""A feature head's runner: the lean-or-Hugging-Face choice made once when a proposer is built, so the drafter calls
the same few methods on either forward and never branches on it.

The lean runner applies the head's lean step (engine/lean_heads.py); the Hugging Face runners apply the head's own
modules (engine/heads.py, eagle3.py, mtp.py), the reference. tests/engine/test_lean_heads.py holds the two together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch

from specviz.core.settings import FORWARD_HF, FORWARD_LEAN
from specviz.engine.lean_heads import LeanHead, lean_step

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from specviz.engine.eagle3 import Eagle3Head
    from specviz.engine.heads import EagleHead
    from specviz.engine.mtp import MtpModule


class HeadRunner(Protocol):
    """What a feature-head proposer asks of its head. An output is EAGLE-1's g or MTP's h' (n, H), or EAGLE-3's
    (normed, s), each (n, H); positions (1, n) and the additive mask (1, 1, n, cached + n) are a tree pass's."""

    forward: ClassVar[str]  # FORWARD_LEAN or FORWARD_HF: the forward the head runs

    @property
    def dtype(self) -> torch.dtype:
        """The target embedding's dtype, which a tree pass's additive mask takes."""
        ...

    def new_cache(self) -> Any:
        """One run's head cache."""
        ...

    def fuse(self, fused: torch.Tensor) -> torch.Tensor:
        """EAGLE-3's fc: the target's states side by side (n, layers H) -> (n, H)."""
        ...

    def run(self, tokens: torch.Tensor, states: torch.Tensor, cache: Any, positions=None, mask=None) -> Any:
        """The head over pairs: tokens (n,) x_{t+1} with states (n, H) -> its output(s)."""
        ...

    def logits(self, out: Any, vocab_size: int) -> torch.Tensor:
        """(..., V) draft logits over the target's vocabulary from the head's output(s) (..., H)."""
        ...


@dataclass(frozen=True)
class LeanRunner:
    """The head's lean step (engine/lean_heads.py): its one layer through the lean forward."""

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
        return self.step.logits(out, vocab_size)  # MTP's output norm and EAGLE-3's placement included


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

    head: EagleHead | MtpModule  # HfMtpRunner narrows it
    lm_head: torch.nn.Module  # the target's LM head, shared

    def fuse(self, fused: torch.Tensor) -> torch.Tensor:
        raise TypeError("only EAGLE-3's head fuses the target's states")

    def run(self, tokens: torch.Tensor, states: torch.Tensor, cache: Any, positions=None, mask=None) -> Any:
        return self.head(self.embed(tokens)[None], states[None], cache, positions, mask)[0]

    def logits(self, out: Any, vocab_size: int) -> torch.Tensor:
        return self.lm_head(out)[..., :vocab_size]


@dataclass(frozen=True)
class HfMtpRunner(HfEagleRunner):
    """The MTP module through its own modules: logits read its output norm before the target's LM head."""

    head: MtpModule

    def logits(self, out: Any, vocab_size: int) -> torch.Tensor:
        return self.lm_head(self.head.normed(out))[..., :vocab_size]


@dataclass(frozen=True)
class HfEagle3Runner(HfRunner):
    """EAGLE-3's head through its own modules: its own LM head over the draft vocabulary, placed at the target's ids."""

    head: Eagle3Head

    def fuse(self, fused: torch.Tensor) -> torch.Tensor:
        return self.head.fuse(fused)

    def run(self, tokens: torch.Tensor, states: torch.Tensor, cache: Any, positions=None, mask=None) -> Any:
        normed, s = self.head(self.embed(tokens)[None], states[None], cache, positions, mask)
        return normed[0], s[0]

    def logits(self, out: Any, vocab_size: int) -> torch.Tensor:
        return self.head.target_logits(out[0], self.head.config.vocab_size)[..., :vocab_size]


def chosen_runner(reference: HfEagleRunner | HfEagle3Runner, target: PreTrainedModel, choice: str) -> HeadRunner:
    """The run's runner, chosen once: the head's lean step where the run's forward is lean (lean_heads.lean_step),
    else the reference runner, the head's own modules."""
    step = lean_step(reference.head, target, choice)
    return reference if step is None else LeanRunner(step)
