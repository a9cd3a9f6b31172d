"""Tree rounds: the target scores every node of a draft tree in one pass, and the walk accepts exactly.

The loop is the chain's (engine/decode.py); a tree proposal differs in three places: 2. the target pass reads the
pending tokens + every node with a 4D mask (each node sees the prefix and its ancestors, position = prefix length - 1
+ depth), 3. verify_tree walks the tree from the root (core/verify.py, where the exactness argument is), 4. both caches
keep only the committed sequence: every tree node is cropped and the accepted path is re-read at the start of the next
pass (simple, and the pass reads it anyway; gathering the path's rows would save that re-read). Sources: SpecInfer
(arXiv 2305.09781), Sequoia (arXiv 2402.12374), EAGLE-2 (arXiv 2406.16858).

Departures from the chain, labelled: the walk runs on the host, node by node (a few host syncs per round, fine on
CPU); the tree is cut to depth max_new_tokens - produced - 1 near the end, as the chain cuts K.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from specviz.core.trace import (
    ACCEPTED,
    AFTER_STOP,
    BONUS,
    CORRECTION,
    REJECTED,
    TOP_N,
    UNREACHED,
    ExtraToken,
    Node,
    Position,
    Round,
    Scored,
    TokenProb,
)
from specviz.core.verify import TreeVerdict, tree_depths, verify_tree
from specviz.engine.loading.models import ModelPair
from specviz.engine.proposers import Proposal


@dataclass(frozen=True)
class TreeJudgement:
    """A tree round's walk: what it commits, and how to draw it as a Round."""

    proposal: Proposal
    verdict: TreeVerdict
    p: torch.Tensor  # (N+1, V) the target at the root and after each node
    u_accept: list[float]
    u_next: float

    @property
    def candidates(self) -> list[int]:
        """The accepted path's tokens, then the correction or bonus token (before the stop checks)."""
        return [int(self.proposal.tokens[i]) for i in self.verdict.path] + [self.verdict.next_token]

    @property
    def kept(self) -> int:
        """Drafts the caches keep: none (the committed path is re-read next round)."""
        return 0

    def feature_rows(self, read: int) -> torch.Tensor:
        """The rows of the pass that read committed tokens: the `read` pending ones, then the accepted path's nodes
        (node i is row read + i). A node's hidden state saw the prefix and its ancestors only, so it is the state the
        chain of its path would have had: a feature head reads it now, as EAGLE gathers the accepted path's features,
        and does not wait for the next pass, which re-reads the path (the loop skips the rows it re-reads)."""
        return torch.cat([torch.arange(read), read + torch.tensor(self.verdict.path, dtype=torch.long)])

    def round(self, index: int, committed: list[int], stop: str | None, pair: ModelPair, settings, **timing) -> Round:
        return _make_round(index, self, committed, stop, pair, **timing)


def judge_tree(proposal: Proposal, p: torch.Tensor, u: torch.Tensor, slots: int, pair: ModelPair) -> TreeJudgement:
    """Walk the tree from the root with u (2S+1,) float64: accept draws from slot S on, the next-token draw last."""
    n = proposal.tokens.numel()
    u_accept, u_next = u[slots : slots + n], u[2 * slots]
    verdict = verify_tree(proposal.parents, proposal.tokens, p, proposal.q, u_accept, u_next.float())
    return TreeJudgement(proposal, verdict, p, u_accept.tolist(), float(u_next))


def _make_round(
    index: int,
    judged: TreeJudgement,
    committed: list[int],
    stop: str | None,
    pair: ModelPair,
    **timing_and_caches,
) -> Round:
    proposal, verdict, p, u_accept, u_next = judged.proposal, judged.verdict, judged.p, judged.u_accept, judged.u_next
    texts = pair.token_texts
    tokens = proposal.tokens.tolist()
    depths = list(tree_depths(proposal.parents))
    on_path = {node: i for i, node in enumerate(verdict.path)}
    q_x = proposal.q.gather(-1, proposal.tokens[:, None]).squeeze(-1).tolist()  # (N,) known for every node
    kept = len(committed) - 1 if len(committed) > len(verdict.path) else len(committed)  # path nodes committed
    shown_q = proposal.q if proposal.soft_q is None else proposal.soft_q  # (N, V) a dynamic tree shows the draft's

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
            q_top=tops(shown_q[i]),
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
            q_top=tops(shown_q[node]),
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
                q_top=tops(shown_q[last]),
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
        scored=_scored(proposal, texts),
        **timing_and_caches,
    )


def _scored(proposal: Proposal, texts) -> tuple[Scored, ...]:
    """A dynamic tree's candidates for the trace (empty for a static tree)."""
    grown = proposal.grown
    if grown is None:
        return ()
    depths = tree_depths(grown.parents)
    return tuple(
        Scored(parent, depths[c], token, texts[token], math.exp(logp), score, expanded, node)
        for c, (parent, token, logp, score, expanded, node) in enumerate(
            zip(grown.parents, grown.tokens, grown.logp, grown.scores, grown.expanded, grown.node_of)
        )
    )
