"""EAGLE-3: a head over three of the target's layers, with its own draft vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from specviz import methods
from specviz.core.dyntree import DynamicTree
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.proposers.base import Proposer, RunContext, tree_shape
from specviz.engine.proposers.eagle import EagleDrafter
from specviz.engine.proposers.runners import HeadRunner, HfRunner, chosen_runner

if TYPE_CHECKING:
    from specviz.engine.heads.eagle3 import Eagle3Head
    from specviz.engine.loading.models import ModelPair


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


@dataclass(frozen=True)
class Eagle3Proposer(Proposer):
    """EAGLE-3: a one-layer head drafts from the target's hidden states at three depths (engine/heads/eagle3.py), with
    its own LM head over a draft vocabulary. The first draft of a round reads fc of the target's real states of the last
    committed row; each later one the head's own pre-norm output, with no fc (as vLLM's proposer). q = the head's
    processed distribution over the target's vocabulary: its draft-vocabulary logits placed through d2t, -inf elsewhere,
    so q = 0 off the draft vocabulary (one-hot of its argmax when greedy). A token with q = 0 is never drafted, so
    min(1, p/q) and the residual keep the output exact (as for a trimmed draft vocabulary)."""

    method: ClassVar[str] = methods.EAGLE3
    trees: ClassVar[bool] = True  # EAGLE-2-style trees of its top-b tokens per node
    dynamic_trees: ClassVar[bool] = True
    adaptive: ClassVar[bool] = True
    runner: HeadRunner  # the head on the run's forward, chosen once (proposers/runners.py)
    vocab_size: int
    sampling: SamplingSettings
    hidden_layers: tuple[int, ...] = (2, 5, 7)  # the head's layers read (its config): vLLM's default for 10 layers
    shape: tuple[int, ...] = ()  # a tree's children per depth (EagleDrafter.propose_tree); empty: a chain
    dynamic: DynamicTree | None = None  # a dynamic (EAGLE-2) tree per round (EagleDrafter.propose_dynamic)

    @classmethod
    def for_run(cls, context: RunContext) -> Eagle3Proposer:
        pair, settings = context.pair, context.settings
        head = pair.load_head_for(cls.method)
        reference = HfEagle3Runner(head, pair.target.get_input_embeddings())
        shape, dynamic = tree_shape(settings), settings.dynamic if settings.is_tree else None
        runner = chosen_runner(reference, pair.target, settings.forward)
        return cls(runner, pair.vocab_size, settings.sampling, head.layers_read, shape, dynamic)

    @classmethod
    def cost_probe(cls, pair: ModelPair, ids: list[int], settings: RunSettings):
        """One head step over the prompt, to be timed (engine/costs.py): its layer and its draft-vocabulary LM head."""
        from specviz.engine.proposers.probes import HeadStepProbe

        return HeadStepProbe(cls, pair, ids, settings)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> EagleDrafter:
        return EagleDrafter(self, prompt_ids, features)

    def new_cache(self):
        """One run's head cache: a LeanCache for the lean step, the module's DynamicCache otherwise."""
        return self.runner.new_cache()

    def read(self, following: torch.Tensor, features: torch.Tensor, cache) -> tuple[torch.Tensor, torch.Tensor]:
        """features (layers, n, H) -> fc over them side by side (n, layers H); the state (normed, s) after the last
        pair, each (H,)."""
        fused = features.transpose(0, 1).reshape(features.shape[1], -1)  # (n, layers * H) in the layers' order
        h = self.runner.fuse(fused)  # (n, H)
        normed, s = self.head_pass(following, h, cache)
        return normed[-1], s[-1]

    def logits(self, state: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """(..., V) the head's draft logits at their target ids, -inf elsewhere; state (normed, s), each (..., H)."""
        return self.runner.logits(state, self.vocab_size)

    def step(self, token: torch.Tensor, state, cache) -> tuple[torch.Tensor, torch.Tensor]:
        """The head reads its own pre-norm output s back with the drafted token (no fc)."""
        normed, s = self.head_pass(token.view(1), state[1].view(1, -1), cache)
        return normed[-1], s[-1]

    def step_nodes(self, tokens: torch.Tensor, state, cache, positions, mask) -> tuple[torch.Tensor, torch.Tensor]:
        """Tree nodes of one depth in one pass: tokens (m,) with their parents' states (normed, s), each (m, H), at
        positions (1, m) under the additive mask (1, 1, m, cached + m) -> each node's (normed, s), each (m, H)."""
        return self.head_pass(tokens, state[1], cache, positions, mask)

    def head_pass(self, tokens: torch.Tensor, states: torch.Tensor, cache, positions=None, mask=None):
        """The head over pairs: tokens (n,) x_{t+1} with states (n, H) (h: fc's output, or its own s) -> (normed, s),
        each (n, H), on the lean step or through the head's own modules (the reference)."""
        return self.runner.run(tokens, states, cache, positions, mask)
