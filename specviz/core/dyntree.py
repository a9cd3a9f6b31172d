"""Dynamic draft trees (EAGLE-2, Li et al., arXiv 2406.16858; SafeAILab/EAGLE `eagle/model/cnets.py` topK_genrate).

A static tree has a fixed shape (children per depth, core/verify.py). A dynamic tree is grown per round from the
draft's own confidence: every candidate node is scored by its cumulative draft log-probability (the sum of
log softmax(draft logits) of its tokens from the root down), and

    level 1     the root's top-k tokens are scored; all k are the first frontier
    level d+1   each of the frontier's k nodes is expanded (one draft pass over the frontier, under a tree mask) and its
                top-k children are scored (k * k candidates); the k best of them by score are the next frontier
    keep        the `budget` best candidates of every level by score (ties: the earlier scored), renumbered
                breadth-first for the verifier (core/verify.py tree_parents' conventions: children of one parent
                consecutive, in the order they were ranked, and a parent before its children)

The kept set is a connected tree: a child's score is its parent's plus a log-probability <= 0, so it never outscores
its parent, and with ties broken by scoring order (a parent is scored before its children) a kept child's parent is
kept too. Departure from the EAGLE repository, labelled: its `depth` counts expansions (its trees are depth + 1 levels
deep); here `depth` counts levels, so (budget = depth, top-k = 1) is the chain with K = depth.

Children are chosen (top-k), not sampled: they are judged one-hot (verify.TOP_B), exact at any temperature.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specviz.core.lazy import lazy
from specviz.errors import SettingsError

if TYPE_CHECKING:
    import torch
else:
    torch = lazy("torch")

PREFIX = "dynamic"  # the text form: dynamic:BUDGET,DEPTH,TOPK (CLI --tree, the sidebar, URLs)
LOGP_FLOOR = -1e4  # a token outside a trimmed draft vocabulary (log q = -inf) scores this: finite, so JSON keeps it


@dataclass(frozen=True)
class DynamicTree:
    """A dynamic tree's settings: nodes kept (verified in one target pass), levels, and top-k per expansion."""

    budget: int = 16  # nodes kept and verified
    depth: int = 5  # levels of the tree (depth - 1 draft passes after the root's)
    topk: int = 4  # children scored per expanded node, and frontier nodes expanded per level

    def check(self, max_nodes: int, max_depth: int, max_topk: int) -> None:
        """Whole numbers in range, with a clear message naming the field."""
        for name, value, high in (
            ("budget (nodes kept)", self.budget, max_nodes),
            ("depth (levels)", self.depth, max_depth),
            ("top-k (children per expanded node)", self.topk, max_topk),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
                raise SettingsError(
                    f"The dynamic tree's {name} must be a whole number from 1 to {high}; got {value!r} "
                    f"(write it as {PREFIX}:BUDGET,DEPTH,TOPK, e.g. {PREFIX}:16,5,4)."
                )

    @property
    def text(self) -> str:
        """'dynamic:16,5,4': how the CLI, the sidebar and URLs write it."""
        return f"{PREFIX}:{self.budget},{self.depth},{self.topk}"

    @property
    def candidates(self) -> int:
        """Nodes scored per round: k at level 1, k * k at each later level."""
        return self.topk + (self.depth - 1) * self.topk**2


def parse_dynamic(text: str) -> DynamicTree | None:
    """'dynamic:16,5,4' -> DynamicTree(16, 5, 4); None when the text is not a dynamic tree (a static shape)."""
    text = str(text).replace(" ", "")
    if not text.lower().startswith(PREFIX):
        return None
    rest = text[len(PREFIX) :].lstrip(":")
    try:
        numbers = [int(part) for part in rest.split(",") if part]
    except ValueError:
        numbers = []
    if len(numbers) != 3:
        raise SettingsError(
            f"A dynamic tree is {PREFIX}:BUDGET,DEPTH,TOPK: nodes kept, levels, children per expanded node, "
            f"e.g. {PREFIX}:16,5,4; got {text!r}."
        )
    return DynamicTree(*numbers)


@dataclass(frozen=True)
class GrownTree:
    """Every candidate a dynamic round scored, in scoring order, and which were expanded and kept."""

    tokens: tuple[int, ...]  # each candidate's token
    parents: tuple[int, ...]  # each candidate's parent candidate (-1 = the root, the committed prefix)
    logp: tuple[float, ...]  # log q(token | parent): the draft's log-probability at its parent
    scores: tuple[float, ...]  # cumulative log-probability from the root down (the ranking score)
    expanded: tuple[bool, ...]  # whether the draft read it to score its children (it was in a frontier)
    kept: tuple[int, ...]  # candidates kept, breadth-first: node i of the verified tree is candidate kept[i]

    @property
    def node_parents(self) -> tuple[int, ...]:
        """Parents of the kept nodes in node numbering (-1 = the root), as core/verify.py verify_tree reads them."""
        index = {c: i for i, c in enumerate(self.kept)}
        return tuple(-1 if self.parents[c] < 0 else index[self.parents[c]] for c in self.kept)

    @property
    def node_of(self) -> tuple[int, ...]:
        """Per candidate: its node id in the verified tree, or -1 when pruned."""
        index = {c: i for i, c in enumerate(self.kept)}
        return tuple(index.get(c, -1) for c in range(len(self.tokens)))


Expand = Callable[[list[int], "GrownSoFar"], "torch.Tensor"]


@dataclass(frozen=True)
class GrownSoFar:
    """What an expansion callback may read: the candidates scored so far (lists grow as the tree does)."""

    tokens: list[int]
    parents: list[int]
    expanded: list[int]  # candidates expanded so far, in the order they were read (a drafter's cache order)

    def depth(self, c: int) -> int:
        """Level of candidate c (1 for the root's children)."""
        return 1 if self.parents[c] < 0 else self.depth(self.parents[c]) + 1

    def sees(self, frontier: list[int]) -> torch.Tensor:
        """(m, E + m) bool: frontier node r may attend to tree token j, over the E candidates expanded so far (in
        cache order) and then the frontier itself: its ancestors (all expanded) and itself (a drafter's tree mask)."""
        order = {c: i for i, c in enumerate(self.expanded + frontier)}
        sees = torch.zeros(len(frontier), len(order), dtype=torch.bool)
        for row, c in enumerate(frontier):
            while c >= 0:
                sees[row, order[c]] = True
                c = self.parents[c]
        return sees


def grow_dynamic_tree(root_logp: torch.Tensor, expand: Expand, shape: DynamicTree) -> GrownTree:
    """Grow one round's dynamic tree (see the module docstring).

    root_logp (V,): the draft's log-probabilities after the committed sequence. expand(frontier, so_far) returns the
    (m, V) log-probabilities after each of the m frontier candidates (ids into so_far, best first); it is called
    depth - 1 times, after which the frontier's ids have been appended to so_far.expanded."""
    so_far = GrownSoFar([], [], [])
    logp: list[float] = []
    scores: list[float] = []
    level = _score_children(root_logp[None], [-1], [0.0], shape.topk, so_far, logp, scores)
    for _ in range(shape.depth - 1):
        frontier = _best(level, scores, shape.topk)
        rows = expand(frontier, so_far)  # (m, V)
        so_far.expanded.extend(frontier)
        level = _score_children(rows, frontier, [scores[c] for c in frontier], shape.topk, so_far, logp, scores)
    kept = _best(list(range(len(scores))), scores, shape.budget)
    done = set(so_far.expanded)
    return GrownTree(
        tuple(so_far.tokens),
        tuple(so_far.parents),
        tuple(logp),
        tuple(scores),
        tuple(c in done for c in range(len(scores))),
        breadth_first(kept, so_far.parents),
    )


def _score_children(rows, parents, base, topk, so_far, logp, scores) -> list[int]:
    """Append the top-k children of each parent row (rows (m, V) log-probs); return the new candidates' ids."""
    top = rows.float().topk(min(topk, rows.shape[-1]), dim=-1)  # values, indices (m, k)
    new = []
    for row, parent in enumerate(parents):
        for value, token in zip(top.values[row].clamp(min=LOGP_FLOOR).tolist(), top.indices[row].tolist()):
            new.append(len(so_far.tokens))
            so_far.tokens.append(int(token))
            so_far.parents.append(parent)
            logp.append(float(value))
            scores.append(base[row] + float(value))
    return new


def _best(ids: list[int], scores: list[float], n: int) -> list[int]:
    """The n best ids by score, best first; ties go to the earlier scored (so a parent beats its children)."""
    return sorted(ids, key=lambda c: (-scores[c], c))[:n]


def breadth_first(kept: list[int], parents: list[int]) -> tuple[int, ...]:
    """Order kept candidates level by level, children grouped under their parents in the parents' order and, within
    one parent, in scoring order (their draft rank): the numbering core/verify.py's trees use."""
    chosen = set(kept)
    for c in kept:
        if parents[c] >= 0 and parents[c] not in chosen:
            raise ValueError(f"candidate {c} is kept but its parent {parents[c]} is not: the kept set is not a tree")
    order: list[int] = []
    level = [-1]
    while True:
        nxt = [c for parent in level for c in sorted(chosen) if parents[c] == parent]
        if not nxt:
            return tuple(order)
        order += nxt
        level = nxt
