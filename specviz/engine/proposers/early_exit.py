"""Self-speculation by early exit: the target's own first E layers draft, over its own cache."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch

from specviz import methods
from specviz.core.lab.exits import EXIT_EXACT, ExitVariant
from specviz.core.sampling import SamplingSettings, logits_to_probs, sample
from specviz.core.settings import FORWARD_HF, RunSettings
from specviz.engine.early_exit import SplitTarget, check_exit_layer
from specviz.engine.forward.kv import CachedModel
from specviz.engine.proposers.base import Drafter, Proposal, Proposer, RunContext, draft_confidence, empty_chain

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair


@dataclass(frozen=True)
class EarlyExitProposer(Proposer):
    """Self-speculation by early exit (engine/early_exit.py): the target's own first E layers, its final norm and LM
    head draft a chain; q = that exit's processed distribution (one-hot of its argmax when greedy), so the usual
    min(1, p/q) test keeps the output exact. It shares the target's per-run cache (`shares_target`: the loop hands
    `start` the target's own CachedModel): the draft reads the target's keys and values of layers < E for every
    committed token, and the verify pass (`EarlyExitDrafter.score`) skips layers < E for the tokens the draft ran."""

    method: ClassVar[str] = methods.EARLY_EXIT
    shares_target: ClassVar[bool] = True  # reads no hidden states: it reads the target's cache itself
    adaptive: ClassVar[bool] = True
    exit_layer: int
    sampling: SamplingSettings
    variant: ExitVariant = EXIT_EXACT  # runs exit through the final norm; the exactness lab switches it

    @classmethod
    def for_run(cls, context: RunContext) -> EarlyExitProposer:
        pair, settings = context.pair, context.settings
        check_exit_layer(pair.target, settings.exit_layer)
        return cls(settings.exit_layer, settings.sampling)

    @classmethod
    def cost_probe(cls, pair: ModelPair, ids: list[int], settings: RunSettings) -> ExitStepProbe:
        """One early-exit draft step at settings.exit_layer over the prompt, to be timed (engine/costs.py)."""
        return ExitStepProbe(pair, ids, settings.exit_layer)

    def start(
        self, prompt_ids: list[int], features: torch.Tensor | None = None, target: CachedModel | None = None
    ) -> EarlyExitDrafter:
        """A drafter over the run's target cache (prefilled with the prompt, its last token pending)."""
        if target is None:
            raise ValueError("early exit drafts from the target's own cache: pass the run's target CachedModel")
        return EarlyExitDrafter(SplitTarget(target, self.exit_layer), self.sampling, self.variant)


class EarlyExitDrafter(Drafter):
    """One run's early-exit state: nothing of its own between rounds but the target's cache. During a round, the
    layer-E states of the pending token and of the drafts x_1..x_{n-1} (what the draft ran through layers < E, whose
    keys and values it left in the target's cache), kept for the verify pass."""

    def __init__(self, split: SplitTarget, sampling: SamplingSettings, variant: ExitVariant = EXIT_EXACT):
        self.split = split
        self.sampling = sampling
        self.variant = variant
        self.states: torch.Tensor | None = None  # (pending + n - 1, H) layer-E states; None outside a round

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        """Draft k tokens through the first E layers; with stop_below (the confidence K schedule), stop after the
        first whose own draft probability is below it (core/schedule.py)."""
        state = self.split.state
        if k < 1 or not state.pending:
            return empty_chain(state.device)
        pending = torch.tensor(state.pending, dtype=torch.long, device=state.device)  # (P,)
        rows = [self.split.lower(pending)]  # [(P, H)] at layer E, after the target's committed cache
        norm = self.variant.norm_drafts
        logits = self.split.logits(rows[0][-1:], norm)[0]  # (V,) the exit's next-token logits
        tokens, dists, confidence = [], [], []
        for i in range(k):
            q_i = logits_to_probs(logits, self.sampling)  # (V,) exactly what x_i is drawn from
            x_i = sample(q_i, u[i])
            tokens.append(x_i)
            dists.append(q_i if self.variant.norm_q == norm else self._told_q(rows[-1][-1:]))
            if stop_below is not None:
                confidence.append(draft_confidence(logits, q_i, x_i, self.sampling))
                if confidence[-1] < stop_below:
                    break
            if i < k - 1:
                rows.append(self.split.lower(x_i.view(1)))  # (1, H)
                logits = self.split.logits(rows[-1], norm)[0]
        self.states = torch.cat(rows)  # (P + n - 1, H)
        return Proposal(torch.stack(tokens), torch.stack(dists), confidence=tuple(confidence))  # (n,), (n, V)

    def _told_q(self, hidden: torch.Tensor) -> torch.Tensor:
        """(V,) the q the verifier is told when the lab's variant reports another exit than the drafts came from."""
        return logits_to_probs(self.split.logits(hidden, self.variant.norm_q)[0], self.sampling)

    def score(self, proposal: Proposal) -> torch.Tensor:
        """The verify pass, reusing the draft's work: layers < E over the last draft only, then layers >= E over the
        pending token and every draft from their layer-E states; logits (n + 1, V) at the root and after each draft.
        The target's cache then holds pending + n tokens in every layer, as after a plain verify pass."""
        state, n = self.split.state, proposal.tokens.numel()
        if n == 0 or self.states is None:
            return state.forward(logits_to_keep=1)  # (1, V) nothing drafted: a plain target step
        last = self.split.lower(proposal.tokens[-1:])  # (1, H) the one draft the draft never ran
        hidden = self.split.upper(torch.cat([self.states, last]))  # (P + n, H) pre-norm, after layer L-1
        self.states = None
        state.pending, state.fed_extra = [], n  # the drafts are unconfirmed extra tokens, as after state.forward
        return self.split.logits(hidden[-(n + 1) :])  # (n + 1, V)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        """Nothing of its own to roll back: the loop's target.advance crops both halves of the shared cache."""
        self.states = None

    @property
    def cache_length(self) -> int:
        """Tokens in the cache of layers < E: the committed ones, plus the drafts' while a round is judged."""
        return self.split.lower_length()


class ExitStepProbe:
    """An early-exit draft over the target's own cache of the prompt, as its drafter holds it: one timed step runs
    one drafted token through layers 0..E-1 (on the cache those layers share with the target) and draws the exit's
    logits; restore crops that token from those layers. Early exit runs Hugging Face's forward (it reads its cache
    objects), so its c is against a target step on that forward."""

    drafts = 1
    target_forward: str | None = FORWARD_HF

    def __init__(self, pair: ModelPair, ids: list[int], exit_layer: int):
        check_exit_layer(pair.target, exit_layer)
        state = CachedModel(pair.target, pair.vocab_size, ids + ids[-1:])
        state.prefill()  # the prompt in every layer, its last token pending
        self.split = SplitTarget(state, exit_layer)
        self.token = torch.tensor(ids[-1:], device=pair.device)  # (1,)

    def forward(self) -> torch.Tensor:
        return self.split.logits(self.split.lower(self.token))  # (1, V)

    def restore(self) -> None:
        cache = self.split.state.cache  # the HF forward's per-layer cache (the split runs the target's own layers)
        for layer in cache.layers[: self.split.exit_layer]:  # type: ignore[attr-defined]
            layer.crop(-1)
