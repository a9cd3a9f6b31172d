"""What every proposer and drafter is: the proposal, the drafter's base and the proposer's (each with its optional
capabilities as defaults, so the loop asks and never probes), the context a proposer is built from, and the empty
proposals."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

import torch

from specviz.core.dyntree import GrownTree
from specviz.core.sampling import SamplingSettings, draw
from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixMemory
from specviz.core.trace import Crossing, SuffixMatch
from specviz.core.verify import VERIFIERS

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair


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


class Drafter:
    """One run's proposer state. Subclasses implement propose and advance; the optional capabilities below have
    defaults that mean "not this drafter", so the loop calls them on every drafter and never probes for them."""

    def propose(self, depth: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        """Propose at most `depth` tokens deep after the committed sequence (0: an empty proposal); u holds one
        uniform per draft slot of the round (RunSettings.draft_slots), for sampling them. stop_below (only for a
        method that takes adaptive K schedules, methods.Method.adaptive): stop after the first draft whose own
        probability is below it, and report each draft's in Proposal.confidence."""
        raise NotImplementedError

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        """Learn what the round committed (its first n_accepted tokens are accepted drafts) and roll back.
        features (layers, rows, H): the target's hidden states for the rows it committed, if hidden_layers asked."""
        raise NotImplementedError

    @property
    def cache_length(self) -> int:
        """Tokens held in the drafter's KV cache (0 when it has none)."""
        return 0

    def match(self, texts: Sequence[str]) -> SuffixMatch | None:
        """Where the last proposal was found, for the round's trace (suffix decoding); None for other drafters."""
        return None

    def score(self, proposal: Proposal) -> torch.Tensor | None:
        """The verify pass's logits (n + 1, V) when the drafter computes them itself (early exit reuses its own
        work); None: the loop runs the target over the proposal."""
        return None

    def finish(self, committed: list[int]) -> None:
        """The run's last round committed these tokens (a drafter that remembers runs learns them)."""

    def crossing(self) -> Crossing | None:
        """The last round's translation between the draft's tokenizer and the target's (TLI, SLEM); None otherwise."""
        return None


@dataclass(frozen=True)
class RunContext:
    """What a proposer is built from for one run: the loaded pair, the run's settings, and what the caller keeps
    between runs (suffix decoding's SuffixMemory; None: a fresh one). Every proposer's `for_run` takes this one."""

    pair: ModelPair
    settings: RunSettings
    memory: SuffixMemory | None = None


class Proposer:
    """Shared, read-only; `method` is the registry name (specviz.methods) it implements. What a method is, its class
    says: the capabilities below (defaults: a chain drafter that takes neither trees nor K schedules), its cost
    probe and its note; the loop, the cost measurement and the contract test read them, never probe for them.

    A proposer that reads the target's features names the layers in `hidden_layers` (indices into transformers'
    `hidden_states`: 0 = the embeddings, L = the last layer's output, after the final norm; a field instead of a
    class attribute where the head's config names them, as EAGLE-3's does); the loop then hands its drafter the target's
    hidden states for the committed tokens the target's cache holds, in order: the prompt's at `start`, then each
    round's at `advance`. This is transformers' `CandidateGenerator.requires_model_outputs`, made explicit.
    """

    method: ClassVar[str] = ""  # the registry name it implements ("" for this base: no method)
    hidden_layers: tuple[int, ...] = ()  # the target's layers its drafter reads (most read none)
    shares_target: ClassVar[bool] = False  # drafts with the target itself (early exit): `start` takes target=, the
    #                                        run's own target CachedModel, and the target runs Hugging Face's forward
    chains: ClassVar[bool] = True  # drafts a chain of up to K tokens (the draft tree drafts only trees)
    trees: ClassVar[bool] = False  # drafts a tree of a static shape when given one (RunSettings.tree)
    dynamic_trees: ClassVar[bool] = False  # grows a dynamic (EAGLE-2) tree when given one (RunSettings.dynamic)
    adaptive: ClassVar[bool] = False  # its drafter honours `stop_below` and reports confidences: the K schedules apply
    verifiers: ClassVar[tuple[str, ...]] = VERIFIERS  # how its chains may be judged (core/verify.py)

    @classmethod
    def for_run(cls, context: RunContext) -> Proposer:
        """The proposer for a run with these settings on this pair."""
        raise NotImplementedError

    @classmethod
    def cost_probe(cls, pair: ModelPair, ids: list[int], settings: RunSettings) -> CostProbe | None:
        """Its draft step over the prompt, held ready to be timed (engine/costs.py, proposers/probes.py); None where
        no model of its own drafts (a lookup; the draft model, which is timed anyway)."""
        return None

    @classmethod
    def cap_note(cls, pair: ModelPair, settings: RunSettings) -> str | None:
        """Why a run drafts fewer than K tokens a round whatever the text (Medusa: one per head); None when it does
        not."""
        return None

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> Drafter:
        """A fresh drafter for one run over this prompt; features (layers, rows, H) of the prompt's tokens that the
        target's prefill read, when the drafter asks for them."""
        raise NotImplementedError


class CostProbe(Protocol):
    """One draft step held ready to be timed again and again (proposers/probes.py): `forward()` runs it (one pass
    that drafts `drafts` tokens), `restore()` puts the state back; target_forward: the forward of the target step its
    c is against (None: the run's own)."""

    drafts: int
    target_forward: str | None

    def forward(self) -> object: ...

    def restore(self) -> None: ...


def draft_chain(
    logits: torch.Tensor,
    k: int,
    u: torch.Tensor,
    sampling: SamplingSettings,
    step: Callable[[torch.Tensor], torch.Tensor],
    stop_below: float | None = None,
) -> Proposal:
    """A chain of up to k drafts, each drawn from its processed logits (V,) with its own uniform u[i], so q is exactly
    what it was drawn from; step(x) reads the drafted x and gives the next logits. With stop_below (the confidence K
    schedule, core/schedule.py), stop after the first draft whose own probability is below it."""
    tokens, dists, confidence = [], [], []
    for i in range(k):
        x_i, q_i = draw(logits, sampling, u[i])  # q_i (V,): exactly what x_i is drawn from
        tokens.append(x_i)
        dists.append(q_i)
        if stop_below is not None:
            confidence.append(draft_confidence(logits, q_i, x_i, sampling))
            if confidence[-1] < stop_below:
                break
        if i < k - 1:
            logits = step(x_i)
    return Proposal(torch.stack(tokens), torch.stack(dists), confidence=tuple(confidence))  # (n,), (n, V)


def draft_confidence(logits: torch.Tensor, q: torch.Tensor, x: torch.Tensor, sampling: SamplingSettings) -> float:
    """The draft's own probability of the token x it drafted, what the confidence schedule stops on (as
    transformers' ConfidenceCriteria reads it): the softmax of the raw logits (V,) when greedy, where q is one-hot,
    so this is the draft's top probability; q(x) when sampling. One host read per draft token."""
    probs = logits.float().softmax(-1) if sampling.greedy else q
    return float(probs[x])


def tree_shape(settings: RunSettings) -> tuple[int, ...]:
    """The tree a chain method that also drafts trees (methods.BRANCHING) drafts in this run; () for a chain."""
    return settings.tree if settings.is_tree else ()


def empty_chain(device: torch.device) -> Proposal:
    return Proposal(torch.empty(0, dtype=torch.long, device=device), None)


def empty_tree(device: torch.device, vocab_size: int) -> Proposal:
    """A tree of no nodes: the round is one target pass that draws its next token from p at the root."""
    return Proposal(torch.empty(0, dtype=torch.long, device=device), torch.empty(0, vocab_size, device=device), ())
