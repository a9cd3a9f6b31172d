"""Tree speculation: the draft model drafts a tree, the target scores every node in one pass, the walk accepts exactly.

Each round: 1. the drafter drafts a tree of the run's shape (one draft pass per depth, tree attention over its cache),
2. one target pass over the pending tokens + every node with a 4D mask (each node sees the prefix and its ancestors,
position = prefix length - 1 + depth), 3. verify_tree walks the tree from the root (core/verify.py, where the
exactness argument is), 4. both caches keep only the committed sequence: every tree node is cropped and the accepted
path is re-read at the start of the next pass (simple, and the pass reads it anyway; gathering the path's rows would
save that re-read). Sources: SpecInfer (arXiv 2305.09781), Sequoia (arXiv 2402.12374), EAGLE-2 (arXiv 2406.16858).

Departures from the chain loop, labelled: the walk runs on the host, node by node (a few host syncs per round, fine on
CPU); the tree is cut to depth max_new_tokens - produced - 1 near the end, as the chain cuts K.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator

import torch

from specviz.core.sampling import logits_to_probs, uniforms
from specviz.core.settings import RunSettings
from specviz.core.trace import (
    ACCEPTED,
    AFTER_STOP,
    BONUS,
    CORRECTION,
    REJECTED,
    UNREACHED,
    ExtraToken,
    Node,
    Position,
    Round,
    TokenProb,
)
from specviz.core.verify import TreeVerdict, tree_depths, tree_size, verify_tree
from specviz.engine.decode import check_fits
from specviz.engine.kv import CachedModel
from specviz.engine.models import ModelPair, synchronize
from specviz.engine.proposers import TreeProposal, TreeProposer, ancestor_matrix
from specviz.errors import SettingsError

TOP_N = 10


@torch.inference_mode()
def tree_rounds(
    pair: ModelPair,
    prompt_ids: list[int],
    settings: RunSettings,
    on_target_logits: Callable[[torch.Tensor], None] | None = None,
) -> Iterator[Round]:
    """Yield one tree Round per target pass until EOS or max_new_tokens. Same settings and seed -> same rounds."""
    if pair.draft is None:
        raise SettingsError("Tree speculation needs a draft model: load a pair with a draft.")
    check_fits(pair, prompt_ids, settings, tree_size(settings.tree))
    generator = torch.Generator().manual_seed(settings.seed)
    target = CachedModel(pair.target, pair.vocab_size, prompt_ids)
    target.prefill()
    drafter = TreeProposer.for_run(pair, settings).start(prompt_ids)
    full, produced = tree_size(settings.tree), 0
    for index in range(settings.max_new_tokens):
        # Same number of draws every round (draft | accept | next), so a cut tree does not shift the random stream.
        u = uniforms(generator, 2 * full + 1)  # (2N+1,) float64
        shape = settings.tree[: settings.max_new_tokens - produced - 1]  # never draft past the length limit
        n = tree_size(shape)

        # 1. draft the tree
        start = time.perf_counter()
        proposal = drafter.propose_tree(shape, u[:n].float().to(pair.device)) if shape else _empty(pair)
        synchronize(pair.device)
        drafted = time.perf_counter()
        draft_cache = drafter.cache_length

        # 2. one target pass over the pending tokens + every node: p at the root and after each node
        depths = _depths(proposal.parents)
        logits = target.forward_tree(proposal.tokens, depths, ancestor_matrix(proposal.parents))[-(n + 1) :]  # (N+1, V)
        if on_target_logits:
            on_target_logits(logits)
        p = logits_to_probs(logits, settings.sampling)  # (N+1, V)

        # 3. walk the tree
        u_accept, u_next = u[full : full + n], u[2 * full]
        verdict = verify_tree(proposal.parents, proposal.tokens, p, proposal.q, u_accept, u_next.float())
        verified = time.perf_counter()
        path_tokens = [int(proposal.tokens[i]) for i in verdict.path]
        committed, stop = _apply_stops(path_tokens + [verdict.next_token], pair, settings, produced)
        produced += len(committed)

        # 4. keep only the committed sequence in both caches (the path is re-read next round)
        target_cache = target.length
        if stop is None:
            target.advance(committed, 0)
            drafter.advance(committed, 0)
        yield _make_round(
            index,
            proposal,
            verdict,
            p,
            committed,
            stop,
            u_accept.tolist(),
            float(u_next),
            pair,
            draft_ms=(drafted - start) * 1e3,
            verify_ms=(verified - drafted) * 1e3,
            target_cache=(target_cache, target.length),
            draft_cache=(draft_cache, drafter.cache_length),
        )
        if stop:
            return


def _empty(pair: ModelPair) -> TreeProposal:
    return TreeProposal(
        torch.empty(0, dtype=torch.long, device=pair.device), (), torch.empty(0, pair.vocab_size, device=pair.device)
    )


def _depths(parents: tuple[int, ...]) -> torch.Tensor:
    return torch.tensor(tree_depths(parents), dtype=torch.long)  # (N,)


def _apply_stops(
    candidates: list[int], pair: ModelPair, settings: RunSettings, produced: int
) -> tuple[list[int], str | None]:
    """The round's committed tokens, cut at the first EOS or at max_new_tokens (checked per token)."""
    for i, token in enumerate(candidates):
        if settings.stop_at_eos and token in pair.eos_ids:
            return candidates[: i + 1], "eos"
        if produced + i + 1 >= settings.max_new_tokens:
            return candidates[: i + 1], "max_new_tokens"
    return candidates, None


def _make_round(
    index: int,
    proposal: TreeProposal,
    verdict: TreeVerdict,
    p: torch.Tensor,
    committed: list[int],
    stop: str | None,
    u_accept: list[float],
    u_next: float,
    pair: ModelPair,
    **timing_and_caches,
) -> Round:
    texts = pair.token_texts
    tokens = proposal.tokens.tolist()
    depths = _depths(proposal.parents).tolist()
    on_path = {node: i for i, node in enumerate(verdict.path)}
    q_x = proposal.q.gather(-1, proposal.tokens[:, None]).squeeze(-1).tolist()  # (N,) known for every node
    kept = len(committed) - 1 if len(committed) > len(verdict.path) else len(committed)  # path nodes committed

    def node_verdict(i: int) -> str:
        if i in on_path:
            return ACCEPTED if on_path[i] < kept else AFTER_STOP
        return REJECTED if i in verdict.tried else UNREACHED

    tops = lambda dist: tuple(  # noqa: E731
        TokenProb(int(t), texts[int(t)], float(v)) for v, t in zip(*dist.topk(min(TOP_N, dist.shape[-1]))) if v > 0
    )
    nodes = tuple(
        Node(
            id=i,
            parent=proposal.parents[i],
            depth=depths[i],
            token_id=tokens[i],
            text=texts[tokens[i]],
            q=q_x[i],
            p=None if math.isnan(verdict.target_x[i]) else verdict.target_x[i],
            ratio=None if math.isnan(verdict.accept_prob[i]) else verdict.accept_prob[i],
            u=u_accept[i],
            verdict=node_verdict(i),
            p_top=tops(verdict.against[i]) if verdict.against[i] is not None else (),
            q_top=tops(proposal.q[i]),
        )
        for i in range(len(tokens))
    )
    positions = tuple(
        Position(
            index=depth,
            token_id=tokens[node],
            text=texts[tokens[node]],
            q=verdict.q_x[node],
            p=verdict.target_x[node],
            ratio=verdict.accept_prob[node],
            u=u_accept[node],
            accepted=depth < kept,
            verdict=ACCEPTED if depth < kept else AFTER_STOP,
            p_top=tops(p[proposal.parents[node] + 1]),
            q_top=tops(proposal.q[node]),
        )
        for depth, node in enumerate(verdict.path)
    )
    if not verdict.at_leaf and verdict.tried:  # the last child tried, rejected: as a chain round shows its rejection
        last = verdict.tried[-1]
        i = len(verdict.path)
        positions += (
            Position(
                index=i,
                token_id=tokens[last],
                text=texts[tokens[last]],
                q=verdict.q_x[last],
                p=verdict.target_x[last],
                ratio=verdict.accept_prob[last],
                u=u_accept[last],
                accepted=False,
                verdict=REJECTED if len(committed) > i else AFTER_STOP,
                p_top=tops(p[proposal.parents[last] + 1]),
                q_top=tops(proposal.q[last]),
            ),
        )
    extra = None
    if len(committed) > len(verdict.path):
        kind = BONUS if verdict.at_leaf else CORRECTION
        last = verdict.path[-1] + 1 if verdict.path else 0
        next_prob = float(verdict.next_dist[verdict.next_token])
        extra = ExtraToken(verdict.next_token, texts[verdict.next_token], kind, next_prob,
                           float(p[last, verdict.next_token]), u_next)  # fmt: skip
    return Round(
        index=index,
        positions=positions,
        extra=extra,
        residual_top=tops(verdict.next_dist) if not verdict.at_leaf else (),
        bonus_top=tops(verdict.next_dist) if verdict.at_leaf else (),
        committed=tuple(committed),
        stop=stop,
        nodes=nodes,
        path=verdict.path,
        **timing_and_caches,
    )
