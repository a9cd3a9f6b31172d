"""The speculative loop and the plain baseline, both yielding `Round`s from real forward passes.

Each round: 1. the drafter proposes k tokens, 2. one target pass scores them all, 3. verify accepts a prefix and draws
the correction or bonus token, 4. both KV caches roll back to the committed prefix. Plain decoding is the same loop
with k = 0, so the two are measured on equal terms. The prompt is read once; each round brings its numbers to the host
in one transfer at step 3 (on a GPU the draft's timing adds one synchronize after step 1).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from specviz import __version__, methods
from specviz.core.sampling import logits_to_probs, one_hot, uniforms
from specviz.core.settings import RunSettings, check_prompt
from specviz.core.trace import (
    ACCEPTED,
    AFTER_STOP,
    BONUS,
    CORRECTION,
    REJECTED,
    TARGET,
    UNREACHED,
    ExtraToken,
    Position,
    Round,
    TokenProb,
    Totals,
    Trace,
)
from specviz.core.verify import Verdict, overlap, verify
from specviz.engine import proposers
from specviz.engine.kv import CachedModel
from specviz.engine.models import ModelPair, synchronize
from specviz.engine.proposers import Proposal, Proposer
from specviz.errors import SettingsError

TOP_N = 10


def generate(pair: ModelPair, prompt: str, settings: RunSettings) -> Trace:
    """Run speculative (or plain) decoding on a prompt and return the full trace."""
    prompt_ids = encode_prompt(pair, prompt)
    start = time.perf_counter()
    rounds = tuple(decode_rounds(pair, prompt_ids, settings))
    return build_trace(pair, prompt, prompt_ids, settings, rounds, time.perf_counter() - start)


def encode_prompt(pair: ModelPair, prompt: str) -> list[int]:
    ids = pair.tokenizer.encode(check_prompt(prompt))
    if not ids:
        raise SettingsError("The prompt produced no tokens; type some ordinary text.")
    return ids


def build_trace(
    pair: ModelPair, prompt: str, prompt_ids: list[int], settings: RunSettings, rounds: tuple[Round, ...], wall_s: float
) -> Trace:
    output = [t for r in rounds for t in r.committed]
    return Trace(
        settings=settings,
        prompt=prompt,
        prompt_ids=tuple(prompt_ids),
        rounds=rounds,
        text=pair.tokenizer.decode(output, skip_special_tokens=True),
        totals=Totals.of(rounds, wall_s),
        meta={**pair.describe(), "specviz": __version__},
    )


def make_proposer(pair: ModelPair, settings: RunSettings) -> Proposer | None:
    """The proposer the registry names for settings.method; None for plain decoding."""
    method = methods.get(settings.method)
    if method.proposer is None:
        return None
    if method.needs_draft and pair.draft is None:
        raise SettingsError(f"The {method.label} method needs a draft model: load a pair with a draft, or use n-gram.")
    return getattr(proposers, method.proposer).for_run(pair, settings)


def check_fits(pair: ModelPair, prompt_ids: list[int], settings: RunSettings, tree_nodes: int = 0) -> None:
    """Refuse up front a run that would overflow the context or a sliding-window cache (a tree run's last pass also
    reads every node of one tree)."""
    needed = len(prompt_ids) + settings.max_new_tokens + tree_nodes
    what = f"The prompt is {len(prompt_ids)} tokens and max new tokens is {settings.max_new_tokens}"
    what += f", plus one tree of {tree_nodes} nodes" if tree_nodes else ""
    fix = (
        "Use a smaller tree, a shorter prompt or fewer new tokens."
        if tree_nodes
        else ("Shorten the prompt or lower max new tokens.")
    )
    if pair.context_length and needed > pair.context_length:
        raise SettingsError(
            f"{what}: {needed} in all, more than the model's context of {pair.context_length} tokens. {fix}"
        )
    if pair.sliding_window and needed >= pair.sliding_window:
        raise SettingsError(
            f"This model uses a sliding-window cache of {pair.sliding_window} tokens, which cannot be rolled back once "
            f"full; this run needs {needed}. {fix}"
        )


@torch.inference_mode()
def decode_rounds(
    pair: ModelPair,
    prompt_ids: list[int],
    settings: RunSettings,
    on_target_logits: Callable[[torch.Tensor], None] | None = None,
) -> Iterator[Round]:
    """Yield one Round per target pass until EOS or max_new_tokens. Same settings and seed -> same rounds.

    on_target_logits, if given, sees each pass's raw logits (k+1, V) (the exactness lab reads near-ties from them).
    A run with a tree shape is drafted and verified as a tree (specviz.engine.tree)."""
    if settings.method in methods.SHAPED:
        from specviz.engine.tree import tree_rounds

        check_fits(pair, prompt_ids, settings)
        yield from tree_rounds(pair, prompt_ids, settings, on_target_logits)
        return
    check_fits(pair, prompt_ids, settings)
    proposer = make_proposer(pair, settings)
    generator = torch.Generator().manual_seed(settings.seed)
    target = CachedModel(pair.target, pair.vocab_size, prompt_ids)
    target.prefill()
    drafter = proposer.start(prompt_ids) if proposer else None
    big_k, produced = settings.draft_length, 0
    for index in range(settings.max_new_tokens):
        # Same number of draws every round, so shortening the last round does not shift the random stream.
        u = uniforms(generator, 2 * big_k + 1).float()  # (2K+1,): draft draws | accept draws | next-token draw
        k = min(big_k, settings.max_new_tokens - produced - 1)  # never draft past the length limit

        # 1. fetch candidates
        start = time.perf_counter()
        proposal = drafter.propose(k, u[:k].to(pair.device)) if drafter and k > 0 else _nothing(pair.device)
        synchronize(pair.device)  # so the draft time is the draft's
        drafted = time.perf_counter()
        k = proposal.tokens.numel()  # a lookup may find fewer than asked
        draft_cache = drafter.cache_length if drafter else 0

        # 2. one target pass over the pending token + k drafts: p_1..p_{k+1}
        logits = target.forward(proposal.tokens, logits_to_keep=k + 1)  # (k+1, V)
        if on_target_logits:
            on_target_logits(logits)
        p = logits_to_probs(logits, settings.sampling)  # (k+1, V)
        q = proposal.q if proposal.q is not None else one_hot(proposal.tokens, pair.vocab_size)  # (k, V)

        # 3. accept / reject, then bring the round's numbers to the host in one go
        u_accept, u_next = u[big_k : big_k + k], u[2 * big_k]
        verdict = verify(p, q, proposal.tokens, u_accept.to(pair.device), u_next.to(pair.device))
        facts = _RoundFacts.read(verdict, p, q, proposal)
        verified = time.perf_counter()
        committed, stop = _apply_stops(facts, pair, settings, produced)
        produced += len(committed)

        # 4. roll both caches back to the committed prefix
        target_cache = target.length
        if stop is None:
            target.advance(committed, facts.n_accepted)
            if drafter:
                drafter.advance(committed, facts.n_accepted)
        yield _make_round(
            index,
            facts,
            committed,
            stop,
            u_accept,
            float(u_next),
            pair,
            settings,
            draft_ms=(drafted - start) * 1e3,
            verify_ms=(verified - drafted) * 1e3,
            target_cache=(target_cache, target.length),
            draft_cache=(draft_cache, drafter.cache_length if drafter else 0),
        )
        if stop:
            return


@dataclass(frozen=True)
class _RoundFacts:
    """A round's numbers on the host, brought over in one device-to-host transfer."""

    drafts: list[int]
    p_x: list[float]
    q_x: list[float]
    accept_prob: list[float]
    overlap: list[float]  # sum_x min(p_i(x), q_i(x)) per position: the analytic acceptance rate
    n_accepted: int
    next_token: int
    next_prob: float
    next_p: float
    p_top: list[list[tuple[int, float]]]  # (k+1) x top-N
    q_top: list[list[tuple[int, float]]]  # k x top-N
    residual_top: list[tuple[int, float]]

    @classmethod
    def read(cls, v: Verdict, p: torch.Tensor, q: torch.Tensor, proposal: Proposal) -> _RoundFacts:
        k, top_n = q.shape[0], min(TOP_N, p.shape[-1])
        n, token = v.n_accepted.view(1), v.next_token.view(1)  # (1,) each: indexing with them needs no sync
        tops = [d.topk(top_n, -1) for d in (p, q, v.next_dist[None])]  # (k+1, N), (k, N), (1, N)
        host = _to_host(
            ids=torch.cat([proposal.tokens, n, token]),  # (k+2,)
            per_draft=torch.stack([v.p_x, v.q_x, v.accept_prob, overlap(p[:k], q)]),  # (4, k)
            next_probs=torch.cat([v.next_dist[token], p[n, token]]),  # (2,)
            top_ids=torch.cat([t.indices for t in tops]),  # (2k+2, N)
            top_probs=torch.cat([t.values for t in tops]),  # (2k+2, N)
        )
        ids, per_draft = [int(i) for i in host["ids"]], host["per_draft"]
        top = _top([int(i) for i in host["top_ids"]], host["top_probs"], top_n)  # 2k+2 rows: p, q, residual
        return cls(
            drafts=ids[:k],
            p_x=per_draft[:k],
            q_x=per_draft[k : 2 * k],
            accept_prob=per_draft[2 * k : 3 * k],
            overlap=per_draft[3 * k :],
            n_accepted=ids[k],
            next_token=ids[k + 1],
            next_prob=host["next_probs"][0],
            next_p=host["next_probs"][1],
            p_top=top[: k + 1],
            q_top=top[k + 1 : 2 * k + 1],
            residual_top=top[-1],
        )


def _to_host(**tensors: torch.Tensor) -> dict[str, list[float]]:
    """Bring several tensors to the host in one transfer: flattened into one float32 vector, split back by name.

    Exact here: the probabilities are float32 already, and float32 holds every token id below 2^24.
    """
    flat = torch.cat([t.reshape(-1).float() for t in tensors.values()]).tolist()  # the one host sync
    out, start = {}, 0
    for name, t in tensors.items():
        out[name], start = flat[start : start + t.numel()], start + t.numel()
    return out


def _top(ids: list[int], probs: list[float], top_n: int) -> list[list[tuple[int, float]]]:
    """Flattened (R, N) top-N ids and probabilities -> per row the (token, prob) pairs with prob > 0."""
    rows = range(0, len(ids), top_n)
    return [[(i, v) for i, v in zip(ids[r : r + top_n], probs[r : r + top_n]) if v > 0] for r in rows]


def _apply_stops(
    facts: _RoundFacts, pair: ModelPair, settings: RunSettings, produced: int
) -> tuple[list[int], str | None]:
    """The round's committed tokens, cut at the first EOS or at max_new_tokens (checked per token)."""
    candidates = facts.drafts[: facts.n_accepted] + [facts.next_token]
    for i, token in enumerate(candidates):
        if settings.stop_at_eos and token in pair.eos_ids:
            return candidates[: i + 1], "eos"
        if produced + i + 1 >= settings.max_new_tokens:
            return candidates[: i + 1], "max_new_tokens"
    return candidates, None


def _make_round(
    index: int,
    facts: _RoundFacts,
    committed: list[int],
    stop: str | None,
    u_accept: torch.Tensor,
    u_next: float,
    pair: ModelPair,
    settings: RunSettings,
    **timing_and_caches,
) -> Round:
    texts = pair.token_texts
    tops = lambda pairs: tuple(TokenProb(t, texts[t], prob) for t, prob in pairs)  # noqa: E731
    n, k = facts.n_accepted, len(facts.drafts)
    positions = tuple(
        Position(
            index=i,
            token_id=token,
            text=texts[token],
            q=facts.q_x[i],
            p=facts.p_x[i],
            ratio=facts.accept_prob[i],
            overlap=facts.overlap[i],
            u=float(u_accept[i]),
            accepted=i < n and i < len(committed),
            verdict=_verdict(i, n, len(committed)),
            p_top=tops(facts.p_top[i]),
            q_top=tops(facts.q_top[i]),
        )
        for i, token in enumerate(facts.drafts)
    )
    extra = None
    if len(committed) > n:  # the correction / bonus survived the stop checks
        kind = CORRECTION if n < k else (BONUS if methods.get(settings.method).speculative else TARGET)
        extra = ExtraToken(facts.next_token, texts[facts.next_token], kind, facts.next_prob, facts.next_p, u_next)
    return Round(
        index=index,
        positions=positions,
        extra=extra,
        residual_top=tops(facts.residual_top) if n < k else (),
        bonus_top=tops(facts.p_top[n]) if n == k else (),
        committed=tuple(committed),
        stop=stop,
        **timing_and_caches,
    )


def _verdict(i: int, n_accepted: int, n_committed: int) -> str:
    if i >= n_committed and i <= n_accepted:
        return AFTER_STOP  # accepted or about to be judged, but the run had already stopped
    if i < n_accepted:
        return ACCEPTED
    return REJECTED if i == n_accepted else UNREACHED


def _nothing(device: torch.device) -> Proposal:
    return Proposal(torch.empty(0, dtype=torch.long, device=device), None)
