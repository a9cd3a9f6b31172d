"""Suffix decoding's data structure: a trie of every substring (up to max_depth tokens) of some token sequences, with
counts, and the walk that drafts from it. Pure: no torch, no models.

A readable re-implementation of ArcticInference's `SuffixTree` (csrc/suffix_decoding/suffix_tree.cc) and
`SuffixDecodingCache` (arctic_inference/suffix_decoding/cache.py, version 0.1.1, the one vLLM 0.32 imports). Arctic
compresses unary paths (a suffix tree proper); this trie keeps one node per token, which gives the same counts, the
same walk and the same drafts, at more memory. The rules that decide drafts, copied exactly:

- count(w) = how many times the string w occurs in the sequences (|w| <= max_depth), ends of sequences included;
  the root's count is the number of tokens.
- Children are kept in decreasing count; ties in Arctic's order (a new child goes last; a child whose count grows
  moves to the front of the run of siblings that had the count of the sibling before it: `_increment_count`).
- speculate: for match lengths m = 1, 2, ... < len(context), find the last m tokens of the context from the root
  (stop at the first miss); from there walk the first (most frequent) child while the path probability (the product
  of child count / node count, in float32) stays >= min_token_prob, taking at most min(max_spec_tokens,
  int(m * max_spec_factor + max_spec_offset)) tokens. Score = the sum of the drafted tokens' path probabilities; the
  best score wins, a longer match winning ties.
- The cache: one tree per request over its prompt and output so far, and one global tree over the outputs of earlier
  requests and of this one so far; the per-request draft wins ties with the global one.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from itertools import count as counter

import numpy as np

from specviz.errors import SettingsError

F32 = np.float32


class Node:
    __slots__ = ("token", "count", "children", "order")

    def __init__(self, token: int = -1):
        self.token = token
        self.count = 0
        self.children: dict[int, Node] = {}
        self.order: list[Node] = []  # the children, most frequent first (Arctic's tie order)

    def head(self) -> Node | None:
        return self.order[0] if self.order else None

    def add_child(self, token: int) -> Node:
        child = Node(token)
        child.count = 1
        self.children[token] = child
        self.order.append(child)  # count 1 is the lowest: last keeps the order sorted
        return child

    def increment(self, child: Node) -> None:
        """child.count += 1, moving it as Arctic's `_increment_count` does."""
        i = self.order.index(child)
        prev = self.order[i - 1] if i else None
        if prev is not None and prev.count <= child.count + 1:  # it would tie or pass its elder: move it
            j = next(n for n, other in enumerate(self.order) if other.count == prev.count)  # that run's first
            del self.order[i]
            self.order.insert(j, child)
        child.count += 1

    def decrement(self, child: Node) -> None:
        """child.count -= 1 (evicting a sequence), moving it as Arctic's `_decrement_count` does; gone at 0."""
        i = self.order.index(child)
        after = self.order[i + 1] if i + 1 < len(self.order) else None
        child.count -= 1
        if after is not None and after.count == child.count + 1:  # it falls behind its run: first of the next run
            del self.order[i]
            j = next((n for n, other in enumerate(self.order) if other.count < child.count + 1), len(self.order))
            self.order.insert(j, child)
        if child.count == 0:
            self.order.remove(child)
            del self.children[child.token]


@dataclass(frozen=True)
class SuffixDraft:
    """What one tree (or the cache) proposes: tokens, each one's path probability, their sum, the match it grew from."""

    tokens: tuple[int, ...] = ()
    probs: tuple[float, ...] = ()
    score: float = 0.0
    match_len: int = 0
    source: str = ""  # "request" or "global" (the cache's choice); "" from a bare tree


class SuffixTree:
    """Every substring of up to max_depth tokens of the sequences added, with its count."""

    def __init__(self, max_depth: int):
        self.max_depth = max_depth
        self.root = Node()
        self.seqs: dict[int, list[int]] = {}
        self._active: dict[int, deque[Node]] = {}  # per sequence: the nodes of its last max_depth suffixes

    def extend(self, seq_id: int, tokens: Sequence[int]) -> None:
        for token in tokens:
            self.append(seq_id, int(token))

    def append(self, seq_id: int, token: int) -> None:
        seq = self.seqs.setdefault(seq_id, [])
        active = self._active.setdefault(seq_id, deque())
        active.append(self.root)  # the empty suffix starting at this token
        self.root.count += 1
        if len(active) > self.max_depth:
            active.popleft()  # that suffix is max_depth long already
        seq.append(token)
        for n, node in enumerate(active):
            child = node.children.get(token)
            if child is None:
                child = node.add_child(token)
            else:
                node.increment(child)
            active[n] = child

    def remove(self, seq_id: int) -> None:
        """Forget one sequence (the cache evicting an old output)."""
        seq = self.seqs.pop(seq_id, [])
        self._active.pop(seq_id, None)
        for start in range(len(seq)):
            self.root.count -= 1
            node = self.root
            for token in seq[start : start + self.max_depth]:
                child = node.children[token]
                node.decrement(child)
                node = child

    def match(self, context: Sequence[int]) -> Node | None:
        node = self.root
        for token in context:
            node = node.children.get(int(token))
            if node is None:
                return None
        return node

    def speculate(
        self,
        context: Sequence[int],
        max_spec_tokens: int,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
    ) -> SuffixDraft:
        """The best draft over every match length (see the module's rules)."""
        best = SuffixDraft()
        for match_len in range(1, len(context)):
            node = self.match(context[len(context) - match_len :])
            if node is None:
                break
            cap = int(float(F32(match_len) * F32(max_spec_factor) + F32(max_spec_offset)) + 1e-6)
            draft = walk(node, max(0, min(max_spec_tokens, cap)), F32(min_token_prob), match_len)
            if draft.score >= best.score:
                best = draft
        return best


def walk(node: Node, max_tokens: int, min_prob: np.float32, match_len: int) -> SuffixDraft:
    """Follow the most frequent child while the path probability stays >= min_prob, at most max_tokens steps."""
    tokens, probs = [], []
    prob, score = F32(1.0), F32(0.0)
    while len(tokens) < max_tokens and prob >= min_prob:
        child = node.head()
        if child is None:
            break
        prob = F32(prob * (F32(child.count) / F32(node.count)))
        if prob < min_prob:
            break
        tokens.append(child.token)
        probs.append(float(prob))
        score = F32(score + prob)
        node = child
    return SuffixDraft(tuple(tokens), tuple(probs), float(score), match_len)


@dataclass
class SuffixCache:
    """ArcticInference's `SuffixDecodingCache`: per-request trees over prompt + output, and one global tree over the
    outputs (earlier requests' and the live ones'), holding at most max_cached_requests outputs (the oldest go first;
    -1: no limit; 0: no global tree). Keep one per app session or per measurement, never one for every user."""

    max_tree_depth: int = 24
    max_cached_requests: int = 10000
    global_tree: SuffixTree = field(init=False)
    _local: dict[Hashable, SuffixTree] = field(init=False, default_factory=dict)
    _cached: OrderedDict = field(init=False, default_factory=OrderedDict)  # request -> its sequence in global_tree
    _ids: counter = field(init=False, default_factory=counter)

    def __post_init__(self) -> None:
        self.global_tree = SuffixTree(self.max_tree_depth)

    @property
    def cached_requests(self) -> int:
        return len(self._cached)

    def start(self, prompt_ids: Sequence[int]) -> int:
        """A new request over this prompt; returns its id."""
        request = next(self._ids)
        tree = SuffixTree(self.max_tree_depth)
        tree.extend(0, prompt_ids)
        self._local[request] = tree
        if self.max_cached_requests != 0:
            self._cached[request] = request
            while self.max_cached_requests > 0 and len(self._cached) > self.max_cached_requests:
                oldest = next(iter(self._cached))
                self.global_tree.remove(self._cached.pop(oldest))
        return request

    def add(self, request: int, tokens: Sequence[int]) -> None:
        """Tokens the request committed: into its own tree and into the global one."""
        self._local[request].extend(0, tokens)
        if request in self._cached:
            self.global_tree.extend(self._cached[request], tokens)

    def stop(self, request: int) -> None:
        """The request is done: its prompt is forgotten, its output stays in the global tree."""
        self._local.pop(request, None)

    def speculate(
        self,
        request: int,
        context: Sequence[int],
        max_spec_tokens: int,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
    ) -> SuffixDraft:
        context = list(context)[-self.max_tree_depth :]
        args = (context, max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob)
        mine = self._local[request].speculate(*args)
        theirs = self.global_tree.speculate(*args)
        best, source = (mine, "request") if mine.score >= theirs.score else (theirs, "global")
        return SuffixDraft(best.tokens, best.probs, best.score, best.match_len, source)


@dataclass(frozen=True)
class SuffixOptions:
    """The suffix method's settings, with vLLM 0.32's defaults (`SpeculativeConfig.suffix_decoding_*`; the offset,
    which vLLM does not pass, is Arctic's default 0). Checked at construction: a bad value raises SettingsError."""

    max_tree_depth: int = 24  # the longest substring the trees hold: the match plus its draft never exceed it
    max_spec_factor: float = 1.0  # a match of m tokens drafts at most int(m * factor + offset) tokens (and K)
    max_spec_offset: float = 0.0
    min_token_prob: float = 0.1  # stop once the path's probability (counts' ratio, multiplied) falls below it
    max_cached_requests: int = 10000  # earlier outputs the global tree keeps (oldest dropped first); 0: none

    def __post_init__(self) -> None:
        _whole("suffix max tree depth", self.max_tree_depth, 1, 1024)
        _whole("suffix max cached requests (0 = no global tree)", self.max_cached_requests, 0, 10_000_000)
        _number("suffix max spec factor", self.max_spec_factor, 0.0, 1024.0)
        _number("suffix max spec offset", self.max_spec_offset, -1024.0, 1024.0)
        _number("suffix min token probability", self.min_token_prob, 0.0, 1.0)
        for name in ("max_spec_factor", "max_spec_offset", "min_token_prob"):
            object.__setattr__(self, name, float(getattr(self, name)))  # JSON may give an int

    def cache(self) -> SuffixCache:
        return SuffixCache(self.max_tree_depth, self.max_cached_requests)

    def vllm_keys(self) -> dict:
        """The same options as vLLM's --speculative-config keys (it has no offset: Arctic's 0 is used)."""
        return {
            "suffix_decoding_max_tree_depth": self.max_tree_depth,
            "suffix_decoding_max_spec_factor": self.max_spec_factor,
            "suffix_decoding_min_token_prob": self.min_token_prob,
            "suffix_decoding_max_cached_requests": self.max_cached_requests,
        }


class SuffixMemory:
    """The global caches one app session (or one measurement) keeps: one SuffixCache per (depth, cached requests),
    made on first use, so earlier outputs help later runs with the same options and never another user's."""

    def __init__(self) -> None:
        self._caches: dict[tuple[int, int], SuffixCache] = {}

    def cache_for(self, options: SuffixOptions) -> SuffixCache:
        key = (options.max_tree_depth, options.max_cached_requests)
        if key not in self._caches:
            self._caches[key] = options.cache()
        return self._caches[key]

    @property
    def cached_requests(self) -> int:
        return sum(c.cached_requests for c in self._caches.values())


def _whole(name: str, value: object, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise SettingsError(f"{name} must be a whole number from {low} to {high}; got {value!r}.")


def _number(name: str, value: object, low: float, high: float) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or not low <= value <= high:
        raise SettingsError(f"{name} must be a number from {low:g} to {high:g}; got {value!r}.")
