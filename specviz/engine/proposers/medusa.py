"""Medusa: K heads, each guessing one token further ahead from the same feature."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch

from specviz import methods
from specviz.core.sampling import SamplingSettings, logits_to_probs, sample
from specviz.core.settings import RunSettings
from specviz.engine.proposers.base import Drafter, Proposal, Proposer, RunContext, empty_chain, empty_tree, tree_shape
from specviz.engine.proposers.trees import grow_top_b_tree
from specviz.errors import SettingsError

if TYPE_CHECKING:
    from specviz.engine.heads.medusa import MedusaHeads
    from specviz.engine.loading.models import ModelPair


@dataclass(frozen=True)
class MedusaProposer(Proposer):
    """Medusa: K independent heads guess the next K tokens from one feature, the target's post-norm hidden state of
    the row that predicted the last committed token (engine/heads/medusa.py; as vLLM feeds its MedusaProposer). Head i
    drafts x_{n+1+i} after the committed x_0..x_n: no head sees another's draft, so one pass drafts the whole chain.

    Greedy: each head's argmax, a one-hot q (accepted with probability p(x): exact). Sampled (temperature > 0): each
    draft is drawn from its head's processed distribution q_i and judged by min(1, p/q_i), exact as any draft. Here
    specviz departs from vLLM, whose Medusa drafts every head's argmax at any temperature and judges it one-hot (its
    draft_sample_method does not reach Medusa): both are lossless; their acceptance rates differ at temperature > 0.
    K below the number of heads uses the first K (what vLLM builds for num_speculative_tokens = K); above it, the
    drafter proposes one token per head and no more, as a lookup proposes fewer than K when it finds fewer (vLLM
    would build the extra heads without weights: its K must not exceed the checkpoint's)."""

    method: ClassVar[str] = methods.MEDUSA
    hidden_layers = (-1,)  # the target's last hidden state, after its final norm: h_t
    trees: ClassVar[bool] = True  # a Cartesian tree of each head's top-b; never a dynamic one (no head sees a draft)
    heads: MedusaHeads
    vocab_size: int
    sampling: SamplingSettings
    shape: tuple[int, ...] = ()  # a tree's children per depth (MedusaDrafter.propose_tree); empty: a chain

    @classmethod
    def for_run(cls, context: RunContext) -> MedusaProposer:
        pair, settings = context.pair, context.settings
        heads, shape = pair.load_head_for(cls.method), tree_shape(settings)
        if len(shape) > heads.num_heads:
            raise SettingsError(
                f"The Medusa tree {','.join(map(str, shape))} is {len(shape)} levels deep, but the Medusa heads are "
                f"{heads.num_heads}: head i drafts depth i + 1, so a Medusa tree is at most {heads.num_heads} levels "
                "deep. Use a shorter tree shape."
            )
        return cls(heads, pair.vocab_size, settings.sampling, shape)

    @classmethod
    def cap_note(cls, pair: ModelPair, settings: RunSettings) -> str | None:
        """Why a run drafts fewer than K tokens a round whatever the text (one per head); None when it does not."""
        n = pair.load_head_for(cls.method).num_heads
        if settings.is_tree or settings.draft_length <= n:
            return None
        return (
            f"The Medusa heads are {n}, one draft each: K = {settings.draft_length} drafts {n} tokens a round (vLLM's "
            f"num_speculative_tokens must not exceed the heads either: it would build heads without weights)."
        )

    @classmethod
    def cost_probe(cls, pair: ModelPair, ids: list[int], settings: RunSettings):
        """One pass of every head over the prompt's last feature, to be timed (engine/costs.py): its time is shared
        among the drafts it makes, one per head."""
        from specviz.engine.proposers.probes import PassProbe

        return PassProbe(cls, pair, ids, settings, pair.load_head_for(cls.method).num_heads)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> MedusaDrafter:
        return MedusaDrafter(self, features)


class MedusaDrafter(Drafter):
    """One run's state: only the feature of the last committed row (the heads keep no cache)."""

    def __init__(self, proposer: MedusaProposer, features: torch.Tensor | None):
        self.proposer = proposer
        self.last: torch.Tensor | None = None  # (H,) None before any feature (a one-token prompt)
        self._read(features)

    def _read(self, features: torch.Tensor | None) -> None:
        if features is not None and features.shape[1]:
            self.last = features[0, -1]  # (H,) the row whose logits gave the last committed token

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        if self.proposer.shape:
            return self.propose_tree(k, u.device)
        if k < 1 or self.last is None:  # a one-token prompt: no feature yet, the target decodes one token
            return empty_chain(u.device)
        p = self.proposer
        k = min(k, p.heads.num_heads)  # one draft per head at most
        logits = p.heads(self.last, k)[:, : p.vocab_size]  # (k, V) head i's guess at x_{n+1+i}
        q = logits_to_probs(logits, p.sampling)  # (k, V) exactly what each draft is drawn from (one-hot when greedy)
        tokens = sample(q, u[:k])  # (k,) draft i from q_i with u_i, as a chain of separate draws would
        return Proposal(tokens, q)

    def propose_tree(self, depth: int, device: torch.device) -> Proposal:
        """Medusa's Cartesian tree cut to `depth` levels: head i's top-b_{i+1} tokens are the children of every node
        of depth i (all from the one feature: no head sees a drafted token, so every node of a depth gets the same
        children, and one pass of the heads drafts the whole tree)."""
        p = self.proposer
        shape = p.shape[:depth]
        if not shape or self.last is None:  # a one-token prompt: no feature yet, the target decodes one token
            return empty_tree(device, p.vocab_size)
        logits = p.heads(self.last, len(shape))[:, : p.vocab_size]  # (depth, V) head i's guess at depth i + 1

        def expand(depth: int, nodes: list[int], tokens: torch.Tensor, state_rows: torch.Tensor) -> torch.Tensor:
            return logits[depth].expand(len(nodes), -1)  # (m, V) every node of this depth: head `depth`'s logits

        return grow_top_b_tree(shape, logits[:1], expand, p.vocab_size)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        self._read(features)

    @property
    def cache_length(self) -> int:
        return 0
